//! Importing remote MCP servers: a child process that misbehaves on
//! request, toolreg's own server over HTTP, and rmcp's server over HTTP.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::{FunctionRegistry, SafetyLevel, ToolCall, ToolEngine, ToolError, ToolExecutor};
use toolreg_mcp::client::{RemoteServer, local_name};
use toolreg_mcp::config::{McpConfig, ServerConfig, Transport};
use toolreg_mcp::server::{HttpOptions, McpServer, ServerOptions};

const HANG: Duration = Duration::from_secs(20);

fn fake() -> ServerConfig {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    ServerConfig::new(Transport::Command {
        command: "python3".into(),
        args: vec!["-u".into(), script.into()],
        env: BTreeMap::new(),
    })
    .call_timeout(Duration::from_secs(2))
}

async fn import(server: &RemoteServer) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let refused = server.register_into(&mut registry);
    assert!(refused.is_empty(), "{refused:?}");
    registry
}

async fn call(registry: &FunctionRegistry, name: &str, args: Value) -> toolreg::ToolResult {
    tokio::time::timeout(HANG, registry.execute_call(ToolCall::new("c1", name, args))).await.expect("no answer in time")
}

#[tokio::test]
async fn imports_a_child_process_server_namespaced_and_untrusted() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let names: Vec<&str> = registry.names().collect();
    assert!(names.contains(&"fake__echo") && names.contains(&"fake__wipe"), "{names:?}");
    for name in &names {
        toolreg::validate_name(name).unwrap();
    }
    let odd = names.iter().find(|n| n.starts_with("fake__odd_name_with_dots_")).expect("a sanitised name");
    assert!(odd.len() <= 64);

    // Annotations never lower the floor (cautious); destructive raises it.
    assert_eq!(registry.get("fake__echo").unwrap().declaration().safety, SafetyLevel::Cautious);
    assert_eq!(registry.get("fake__wipe").unwrap().declaration().safety, SafetyLevel::Dangerous);

    let echo = call(&registry, "fake__echo", json!({"text": "hi"})).await;
    assert_eq!(echo.value(), Some(&json!({"text": "hi"})));
    // The remote name goes out, not the local one.
    let odd_result = call(&registry, odd, json!({})).await;
    assert_eq!(odd_result.value(), Some(&json!("done odd name/with.dots")));

    let failed = call(&registry, "fake__fail", json!({})).await;
    assert!(failed.text().contains("the disk is on fire"), "{}", failed.text());

    // A line that is not JSON does not break the connection.
    let after = call(&registry, "fake__garbage", json!({})).await;
    assert_eq!(after.value(), Some(&json!("after garbage")));

    // A server that never answers: the call times out, the next one works.
    let hung = call(&registry, "fake__hang", json!({})).await;
    assert!(matches!(hung.error(), Some(ToolError::Timeout { .. })), "{:?}", hung.outcome);
    assert!(!call(&registry, "fake__echo", json!({})).await.is_error());
}

#[tokio::test]
async fn cancelling_a_call_tells_the_server() {
    let server = RemoteServer::connect("fake", fake().call_timeout(Duration::from_secs(30))).await.unwrap();
    let registry = import(&server).await;
    let engine = ToolEngine::builder(&registry)
        .approver(toolreg::policy::approver_fn("yes", |r: toolreg::policy::ApprovalRequest| {
            let d = r.approve();
            async move { d }
        }))
        .build();
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.cancel();
    });
    let result = engine.execute_call_with(ToolCall::new("c1", "fake__hang", json!({})), cancel).await;
    assert!(matches!(result.error(), Some(ToolError::Cancelled)), "{:?}", result.outcome);
    let seen = call(&registry, "fake__cancelled", json!({})).await;
    let ids: Vec<Value> = serde_json::from_str(seen.value().unwrap().as_str().unwrap()).unwrap();
    assert_eq!(ids.len(), 1, "{ids:?}");
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_reconnected() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let first_pid = server.child_pid().unwrap();
    let died = call(&registry, "fake__die", json!({})).await;
    assert!(died.is_error(), "{:?}", died.outcome);
    let deadline = tokio::time::Instant::now() + HANG;
    loop {
        let result = call(&registry, "fake__echo", json!({"text": "back"})).await;
        if !result.is_error() {
            assert_eq!(result.value(), Some(&json!({"text": "back"})));
            break;
        }
        assert!(result.text().contains("MCP server `fake`"), "{}", result.text());
        assert!(tokio::time::Instant::now() < deadline, "never reconnected: {}", result.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(server.child_pid(), Some(first_pid));
}

#[tokio::test]
async fn list_changed_is_followed() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let mut changes = server.changes();
    changes.borrow_and_update();
    assert!(!call(&registry, "fake__change", json!({})).await.is_error());
    tokio::time::timeout(HANG, changes.changed()).await.expect("no change seen").unwrap();
    assert!(server.tools().iter().any(|t| t.name == "added"));
    let again = import(&server).await;
    assert!(again.contains("fake__added"));
}

#[tokio::test]
async fn the_child_is_killed_on_drop() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let pid = server.child_pid().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(server);
    let deadline = tokio::time::Instant::now() + HANG;
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(tokio::time::Instant::now() < deadline, "child {pid} still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn imports_toolreg_over_http_through_both_engines() {
    // The remote: a toolreg server with one tool, over streamable HTTP with a token.
    let mut remote = FunctionRegistry::new();
    let decl = toolreg::ToolDeclaration::builder("add")
        .description("Add two integers.")
        .param("a", toolreg::ParamType::Integer, "a")
        .param("b", toolreg::ParamType::Integer, "b")
        .safety(SafetyLevel::Safe)
        .build();
    remote
        .register_sync_tool(
            "add",
            |args: Value| Ok::<_, String>(json!({"sum": args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()})),
            decl,
        )
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = HttpOptions::default().bearer_token("t0ken");
    let served = McpServer::from_registry(&remote, ServerOptions::default());
    let running = options.clone();
    tokio::spawn(async move { served.serve_http_on(listener, running).await });

    let config = McpConfig::from_json(&format!(
        r#"{{"mcpServers": {{"math": {{"url": "http://{addr}/mcp", "headers": {{"Authorization": "Bearer t0ken"}}}}}}}}"#
    ))
    .unwrap();
    let server = RemoteServer::connect("math", config.servers["math"].clone()).await.unwrap();
    let registry = import(&server).await;
    // The remote said read-only; here it is cautious, the default floor.
    assert_eq!(registry.get("math__add").unwrap().declaration().safety, SafetyLevel::Cautious);
    let sum = call(&registry, "math__add", json!({"a": 2, "b": 40})).await;
    assert_eq!(sum.value(), Some(&json!({"sum": 42})));
    // Argument errors are checked locally, against the remote's schema.
    let bad = call(&registry, "math__add", json!({"a": "two", "b": 1})).await;
    assert!(bad.text().contains("`/a`"), "{}", bad.text());

    // Without the token the server refuses to talk.
    let no_token =
        McpConfig::from_json(&format!(r#"{{"mcpServers": {{"m": {{"url": "http://{addr}/mcp"}}}}}}"#)).unwrap();
    let refused = RemoteServer::connect("m", no_token.servers["m"].clone()).await.unwrap_err();
    assert!(refused.to_string().contains("cannot connect"), "{refused}");
    options.shutdown.cancel();
}

#[test]
fn local_names_follow_every_providers_rule_and_never_collide() {
    let mut taken = HashSet::new();
    let long = "x".repeat(100);
    let names = [
        local_name("srv", "read", &mut taken),
        local_name("srv", "a.b", &mut taken),
        local_name("srv", "a_b", &mut taken),
        local_name("srv", &long, &mut taken),
        local_name("srv", &format!("{long}y"), &mut taken),
    ];
    assert_eq!(names[0], "srv__read");
    let unique: HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for name in &names {
        toolreg::validate_name(name).unwrap();
        assert!(name.len() <= 64);
    }
}

#[test]
fn mcp_servers_files_are_read_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("servers.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {
            "a": {"command": "srv", "args": ["-v"], "env": {"K": "V"}, "safety": "dangerous", "timeoutMs": 1500},
            "b": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "1"}},
            "off": {"command": "x", "disabled": true}
        }}"#,
    )
    .unwrap();
    let config = McpConfig::from_file(&path).unwrap();
    assert_eq!(config.servers.len(), 2);
    assert_eq!(config.servers["a"].safety, SafetyLevel::Dangerous);
    assert_eq!(config.servers["a"].call_timeout, Duration::from_millis(1500));
    assert!(matches!(&config.servers["b"].transport, Transport::Url { url, .. } if url == "https://example.com/mcp"));

    for (text, expected) in [
        ("not json", "invalid MCP server configuration"),
        (r#"{"servers": {}}"#, "mcpServers"),
        (r#"{"mcpServers": {"a": {}}}"#, "needs a `command` or a `url`"),
        (r#"{"mcpServers": {"a": {"command": "x", "url": "http://y"}}}"#, "both"),
        (r#"{"mcpServers": {"a": {"url": "ftp://y"}}}"#, "not an http(s) URL"),
        (r#"{"mcpServers": {"a": {"command": "x", "safety": "reckless"}}}"#, "reckless"),
        (r#"{"mcpServers": {"a": {"command": "x", "timeoutMs": 0}}}"#, "positive"),
        (r#"{"mcpServers": {"a": {"command": "x", "comand": "typo"}}}"#, "comand"),
    ] {
        let error = McpConfig::from_json(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
    let missing = McpConfig::from_file(dir.path().join("nope.json")).unwrap_err().to_string();
    assert!(missing.contains("nope.json"), "{missing}");
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_clear_error() {
    let config = ServerConfig::new(Transport::Command {
        command: "definitely-not-a-command-xyz".into(),
        args: vec![],
        env: BTreeMap::new(),
    });
    let error = RemoteServer::connect("gone", config).await.unwrap_err().to_string();
    assert!(error.contains("definitely-not-a-command-xyz"), "{error}");
    let bad_name = RemoteServer::connect("has space", fake()).await.unwrap_err().to_string();
    assert!(bad_name.contains("invalid server name"), "{bad_name}");
}

mod rmcp_side {
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Shout {
        /// What to shout.
        pub text: String,
    }

    #[derive(Clone)]
    pub struct Loud {
        tool_router: ToolRouter<Loud>,
    }

    #[tool_router]
    impl Loud {
        pub fn new() -> Self {
            Loud { tool_router: Self::tool_router() }
        }

        #[tool(description = "Shout the text.", annotations(read_only_hint = true))]
        fn shout(&self, Parameters(Shout { text }): Parameters<Shout>) -> String {
            text.to_uppercase()
        }

        #[tool(description = "Delete the text.", annotations(destructive_hint = true))]
        fn erase(&self, Parameters(Shout { text }): Parameters<Shout>) -> String {
            format!("erased {}", text.len())
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Loud {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }
}

/// rmcp's own server, imported: its tools behave as ours, and its
/// annotations raise safety but never lower it.
#[tokio::test]
async fn imports_an_rmcp_server() {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    let service = StreamableHttpService::new(
        || Ok(rmcp_side::Loud::new()),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });

    let config = ServerConfig::new(Transport::Url { url: format!("http://{addr}/mcp"), headers: BTreeMap::new() });
    let server = RemoteServer::connect("loud", config).await.unwrap();
    let registry = import(&server).await;
    assert_eq!(registry.get("loud__shout").unwrap().declaration().safety, SafetyLevel::Cautious);
    assert_eq!(registry.get("loud__erase").unwrap().declaration().safety, SafetyLevel::Dangerous);
    let shout = call(&registry, "loud__shout", json!({"text": "hi"})).await;
    assert_eq!(shout.value(), Some(&json!("HI")));
    let missing = call(&registry, "loud__shout", json!({})).await;
    assert!(missing.text().contains("text"), "{}", missing.text());
}
