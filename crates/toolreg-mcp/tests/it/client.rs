//! Importing remote MCP servers: a child process that misbehaves on
//! request, toolreg's own server over HTTP, and rmcp's server over HTTP.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::{CallOptions, FunctionRegistry, SafetyLevel, ToolCall, ToolEngine, ToolError, ToolExecutor};
use toolreg_mcp::client::{RemoteServer, local_name};
use toolreg_mcp::config::{McpConfig, ServerConfig, Transport};
use toolreg_mcp::server::{HttpOptions, McpServer, ServerOptions};

const HANG: Duration = Duration::from_secs(20);

fn fake() -> ServerConfig {
    fake_with(&[], BTreeMap::new(), None)
}

/// The fake server with these flags, environment entry and directory.
fn fake_with(flags: &[&str], env: BTreeMap<String, String>, cwd: Option<std::path::PathBuf>) -> ServerConfig {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    let mut args = vec!["-u".to_owned(), script.to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    ServerConfig::new(Transport::Command { command: "python3".into(), args, env, cwd })
        .call_timeout(Duration::from_secs(2))
}

async fn import(server: &RemoteServer) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let refused = server.register_into(&mut registry);
    assert!(refused.is_empty(), "{refused:?}");
    registry
}

async fn call(registry: &FunctionRegistry, name: &str, args: Value) -> toolreg::ToolResult {
    tokio::time::timeout(HANG, registry.execute_call(ToolCall::new("c1", name, args), CallOptions::default()))
        .await
        .expect("no answer in time")
}

#[tokio::test]
async fn imports_a_child_process_server_namespaced_and_untrusted() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let names: Vec<&str> = registry.list().map(|tool| tool.name()).collect();
    assert!(names.contains(&"fake__echo") && names.contains(&"fake__wipe"), "{names:?}");
    for name in &names {
        toolreg::validate_name(name).unwrap();
    }
    let odd = names.iter().find(|n| n.starts_with("fake__odd_name_with__dots_")).expect("a sanitised name");
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
    let options = toolreg::CallOptions::new().cancel(cancel);
    let result = engine.execute_call(ToolCall::new("c1", "fake__hang", json!({})), options).await;
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
        let text = result.text();
        assert!(text.contains("MCP server `fake`") || text.contains("MCP server 'fake'"), "{text}");
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
    assert!(server.listed_tools().iter().any(|t| t.name == "added"));
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
    // Spelled by the core's rule (`.` as `__`), with a hash since it changed.
    assert!(names[1].starts_with("srv__a__b_"), "{names:?}");
    let unique: HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for name in &names {
        toolreg::validate_name(name).unwrap();
        assert!(name.len() <= 64);
    }

    // A remote name crafted to equal another's sanitised form, listed first,
    // must not take the other's place.
    let sanitised = local_name("srv", "a.b", &mut HashSet::new());
    let crafted = sanitised.strip_prefix("srv__").unwrap().to_owned();
    let mut taken = HashSet::new();
    let first = local_name("srv", &crafted, &mut taken);
    let second = local_name("srv", "a.b", &mut taken);
    assert_eq!(first, sanitised);
    assert_ne!(first, second);
    toolreg::validate_name(&second).unwrap();
    // Each name is stable from one listing to the next.
    assert_eq!(second, local_name("srv", "a.b", &mut HashSet::from([first.clone()])));
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
    assert_eq!(config.search_model, None);

    for (text, expected) in [
        ("not json", "invalid MCP server configuration"),
        (r#"{"servers": {}}"#, "mcpServers"),
        (r#"{"mcpServers": {"a": {}}}"#, "needs a `command` or a `url`"),
        (r#"{"mcpServers": {"a": {"command": "x", "url": "http://y"}}}"#, "both"),
        (r#"{"mcpServers": {"a": {"url": "ftp://y"}}}"#, "not an http(s) URL"),
        (r#"{"mcpServers": {"a": {"command": "x", "safety": "reckless"}}}"#, "reckless"),
        (r#"{"mcpServers": {"a": {"command": "x", "timeoutMs": 0}}}"#, "positive"),
        (r#"{"mcpServers": {"a": {"type": "sse", "url": "https://y/sse"}}}"#, "server `a`: `\"type\": \"sse\"`"),
        (r#"{"mcpServers": {"a": {"type": "sse", "url": "https://y/sse"}}}"#, "streamable HTTP endpoint"),
        (r#"{"mcpServers": {"a": {"type": "websocket", "url": "https://y"}}}"#, "websocket"),
        (r#"{"mcpServers": {}, "searchModel": ""}"#, "`searchModel` is empty"),
        (
            r#"{"mcpServers": {"a": {"command": "x", "oauth": {"clientId": "c", "clientSecretEnv": "S"}}}}"#,
            "`oauth` is for a server at a `url`",
        ),
        (
            r#"{"mcpServers": {"a": {"url": "https://y/mcp", "oauth": {"clientId": "c", "clientSecret": "inline"}}}}"#,
            "clientSecret",
        ),
        (r#"{"mcpServers": {}, "searchModel": 3}"#, "invalid MCP server configuration"),
    ] {
        let error = McpConfig::from_json(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
    let missing = McpConfig::from_file(dir.path().join("nope.json")).unwrap_err().to_string();
    assert!(missing.contains("nope.json"), "{missing}");
}

/// A file shared with other clients: their keys (and typos) are named in
/// warnings, not a reason to refuse the file; `cwd` is read.
#[test]
fn shared_files_with_other_clients_keys_are_read() {
    let config = McpConfig::from_json(
        r#"{"mcpServers": {
            "a": {"type": "stdio", "command": "srv", "cwd": "/srv/a", "alwaysAllow": ["x"], "comand": "typo"},
            "b": {"type": "streamable-http", "url": "https://example.com/mcp", "autoApprove": []}
        }}"#,
    )
    .unwrap();
    assert!(
        matches!(&config.servers["a"].transport, Transport::Command { cwd: Some(dir), .. } if dir.as_path() == std::path::Path::new("/srv/a"))
    );
    assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
    for key in ["`alwaysAllow`", "`comand`", "`autoApprove`"] {
        assert!(config.warnings.iter().any(|w| w.contains(key)), "{key}: {:?}", config.warnings);
    }
    assert!(config.warnings.iter().any(|w| w.starts_with("server `b`")), "{:?}", config.warnings);
}

/// The child gets the few variables every server needs and its own `env`
/// entry, not the host's whole environment; it starts in its `cwd`.
#[tokio::test]
async fn a_command_server_gets_a_minimal_environment_and_its_cwd() {
    // Cargo sets this for the test process: the host has it, the server must not.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let dir = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(dir.path()).unwrap();
    let env = BTreeMap::from([("GIVEN_TO_IT".to_owned(), "yes".to_owned())]);
    let server = RemoteServer::connect("fake", fake_with(&[], env, Some(dir.clone()))).await.unwrap();
    let registry = import(&server).await;
    let seen = call(&registry, "fake__env", json!({})).await;
    let seen = seen.value().unwrap().clone();
    let env = seen["env"].as_object().unwrap();
    assert_eq!(env.get("GIVEN_TO_IT"), Some(&json!("yes")), "{seen}");
    assert!(env.contains_key("PATH"), "{seen}");
    assert!(!env.contains_key("CARGO_MANIFEST_DIR"), "{seen}");
    // (`python3` may be a wrapper script that sets variables of its own, so
    // check the host's variables rather than everything the server sees.)
    let host: Vec<String> = std::env::vars().map(|(key, _)| key).filter(|key| key.starts_with("CARGO")).collect();
    assert!(host.len() > 3, "{host:?}");
    for key in host {
        assert!(!env.contains_key(&key), "{key} reached the server: {seen}");
    }
    assert_eq!(seen["cwd"], json!(dir.to_str().unwrap()), "{seen}");
}

/// Waiting for `initialize` is bounded by the server's own timeout, not a
/// fixed 30 s.
#[tokio::test]
async fn a_server_that_never_answers_initialize_waits_only_its_timeout() {
    let config = fake_with(&["--mute"], BTreeMap::new(), None).call_timeout(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let error = RemoteServer::connect("mute", config).await.unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(error.contains("'mute'") && error.contains("`initialize` within 500ms"), "{error}");
}

/// A port nobody listens on: one line naming the server, the URL and the
/// cause, no Rust type names.
#[tokio::test]
async fn a_refused_connection_is_one_plain_line() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/mcp");
    let config = ServerConfig::new(Transport::Url { url: url.clone(), headers: BTreeMap::new() });
    let error = RemoteServer::connect("broken", config).await.unwrap_err().to_string();
    assert_eq!(error, format!("cannot connect to MCP server 'broken' at {url}: connection refused"));
}

/// A legacy HTTP+SSE URL given as a streamable HTTP one: the error says so,
/// in one line, without the error page.
#[tokio::test]
async fn a_legacy_sse_url_is_named_as_such() {
    let app = axum::Router::new().fallback(|| async {
        (axum::http::StatusCode::NOT_FOUND, [("content-type", "text/html")], "<html>\n<body>Not found</body>\n</html>")
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://{addr}/sse");
    let config = ServerConfig::new(Transport::Url { url: url.clone(), headers: BTreeMap::new() });
    let error = RemoteServer::connect("legacy", config).await.unwrap_err().to_string();
    assert!(error.starts_with(&format!("cannot connect to MCP server 'legacy' at {url}: ")), "{error}");
    assert!(error.contains("404") && error.contains("legacy HTTP+SSE endpoint"), "{error}");
    assert!(!error.contains('<') && !error.contains('\n'), "{error}");

    // A server that exits before answering: said plainly.
    let config = ServerConfig::new(Transport::Command {
        command: "python3".into(),
        args: vec!["-c".into(), "import sys; sys.exit(1)".into()],
        env: BTreeMap::new(),
        cwd: None,
    });
    let error = RemoteServer::connect("exits", config).await.unwrap_err().to_string();
    assert!(error.ends_with("it closed the connection before answering `initialize`"), "{error}");
}

/// A tool that runs only as an MCP task is imported with its task support
/// (which the gateway serves on) and called through the tasks extension:
/// the server answers with a task, polled to its result, its status
/// messages reported as progress; a call cancelled or timed out cancels the
/// remote task.
#[tokio::test]
async fn tools_that_require_mcp_tasks_are_called_as_tasks() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    assert!(server.left_out().is_empty(), "{:?}", server.left_out());
    let research = registry.get("fake__research").expect("imported");
    assert_eq!(research.declaration().task_support, Some(toolreg::TaskSupport::Required));
    assert_eq!(registry.get("fake__maybe").unwrap().declaration().task_support, Some(toolreg::TaskSupport::Optional));
    assert_eq!(registry.get("fake__echo").unwrap().declaration().task_support, None);

    // Polled to its result, the status messages as progress.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    let reporter = toolreg::ProgressReporter::new(move |p| log.lock().unwrap().push(p.message.unwrap_or_default()));
    let options = toolreg::CallOptions::new().extension(reporter);
    let found = registry.execute_call(ToolCall::new("c1", "fake__research", json!({"topic": "tides"})), options);
    let found = tokio::time::timeout(HANG, found).await.unwrap();
    assert_eq!(found.value(), Some(&json!("found: tides")), "{:?}", found.outcome);
    assert_eq!(*seen.lock().unwrap(), ["step 1", "step 2"]);

    // Cancelled by the caller: the remote task is cancelled.
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let options = toolreg::CallOptions::new().cancel(cancel);
    let call_forever = ToolCall::new("c2", "fake__research", json!({"forever": true}));
    let stopped = tokio::time::timeout(HANG, registry.execute_call(call_forever, options)).await.unwrap();
    assert!(matches!(stopped.error(), Some(ToolError::Cancelled)), "{:?}", stopped.outcome);

    // Past the call's timeout (2 s here): timed out, the remote task cancelled.
    let timed_out = call(&registry, "fake__research", json!({"forever": true})).await;
    assert!(matches!(timed_out.error(), Some(ToolError::Timeout { .. })), "{:?}", timed_out.outcome);
    let seen = call(&registry, "fake__cancelled", json!({})).await;
    let ids: Vec<Value> = serde_json::from_str(seen.value().unwrap().as_str().unwrap()).unwrap();
    // (A poll in flight when the call ended is cancelled too, by its request id.)
    let tasks: Vec<&Value> = ids.iter().filter(|id| id.is_string()).collect();
    assert_eq!(tasks, [&json!("task:task-2"), &json!("task:task-3")]);
}

/// More tools than one server may bring is a typed error, not memory spent.
#[tokio::test]
async fn too_many_tools_are_refused() {
    let many = (toolreg_mcp::client::MAX_TOOLS + 1).to_string();
    let config = fake_with(&["--many", &many], BTreeMap::new(), None).call_timeout(Duration::from_secs(60));
    let error = RemoteServer::connect("many", config).await.unwrap_err();
    assert!(matches!(error, toolreg_mcp::client::ClientError::TooLarge { .. }), "{error}");
    assert!(error.to_string().contains("tools"), "{error}");
}

/// A `tools/list` that never ends is cut off with a typed error; so is a
/// cursor that goes round in a circle.
#[tokio::test]
async fn endless_tool_lists_are_refused() {
    let config = fake_with(&["--endless-pages"], BTreeMap::new(), None).call_timeout(Duration::from_secs(60));
    let error = RemoteServer::connect("endless", config).await.unwrap_err();
    assert!(matches!(error, toolreg_mcp::client::ClientError::TooLarge { .. }), "{error}");
    assert!(error.to_string().contains("pages"), "{error}");

    let config = fake_with(&["--same-cursor"], BTreeMap::new(), None);
    let error = RemoteServer::connect("circle", config).await.unwrap_err().to_string();
    assert!(error.contains("repeats the cursor"), "{error}");
}

/// A server that is down at start-up is kept and retried; when it comes up
/// its tools are listed and the change is announced.
#[tokio::test]
async fn a_server_down_at_start_is_retried_until_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started-once");
    let config = fake_with(&["--fail-first", marker.to_str().unwrap()], BTreeMap::new(), None);
    let (server, first) = RemoteServer::connect_or_retry("late", config).await.unwrap();
    let first = first.expect("the first start fails").to_string();
    assert!(first.starts_with("cannot connect to MCP server 'late' started as `python3`"), "{first}");
    assert!(server.listed_tools().is_empty() && !server.is_connected());
    let mut changes = server.changes();
    tokio::time::timeout(HANG, async {
        while !server.listed_tools().iter().any(|t| t.name == "echo") {
            changes.changed().await.unwrap();
        }
    })
    .await
    .expect("never came up");
    let registry = import(&server).await;
    let echo = call(&registry, "late__echo", json!({"text": "up"})).await;
    assert_eq!(echo.value(), Some(&json!({"text": "up"})));
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_clear_error() {
    let config = ServerConfig::new(Transport::Command {
        command: "definitely-not-a-command-xyz".into(),
        args: vec![],
        env: BTreeMap::new(),
        cwd: None,
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

#[tokio::test]
async fn an_answer_over_the_message_limit_fails_its_call_at_once() {
    let server = RemoteServer::connect("fake", fake().call_timeout(Duration::from_secs(20))).await.unwrap();
    let registry = import(&server).await;
    let started = std::time::Instant::now();
    let huge = call(&registry, "fake__huge", json!({})).await;
    assert!(huge.is_error());
    assert!(!matches!(huge.error(), Some(ToolError::Timeout { .. })), "{:?}", huge.outcome);
    assert!(huge.text().contains("too large"), "{}", huge.text());
    assert!(started.elapsed() < Duration::from_secs(15), "waited for the timeout");
    // The connection is whole.
    assert_eq!(call(&registry, "fake__echo", json!({"text": "after"})).await.value(), Some(&json!({"text": "after"})));
}

/// A tool whose listing does not say it needs tasks (as over streamable
/// HTTP, where rmcp drops `execution`) is found by the server's answer to
/// its first plain call, and left out from then on.
#[tokio::test]
async fn a_tool_refused_as_needing_a_task_is_left_out_after_its_first_call() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let mut changes = server.changes();
    changes.borrow_and_update();
    let first = call(&registry, "fake__tasky", json!({})).await;
    assert!(first.text().contains("runs only as an MCP task"), "{}", first.text());
    assert!(changes.has_changed().unwrap(), "the change was not announced");
    assert!(server.left_out().iter().any(|(tool, _)| tool == "tasky"), "{:?}", server.left_out());
    assert!(!server.registrations().iter().any(|r| r.name() == "fake__tasky"));
    // Listed again, it stays out for this connection.
    server.refresh().await.unwrap();
    assert!(!server.registrations().iter().any(|r| r.name() == "fake__tasky"));
}

/// A question from a server whose call did not come over MCP has no one to
/// go to behind the gateway: the server is told so, and the call still answers.
#[tokio::test]
async fn a_question_with_no_mcp_client_behind_the_call_is_refused() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let mut registry = FunctionRegistry::new();
    let refused = toolreg_mcp::gateway::Gateway::new(vec![server]).register_into(&mut registry);
    assert!(refused.is_empty(), "{refused:?}");
    let asked = call(&registry, "fake__ask", json!({})).await;
    let answer: Value = serde_json::from_str(&asked.text()).unwrap();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no call of it in flight came from an MCP client"), "{answer}");
}

/// The server's `tools` configuration: only the allowed tools, one renamed
/// and described anew with an argument fixed that the model never sees.
#[tokio::test]
async fn a_servers_tool_configuration_filters_renames_and_fixes_arguments() {
    let config = McpConfig::from_json(
        r#"{"mcpServers": {"fake": {"command": "python3", "tools": {
            "allow": ["echo", "wipe", "fail"],
            "deny": ["wipe"],
            "rename": {"echo": "say"},
            "describe": {"echo": "Say the fixed text back."},
            "fixed": {"echo": {"text": "always this"}, "fail": {"no_such_argument": 1}}
        }}}}"#,
    )
    .unwrap();
    let filter = config.servers["fake"].tools.clone();
    let server = RemoteServer::connect("fake", fake().tools(filter)).await.unwrap();
    let mut registry = FunctionRegistry::new();
    assert!(server.register_into(&mut registry).is_empty());
    // `fail` is left out: its fixed argument does not exist.
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["fake__say"]);
    let say = registry.get("fake__say").unwrap().declaration();
    assert_eq!(say.description, "Say the fixed text back.");
    assert!(say.input_schema["properties"].get("text").is_none());
    let answer = call(&registry, "fake__say", json!({})).await;
    assert_eq!(answer.value(), Some(&json!({"text": "always this"})), "the remote got the fixed value");

    let bad = McpConfig::from_json(r#"{"mcpServers": {"x": {"command": "c", "tools": {"allow": "echo"}}}}"#);
    assert!(bad.is_err(), "a malformed tools key is refused with the file");
}

/// Answers as a host would: a form with a name, a fixed model reply.
struct Host;

#[allow(deprecated)]
impl toolreg_mcp::client::Answerer for Host {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: rmcp::model::ElicitRequestParams,
    ) -> futures_util::future::BoxFuture<'a, Result<rmcp::model::ElicitResult, String>> {
        Box::pin(async move {
            let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request else {
                return Err("only forms".to_owned());
            };
            Ok(rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"name": format!("{server}: {message}")})))
        })
    }

    fn sample<'a>(
        &'a self,
        _server: &'a str,
        _request: rmcp::model::CreateMessageRequestParams,
    ) -> futures_util::future::BoxFuture<'a, Result<rmcp::model::CreateMessageResult, String>> {
        Box::pin(async { Err("this host has no model".to_owned()) })
    }
}

/// With no MCP client behind a call, the server's questions go to the
/// host's answerer; its refusal reaches the server with its reason; with
/// no answerer the server is told no one can answer.
#[tokio::test]
async fn the_hosts_answerer_answers_questions_no_mcp_client_can() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let unanswered = call(&registry, "fake__ask", json!({})).await;
    let got: Value = serde_json::from_str(unanswered.value().unwrap().as_str().unwrap()).unwrap();
    assert!(got["error"]["message"].as_str().unwrap().contains("the host answers no questions"), "{got}");

    server.answer_with(std::sync::Arc::new(Host));
    let asked = call(&registry, "fake__ask", json!({})).await;
    let got: Value = serde_json::from_str(asked.value().unwrap().as_str().unwrap()).unwrap();
    assert_eq!(got["result"], json!({"action": "accept", "content": {"name": "fake: Your name?"}}), "{got}");
    let sampled = call(&registry, "fake__sample", json!({})).await;
    let got: Value = serde_json::from_str(sampled.value().unwrap().as_str().unwrap()).unwrap();
    assert!(got["error"]["message"].as_str().unwrap().ends_with("this host has no model"), "{got}");
}

/// Behind the gateway, a question with no MCP client behind the call goes
/// to the host's answerer set on the gateway.
#[tokio::test]
async fn behind_the_gateway_the_hosts_answerer_answers_questions_no_mcp_client_can() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let gateway = toolreg_mcp::gateway::Gateway::new(vec![server]);
    gateway.answer_with(std::sync::Arc::new(Host));
    let mut registry = FunctionRegistry::new();
    assert!(gateway.register_into(&mut registry).is_empty());
    let asked = call(&registry, "fake__ask", json!({})).await;
    let got: Value = serde_json::from_str(asked.value().unwrap().as_str().unwrap()).unwrap();
    assert_eq!(got["result"], json!({"action": "accept", "content": {"name": "fake: Your name?"}}), "{got}");
}

/// A remote task's question (`input_required`) goes to whoever answers the
/// server's own requests (here the host), and the answer back with
/// `tasks/update`; with no one to answer, the task is cancelled and the call
/// fails saying why.
#[tokio::test]
async fn a_remote_tasks_question_is_answered_and_the_task_goes_on() {
    let server = RemoteServer::connect("fake", fake()).await.unwrap();
    let registry = import(&server).await;
    let unanswered = call(&registry, "fake__research", json!({"topic": "tides", "ask": true})).await;
    let error = unanswered.error().map(ToString::to_string).unwrap_or_default();
    assert!(error.contains("the task's question could not be answered"), "{:?}", unanswered.outcome);
    let seen = call(&registry, "fake__cancelled", json!({})).await;
    assert!(seen.value().unwrap().as_str().unwrap().contains("task:task-1"), "the unanswered task was cancelled");

    server.answer_with(std::sync::Arc::new(Host));
    let answered = call(&registry, "fake__research", json!({"topic": "tides", "ask": true})).await;
    let expected = r#"found: tides for {"action": "accept", "content": {"name": "fake: Who is asking?"}}"#;
    assert_eq!(answered.value(), Some(&json!(expected)), "{:?}", answered.outcome);
}

/// Whether a process whose command line names `marker` still runs.
#[cfg(target_os = "linux")]
fn runs_with(marker: &std::path::Path) -> bool {
    let marker = marker.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|line| String::from_utf8_lossy(&line).replace('\0', " ").contains(&marker))
    })
}

/// Closing a command server ends it as the MCP stdio transport asks: its
/// input closes and it exits on its own, doing what it does on the way out.
/// Nothing reconnects it; a call after it fails saying so.
#[tokio::test]
async fn closing_a_child_server_lets_it_exit_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("exit");
    let config = fake_with(&["--on-exit", marker.to_str().unwrap()], BTreeMap::new(), None);
    let server = RemoteServer::connect("fake", config).await.unwrap();
    let registry = import(&server).await;
    let started = std::time::Instant::now();
    server.close().await;
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "eof\n");
    #[cfg(target_os = "linux")]
    assert!(!runs_with(&marker));
    let error = call(&registry, "fake__echo", json!({})).await.outcome.unwrap_err().to_string();
    assert!(error.contains("the connection was closed"), "{error}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!server.is_connected(), "reconnected after close");
}

/// A server that stays when its input closes gets SIGTERM, and one that
/// stays after that is killed: `close` returns either way, in bounded time.
#[tokio::test]
async fn a_child_server_that_stays_gets_sigterm_then_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("exit");
    let config = fake_with(&["--on-exit", marker.to_str().unwrap(), "--stubborn"], BTreeMap::new(), None);
    let server = RemoteServer::connect("fake", config).await.unwrap();
    let started = std::time::Instant::now();
    server.close().await;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(3) && took < Duration::from_secs(8), "{took:?}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "eof\nterm\n");
    #[cfg(target_os = "linux")]
    assert!(!runs_with(&marker));
}
