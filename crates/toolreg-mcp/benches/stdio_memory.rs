//! Peak memory of the stdio server under a client that never reads.
//!
//! `cargo bench -p toolreg-mcp --bench stdio_memory`. A client sends 3,000
//! calls of a tool that waits 5 ms and answers 1 MiB, and reads nothing.
//! The server's memory is bounded by the requests it works on at once
//! (`StdioOptions::max_in_flight`) times the answer size, plus the output
//! queue (`max_output_bytes`); the rest wait, unread, in the pipe. The run
//! is repeated with both limits lifted, which is how the server behaved
//! before they existed. Peak resident memory (`VmHWM`) is read from
//! `/proc/self/status`, so each case runs in a process of its own.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use toolreg::{FunctionRegistry, SafetyLevel, ToolDeclaration, ToolRegistration};
use toolreg_mcp::server::{McpServer, ServerOptions, StdioOptions};

const CALLS: usize = 3_000;
const ANSWER: usize = 1 << 20;

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn run(options: StdioOptions) -> u64 {
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("big").description("A slow, large answer.").safety(SafetyLevel::Safe).build();
    registry
        .register(ToolRegistration::new(decl, |_: Value| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok::<_, String>(Value::String("x".repeat(ANSWER)))
        }))
        .expect("register");
    let server = McpServer::from_registry(&registry, ServerOptions::default());
    let (mut client, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    tokio::spawn(async move { server.serve_stream(read, write, options).await });
    let before = peak_kib();
    let line = |message: Value| {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        line
    };
    let mut input = line(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "never-reads", "version": "1"}}}));
    input.extend(line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
    for id in 1..=CALLS {
        input.extend(line(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "big", "arguments": {}}})));
    }
    // The server may stop reading once its output is full: write what it takes.
    let _ = tokio::time::timeout(Duration::from_secs(20), client.write_all(&input)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    peak_kib().saturating_sub(before)
}

fn main() {
    let case = std::env::args().skip(1).find(|a| a == "bounded" || a == "unbounded");
    let Some(case) = case else {
        // Each case in a fresh process: peak memory only grows.
        let me = std::env::current_exe().expect("own path");
        for case in ["bounded", "unbounded"] {
            let out = std::process::Command::new(&me).arg(case).output().expect("run case");
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
        return;
    };
    let options = match case.as_str() {
        "bounded" => StdioOptions::default(),
        _ => StdioOptions::default().max_in_flight(usize::MAX).max_output_bytes(usize::MAX),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let grew = runtime.block_on(run(options));
    println!(
        "mcp_stdio/never_reading_client/{case}: {CALLS} calls of a 1 MiB answer: peak memory +{} MiB",
        grew / 1024
    );
}
