//! An MCP server over stdio, measured from outside as a client sees it:
//! a child process, JSON-RPC lines on its pipes, `tools/call` of a trivial
//! tool. toolreg's server and an rmcp server with the same tool run in the
//! same bench, on the same kind of runtime.
//!
//! The bench binary is also the servers: started with `MCP_BENCH_SERVER`
//! set, it serves instead of measuring, so both servers are built with the
//! same profile and nothing else needs building.
//!
//! - `calls_64_in_flight`: 6,400 calls with 64 outstanding at any time
//!   (throughput: calls/s = 6,400 / time).
//! - `one_in_flight`: one call, answer read before the next (latency).
//! - `startup`: process start to the `initialize` answer.
//! - Resident memory (VmHWM) after the throughput run is printed.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use serde_json::{Value, json};

const ROLE: &str = "MCP_BENCH_SERVER";
const BATCH: usize = 6_400;
const IN_FLIGHT: usize = 64;

// ---- the servers -------------------------------------------------------

mod rmcp_side {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct AddArgs {
        /// The first addend.
        pub a: i64,
        /// The second addend.
        pub b: i64,
    }

    #[derive(Clone)]
    pub struct Adder {
        tool_router: ToolRouter<Adder>,
    }

    #[tool_router]
    impl Adder {
        pub fn new() -> Self {
            Adder { tool_router: Self::tool_router() }
        }

        #[tool(description = "Add two integers.")]
        fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
            (a + b).to_string()
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Adder {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }
}

fn serve(role: &str) {
    let runtime = match role {
        "toolreg-mt" => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
    .expect("runtime");
    runtime.block_on(async {
        match role {
            "rmcp" => {
                use rmcp::ServiceExt;
                let running = rmcp_side::Adder::new().serve(rmcp::transport::io::stdio_pipes()).await.expect("serve");
                let _ = running.waiting().await;
            }
            _ => {
                let mut registry = toolreg::FunctionRegistry::new();
                registry.register(add_tool::registration()).expect("register");
                let server = toolreg_mcp::McpServer::from_registry(&registry, toolreg_mcp::ServerOptions::default());
                let _ = server.serve_stdio().await;
            }
        }
    });
}

/// Add two integers.
#[toolreg::tool(safety = "safe")]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

// ---- the client ----------------------------------------------------------

struct Server {
    child: Child,
    input: BufWriter<ChildStdin>,
    output: BufReader<ChildStdout>,
    line: String,
}

impl Server {
    fn start(role: &str) -> Server {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .env(ROLE, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let input = BufWriter::new(child.stdin.take().expect("stdin"));
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        Server { child, input, output, line: String::new() }
    }

    fn send(&mut self, message: &str) {
        self.input.write_all(message.as_bytes()).expect("write");
        self.input.write_all(b"\n").expect("write");
    }

    fn flush(&mut self) {
        self.input.flush().expect("flush");
    }

    fn read(&mut self) -> &str {
        self.line.clear();
        self.output.read_line(&mut self.line).expect("read");
        assert!(!self.line.is_empty(), "the server closed its output");
        &self.line
    }

    fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
            .to_string(),
        );
        self.flush();
        let answer: Value = serde_json::from_str(self.read()).expect("initialize answer");
        assert!(answer.get("result").is_some(), "{answer}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        self.flush();
    }

    fn call(&mut self, id: usize) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{id},"b":1}}}}}}"#
        ));
    }

    /// Check one answer: a result, not an error.
    fn answer(&mut self) {
        let line = self.read();
        assert!(line.contains("\"result\"") && !line.contains("\"isError\":true"), "{line}");
    }

    /// `count` calls with `in_flight` outstanding.
    fn pipelined(&mut self, count: usize, in_flight: usize) {
        let mut sent = 0;
        while sent < in_flight.min(count) {
            sent += 1;
            self.call(sent);
        }
        self.flush();
        for _ in 0..count {
            self.answer();
            if sent < count {
                sent += 1;
                self.call(sent);
                self.flush();
            }
        }
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const ROLES: [&str; 3] = ["toolreg", "toolreg-mt", "rmcp"];

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("mcp_stdio/calls_64_in_flight");
    group.throughput(Throughput::Elements(BATCH as u64)).sample_size(20).measurement_time(Duration::from_secs(8));
    for role in ROLES {
        let mut server = Server::start(role);
        server.initialize();
        server.pipelined(BATCH, IN_FLIGHT); // warm up
        group.bench_function(role, |b| b.iter(|| server.pipelined(BATCH, IN_FLIGHT)));
        if let Some(kib) = server.peak_rss_kib() {
            println!("mcp_stdio/{role}: peak resident memory {:.1} MB", kib as f64 / 1024.0);
        }
    }
    group.finish();

    let mut group = c.benchmark_group("mcp_stdio/one_in_flight");
    group.measurement_time(Duration::from_secs(5));
    for role in ROLES {
        let mut server = Server::start(role);
        server.initialize();
        let mut id = 0;
        group.bench_function(role, |b| {
            b.iter(|| {
                id += 1;
                server.call(id);
                server.flush();
                server.answer();
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("mcp_stdio/startup");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    for role in ROLES {
        group.bench_function(role, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let mut server = Server::start(role);
                    server.initialize();
                    total += start.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        serve(&role);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    benches(&mut criterion);
    criterion.final_summary();
}
