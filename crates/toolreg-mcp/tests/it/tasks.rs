//! MCP tasks on the server: a long-running tool answered with a task, its
//! state in the context store (shared by two servers), cancellation, a
//! runner that died, and every bad id refused with a typed error.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolreg::{CallContext, FunctionRegistry, ParamType, SafetyLevel, TaskSupport, ToolDeclaration, ToolRegistration};
use toolreg_mcp::server::{InputRound, McpServer, ServerOptions, StdioOptions, TaskOptions, is_task_id};
use toolreg_store::{Namespace, PostgresStore, SqliteStore};

use crate::support::Raw;

// The store's own PostgreSQL test support: a server from
// `TOOLREG_TEST_POSTGRES_URL` or started privately, else one line saying
// what was skipped.
#[path = "../../../toolreg-store/tests/it/support/postgres.rs"]
mod postgres;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn decl(name: &str, support: Option<TaskSupport>) -> ToolDeclaration {
    let decl = ToolDeclaration::builder(name)
        .description(format!("The {name} tool."))
        .optional_param("ms", ParamType::Integer, "milliseconds")
        .optional_param("bytes", ParamType::Integer, "result size")
        .safety(SafetyLevel::Safe)
        .build();
    match support {
        Some(support) => decl.with_task_support(support),
        None => decl,
    }
}

/// `sleepy` reports progress, sleeps `ms` and answers; `waiter` waits for
/// its cancellation and records it; `big` answers `bytes` characters;
/// `must` runs only as a task; `plain` never does.
fn registry(cancelled: &Arc<AtomicBool>) -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    r.register(ToolRegistration::new(
        decl("sleepy", Some(TaskSupport::Optional)),
        |cx: CallContext, args: Value| async move {
            cx.report_progress(1.0, Some(2.0), Some("halfway"));
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, String>(json!(format!("slept {ms} ms")))
        },
    ))
    .unwrap();
    let seen = Arc::clone(cancelled);
    r.register(ToolRegistration::new(decl("waiter", Some(TaskSupport::Optional)), move |cx: CallContext, _: Value| {
        let seen = Arc::clone(&seen);
        async move {
            cx.cancelled().await;
            seen.store(true, Ordering::SeqCst);
            Ok::<_, String>(json!("stopped"))
        }
    }))
    .unwrap();
    r.register_sync_tool(
        "big",
        |args: Value| Ok::<_, String>(json!("x".repeat(args["bytes"].as_u64().unwrap_or(0) as usize))),
        decl("big", Some(TaskSupport::Optional)),
    )
    .unwrap();
    r.register_sync_tool("must", |_: Value| Ok::<_, String>(json!("ran")), decl("must", Some(TaskSupport::Required)))
        .unwrap();
    r.register_sync_tool("plain", |_: Value| Ok::<_, String>(json!("plain")), decl("plain", None)).unwrap();
    // Asks two questions at once, then answers with both replies.
    r.register(ToolRegistration::new(
        decl("ask", Some(TaskSupport::Optional)),
        |cx: CallContext, _: Value| async move {
            let round = cx.extensions().get::<InputRound>().ok_or("no round")?;
            let reply = |key: &str| round.response(key).and_then(|a| a["content"]["name"].as_str()).map(str::to_owned);
            if let (Some(a), Some(b)) = (reply("first"), reply("second")) {
                return Ok::<_, String>(json!(format!("{a} and {b}")));
            }
            let question = |message: &str| {
                json!({"method": "elicitation/create", "params": {"mode": "form",
            "message": message, "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
            };
            let asked = json!({"first": question("First?"), "second": question("Second?")});
            round.ask(serde_json::from_value(asked).map_err(|e| e.to_string())?, Value::Null);
            Ok(Value::Null)
        },
    ))
    .unwrap();
    r
}

fn fast(options: TaskOptions) -> TaskOptions {
    options.heartbeat(Duration::from_millis(20), Duration::from_millis(300)).poll_interval(Duration::from_millis(10))
}

async fn server_on(
    store: &SqliteStore,
    cancelled: &Arc<AtomicBool>,
    tune: impl FnOnce(TaskOptions) -> TaskOptions,
) -> McpServer {
    server_in(store.namespace("mcp-tasks").unwrap(), cancelled, tune)
}

fn server_in(
    namespace: Namespace,
    cancelled: &Arc<AtomicBool>,
    tune: impl FnOnce(TaskOptions) -> TaskOptions,
) -> McpServer {
    let tasks = tune(fast(TaskOptions::new(namespace)));
    McpServer::from_registry(&registry(cancelled), ServerOptions::default().tasks(tasks))
}

async fn client(server: McpServer) -> Raw {
    let mut raw = Raw::start(server, StdioOptions::default());
    let init = raw.initialize(json!({"extensions": {TASKS: {}}})).await;
    assert!(init["result"]["capabilities"]["extensions"][TASKS].is_object(), "{init}");
    raw
}

/// A client that sends one JSON-RPC request and takes its answer: over a
/// stream ([`Raw`]) or over HTTP ([`Http`]).
trait Rpc {
    async fn rpc(&mut self, id: i64, method: &str, params: Value) -> Value;
}

impl Rpc for Raw {
    async fn rpc(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.answer(json!(id)).await
    }
}

/// A client over streamable HTTP: a handshake-era client in its own MCP
/// session, or a 2026-07-28 one on a stateless server (no session: every
/// request carries its revision and capabilities).
struct Http {
    http: reqwest::Client,
    url: String,
    /// The MCP session, once `initialize` gave it.
    session: Option<String>,
    /// A 2026-07-28 client without a session.
    stateless: bool,
    /// Its access token, sent with every request.
    token: Option<String>,
}

impl Http {
    /// Serve `server` over HTTP on a port of its own; the address and what stops it.
    async fn serve(server: McpServer, stateless: bool) -> (String, tokio_util::sync::CancellationToken) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve_on(listener, server, toolreg_mcp::server::HttpOptions::default().stateless(stateless)).await
    }

    /// Serve `server` on `listener` with these options.
    async fn serve_on(
        listener: tokio::net::TcpListener,
        server: McpServer,
        options: toolreg_mcp::server::HttpOptions,
    ) -> (String, tokio_util::sync::CancellationToken) {
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let shutdown = options.shutdown.clone();
        tokio::spawn(async move { server.serve_http_on(listener, options).await });
        (url, shutdown)
    }

    /// A new session with the tasks extension on the server at `url`.
    async fn session(url: &str) -> Http {
        let mut client = Http {
            http: crate::support::http_client(),
            url: url.to_owned(),
            session: None,
            stateless: false,
            token: None,
        };
        let init = client
            .post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                "capabilities": {"extensions": {TASKS: {}}}, "clientInfo": {"name": "t", "version": "1"}}}))
            .await;
        client.session = Some(init.headers()["mcp-session-id"].to_str().unwrap().to_owned());
        drop(init.text().await);
        client.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        client
    }

    /// A 2026-07-28 client of the stateless server at `url`.
    fn stateless(url: &str) -> Http {
        Http { http: crate::support::http_client(), url: url.to_owned(), session: None, stateless: true, token: None }
    }

    /// The same client, sending `token` with every request.
    fn with_token(mut self, token: String) -> Http {
        self.token = Some(token);
        self
    }

    fn post(&self, mut body: Value) -> impl std::future::Future<Output = reqwest::Response> + use<> {
        let mut request = self.http.post(&self.url).header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if !self.stateless {
            request = request.header("mcp-protocol-version", "2025-06-18");
        }
        match &self.session {
            Some(session) => request = request.header("mcp-session-id", session),
            None if !self.stateless => {}
            None => {
                let method = body["method"].as_str().unwrap_or_default().to_owned();
                body["params"]["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}});
                request = request.header("mcp-protocol-version", "2026-07-28").header("mcp-method", &method);
                let name = body["params"].get("name").or_else(|| body["params"].get("taskId"));
                if let Some(name) = name.and_then(Value::as_str) {
                    request = request.header("mcp-name", name);
                }
            }
        }
        let sent = request.json(&body).send();
        async move { sent.await.unwrap() }
    }

    /// End the session (HTTP DELETE), as a client that is done does.
    async fn delete(&self) -> reqwest::StatusCode {
        let session = self.session.as_deref().expect("a session");
        let response = self
            .http
            .delete(&self.url)
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap();
        response.status()
    }

    async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.rpc(id, "tools/call", json!({"name": name, "arguments": arguments})).await
    }
}

impl Rpc for Http {
    async fn rpc(&mut self, id: i64, method: &str, params: Value) -> Value {
        let response = self.post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        let body = response.text().await.unwrap();
        // A JSON answer, or the `data:` lines of an SSE one.
        std::iter::once(body.as_str())
            .chain(body.lines().filter_map(|line| line.strip_prefix("data:").map(str::trim)))
            .filter_map(|text| serde_json::from_str::<Value>(text).ok())
            .find(|message| message.get("id") == Some(&json!(id)))
            .unwrap_or_else(|| panic!("no answer to {id} in {body:?}"))
    }
}

async fn request(client: &mut impl Rpc, id: i64, method: &str, params: Value) -> Value {
    client.rpc(id, method, params).await
}

/// Poll `tasks/get` until the task ends; every answer seen, in order.
async fn until_done(raw: &mut impl Rpc, first_id: i64, task: &str) -> Vec<Value> {
    let started = Instant::now();
    let mut seen = Vec::new();
    for id in first_id.. {
        let answer = request(raw, id, "tasks/get", json!({"taskId": task})).await;
        let result = answer["result"].clone();
        assert!(result.is_object(), "{answer}");
        seen.push(result.clone());
        if ["completed", "failed", "cancelled"].contains(&result["status"].as_str().unwrap_or("")) {
            return seen;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the task never ended: {seen:?}");
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    unreachable!()
}

fn task_id(created: &Value) -> String {
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().expect("a task id").to_owned();
    assert!(is_task_id(&id), "{id}");
    id
}

#[tokio::test]
async fn a_task_is_created_polled_with_its_progress_and_ends_with_the_result() {
    let store = SqliteStore::in_memory().await.unwrap();
    let mut raw = client(server_on(&store, &Arc::default(), |o| o).await).await;

    // tools/list says which tools may run as tasks.
    let list = request(&mut raw, 1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let support = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone();
    assert_eq!(support("sleepy"), "optional");
    assert_eq!(support("must"), "required");
    assert_eq!(support("plain"), Value::Null);

    let created = raw.call(2, "sleepy", json!({"ms": 300})).await;
    let id = task_id(&created);
    assert_eq!(created["result"]["status"], "working");
    assert_eq!(created["result"]["pollIntervalMs"], 10);
    assert!(created["result"]["ttlMs"].as_u64().unwrap() > 0);
    let seen = until_done(&mut raw, 3, &id).await;
    assert_eq!(seen[0]["status"], "working", "{seen:?}");
    // The tool's progress, as the status message while it works.
    let reported = seen.iter().find(|s| s["statusMessage"] == "1/2: halfway");
    assert_eq!(reported.map(|s| &s["status"]), Some(&json!("working")), "{seen:?}");
    let done = seen.last().unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "slept 300 ms", "{done}");
    assert!(done.get("error").is_none());

    // A tool that never runs as a task is answered directly.
    let plain = raw.call(100, "plain", json!({})).await;
    assert_eq!(plain["result"]["content"][0]["text"], "plain", "{plain}");
    assert!(plain["result"].get("taskId").is_none());
}

#[tokio::test]
async fn cancelling_a_task_cancels_the_running_call() {
    let store = SqliteStore::in_memory().await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut raw = client(server_on(&store, &cancelled, |o| o).await).await;
    let id = task_id(&raw.call(1, "waiter", json!({})).await);
    let ack = request(&mut raw, 2, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack["result"].get("taskId").is_none() && ack.get("error").is_none(), "{ack}");
    let done = until_done(&mut raw, 3, &id).await;
    assert_eq!(done.last().unwrap()["status"], "cancelled");
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        assert!(started.elapsed() < Duration::from_secs(10), "the tool never saw its cancellation");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Cancelling again (a task that ended) is acknowledged the same way.
    let again = request(&mut raw, 50, "tasks/cancel", json!({"taskId": id})).await;
    assert!(again.get("error").is_none(), "{again}");
}

/// Replicas behind a load balancer serve requests without sessions
/// (stateless HTTP): a task started through one is polled and cancelled
/// through another that shares the store.
#[tokio::test]
async fn a_task_started_on_one_server_is_polled_and_cancelled_on_another_sharing_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let (store_a, store_b) = (SqliteStore::open(&path).await.unwrap(), SqliteStore::open(&path).await.unwrap());
    let cancelled = Arc::new(AtomicBool::new(false));
    let (url_a, _stop_a) = Http::serve(server_on(&store_a, &cancelled, |o| o).await, true).await;
    let (url_b, _stop_b) = Http::serve(server_on(&store_b, &Arc::default(), |o| o).await, true).await;
    let (mut a, mut b) = (Http::stateless(&url_a), Http::stateless(&url_b));

    let id = task_id(&a.call(1, "sleepy", json!({"ms": 500})).await);
    let seen = until_done(&mut b, 2, &id).await;
    assert_eq!(seen[0]["status"], "working", "{seen:?}");
    assert!(seen.iter().any(|s| s["statusMessage"] == "1/2: halfway"), "{seen:?}");
    assert_eq!(seen.last().unwrap()["result"]["content"][0]["text"], "slept 500 ms");

    // Cancelled through B, the call running on A stops at A's next heartbeat.
    let id = task_id(&a.call(100, "waiter", json!({})).await);
    let ack = request(&mut b, 101, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        assert!(started.elapsed() < Duration::from_secs(10), "the call on A was not cancelled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(until_done(&mut a, 102, &id).await.last().unwrap()["status"], "cancelled");
}

#[test]
fn a_task_whose_runner_died_ends_failed_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    // Server A runs on a runtime of its own, shut down mid-task as a process
    // would die: the runner vanishes without writing anything.
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let id = runtime.block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let (url, _stop) = Http::serve(server_on(&store, &Arc::default(), |o| o).await, true).await;
        let id = task_id(&Http::stateless(&url).call(1, "waiter", json!({})).await);
        // Let it beat at least once.
        tokio::time::sleep(Duration::from_millis(50)).await;
        id
    });
    runtime.shutdown_background();

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let store = SqliteStore::open(&path).await.unwrap();
        let (url, _stop) = Http::serve(server_on(&store, &Arc::default(), |o| o).await, true).await;
        let mut b = Http::stateless(&url);
        let seen = until_done(&mut b, 1, &id).await;
        let failed = seen.last().unwrap();
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["error"]["code"], -32603);
        let message = failed["error"]["message"].as_str().unwrap();
        assert!(message.contains("stopped") && message.contains("lease"), "{message}");
        assert!(failed.get("result").is_none());
        // Decided once: asked again, the same answer.
        let again = request(&mut b, 500, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(again["result"]["error"], failed["error"]);
    });
}

#[tokio::test]
async fn bad_and_unknown_task_ids_are_typed_errors() {
    let store = SqliteStore::in_memory().await.unwrap();
    let mut raw = client(server_on(&store, &Arc::default(), |o| o).await).await;
    let long = "f".repeat(10_000);
    for (n, bad) in ["", "../../etc/passwd", "ABCDEF0123456789ABCDEF0123456789", long.as_str()].into_iter().enumerate()
    {
        for (m, method) in ["tasks/get", "tasks/cancel"].into_iter().enumerate() {
            let answer = request(&mut raw, (n * 2 + m) as i64 + 1, method, json!({"taskId": bad})).await;
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("invalid task id") && message.len() < 300, "{message}");
        }
    }
    let unknown = "0123456789abcdef0123456789abcdef";
    for (n, method) in ["tasks/get", "tasks/cancel", "tasks/update"].into_iter().enumerate() {
        let answer = request(&mut raw, 100 + n as i64, method, json!({"taskId": unknown, "inputResponses": {}})).await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("unknown task"), "{answer}");
    }
}

#[tokio::test]
async fn a_client_without_the_extension_gets_no_task() {
    let store = SqliteStore::in_memory().await.unwrap();
    let server = server_on(&store, &Arc::default(), |o| o).await;
    let mut raw = Raw::start(server, StdioOptions::default());
    raw.initialize(json!({})).await;
    // Optional: answered directly.
    let direct = raw.call(1, "sleepy", json!({"ms": 1})).await;
    assert_eq!(direct["result"]["content"][0]["text"], "slept 1 ms", "{direct}");
    // Required: refused, naming the extension.
    let refused = raw.call(2, "must", json!({})).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS].is_object(), "{refused}");
    let get = request(&mut raw, 3, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
    assert_eq!(get["error"]["code"], -32021, "{get}");
}

#[tokio::test]
async fn live_tasks_and_result_sizes_are_bounded() {
    let store = SqliteStore::in_memory().await.unwrap();
    let mut raw = client(server_on(&store, &Arc::default(), |o| o.max_live(1).max_result_bytes(1_000)).await).await;
    let first = task_id(&raw.call(1, "waiter", json!({})).await);
    let refused = raw.call(2, "sleepy", json!({"ms": 1})).await;
    assert!(refused["error"]["message"].as_str().unwrap().contains("too many tasks running (1)"), "{refused}");
    request(&mut raw, 3, "tasks/cancel", json!({"taskId": first})).await;
    until_done(&mut raw, 4, &first).await;
    // The slot is free once the runner has gone.
    let started = Instant::now();
    let big = loop {
        let answer = raw.call(1000, "big", json!({"bytes": 5_000})).await;
        if answer.get("error").is_none() {
            break task_id(&answer);
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{answer}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let done = until_done(&mut raw, 1001, &big).await;
    let failed = done.last().unwrap();
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed["error"]["message"].as_str().unwrap().contains("over this server's task limit of 1000 bytes"));
}

/// The gateway: a remote server's task-only tool is re-served with its
/// `execution`, and a client with the extension gets a task of the gateway's
/// whose runner calls the remote task to its end.
#[tokio::test]
async fn the_gateway_serves_a_remote_task_tool_on_with_its_execution() {
    use toolreg_mcp::client::RemoteServer;
    use toolreg_mcp::config::{ServerConfig, Transport};
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    let args = vec!["-u".to_owned(), script.to_owned()];
    let config = ServerConfig::new(Transport::Command {
        command: "python3".into(),
        args,
        env: std::collections::BTreeMap::new(),
        cwd: None,
    })
    .call_timeout(Duration::from_secs(10));
    let remote = RemoteServer::connect("fake", config).await.unwrap();
    let mut registry = FunctionRegistry::new();
    assert!(toolreg_mcp::gateway::Gateway::new(vec![remote]).register_into(&mut registry).is_empty());
    let store = SqliteStore::in_memory().await.unwrap();
    let options = ServerOptions::default().tasks(fast(TaskOptions::new(store.namespace("mcp-tasks").unwrap())));
    let mut raw = client(McpServer::from_registry(&registry, options)).await;

    let list = request(&mut raw, 1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let execution = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["execution"].clone();
    assert_eq!(execution("fake__research"), json!({"taskSupport": "required"}));
    assert_eq!(execution("fake__maybe"), json!({"taskSupport": "optional"}));
    assert_eq!(execution("fake__echo"), Value::Null);

    let id = task_id(&raw.call(2, "fake__research", json!({"topic": "reefs"})).await);
    let done = until_done(&mut raw, 3, &id).await;
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["result"]["content"][0]["text"], "found: reefs", "{last}");
}

/// Over streamable HTTP too, `tools/list` shows each tool's `execution`
/// (a JSON answer when stateless, an SSE one with sessions).
#[tokio::test]
async fn tools_list_over_http_shows_task_support() {
    use toolreg_mcp::server::HttpOptions;
    for stateless in [true, false] {
        let store = SqliteStore::in_memory().await.unwrap();
        let server = server_on(&store, &Arc::default(), |o| o).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let options = HttpOptions::default().stateless(stateless);
        let shutdown = options.shutdown.clone();
        tokio::spawn(async move { server.serve_http_on(listener, options).await });
        let http = crate::support::http_client();
        let post = |body: Value, session: Option<String>| {
            let mut request = http
                .post(format!("http://{addr}/mcp"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&body);
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            request.send()
        };
        let init = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                "capabilities": {"extensions": {TASKS: {}}}, "clientInfo": {"name": "t", "version": "1"}}}),
            None,
        )
        .await
        .unwrap();
        let session = init.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(session.is_none(), stateless);
        drop(init.text().await);
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), session.clone()).await.unwrap();
        let listed = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), session).await.unwrap();
        assert!(listed.status().is_success(), "{}", listed.status());
        let body = listed.text().await.unwrap();
        let json = body
            .lines()
            .find_map(|line| line.strip_prefix("data:").map(str::trim).filter(|d| d.starts_with('{')))
            .unwrap_or(&body);
        let answer: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {body}"));
        let tools = answer["result"]["tools"].as_array().unwrap_or_else(|| panic!("{answer}"));
        let sleepy = tools.iter().find(|t| t["name"] == "sleepy").unwrap();
        assert_eq!(sleepy["execution"]["taskSupport"], "optional", "stateless: {stateless}: {sleepy}");
        let plain = tools.iter().find(|t| t["name"] == "plain").unwrap();
        assert!(plain.get("execution").is_none());
        shutdown.cancel();
    }
}

/// A tool that asks parks its task in `input_required`; answers come with
/// `tasks/update` through any server sharing the store, one at a time, and
/// the task goes on once every question has one (unknown keys ignored).
#[tokio::test]
async fn questions_park_the_task_until_tasks_update_answers_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let (store_a, store_b) = (SqliteStore::open(&path).await.unwrap(), SqliteStore::open(&path).await.unwrap());
    let (url_a, _stop_a) = Http::serve(server_on(&store_a, &Arc::default(), |o| o).await, true).await;
    let (url_b, _stop_b) = Http::serve(server_on(&store_b, &Arc::default(), |o| o).await, true).await;
    let (mut a, mut b) = (Http::stateless(&url_a), Http::stateless(&url_b));
    let id = task_id(&a.call(1, "ask", json!({})).await);
    let parked = loop {
        let got = request(&mut b, 2, "tasks/get", json!({"taskId": id})).await;
        if got["result"]["status"] == "input_required" {
            break got["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut keys: Vec<&String> = parked["inputRequests"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["first", "second"]);
    assert_eq!(parked["inputRequests"]["first"]["method"], "elicitation/create");
    let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});

    // An unknown key and one answer (through B): still waiting on the other.
    let ack = request(
        &mut b,
        3,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"nope": {}, "first": answer("Ada")}}),
    )
    .await;
    assert!(ack.get("error").is_none() && ack["result"].get("status").is_none(), "{ack}");
    let waiting = request(&mut a, 4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    let left: Vec<&String> = waiting["result"]["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(left, ["second"]);

    request(&mut a, 5, "tasks/update", json!({"taskId": id, "inputResponses": {"second": answer("Bo")}})).await;
    let done = until_done(&mut b, 6, &id).await;
    assert_eq!(done.last().unwrap()["result"]["content"][0]["text"], "Ada and Bo", "{done:?}");
}

/// A task past its TTL is forgotten: swept from the store once it has
/// ended (when another task is created), and unknown when asked for.
#[tokio::test]
async fn ended_tasks_past_their_ttl_are_swept_and_forgotten() {
    let store = SqliteStore::in_memory().await.unwrap();
    let ns = store.namespace("mcp-tasks").unwrap();
    let mut raw = client(server_on(&store, &Arc::default(), |o| o.ttl(Duration::from_millis(200))).await).await;
    let old = task_id(&raw.call(1, "sleepy", json!({"ms": 0})).await);
    assert_eq!(until_done(&mut raw, 2, &old).await.last().unwrap()["status"], "completed");
    assert!(!ns.list(&format!("task/{old}"), 10, None).await.unwrap().entries.is_empty());
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A new task sweeps the old one away.
    let new = task_id(&raw.call(100, "sleepy", json!({"ms": 0})).await);
    assert_ne!(new, old);
    let started = Instant::now();
    while !ns.list(&format!("task/{old}"), 10, None).await.unwrap().entries.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(10), "never swept");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let gone = request(&mut raw, 101, "tasks/get", json!({"taskId": old})).await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(gone["error"]["message"].as_str().unwrap().contains("unknown task"), "{gone}");
}

/// A task forgotten after its TTL while it still runs on another replica:
/// the runner stops at its next heartbeat and leaves nothing behind.
#[tokio::test]
async fn a_running_task_forgotten_on_another_replica_stops_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tasks.db");
    let (store_a, store_b) = (SqliteStore::open(&path).await.unwrap(), SqliteStore::open(&path).await.unwrap());
    let ttl = |o: TaskOptions| o.ttl(Duration::from_millis(300));
    let cancelled = Arc::new(AtomicBool::new(false));
    let (url_a, _stop_a) = Http::serve(server_on(&store_a, &cancelled, ttl).await, true).await;
    let (url_b, _stop_b) = Http::serve(server_on(&store_b, &Arc::default(), ttl).await, true).await;
    let (mut a, mut b) = (Http::stateless(&url_a), Http::stateless(&url_b));
    let id = task_id(&a.call(1, "waiter", json!({})).await);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let gone = request(&mut b, 2, "tasks/get", json!({"taskId": id})).await;
    assert!(gone["error"]["message"].as_str().unwrap().contains("unknown task"), "{gone}");
    let ns = store_a.namespace("mcp-tasks").unwrap();
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst)
        || !ns.list(&format!("task/{id}"), 10, None).await.unwrap().entries.is_empty()
    {
        assert!(started.elapsed() < Duration::from_secs(10), "the runner on A went on, or left its records");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let still_gone = request(&mut a, 3, "tasks/get", json!({"taskId": id})).await;
    assert!(still_gone["error"]["message"].as_str().unwrap().contains("unknown task"), "{still_gone}");
}

/// The same across replicas on PostgreSQL: created through one server,
/// polled and cancelled through another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_a_postgresql_store_answer_for_each_others_tasks() {
    let Some(base) = postgres::base_url() else { return };
    let url = postgres::fresh_url(&base).await;
    let store_a = PostgresStore::connect(&url).await.unwrap();
    let store_b = PostgresStore::connect(&url).await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let (url_a, _stop_a) =
        Http::serve(server_in(store_a.namespace("mcp-tasks").unwrap(), &cancelled, |o| o), true).await;
    let (url_b, _stop_b) =
        Http::serve(server_in(store_b.namespace("mcp-tasks").unwrap(), &Arc::default(), |o| o), true).await;
    let (mut a, mut b) = (Http::stateless(&url_a), Http::stateless(&url_b));

    let id = task_id(&a.call(1, "sleepy", json!({"ms": 300})).await);
    let seen = until_done(&mut b, 2, &id).await;
    assert_eq!(seen.last().unwrap()["result"]["content"][0]["text"], "slept 300 ms", "{seen:?}");

    let id = task_id(&a.call(100, "waiter", json!({})).await);
    let ack = request(&mut b, 101, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        assert!(started.elapsed() < Duration::from_secs(10), "the call on A was not cancelled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(until_done(&mut b, 102, &id).await.last().unwrap()["status"], "cancelled");
    let unknown = request(&mut b, 200, "tasks/get", json!({"taskId": "0123456789abcdef0123456789abcdef"})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// The store keeps every version of a key: a running task's heartbeat is
/// rewritten when its message changes or a quarter of the lease has passed,
/// not at every tick.
#[tokio::test]
async fn a_heartbeat_is_rewritten_only_when_it_says_something_new_or_is_due() {
    let store = SqliteStore::in_memory().await.unwrap();
    let tune = |o: TaskOptions| o.heartbeat(Duration::from_millis(20), Duration::from_secs(4));
    let mut raw = client(server_on(&store, &Arc::default(), tune).await).await;
    let id = task_id(&raw.call(1, "sleepy", json!({"ms": 800})).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let beat = store.namespace("mcp-tasks").unwrap().reference(&format!("task/{id}/beat")).await.unwrap();
    // The first beat, and the one with the tool's progress message: not
    // the 25 ticks of 20 ms.
    assert!(beat.version <= 3, "{beat:?}");
    let done = until_done(&mut raw, 2, &id).await;
    assert_eq!(done.last().unwrap()["status"], "completed");
}

/// The answer to a task request for an id that was never handed out,
/// with `id` in place of that id: what any other session must get.
async fn never_existed(client: &mut impl Rpc, id: i64, method: &str, task: &str) -> Value {
    let nobody = "0123456789abcdef0123456789abcdef";
    let mut answer = request(client, id, method, json!({"taskId": nobody, "inputResponses": {}})).await;
    let message = answer["error"]["message"].as_str().expect("an error").replace(nobody, task);
    answer["error"]["message"] = json!(message);
    answer
}

/// A task belongs to the session that created it: another HTTP session
/// (or another connection) that has its id can neither read, cancel nor
/// answer it, and is told exactly what it would be told of an id that never
/// existed. The owner's session sees it all along.
#[tokio::test]
async fn another_session_cannot_get_cancel_or_answer_a_task() {
    let store = SqliteStore::in_memory().await.unwrap();
    let server = server_on(&store, &Arc::default(), |o| o).await;
    let (url, stop) = Http::serve(server.clone(), false).await;
    let mut owner = Http::session(&url).await;
    let mut other = Http::session(&url).await;
    let id = task_id(&owner.call(1, "ask", json!({})).await);
    let parked = loop {
        let got = request(&mut owner, 2, "tasks/get", json!({"taskId": id})).await;
        if got["result"]["status"] == "input_required" {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(parked["result"]["inputRequests"]["first"].is_object(), "{parked}");

    let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
    let responses = json!({"first": answer("Eve"), "second": answer("Eve")});
    let mut stream = client(server.clone()).await;
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"].into_iter().enumerate() {
        let n = n as i64 * 10;
        let params = json!({"taskId": id, "inputResponses": responses});
        let refused = request(&mut other, 100 + n, method, params.clone()).await;
        assert_eq!(refused["error"], never_existed(&mut other, 101 + n, method, &id).await["error"], "{method}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("unknown task"), "{refused}");
        // Another connection (stdio) alike.
        let refused = request(&mut stream, 100 + n, method, params).await;
        assert_eq!(refused["error"], never_existed(&mut stream, 101 + n, method, &id).await["error"], "{method}");
    }

    // Nothing changed for the owner: still waiting on both questions, and
    // answered by the owner alone.
    let still = request(&mut owner, 3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(still["result"]["status"], "input_required", "{still}");
    assert_eq!(still["result"]["inputRequests"].as_object().unwrap().len(), 2, "{still}");
    let params = json!({"taskId": id, "inputResponses": {"first": answer("Ada"), "second": answer("Bo")}});
    request(&mut owner, 4, "tasks/update", params).await;
    let done = until_done(&mut owner, 5, &id).await;
    assert_eq!(done.last().unwrap()["result"]["content"][0]["text"], "Ada and Bo", "{done:?}");
    let ended = request(&mut other, 200, "tasks/get", json!({"taskId": id})).await;
    assert!(ended["error"]["message"].as_str().unwrap().contains("unknown task"), "{ended}");
    stop.cancel();
}

/// One session cannot take every slot: at its share it is refused, saying
/// so, while another session still starts tasks.
#[tokio::test]
async fn a_session_at_its_share_of_task_slots_leaves_slots_for_others() {
    let store = SqliteStore::in_memory().await.unwrap();
    let server = server_on(&store, &Arc::default(), |o| o.max_live(4).max_per_session(2)).await;
    let (url, stop) = Http::serve(server, false).await;
    let mut greedy = Http::session(&url).await;
    let mut other = Http::session(&url).await;
    task_id(&greedy.call(1, "waiter", json!({})).await);
    task_id(&greedy.call(2, "waiter", json!({})).await);
    let refused = greedy.call(3, "waiter", json!({})).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("too many tasks running for this session (2"), "{refused}");
    task_id(&other.call(1, "waiter", json!({})).await);
    task_id(&other.call(2, "waiter", json!({})).await);
    stop.cancel();
}

/// A session's tasks end with it: deleting the HTTP session (or closing a
/// connection) cancels the calls it started and frees their slots.
#[tokio::test]
async fn ending_a_session_cancels_its_tasks_and_frees_their_slots() {
    let store = SqliteStore::in_memory().await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = server_on(&store, &cancelled, |o| o.max_live(2).max_per_session(2)).await;
    let (url, stop) = Http::serve(server.clone(), false).await;
    let mut leaving = Http::session(&url).await;
    let mut other = Http::session(&url).await;
    task_id(&leaving.call(1, "waiter", json!({})).await);
    task_id(&leaving.call(2, "waiter", json!({})).await);
    let refused = other.call(1, "waiter", json!({})).await;
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("too many tasks running (2)"));

    assert!(leaving.delete().await.is_success());
    let wait = |what: &'static str, started: Instant| {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
    };
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        wait("the deleted session's call was not cancelled", started);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut next = 10;
    let mine = loop {
        next += 1;
        let answer = other.call(next, "waiter", json!({})).await;
        if answer.get("error").is_none() {
            break task_id(&answer);
        }
        wait("the deleted session's slots were never freed", started);
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    request(&mut other, 100, "tasks/cancel", json!({"taskId": mine})).await;
    stop.cancel();

    // A connection that closes: the same.
    let cancelled = Arc::new(AtomicBool::new(false));
    let mut raw = client(server_on(&store, &cancelled, |o| o).await).await;
    task_id(&raw.call(1, "waiter", json!({})).await);
    drop(raw);
    let started = Instant::now();
    while !cancelled.load(Ordering::SeqCst) {
        wait("the closed connection's call was not cancelled", started);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// With access tokens, a task belongs to its principal too: on a stateless
/// server (no sessions at all), another principal holding the id is told
/// what it would be told of an id that never existed, while the owner polls
/// and cancels it.
#[tokio::test]
async fn another_principal_cannot_get_cancel_or_answer_a_task_without_sessions() {
    use crate::oauth::{Issuer, Key, claims};
    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let store = SqliteStore::in_memory().await.unwrap();
    let cancelled = Arc::new(AtomicBool::new(false));
    let server = server_on(&store, &cancelled, |o| o).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let audience = format!("http://{}/mcp", listener.local_addr().unwrap());
    let oauth = toolreg_mcp::server::OAuth::new(&issuer.url, &audience);
    let options = toolreg_mcp::server::HttpOptions::default().stateless(true).oauth(oauth);
    let (url, stop) = Http::serve_on(listener, server, options).await;
    let token = |sub: &str| {
        let mut c = claims(&issuer.url, &audience);
        c["sub"] = json!(sub);
        key.sign(&c)
    };
    let mut alice = Http::stateless(&url).with_token(token("alice"));
    let mut bob = Http::stateless(&url).with_token(token("bob"));
    let id = task_id(&alice.call(1, "waiter", json!({})).await);
    for (n, method) in ["tasks/get", "tasks/update", "tasks/cancel"].into_iter().enumerate() {
        let n = n as i64 * 10;
        let params = json!({"taskId": id, "inputResponses": {}});
        let refused = request(&mut bob, 100 + n, method, params).await;
        assert_eq!(refused["error"], never_existed(&mut bob, 101 + n, method, &id).await["error"], "{method}");
    }
    let seen = request(&mut alice, 2, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    assert!(!cancelled.load(Ordering::SeqCst), "bob's cancel reached nothing");
    let ended = request(&mut alice, 3, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ended.get("error").is_none(), "{ended}");
    let seen = request(&mut alice, 4, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(seen["result"]["status"], "cancelled", "{seen}");
    stop.cancel();
}

/// With access tokens, a principal's share of task slots counts its tasks in
/// every session (and with none): one that opens more sessions, or none,
/// gets no more, and another principal still starts tasks.
#[tokio::test]
async fn a_principal_at_its_share_of_task_slots_leaves_slots_for_others() {
    use crate::oauth::{Issuer, Key, claims};
    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let store = SqliteStore::in_memory().await.unwrap();
    let server = server_on(&store, &Arc::default(), |o| o.max_live(8).max_per_session(2)).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let audience = format!("http://{}/mcp", listener.local_addr().unwrap());
    let oauth = toolreg_mcp::server::OAuth::new(&issuer.url, &audience);
    let options = toolreg_mcp::server::HttpOptions::default().stateless(true).oauth(oauth);
    let (url, stop) = Http::serve_on(listener, server, options).await;
    let token = |sub: &str| {
        let mut c = claims(&issuer.url, &audience);
        c["sub"] = json!(sub);
        key.sign(&c)
    };
    let mut greedy = Http::stateless(&url).with_token(token("greedy"));
    task_id(&greedy.call(1, "waiter", json!({})).await);
    task_id(&greedy.call(2, "waiter", json!({})).await);
    let refused = greedy.call(3, "waiter", json!({})).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("too many tasks running for this principal (2"), "{refused}");
    let mut other = Http::stateless(&url).with_token(token("other"));
    task_id(&other.call(1, "waiter", json!({})).await);
    stop.cancel();
}
