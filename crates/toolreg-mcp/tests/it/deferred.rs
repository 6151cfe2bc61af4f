//! Deferred mode (`toolreg serve --deferred`): a short `tools/list`,
//! `search_tools` and `call_tool`, and per-session loading announced with
//! `list_changed` — driven by rmcp's client over stdio and HTTP, and by raw
//! JSON-RPC lines for the 2026-07-28 revision.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::support::{HANG, Raw};
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration};
use toolreg_mcp::server::{Deferral, HttpOptions, McpServer, ServerOptions, StdioOptions};

/// What the tools saw.
#[derive(Default)]
struct Seen {
    deleted: AtomicBool,
}

/// `echo` (always on) and three tools of imported servers (category `mcp`,
/// so deferred by [`Deferral::imported`]).
fn registry(seen: &Arc<Seen>) -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    let echo = ToolDeclaration::builder("echo")
        .description("Echo the arguments back.")
        .optional_param("n", ParamType::Integer, "a number")
        .safety(SafetyLevel::Safe)
        .build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), echo).unwrap();
    let forecast = ToolDeclaration::builder("weather__forecast")
        .description("Get the weather forecast for a city.")
        .param("city", ParamType::String, "The city")
        .safety(SafetyLevel::Safe)
        .build()
        .with_category("mcp");
    r.register_sync_tool("weather__forecast", |args: Value| Ok::<_, String>(json!({"sunny": args["city"]})), forecast)
        .unwrap();
    let send = ToolDeclaration::builder("mail__send")
        .description("Send an email message to someone.")
        .param("to", ParamType::String, "The address")
        .safety(SafetyLevel::Cautious)
        .build()
        .with_category("mcp");
    r.register_sync_tool("mail__send", |_: Value| Ok::<_, String>(json!("sent")), send).unwrap();
    let delete = ToolDeclaration::builder("files__delete")
        .description("Delete a file from the disk.")
        .param("path", ParamType::String, "The file")
        .safety(SafetyLevel::Dangerous)
        .build()
        .with_category("mcp");
    let s = Arc::clone(seen);
    r.register_sync_tool(
        "files__delete",
        move |_: Value| {
            s.deleted.store(true, Ordering::SeqCst);
            Ok::<_, String>(json!("deleted"))
        },
        delete,
    )
    .unwrap();
    r
}

fn options() -> ServerOptions {
    ServerOptions::default().deferred(Deferral::imported())
}

fn server(seen: &Arc<Seen>) -> McpServer {
    McpServer::from_registry(&registry(seen), options())
}

/// An rmcp client that approves dangerous calls when told to and reports
/// every `notifications/tools/list_changed`.
struct Client {
    approve: Arc<AtomicBool>,
    asked: Arc<AtomicUsize>,
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        info
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let approve = self.approve.load(Ordering::SeqCst);
        Ok(ElicitResult::new(rmcp::model::ElicitationAction::Accept).with_content(json!({"approve": approve})))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

struct Connected {
    client: RunningService<RoleClient, Client>,
    approve: Arc<AtomicBool>,
    asked: Arc<AtomicUsize>,
    changed: mpsc::UnboundedReceiver<()>,
}

fn handler() -> (Client, Arc<AtomicBool>, Arc<AtomicUsize>, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let approve = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    (Client { approve: Arc::clone(&approve), asked: Arc::clone(&asked), changed: tx }, approve, asked, rx)
}

async fn connect_stdio(served: McpServer) -> Connected {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server_io);
    tokio::spawn(async move { served.serve_stream(r, w, StdioOptions::default()).await });
    let (handler, approve, asked, changed) = handler();
    let client = handler.serve(client_io).await.unwrap();
    Connected { client, approve, asked, changed }
}

async fn connect_http(served: McpServer, stateless: bool) -> (Connected, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let options = HttpOptions::default().stateless(stateless);
    let running = options.clone();
    tokio::spawn(async move { served.serve_http_on(listener, running).await });
    let transport = {
        crate::support::install_tls();
        StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"))
    };
    let (handler, approve, asked, changed) = handler();
    let client = handler.serve(transport).await.unwrap();
    (Connected { client, approve, asked, changed }, options)
}

impl Connected {
    async fn names(&self) -> Vec<String> {
        self.client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect()
    }

    async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned())
            .with_arguments(arguments.as_object().cloned().unwrap_or_default());
        self.client.call_tool(params).await.unwrap()
    }

    async fn list_changed(&mut self) {
        tokio::time::timeout(HANG, self.changed.recv()).await.expect("no list_changed in time").unwrap();
    }
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap_or_default().to_owned()
}

fn found(result: &CallToolResult) -> Vec<String> {
    let structured = result.structured_content.as_ref().expect("search results are structured");
    // No search model here: the keyword index answered, and says so.
    assert_eq!(structured["search"], "keyword", "{structured}");
    let tools = &structured["tools"];
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

const SHORT: [&str; 3] = ["echo", "search_tools", "call_tool"];

#[tokio::test]
async fn a_session_searches_loads_and_calls_deferred_tools() {
    let seen = Arc::new(Seen::default());
    let mut c = connect_stdio(server(&seen)).await;
    // The short list: the always-on tool and the two meta-tools.
    assert_eq!(c.names().await, SHORT);

    // A deferred tool called before any search never runs: search first.
    let early = c.call("weather__forecast", json!({"city": "Oslo"})).await;
    assert_eq!(early.is_error, Some(true));
    assert!(text(&early).contains("not loaded yet") && text(&early).contains("search_tools"), "{}", text(&early));
    // An unknown tool called directly stays a protocol error.
    let unknown = c.client.call_tool(CallToolRequestParams::new("nope")).await.unwrap_err();
    assert!(unknown.to_string().contains("unknown tool"), "{unknown}");

    // The search answers with name, description and input schema, and
    // loads what it found into this session's list.
    let search = c.call("search_tools", json!({"query": "weather forecast for a city", "limit": 1})).await;
    assert_eq!(search.is_error, Some(false), "{}", text(&search));
    assert_eq!(found(&search), ["weather__forecast"]);
    let hit = &search.structured_content.as_ref().unwrap()["tools"][0];
    assert_eq!(hit["description"], "Get the weather forecast for a city.");
    assert_eq!(hit["inputSchema"]["properties"]["city"]["type"], "string", "{hit}");
    c.list_changed().await;
    assert_eq!(c.names().await, [&SHORT[..], &["weather__forecast"]].concat());
    let direct = c.call("weather__forecast", json!({"city": "Oslo"})).await;
    assert_eq!(direct.structured_content, Some(json!({"sunny": "Oslo"})), "{}", text(&direct));
    // Searching again finds it again, and adds nothing to the list.
    let again = c.call("search_tools", json!({"query": "forecast"})).await;
    assert_eq!(found(&again), ["weather__forecast"]);
    assert_eq!(c.names().await.len(), 4);
    assert!(c.changed.try_recv().is_err(), "nothing new, nothing announced");
    // A search with nothing in common with any tool finds nothing.
    assert!(found(&c.call("search_tools", json!({"query": "quantum chromodynamics"})).await).is_empty());
    // Bad search arguments are a failed result that says what is wrong.
    let bad = c.call("search_tools", json!({"q": "mail"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("invalid arguments for `search_tools`"), "{}", text(&bad));
    c.client.cancel().await.unwrap();
}

#[tokio::test]
async fn call_tool_runs_through_the_engine() {
    let seen = Arc::new(Seen::default());
    let c = connect_stdio(server(&seen)).await;

    // A deferred tool, not loaded: call_tool runs it, validated.
    let sent = c.call("call_tool", json!({"name": "mail__send", "arguments": {"to": "a@b.c"}})).await;
    assert_eq!((sent.is_error, text(&sent)), (Some(false), "sent".to_owned()));
    let invalid = c.call("call_tool", json!({"name": "mail__send", "arguments": {"to": 5}})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).contains("invalid arguments for `mail__send`") && text(&invalid).contains("/to"));
    // An always-on tool too.
    let echoed = c.call("call_tool", json!({"name": "echo", "arguments": {"n": 2}})).await;
    assert_eq!(echoed.structured_content, Some(json!({"n": 2})));

    // Approval still applies: the client is asked, and its answer decides.
    let refused = c.call("call_tool", json!({"name": "files__delete", "arguments": {"path": "a.txt"}})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(!seen.deleted.load(Ordering::SeqCst));
    c.approve.store(true, Ordering::SeqCst);
    let deleted = c.call("call_tool", json!({"name": "files__delete", "arguments": {"path": "a.txt"}})).await;
    assert_eq!(deleted.is_error, Some(false), "{}", text(&deleted));
    assert!(seen.deleted.load(Ordering::SeqCst));
    assert_eq!(c.asked.load(Ordering::SeqCst), 2);

    // Unknown names and bad arguments are failed results that say so.
    let unknown = c.call("call_tool", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown).contains("unknown tool `nope`") && text(&unknown).contains("search_tools"));
    let nested = c.call("call_tool", json!({"name": "call_tool", "arguments": {}})).await;
    assert_eq!(nested.is_error, Some(true));
    let malformed = c.call("call_tool", json!({"tool": "echo"})).await;
    assert_eq!(malformed.is_error, Some(true));
    assert!(text(&malformed).contains("invalid arguments for `call_tool`"), "{}", text(&malformed));
    let not_object = c.call("call_tool", json!({"name": "echo", "arguments": [1]})).await;
    assert_eq!(not_object.is_error, Some(true));
    // None of it changed the list.
    assert_eq!(c.names().await, SHORT);
    c.client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_new_catalog_drops_loaded_tools_and_offers_new_ones() {
    let seen = Arc::new(Seen::default());
    let served = server(&seen);
    let mut c = connect_stdio(served.clone()).await;
    c.call("search_tools", json!({"query": "weather"})).await;
    c.list_changed().await;
    assert!(c.names().await.contains(&"weather__forecast".to_owned()));

    // A remote server's list_changed: the gateway serves a new registry.
    let mut next = FunctionRegistry::new();
    let headlines = ToolDeclaration::builder("news__headlines")
        .description("Read today's news headlines.")
        .safety(SafetyLevel::Safe)
        .build()
        .with_category("mcp");
    next.register_sync_tool("news__headlines", |_: Value| Ok::<_, String>(json!(["rain"])), headlines).unwrap();
    let echo = ToolDeclaration::builder("echo").description("Echo.").safety(SafetyLevel::Safe).build();
    next.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), echo).unwrap();
    served.set_engine(McpServer::engine_for(&next, &options())).await;
    c.list_changed().await;
    // The loaded tool is gone with its server; the new one is searchable.
    assert_eq!(c.names().await, SHORT);
    assert_eq!(found(&c.call("search_tools", json!({"query": "news headlines"})).await), ["news__headlines"]);
    c.list_changed().await;
    assert_eq!(c.names().await, ["echo", "search_tools", "call_tool", "news__headlines"]);
    c.client.cancel().await.unwrap();
}

#[tokio::test]
async fn sessions_are_separate() {
    let seen = Arc::new(Seen::default());
    let served = server(&seen);
    let mut one = connect_stdio(served.clone()).await;
    let two = connect_stdio(served).await;
    one.call("search_tools", json!({"query": "weather"})).await;
    one.list_changed().await;
    assert_eq!(one.names().await.len(), 4);
    assert_eq!(two.names().await, SHORT);
    let refused = two.call("weather__forecast", json!({"city": "Oslo"})).await;
    assert_eq!(refused.is_error, Some(true));
    one.client.cancel().await.unwrap();
    two.client.cancel().await.unwrap();
}

#[tokio::test]
async fn http_sessions_load_and_stateless_http_uses_call_tool() {
    // With sessions: as on stdio, the notification on the session's stream.
    let seen = Arc::new(Seen::default());
    let (mut c, options) = connect_http(server(&seen), false).await;
    assert_eq!(c.names().await, SHORT);
    c.call("search_tools", json!({"query": "weather forecast"})).await;
    c.list_changed().await;
    assert!(c.names().await.contains(&"weather__forecast".to_owned()));
    let direct = c.call("weather__forecast", json!({"city": "Rome"})).await;
    assert_eq!(direct.structured_content, Some(json!({"sunny": "Rome"})), "{}", text(&direct));
    c.client.cancel().await.unwrap();
    options.shutdown.cancel();

    // Stateless: nothing is loaded; search_tools + call_tool are the way.
    let (c, options) = connect_http(server(&seen), true).await;
    let search = c.call("search_tools", json!({"query": "weather forecast"})).await;
    assert_eq!(found(&search), ["weather__forecast"]);
    let note = search.structured_content.as_ref().unwrap()["note"].as_str().unwrap().to_owned();
    assert!(note.contains("call_tool"), "{note}");
    assert_eq!(c.names().await, SHORT);
    let direct = c.call("weather__forecast", json!({"city": "Rome"})).await;
    assert_eq!(direct.is_error, Some(true));
    assert!(text(&direct).contains("call_tool"), "{}", text(&direct));
    let called = c.call("call_tool", json!({"name": "weather__forecast", "arguments": {"city": "Rome"}})).await;
    assert_eq!(called.structured_content, Some(json!({"sunny": "Rome"})), "{}", text(&called));
    c.client.cancel().await.unwrap();
    options.shutdown.cancel();
}

/// A request as a 2026-07-28 client sends it: no handshake, the revision
/// and the client's capabilities in `_meta`.
fn request_2026(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn a_2026_07_28_connection_loads_and_approves_through_call_tool() {
    let seen = Arc::new(Seen::default());
    let mut raw = Raw::start(server(&seen), StdioOptions::default());
    // A request first, as clients send (rmcp does not open a stdio
    // connection on a listen), then the listen stream.
    raw.send(request_2026(9, "tools/list", json!({}))).await;
    raw.answer(json!(9)).await;
    raw.send(request_2026(1, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await;
    let ack = raw.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    raw.send(request_2026(2, "tools/call", json!({"name": "search_tools", "arguments": {"query": "delete a file"}})))
        .await;
    let search = raw.answer(json!(2)).await;
    assert_eq!(search["result"]["structuredContent"]["tools"][0]["name"], "files__delete", "{search}");
    // The change is announced on the connection's listen stream.
    let deadline = tokio::time::Instant::now() + HANG;
    while !raw.other.iter().any(|m| m["method"] == "notifications/tools/list_changed") {
        assert!(tokio::time::Instant::now() < deadline, "no list_changed on the listen stream: {:?}", raw.other);
        let message = raw.next().await;
        raw.other.push(message);
    }
    raw.send(request_2026(3, "tools/list", json!({}))).await;
    let listed = raw.answer(json!(3)).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "search_tools", "call_tool", "files__delete"]);

    // A dangerous tool through call_tool: asked with an input_required
    // result, run once the retry carries the approval.
    let delete = json!({"name": "call_tool", "arguments": {"name": "files__delete", "arguments": {"path": "a"}}});
    raw.send(request_2026(4, "tools/call", delete.clone())).await;
    let asked = raw.answer(json!(4)).await["result"].take();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(!seen.deleted.load(Ordering::SeqCst));
    let mut retry = delete;
    retry["requestState"] = asked["requestState"].clone();
    retry["inputResponses"] =
        json!({toolreg_mcp::server::APPROVAL_KEY: {"action": "accept", "content": {"approve": true}}});
    raw.send(request_2026(5, "tools/call", retry)).await;
    let done = raw.answer(json!(5)).await["result"].take();
    assert_eq!((&done["resultType"], &done["isError"]), (&json!("complete"), &json!(false)), "{done}");
    assert!(seen.deleted.load(Ordering::SeqCst));
}

#[tokio::test]
async fn without_deferral_nothing_changes() {
    let seen = Arc::new(Seen::default());
    let c = connect_stdio(McpServer::from_registry(&registry(&seen), ServerOptions::default())).await;
    assert_eq!(c.names().await, ["echo", "weather__forecast", "mail__send", "files__delete"]);
    let meta = c.client.call_tool(CallToolRequestParams::new("search_tools")).await;
    assert!(meta.is_err(), "no meta-tools without --deferred");
    c.client.cancel().await.unwrap();
}

#[tokio::test]
async fn past_n_defers_by_position_and_everything_stays_callable() {
    let seen = Arc::new(Seen::default());
    let options = ServerOptions::default().deferred(Deferral::new().past(2));
    let c = connect_stdio(McpServer::from_registry(&registry(&seen), options)).await;
    assert_eq!(c.names().await, ["echo", "weather__forecast", "search_tools", "call_tool"]);
    let search = c.call("search_tools", json!({"query": "email"})).await;
    assert_eq!(found(&search), ["mail__send"]);
    c.client.cancel().await.unwrap();
}

#[tokio::test]
async fn call_tool_reports_progress_and_is_audited_as_the_tool_it_ran() {
    let mut r = FunctionRegistry::new();
    let steps = ToolDeclaration::builder("jobs__run")
        .description("Run a job in two steps.")
        .safety(SafetyLevel::Safe)
        .build()
        .with_category("mcp");
    r.register(toolreg::ToolRegistration::new(steps, |cx: toolreg::CallContext, _: Value| async move {
        cx.report_progress(1.0, Some(2.0), Some("step 1"));
        cx.report_progress(2.0, Some(2.0), Some("step 2"));
        Ok::<_, String>("done")
    }))
    .unwrap();
    let audit = Arc::new(toolreg::policy::MemorySink::new());
    let engine = McpServer::engine_builder(&r, &options()).audit(Arc::clone(&audit)).build();
    let mut raw = Raw::start(McpServer::new(engine, options()), StdioOptions::default());
    raw.initialize(json!({})).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "call_tool",
        "arguments": {"name": "jobs__run", "arguments": {}}, "_meta": {"progressToken": "p-1"}}}))
        .await;
    let answer = raw.answer(json!(1)).await;
    assert_eq!(answer["result"]["content"][0]["text"], "done", "{answer}");
    let progress: Vec<&Value> = raw.other.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 2, "{:?}", raw.other);
    assert_eq!(
        progress[1]["params"],
        json!({"progressToken": "p-1", "progress": 2.0, "total": 2.0, "message": "step 2"})
    );
    let events = audit.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!((events[0].tool.as_str(), events[0].call_id.as_str()), ("jobs__run", "1"));
}
