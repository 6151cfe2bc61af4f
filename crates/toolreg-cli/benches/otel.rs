//! What OpenTelemetry export costs: the same work with export off and on
//! (the CLI's own set-up, `src/telemetry.rs`: sampler at 100%, batch span
//! processor, OTLP/HTTP protobuf to a receiver on loopback that decodes
//! every request).
//!
//! - `engine_call`: one `tools/call`-sized call of a trivial tool through a
//!   `ToolEngine` (the `execute_tool` span, its attributes and the
//!   arguments' hash, which export turns on).
//! - `agent_step`: one step of an agent run against a scripted model (ten
//!   steps per run, nine calling a trivial tool): `invoke_agent`, `chat`,
//!   `execute_tool` spans.
//! - `agent_step_http`: the same run against a model on loopback HTTP (an
//!   OpenAI-compatible endpoint in the parent process that answers at once,
//!   through `OpenAiChatClient`): the cheapest step a real model allows.
//! - `mcp_call`: one `tools/call` of a built-in tool to `toolreg serve`
//!   over stdio, one in flight, measured from the client's side.
//!
//! Each mode runs in a fresh process (so that `tracing`'s per-callsite
//! caches start cold in both), and off and on alternate for several
//! rounds; the median of the rounds is reported. Run with
//! `cargo bench -p toolreg-cli --bench otel`.

#[path = "../src/telemetry.rs"]
#[allow(dead_code, missing_docs)]
mod telemetry;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolreg::{
    CallOptions, FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolEngine, ToolExecutor,
};
use toolreg_llm::agent::{Agent, AgentLimits, RunOutcome};
use toolreg_llm::client::{ClientConfig, OpenAiChatClient};
use toolreg_llm::scripted::{ScriptedClient, calls_response, text_response};
use toolreg_llm::{LlmClient, Message};

const MODE: &str = "OTEL_BENCH_MODE";
const MODEL_URL: &str = "OTEL_BENCH_MODEL_URL";
const ROUNDS: usize = 9;
const ENGINE_CALLS: u32 = 20_000;
const AGENT_RUNS: u32 = 300;
const AGENT_HTTP_RUNS: u32 = 60;
const MCP_CALLS: u32 = 4_000;

fn main() {
    // `cargo bench` passes `--bench`; a filter or `--list` is ignored.
    match std::env::var(MODE).as_deref() {
        Ok("off" | "on") => measure(),
        _ => compare(),
    }
}

// ---- the parent: a receiver, the rounds, the table ---------------------

fn compare() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let spans = Arc::new(AtomicU64::new(0));
    let endpoint = runtime.block_on(receiver(Arc::clone(&spans)));
    let model_url = runtime.block_on(model_server());
    let mut results: Vec<(&str, Vec<[f64; 4]>)> = vec![("off", Vec::new()), ("on", Vec::new())];
    for round in 0..ROUNDS {
        for (mode, rows) in &mut results {
            let mut child = Command::new(std::env::current_exe().unwrap());
            child
                .env(MODE, *mode)
                .env(MODEL_URL, &model_url)
                .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .env_remove("TOOLREG_LOG");
            if *mode == "on" {
                child.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint).env("OTEL_SERVICE_NAME", "bench");
            } else {
                child.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
            }
            let out = child.output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            let row: Vec<f64> = text.split_whitespace().map(|n| n.parse().unwrap()).collect();
            eprintln!(
                "round {round} {mode}: engine {:.2} µs, agent step {:.2} µs, over HTTP {:.1} µs, mcp {:.1} µs",
                row[0], row[1], row[2], row[3]
            );
            rows.push([row[0], row[1], row[2], row[3]]);
        }
    }
    let median = |rows: &[[f64; 4]], i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("median of {ROUNDS} rounds (µs per operation)");
    println!("{:<16} {:>10} {:>10} {:>9}", "", "off", "on", "overhead");
    for (i, name) in ["engine_call", "agent_step", "agent_step_http", "mcp_call"].iter().enumerate() {
        let off = median(&results[0].1, i);
        let on = median(&results[1].1, i);
        println!("{name:<16} {off:>10.2} {on:>10.2} {:>8.1}%", (on / off - 1.0) * 100.0);
    }
    println!("spans received by the OTLP receiver: {}", spans.load(Ordering::Relaxed));
}

/// An OTLP/HTTP receiver that decodes each request and counts its spans.
async fn receiver(spans: Arc<AtomicU64>) -> String {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let spans = Arc::clone(&spans);
            async move {
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                let n: usize =
                    request.resource_spans.iter().flat_map(|r| r.scope_spans.iter()).map(|s| s.spans.len()).sum();
                spans.fetch_add(n as u64, Ordering::Relaxed);
                ([(axum::http::header::CONTENT_TYPE, "application/x-protobuf")], Vec::<u8>::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// An OpenAI-compatible chat endpoint that answers at once, like the
/// scripted model: a call of `tool_3` until nine tool results are in, then
/// a final answer.
async fn model_server() -> String {
    let app = axum::Router::new().route(
        "/chat/completions",
        axum::routing::post(|body: axum::body::Bytes| async move {
            let request: Value = serde_json::from_slice(&body).unwrap();
            let done = request["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
            let message = if done < 9 {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{done}"),
                    "type": "function", "function": {"name": "tool_3", "arguments": format!("{{\"n\": {done}}}")}}]})
            } else {
                json!({"role": "assistant", "content": "done"})
            };
            let finish = if done < 9 { "tool_calls" } else { "stop" };
            let answer = json!({"id": "bench", "object": "chat.completion", "model": "bench",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
            ([(axum::http::header::CONTENT_TYPE, "application/json")], answer.to_string())
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

// ---- a child: one mode, four measurements ------------------------------

fn measure() {
    // Export is on exactly when the parent set the OTEL variables.
    let telemetry = telemetry::init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let registry = registry();
    let engine = ToolEngine::builder(&registry).build();
    let engine_us = runtime.block_on(async {
        let call = || ToolCall::new("c1", "tool_3", json!({"n": 1}));
        for _ in 0..1_000 {
            engine.execute_call(call(), CallOptions::default()).await;
        }
        let started = Instant::now();
        for _ in 0..ENGINE_CALLS {
            let result = engine.execute_call(call(), CallOptions::default()).await;
            assert!(result.outcome.is_ok());
        }
        per(started.elapsed(), ENGINE_CALLS)
    });

    let model = ScriptedClient::from_fn(|request| {
        let done = request.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
        if done < 9 {
            Ok(calls_response(vec![ToolCall::new(format!("c{done}"), "tool_3", json!({"n": done}))]))
        } else {
            Ok(text_response("done"))
        }
    })
    .unrecorded();
    let agent_us = runtime.block_on(agent_steps(&registry, model, 30, AGENT_RUNS));
    let url = std::env::var(MODEL_URL).unwrap();
    let model = OpenAiChatClient::new(ClientConfig::new(url)).unwrap();
    let agent_http_us = runtime.block_on(agent_steps(&registry, model, 10, AGENT_HTTP_RUNS));

    let mcp_us = mcp_calls();
    drop(runtime);
    telemetry.shutdown();
    println!("{engine_us} {agent_us} {agent_http_us} {mcp_us}");
}

/// µs per step of ten-step runs of an agent on `model` over `registry`,
/// after `warm` runs.
async fn agent_steps(registry: &FunctionRegistry, model: impl LlmClient + 'static, warm: u32, runs: u32) -> f64 {
    let agent = Agent::builder(model, "bench", ToolEngine::builder(registry))
        .limits(AgentLimits::default().max_steps(10))
        .build();
    for _ in 0..warm {
        agent.run("count").await.unwrap();
    }
    let started = Instant::now();
    for _ in 0..runs {
        match agent.run("count").await {
            Ok(RunOutcome::Finished(done)) => assert_eq!(done.steps, 10),
            other => panic!("{other:?}"),
        }
    }
    per(started.elapsed(), runs * 10)
}

fn per(elapsed: Duration, n: u32) -> f64 {
    elapsed.as_secs_f64() * 1e6 / f64::from(n)
}

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for i in 0..20 {
        let name = format!("tool_{i}");
        let decl = ToolDeclaration::builder(&name)
            .description("A trivial tool.")
            .param("n", ParamType::Integer, "a number")
            .safety(SafetyLevel::Safe)
            .build();
        registry.register_sync_tool(&name, |args: Value| Ok::<_, String>(args), decl).unwrap();
    }
    registry
}

/// `toolreg serve` on stdio (inheriting this process's OTEL variables):
/// `read_file` of a one-line file, one call in flight.
fn mcp_calls() -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolreg"))
        .args(["serve", "--no-shell", "--root"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // One `write` per message, as a real client sends it: `writeln!` on the
    // unbuffered pipe wrote each JSON token separately.
    let mut send = |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}));
    lines.next().unwrap().unwrap();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut call = |id: u32| {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "notes.txt"}}}));
        let line = lines.next().unwrap().unwrap();
        assert!(line.contains("\"result\""), "{line}");
    };
    std::fs::write(dir.path().join("notes.txt"), "one line\n").unwrap();
    for id in 1..=200 {
        call(id);
    }
    let started = Instant::now();
    for id in 0..MCP_CALLS {
        call(1_000 + id);
    }
    let us = per(started.elapsed(), MCP_CALLS);
    drop(stdin);
    child.wait().unwrap();
    us
}
