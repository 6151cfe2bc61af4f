//! OpenTelemetry export, checked against a real OTLP/HTTP receiver: a small
//! server in this test decoding `ExportTraceServiceRequest` protobuf with
//! the official `opentelemetry-proto` definitions.

use crate::support as common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command as StdCommand, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::{Value, json};

/// Every span the receiver was sent, with its service's name.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, Span)>>>);

impl Received {
    fn spans(&self) -> Vec<(String, Span)> {
        self.0.lock().unwrap().clone()
    }

    /// The one span of this name (of this service, if given).
    fn one(&self, name: &str, service: Option<&str>) -> Span {
        let found: Vec<Span> = self
            .spans()
            .into_iter()
            .filter(|(s, span)| span.name == name && service.is_none_or(|want| want == s))
            .map(|(_, span)| span)
            .collect();
        assert_eq!(found.len(), 1, "spans named `{name}`: {:#?}", self.names());
        found.into_iter().next().unwrap()
    }

    fn names(&self) -> Vec<(String, String)> {
        self.spans().into_iter().map(|(s, span)| (s, span.name)).collect()
    }
}

/// An OTLP/HTTP receiver on a loopback port: its endpoint and what it got.
async fn receiver() -> (String, Received) {
    let received = Received::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let store = store.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an ExportTraceServiceRequest");
                let mut spans = store.0.lock().unwrap();
                for resource in request.resource_spans {
                    let service = resource
                        .resource
                        .as_ref()
                        .and_then(|r| r.attributes.iter().find(|a| a.key == "service.name"))
                        .and_then(|a| text(a.value.as_ref()?))
                        .unwrap_or_default();
                    for scope in resource.scope_spans {
                        spans.extend(scope.spans.into_iter().map(|span| (service.clone(), span)));
                    }
                }
                // An empty ExportTraceServiceResponse: everything accepted.
                ([(axum::http::header::CONTENT_TYPE, "application/x-protobuf")], Vec::<u8>::new())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

fn text(value: &opentelemetry_proto::tonic::common::v1::AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| text(a.value.as_ref()?))
}

/// No attribute or event of any span carries `secret`.
fn nowhere(received: &Received, secret: &str) {
    for (_, span) in received.spans() {
        let values = span
            .attributes
            .iter()
            .chain(span.events.iter().flat_map(|e| e.attributes.iter()))
            .filter_map(|a| text(a.value.as_ref()?));
        for value in values {
            assert!(!value.contains(secret), "`{secret}` in span `{}`: {value}", span.name);
        }
    }
}

fn toolreg(root: &std::path::Path, endpoint: &str, service: &str) -> Command {
    let mut cmd = Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(root)
        .env_remove("TOOLREG_MCP_TOKEN")
        .env_remove("TOOLREG_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_SERVICE_NAME", service)
        .env("NO_COLOR", "1");
    cmd
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    dir
}

/// The spans reach the receiver by the time the process has exited (they
/// are flushed at exit); give the receiver's task a moment to store them.
async fn settle(received: &Received, name: &str) {
    for _ in 0..100 {
        if received.spans().iter().any(|(_, s)| s.name == name) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `toolreg call`: an `execute_tool` span with the tool, the call id, the
/// safety, the outcome and the arguments' hash, and not the arguments.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_is_exported_as_an_execute_tool_span() {
    let (endpoint, received) = receiver().await;
    let dir = workspace();
    let arguments = r#"{"path": "notes.txt", "limit": 1}"#;
    let out = tokio::task::spawn_blocking({
        let root = dir.path().to_owned();
        move || toolreg(&root, &endpoint, "toolreg-test").args(["call", "read_file", arguments]).output().unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    settle(&received, "execute_tool read_file").await;

    let span = received.one("execute_tool read_file", Some("toolreg-test"));
    assert_eq!(span.kind, SpanKind::Internal as i32);
    assert_eq!(attribute(&span, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    assert_eq!(attribute(&span, "gen_ai.tool.name").as_deref(), Some("read_file"));
    assert_eq!(attribute(&span, "gen_ai.tool.call.id").as_deref(), Some("cli-1"));
    assert_eq!(attribute(&span, "toolreg.tool.safety").as_deref(), Some("safe"));
    assert_eq!(attribute(&span, "toolreg.outcome").as_deref(), Some("ok"));
    assert_eq!(attribute(&span, "error.type"), None);
    let hash = attribute(&span, "toolreg.arguments.hash").expect("the arguments' hash");
    assert_eq!(hash.len(), 64, "{hash}");
    assert!(span.end_time_unix_nano > span.start_time_unix_nano);
    // The arguments' content (and the file's) never leaves.
    nowhere(&received, "notes.txt");
    nowhere(&received, "first line");

    // A failing call: its outcome and `error.type`.
    let (endpoint, received) = receiver().await;
    let out = tokio::task::spawn_blocking({
        let root = dir.path().to_owned();
        move || {
            toolreg(&root, &endpoint, "toolreg-test")
                .args(["call", "read_file", r#"{"path": "missing.txt"}"#])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    settle(&received, "execute_tool read_file").await;
    let span = received.one("execute_tool read_file", None);
    let outcome = attribute(&span, "toolreg.outcome").unwrap();
    assert_ne!(outcome, "ok");
    assert_eq!(attribute(&span, "error.type"), Some(outcome));
    assert_eq!(span.status.map(|s| s.code), Some(2), "status error");
}

/// An approved dangerous call: the decision and the approver on its span,
/// the written content nowhere.
#[tokio::test(flavor = "multi_thread")]
async fn an_approval_decision_is_on_the_tool_span() {
    let (endpoint, received) = receiver().await;
    let dir = workspace();
    let out = tokio::task::spawn_blocking({
        let root = dir.path().to_owned();
        move || {
            toolreg(&root, &endpoint, "approvals")
                .args(["call", "write_file", r#"{"path": "out.txt", "content": "top secret"}"#, "--yes"])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    settle(&received, "execute_tool write_file").await;
    let span = received.one("execute_tool write_file", None);
    assert_eq!(attribute(&span, "toolreg.tool.safety").as_deref(), Some("dangerous"));
    assert_eq!(attribute(&span, "toolreg.approval.decision").as_deref(), Some("approved"));
    assert_eq!(attribute(&span, "toolreg.approval.approver").as_deref(), Some("--yes"));
    assert_eq!(attribute(&span, "toolreg.outcome").as_deref(), Some("ok"));
    // Approved as called: the approval is bound to the arguments' hash.
    let hash = attribute(&span, "toolreg.arguments.hash").expect("the arguments' hash");
    assert_eq!(attribute(&span, "toolreg.approval.arguments.hash"), Some(hash));
    // The audit event's content is the span's own; it is not exported twice.
    assert!(span.events.is_empty(), "{:?}", span.events);
    nowhere(&received, "top secret");
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `toolreg serve` on stdio answers a `tools/call` whose `_meta` carries a
/// `traceparent`: its span is a child of that span, in that trace, and the
/// engine's `execute_tool` span a child of it.
#[tokio::test(flavor = "multi_thread")]
async fn a_served_call_joins_the_trace_of_its_traceparent() {
    let (endpoint, received) = receiver().await;
    let dir = workspace();
    let root = dir.path().to_owned();
    let status = tokio::task::spawn_blocking(move || {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_SERVICE_NAME", "served")];
        let (mut child, mut stdin, lines) = common::serve_stdio(&root, &[], &env);
        let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        lines.recv().unwrap();
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "notes.txt"},
            "_meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01"), "tracestate": "vendor=1"}}}));
        let call = lines.recv().unwrap();
        assert_eq!(call["result"]["isError"], false, "{call}");
        drop(stdin);
        child.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(status.success());
    settle(&received, "execute_tool read_file").await;

    let served = received.one("tools/call read_file", Some("served"));
    assert_eq!(served.kind, SpanKind::Server as i32);
    assert_eq!(hex(&served.trace_id), TRACE_ID);
    assert_eq!(hex(&served.parent_span_id), PARENT_ID);
    assert_eq!(served.trace_state, "vendor=1");
    assert_eq!(attribute(&served, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(&served, "gen_ai.tool.name").as_deref(), Some("read_file"));
    assert_eq!(attribute(&served, "jsonrpc.request.id").as_deref(), Some("2"));

    let tool = received.one("execute_tool read_file", Some("served"));
    assert_eq!(hex(&tool.trace_id), TRACE_ID);
    assert_eq!(tool.parent_span_id, served.span_id);
    assert_eq!(attribute(&tool, "gen_ai.tool.call.id").as_deref(), Some("2"));
    nowhere(&received, "notes.txt");
}

/// A client's `traceparent` that says "not sampled" does not hide its call
/// from the operator's traces: the served span and the tool's are exported
/// (the operator's default sampler samples them), in a trace of their own
/// linked to the client's span.
#[tokio::test(flavor = "multi_thread")]
async fn a_not_sampled_traceparent_does_not_hide_a_served_call() {
    let (endpoint, received) = receiver().await;
    let dir = workspace();
    let root = dir.path().to_owned();
    let status = tokio::task::spawn_blocking(move || {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_SERVICE_NAME", "served")];
        let (mut child, mut stdin, lines) = common::serve_stdio(&root, &[], &env);
        let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        lines.recv().unwrap();
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "notes.txt"},
            "_meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-00")}}}));
        let call = lines.recv().unwrap();
        assert_eq!(call["result"]["isError"], false, "{call}");
        drop(stdin);
        child.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(status.success());
    settle(&received, "execute_tool read_file").await;

    let served = received.one("tools/call read_file", Some("served"));
    assert_ne!(hex(&served.trace_id), TRACE_ID, "a trace the client does not sample is not joined");
    assert!(served.parent_span_id.is_empty(), "the served span is a root");
    let link = served.links.first().expect("a link to the client's span");
    assert_eq!((hex(&link.trace_id), hex(&link.span_id)), (TRACE_ID.to_owned(), PARENT_ID.to_owned()));
    let tool = received.one("execute_tool read_file", Some("served"));
    assert_eq!(tool.trace_id, served.trace_id);
    assert_eq!(tool.parent_span_id, served.span_id);
}

/// Through the gateway: a `tools/call` (with a `traceparent`) to a
/// `toolreg serve` that imports a second `toolreg serve` is one trace,
/// across both processes: the caller's span, the gateway's MCP server
/// span, its `execute_tool` (which is also the MCP client span, as the
/// conventions ask: no second span for the same tool execution), the
/// remote's MCP server span and the remote's `execute_tool`, each the child
/// of the one before.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_through_the_gateway_is_one_trace() {
    let (endpoint, received) = receiver().await;
    let outer = workspace();
    let inner = workspace();
    let config = outer.path().join("servers.json");
    let bin = assert_cmd::cargo::cargo_bin("toolreg");
    // The imported server is stopped (killed) with the gateway: it exports
    // its spans soon after they end rather than at exit.
    std::fs::write(
        &config,
        json!({"mcpServers": {"inner": {"command": bin, "args": ["serve", "--no-shell", "--root", inner.path()],
            "env": {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "inner",
                    "OTEL_BSP_SCHEDULE_DELAY": "50"}}}})
        .to_string(),
    )
    .unwrap();
    let root = outer.path().to_owned();
    let status = tokio::task::spawn_blocking(move || {
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()), ("OTEL_SERVICE_NAME", "gateway")];
        let (mut child, mut stdin, lines) =
            common::serve_stdio(&root, &["serve", "--config", config.to_str().unwrap()], &env);
        let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        lines.recv().unwrap();
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "inner__read_file", "arguments": {"path": "notes.txt"},
            "_meta": {"traceparent": format!("00-{TRACE_ID}-{PARENT_ID}-01")}}}));
        let call = lines.recv().unwrap();
        assert_eq!(call["result"]["isError"], false, "{call}");
        // Time for the imported server's export (every 50 ms).
        std::thread::sleep(Duration::from_millis(500));
        drop(stdin);
        child.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(status.success());
    settle(&received, "tools/call inner__read_file").await;

    let served = received.one("tools/call inner__read_file", Some("gateway"));
    let gateway_tool = received.one("execute_tool inner__read_file", Some("gateway"));
    let remote = received.one("tools/call read_file", Some("inner"));
    let remote_tool = received.one("execute_tool read_file", Some("inner"));
    assert_eq!(served.kind, SpanKind::Server as i32);
    assert_eq!(remote.kind, SpanKind::Server as i32);
    // The gateway's call to the imported server has no span of its own: its
    // MCP client attributes are on the gateway's `execute_tool` span.
    let gateway_spans: Vec<String> =
        received.spans().into_iter().filter(|(service, _)| service == "gateway").map(|(_, s)| s.name).collect();
    assert!(!gateway_spans.iter().any(|name| name == "tools/call read_file"), "{gateway_spans:?}");
    assert_eq!(attribute(&gateway_tool, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(&gateway_tool, "server.address").as_deref(), Some("inner"));
    for span in [&served, &gateway_tool, &remote, &remote_tool] {
        assert_eq!(hex(&span.trace_id), TRACE_ID, "{} is in another trace", span.name);
    }
    assert_eq!(hex(&served.parent_span_id), PARENT_ID);
    assert_eq!(gateway_tool.parent_span_id, served.span_id);
    assert_eq!(remote.parent_span_id, gateway_tool.span_id);
    assert_eq!(remote_tool.parent_span_id, remote.span_id);
    nowhere(&received, "notes.txt");
}

/// An endpoint on which nothing listens: the call succeeds, and promptly.
#[test]
fn a_collector_that_is_down_never_fails_or_slows_a_call() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let dir = workspace();
    let started = Instant::now();
    let out = toolreg(dir.path(), &format!("http://{addr}"), "down")
        .args(["call", "read_file", r#"{"path": "notes.txt"}"#])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("second line"));
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// A collector that takes the connection and never answers: the result is
/// printed at once; only the exit waits, at most the flush timeout (5 s).
#[test]
fn a_collector_that_hangs_never_slows_a_call() {
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", hole.local_addr().unwrap());
    let dir = workspace();
    let started = Instant::now();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .args(["call", "read_file", r#"{"path": "notes.txt"}"#])
        .env_remove("TOOLREG_LOG")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The result is on stdout before the process ends.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|line| line.unwrap().contains("second line")));
    let answered = started.elapsed();
    assert!(answered < Duration::from_secs(3), "answered after {answered:?}");
    assert!(child.wait().unwrap().success());
    let exited = started.elapsed();
    assert!(exited < Duration::from_secs(9), "exited after {exited:?}");
    drop(hole);
}

/// A protocol that is not built in (gRPC): one warning line on stderr, no
/// export, and the call runs.
#[test]
fn an_unsupported_protocol_is_one_warning_and_the_call_runs() {
    let dir = workspace();
    let out = toolreg(dir.path(), "http://127.0.0.1:4317", "grpc")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .args(["call", "read_file", r#"{"path": "notes.txt"}"#])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("OTLP protocol `grpc` is not supported"), "{err}");
}

/// `toolreg run`: `invoke_agent`, then per step a `chat` span with the
/// tokens the response reported and, for the step that calls a tool, the
/// `execute_tool` span, all in the run's trace.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_run_is_exported_with_its_model_requests_and_usage() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let model = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let answered = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
            let chunk = if answered {
                json!({"choices": [{"index": 0, "delta": {"content": "One file."}, "finish_reason": "stop"}]})
            } else {
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]})
            };
            let usage =
                json!({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}});
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: {usage}\n\ndata: [DONE]\n\n"))
        })
        .mount(&model)
        .await;
    let (endpoint, received) = receiver().await;
    let dir = workspace();
    let mut cmd = toolreg(dir.path(), &endpoint, "agent");
    cmd.args(["run", "What files are here?", "--model", "local", "--no-shell", "--base-url", &model.uri()])
        .env_remove("OPENAI_API_KEY");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    settle(&received, "invoke_agent").await;

    let run = received.one("invoke_agent", None);
    assert_eq!(attribute(&run, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
    assert_eq!(attribute(&run, "gen_ai.request.model").as_deref(), Some("local"));
    assert_eq!(attribute(&run, "gen_ai.usage.input_tokens").as_deref(), Some("22"));
    assert_eq!(attribute(&run, "gen_ai.usage.output_tokens").as_deref(), Some("14"));
    let chats: Vec<Span> = received.spans().into_iter().map(|(_, s)| s).filter(|s| s.name == "chat local").collect();
    assert_eq!(chats.len(), 2, "{:?}", received.names());
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(chat.trace_id, run.trace_id);
        assert_eq!(chat.parent_span_id, run.span_id);
        assert_eq!(attribute(chat, "gen_ai.operation.name").as_deref(), Some("chat"));
        assert_eq!(attribute(chat, "gen_ai.usage.input_tokens").as_deref(), Some("11"));
        assert_eq!(attribute(chat, "gen_ai.usage.output_tokens").as_deref(), Some("7"));
    }
    let tool = received.one("execute_tool list_files", None);
    assert_eq!(tool.trace_id, run.trace_id);
    let batch = received.one("tool_calls", None);
    assert_eq!(tool.parent_span_id, batch.span_id);
    assert_eq!(batch.parent_span_id, run.span_id);
    assert_eq!(attribute(&tool, "gen_ai.tool.call.id").as_deref(), Some("c1"));
    nowhere(&received, "notes.txt");
}
