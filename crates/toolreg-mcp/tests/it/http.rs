//! The streamable HTTP endpoint: a real listener, real HTTP requests.

use std::net::SocketAddr;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration};
use toolreg_mcp::server::{HttpOptions, McpServer, ServerOptions};

fn server() -> McpServer {
    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("echo")
        .description("Echo the arguments.")
        .optional_param("n", ParamType::Integer, "a number")
        .safety(SafetyLevel::Safe)
        .build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), decl).unwrap();
    McpServer::from_registry(&r, ServerOptions::default())
}

async fn start(options: HttpOptions) -> (SocketAddr, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = server();
    let running = options.clone();
    tokio::spawn(async move { served.serve_http_on(listener, running).await });
    (addr, options)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "1"}}})
}

async fn post(addr: SocketAddr, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = crate::support::http_client()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&initialize());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn bearer_token_is_required_when_set() {
    let (addr, options) = start(HttpOptions::default().bearer_token("s3cret")).await;
    let missing = post(addr, &[]).await;
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    assert_eq!(post(addr, &[("authorization", "Bearer wrong")]).await.status(), 401);
    assert_eq!(post(addr, &[("authorization", "Bearer s3cret")]).await.status(), 200);
    options.shutdown.cancel();
}

#[tokio::test]
async fn foreign_origins_and_hosts_are_refused() {
    let (addr, options) = start(HttpOptions::default()).await;
    let evil = post(addr, &[("origin", "http://evil.example")]).await;
    assert_eq!(evil.status(), 403);
    let rebinding = post(addr, &[("host", "evil.example")]).await;
    assert!(rebinding.status().is_client_error(), "{}", rebinding.status());
    let local = post(addr, &[("origin", &format!("http://localhost:{}", addr.port()))]).await;
    assert_eq!(local.status(), 200);
    // No Origin at all: not a browser, allowed.
    assert_eq!(post(addr, &[]).await.status(), 200);
    options.shutdown.cancel();
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let (addr, options) = start(HttpOptions::default().max_body_bytes(1024)).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x".repeat(4096)}});
    let response = crate::support::http_client()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    options.shutdown.cancel();
}

#[tokio::test]
async fn rmcp_client_round_trip_stateful_and_stateless() {
    for stateless in [false, true] {
        let (addr, options) = start(HttpOptions::default().stateless(stateless)).await;
        let transport = {
            crate::support::install_tls();
            StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"))
        };
        let client = ().serve(transport).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools[0].name, "echo");
        let args = json!({"n": 3}).as_object().cloned().unwrap();
        let result = client.call_tool(CallToolRequestParams::new("echo").with_arguments(args)).await.unwrap();
        assert_eq!(result.structured_content, Some(json!({"n": 3})), "stateless: {stateless}");
        client.cancel().await.unwrap();
        options.shutdown.cancel();
    }
}

// The edge: timeouts, checks before bodies, a bound on connections, and
// the SSE priming event by revision.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Open a connection and send `head` (and nothing more).
async fn connect(addr: SocketAddr, head: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

/// What the server sends until it closes the connection or `wait` passes:
/// the text, and whether it closed.
async fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let mut buffer = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return (String::from_utf8_lossy(&got).into_owned(), false),
            Ok(Ok(0) | Err(_)) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(Ok(n)) => got.extend_from_slice(&buffer[..n]),
        }
    }
}

/// The head of a POST of `length` bytes of JSON, with these extra headers.
fn post_head(addr: SocketAddr, host: Option<&str>, extra: &str, length: usize) -> String {
    let host = host.map_or_else(|| addr.to_string(), str::to_owned);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}Content-Length: {length}\r\n\r\n"
    )
}

#[tokio::test]
async fn connections_that_never_finish_their_headers_are_closed() {
    let (addr, options) = start(HttpOptions::default().header_read_timeout(Duration::from_millis(300))).await;
    let started = Instant::now();
    let mut slow = connect(addr, "POST /mcp HTTP/1.1\r\nHost: localhost\r\n").await;
    let (_, closed) = read_until_closed(&mut slow, Duration::from_secs(5)).await;
    assert!(closed, "a connection that never finished its headers is still open after 5 s");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // The server is none the worse.
    assert_eq!(post(addr, &[]).await.status(), 200);
    options.shutdown.cancel();
}

/// With tasks on, the router also looks at request bodies: still, a
/// request refused for its headers is refused before its body is read.
#[tokio::test]
async fn refused_requests_are_answered_without_reading_their_bodies() {
    let store = toolreg_store::SqliteStore::in_memory().await.unwrap();
    let tasks = toolreg_mcp::server::TaskOptions::new(store.namespace("mcp-tasks").unwrap());
    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("echo").description("Echo.").safety(SafetyLevel::Safe).build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), decl).unwrap();
    let served = McpServer::from_registry(&r, ServerOptions::default().tasks(tasks));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = HttpOptions::default().bearer_token("s3cret");
    let running = options.clone();
    tokio::spawn(async move { served.serve_http_on(listener, running).await });

    let token = "Authorization: Bearer s3cret\r\n";
    let cases = [
        (post_head(addr, Some("evil.example"), token, 4 << 20), "403"),
        (post_head(addr, None, &format!("{token}Origin: http://evil.example\r\n"), 4 << 20), "403"),
        (post_head(addr, None, "Authorization: Bearer wrong\r\n", 4 << 20), "401"),
    ];
    for (head, status) in cases {
        let mut stream = connect(addr, &head).await;
        let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(2)).await;
        assert!(answer.starts_with(&format!("HTTP/1.1 {status}")), "{head:?} got {answer:?}");
    }
    options.shutdown.cancel();
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408() {
    let (addr, options) = start(HttpOptions::default().body_read_timeout(Duration::from_millis(300))).await;
    let mut stream = connect(addr, &post_head(addr, None, "", 1000)).await;
    stream.write_all(b"{\"jsonrpc\":").await.unwrap();
    let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    options.shutdown.cancel();
}

#[tokio::test]
async fn open_connections_are_bounded() {
    let (addr, options) = start(HttpOptions::default().max_connections(2)).await;
    let mut first = connect(addr, "POST /mcp HTTP/1.1\r\n").await;
    let _second = connect(addr, "POST /mcp HTTP/1.1\r\n").await;
    // Both places are taken: a third client is not served...
    let waiting = tokio::spawn(async move { post(addr, &[]).await.status() });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "a third connection was served while two were open, the bound");
    // ...until one closes.
    first.shutdown().await.unwrap();
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("served once a place freed");
    assert_eq!(status.unwrap(), 200);
    options.shutdown.cancel();
}

/// The SSE priming event (empty `data`, an `id`, a `retry`) is for clients
/// on 2025-11-25 and later; a 2025-06-18 client (Gemini CLI's) gets none,
/// neither in the answer to `initialize` nor later in its session.
#[tokio::test]
async fn the_priming_event_goes_only_to_clients_that_know_it() {
    let (addr, options) = start(HttpOptions::default()).await;
    let client = crate::support::http_client();
    let initialize = |revision: &str| {
        let mut message = initialize();
        message["params"]["protocolVersion"] = json!(revision);
        client
            .post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&message)
            .send()
    };
    let old = initialize("2025-06-18").await.unwrap();
    let session = old.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let text = old.text().await.unwrap();
    assert!(text.starts_with("data: {"), "{text:?}");
    assert!(!text.contains("retry:"), "{text:?}");
    for line in text.lines().filter_map(|line| line.strip_prefix("data:")) {
        serde_json::from_str::<Value>(line.trim()).unwrap_or_else(|e| panic!("`{line}` is not a message: {e}"));
    }
    let initialized = client
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(initialized.status().is_success(), "{}", initialized.status());
    let later = client
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(later.starts_with("data: {") && !later.contains("retry:"), "{later:?}");

    let new = initialize("2025-11-25").await.unwrap().text().await.unwrap();
    assert!(new.starts_with("data: \nid: 0\nretry: 3000\n\n"), "{new:?}");
    options.shutdown.cancel();
}

/// Who a call runs for, as the audit names it: over HTTP, whoever holds the
/// bearer token (nobody without one); over stdio, the local user.
#[tokio::test]
async fn the_audit_names_who_each_transport_says_is_calling() {
    use std::sync::Arc;
    use toolreg::PrincipalSource;
    use toolreg::policy::MemorySink;

    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("echo").description("Echo.").safety(SafetyLevel::Safe).build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), decl).unwrap();
    let audit = Arc::new(MemorySink::new());
    let engine = McpServer::engine_builder(&r, &ServerOptions::default()).audit(Arc::clone(&audit)).build();
    for token in [Some("s3cret"), None] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let options = match token {
            Some(token) => HttpOptions::default().bearer_token(token),
            None => HttpOptions::default(),
        };
        let served = McpServer::new(engine.clone(), ServerOptions::default());
        let running = options.clone();
        tokio::spawn(async move { served.serve_http_on(listener, running).await });
        crate::support::install_tls();
        let mut config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://{addr}/mcp"),
        );
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        client.call_tool(CallToolRequestParams::new("echo")).await.unwrap();
        client.cancel().await.unwrap();
        options.shutdown.cancel();
    }
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let served = McpServer::new(engine.clone(), ServerOptions::default());
    let (read, write) = tokio::io::split(server_end);
    tokio::spawn(async move { served.serve_stream(read, write, toolreg_mcp::server::StdioOptions::default()).await });
    let client = ().serve(client_end).await.unwrap();
    client.call_tool(CallToolRequestParams::new("echo")).await.unwrap();
    client.cancel().await.unwrap();

    let events = audit.take();
    assert_eq!(events.len(), 3, "{events:?}");
    let holder = events[0].principal.as_ref().unwrap();
    assert_eq!((holder.subject.as_str(), &holder.source), ("bearer-token", &PrincipalSource::SharedSecret));
    assert_eq!(events[1].principal, None);
    assert_eq!(events[2].principal.as_ref().unwrap().source, PrincipalSource::Local);
}
