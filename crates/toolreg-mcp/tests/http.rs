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
    let mut request = reqwest::Client::new()
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
    let response = reqwest::Client::new()
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
        let transport = StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
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
