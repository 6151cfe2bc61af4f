//! Import the tools of remote MCP servers into a registry.
//!
//! A [`RemoteServer`] connects to a server by command (a child process on
//! stdio) or URL (streamable HTTP), lists its tools and turns each into an
//! ordinary registration named `server__tool`, so selection, validation,
//! approval and audit apply to it like to any local tool.
//!
//! Remote servers are not trusted:
//! - a tool's safety level is the operator's floor for the server
//!   ([`ServerConfig::safety`], cautious by default), raised to dangerous when
//!   the server says `destructiveHint`; its annotations never lower it;
//! - its output is data: the text (or `structuredContent`) becomes the tool's
//!   value, and `isError: true` a failed call with the server's text;
//! - every call has a timeout, and cancelling the call (its `CallContext`
//!   token) sends `notifications/cancelled` to the server;
//! - a command server starts with a minimal environment, as the official MCP
//!   SDKs start theirs: the variables in [`INHERITED_ENV`] (home, path, user,
//!   shell, terminal, locale) and what its `env` entry names. The host's own
//!   secrets (API keys, tokens) are not passed on;
//! - its tool list is bounded: at most [`MAX_LIST_PAGES`] pages,
//!   [`MAX_TOOLS`] tools and [`MAX_LIST_BYTES`] bytes of declarations per
//!   server (each page is further bounded by the transport's message limit);
//!   past a bound, listing fails with [`ClientError::TooLarge`];
//! - a command server's message over rmcp's 16 MiB line limit is not read:
//!   the call it answers fails at once, saying the answer is too large,
//!   instead of waiting for its timeout.
//!
//! A tool that can only run as an MCP task (`execution.taskSupport:
//! "required"`) is left out until toolreg supports tasks: a plain
//! `tools/call` to it always fails. [`RemoteServer::left_out`] names such
//! tools (and listing them logs them at `info`). rmcp's `Tool` has no
//! `execution` field, so toolreg reads it from the raw answer; it can do so
//! on stdio, where it reads the lines itself. Over streamable HTTP the field
//! is not seen, so such a tool is imported; its first call fails with
//! "method not found", as the specification has the server answer, and
//! from then on it is left out (and [`RemoteServer::changes`] announces it).
//!
//! Waiting for the server to answer `initialize` is bounded by the server's
//! `timeoutMs` ([`ServerConfig::call_timeout`]).
//!
//! [`RemoteServer::connect`] fails when the server cannot be reached;
//! [`RemoteServer::connect_or_retry`] keeps such a server, with no tools,
//! and retries it in the background as below, so one server that is down
//! does not take the others with it.
//!
//! A connection that drops is re-established in the background with
//! exponential backoff; a call meanwhile fails with a clear error, and the
//! next one after it is back succeeds. When the server sends
//! `notifications/tools/list_changed` the tool list is read again and
//! [`RemoteServer::changes`] ticks, so a host can rebuild its registry (the
//! gateway in the `toolreg` binary does). A child process is killed when the
//! last handle to its server is dropped.
//!
//! ```no_run
//! use toolreg::FunctionRegistry;
//! use toolreg_mcp::client::RemoteServer;
//! use toolreg_mcp::config::{ServerConfig, Transport};
//!
//! # async fn run() -> Result<(), toolreg_mcp::client::ClientError> {
//! let transport = Transport::Command {
//!     command: "npx".into(),
//!     args: vec!["-y".into(), "@modelcontextprotocol/server-everything".into()],
//!     env: Default::default(),
//!     cwd: None,
//! };
//! let server = RemoteServer::connect("everything", ServerConfig::new(transport)).await?;
//! let mut registry = FunctionRegistry::new();
//! for (tool, error) in server.register_into(&mut registry) {
//!     eprintln!("skipped {tool}: {error}");
//! }
//! assert!(registry.names().all(|name| name.starts_with("everything__")));
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, PaginatedRequestParams,
    ServerResult, Tool,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;
use toolreg::policy::ArgumentsHash;
use toolreg::provider::NameRule;
use toolreg::{
    CallContext, ErasedTool, FunctionRegistry, RegistryError, SafetyLevel, ToolDeclaration, ToolError, ToolFuture,
    ToolRegistration,
};

use crate::config::{ServerConfig, Transport};

mod child;
mod error;
use child::{ChildOut, inherited_env};
pub use error::ClientError;
use error::{cut, init_cause, io_cause};

/// Most `tools/list` pages read from one server (a server whose cursor never
/// ends is cut off here rather than read until memory runs out).
pub const MAX_LIST_PAGES: usize = 1_000;
/// Most tools imported from one server.
pub const MAX_TOOLS: usize = 10_000;
/// Most bytes of tool declarations (as JSON) read from one server.
pub const MAX_LIST_BYTES: usize = 32 * 1024 * 1024;
/// The variables of toolreg's own environment a command server gets (the
/// official MCP SDKs' list, plus the locale: `LANG`, `LANGUAGE` and every
/// `LC_*`); everything else must be named in its `env` entry.
#[cfg(not(windows))]
pub const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE"];
/// The variables of toolreg's own environment a command server gets (the
/// official MCP SDKs' list for Windows); everything else must be named in its
/// `env` entry.
#[cfg(windows)]
pub const INHERITED_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];
/// Backoff between reconnection attempts: doubling from the first, capped.
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// The separator between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// A connected remote server and the tools it offers.
#[derive(Clone)]
pub struct RemoteServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: ServerConfig,
    /// The live connection; `None` while reconnecting.
    connection: Mutex<Option<Arc<RunningService<RoleClient, Handler>>>>,
    reconnecting: AtomicBool,
    tools: Mutex<Vec<Tool>>,
    /// Remote names of the listed tools that can only run as MCP tasks.
    task_only: Arc<Mutex<HashSet<String>>>,
    /// Remote names of tools whose plain `tools/call` the server refused as
    /// "method not found", which the specification reserves for a tool that
    /// must run as a task: how such a tool is found where the listing does
    /// not show `execution` (streamable HTTP). Kept for the connection.
    task_only_called: Mutex<HashSet<String>>,
    changes: watch::Sender<u64>,
    /// The child process of the live connection, for a command server.
    child: Mutex<Option<u32>>,
}

impl std::fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).len())
            .finish_non_exhaustive()
    }
}

/// Follows the server's notifications for its [`RemoteServer`].
#[derive(Clone)]
struct Handler {
    server: Weak<Inner>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(inner) = self.server.upgrade() {
            // Read the list on another task: this one delivers the answer.
            tokio::spawn(async move {
                let server = RemoteServer { inner };
                if let Err(error) = server.refresh().await {
                    tracing::warn!(%error, "re-reading a changed tool list failed");
                }
            });
        }
    }
}

impl RemoteServer {
    /// Start or reach the server, complete the handshake and read its tools.
    pub async fn connect(name: &str, config: ServerConfig) -> Result<RemoteServer, ClientError> {
        let server = RemoteServer::new(name, config)?;
        let connection = server.open().await?;
        *server.inner.connection.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
        server.refresh().await?;
        Ok(server)
    }

    /// Like [`connect`](Self::connect), but a server that cannot be reached
    /// (or listed) now is kept, with no tools, and retried in the background
    /// with backoff; when it comes up its tools are read and
    /// [`changes`](Self::changes) ticks. The first attempt's error comes back
    /// beside it, to report. Only an invalid name is an error.
    pub async fn connect_or_retry(
        name: &str,
        config: ServerConfig,
    ) -> Result<(RemoteServer, Option<ClientError>), ClientError> {
        let server = RemoteServer::new(name, config)?;
        let first = match server.open().await {
            Ok(connection) => {
                *server.inner.connection.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
                server.refresh().await.err()
            }
            Err(error) => Some(error),
        };
        if first.is_some() {
            server.lost();
        }
        Ok((server, first))
    }

    fn new(name: &str, config: ServerConfig) -> Result<RemoteServer, ClientError> {
        if let Err(error) = toolreg::validate_name(&format!("{name}{SEPARATOR}x")) {
            return Err(ClientError::InvalidName { name: name.to_owned(), reason: error.to_string() });
        }
        let inner = Arc::new(Inner {
            name: name.to_owned(),
            config,
            connection: Mutex::new(None),
            reconnecting: AtomicBool::new(false),
            tools: Mutex::new(Vec::new()),
            task_only: Arc::default(),
            task_only_called: Mutex::default(),
            changes: watch::channel(0).0,
            child: Mutex::new(None),
        });
        Ok(RemoteServer { inner })
    }

    /// Whether the server is connected now.
    pub fn is_connected(&self) -> bool {
        self.connection().is_some_and(|c| !c.is_closed())
    }

    /// The server's name (the prefix of its tools).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The tools as the server last listed them.
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Ticks when the tool list changed (after `notifications/tools/list_changed`
    /// or a reconnection); read [`registrations`](Self::registrations) again.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The listed tools that are not offered, by remote name, with why: today
    /// the ones that can only run as MCP tasks, which toolreg does not
    /// support yet.
    pub fn left_out(&self) -> Vec<(String, String)> {
        let task_only = self.inner.task_only.lock().unwrap_or_else(PoisonError::into_inner);
        let called = self.inner.task_only_called.lock().unwrap_or_else(PoisonError::into_inner);
        let mut left: Vec<(String, String)> = self
            .tools()
            .iter()
            .filter(|tool| task_only.contains(tool.name.as_ref()) || called.contains(tool.name.as_ref()))
            .map(|tool| {
                let why = "it runs only as an MCP task (execution.taskSupport: required), which toolreg does not \
                           support yet";
                (tool.name.to_string(), why.to_owned())
            })
            .collect();
        left.sort();
        left
    }

    /// The process id of the server, when it is a child process that is connected.
    pub fn child_pid(&self) -> Option<u32> {
        let _ = self.connection()?;
        *self.inner.child.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read the tool list again (all pages, within the bounds above; past
    /// one, the list read before is kept).
    pub async fn refresh(&self) -> Result<(), ClientError> {
        let connection = self.connection().ok_or_else(|| self.reconnecting_error())?;
        let listed =
            tokio::time::timeout(self.inner.config.call_timeout, self.list_all(connection.peer())).await.map_err(
                |_| ClientError::Timeout { server: self.inner.name.clone(), timeout: self.inner.config.call_timeout },
            )??;
        *self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner) = listed;
        for (tool, why) in self.left_out() {
            tracing::info!(server = %self.inner.name, %tool, "tool left out: {why}");
        }
        self.inner.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Every page of `tools/list`, stopping at the first bound crossed.
    async fn list_all(&self, peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ClientError> {
        let too_large = |message: String| ClientError::TooLarge { server: self.inner.name.clone(), message };
        let mut tools = Vec::new();
        let mut bytes = 0usize;
        let mut cursors = HashSet::new();
        let mut cursor = None;
        // Filled again, page by page, as the reader sees the answers.
        self.inner.task_only.lock().unwrap_or_else(PoisonError::into_inner).clear();
        for _ in 0..MAX_LIST_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = peer
                .list_tools(Some(params))
                .await
                .map_err(|e| ClientError::Protocol { server: self.inner.name.clone(), message: e.to_string() })?;
            for tool in page.tools {
                if tools.len() == MAX_TOOLS {
                    return Err(too_large(format!("more than {MAX_TOOLS} tools")));
                }
                bytes = bytes.saturating_add(json_len(&tool));
                if bytes > MAX_LIST_BYTES {
                    return Err(too_large(format!("more than {MAX_LIST_BYTES} bytes of declarations")));
                }
                tools.push(tool);
            }
            match page.next_cursor {
                None => return Ok(tools),
                // A cursor seen before would list the same pages forever.
                Some(next) if !cursors.insert(next.clone()) => {
                    return Err(ClientError::Protocol {
                        server: self.inner.name.clone(),
                        message: format!("tools/list repeats the cursor `{}`", cut(&next, 80)),
                    });
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(too_large(format!("more than {MAX_LIST_PAGES} pages of tools/list")))
    }

    /// The server's tools as registrations named `server__tool` (shortened
    /// to the providers' 64-character limit with a stable hash when needed).
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        let tools = self.tools();
        let left_out: HashSet<String> = self.left_out().into_iter().map(|(tool, _)| tool).collect();
        let mut taken = HashSet::new();
        tools
            .iter()
            .filter(|tool| !left_out.contains(tool.name.as_ref()))
            .map(|tool| {
                let name = local_name(&self.inner.name, &tool.name, &mut taken);
                let declaration = self.declaration(&name, tool);
                let remote = RemoteTool { server: self.clone(), remote: tool.name.to_string() };
                ToolRegistration::new(declaration, Arc::new(remote))
            })
            .collect()
    }

    /// Register every tool the registry accepts; the ones it refuses (a
    /// hostile schema, a clash with a local name) are left out and returned
    /// with why.
    pub fn register_into(&self, registry: &mut FunctionRegistry) -> Vec<(String, RegistryError)> {
        let mut refused = Vec::new();
        for registration in self.registrations() {
            let name = registration.name().to_owned();
            if let Err(error) = registry.register(registration) {
                tracing::warn!(server = %self.inner.name, tool = %name, %error, "remote tool not imported");
                refused.push((name, error));
            }
        }
        refused
    }

    fn declaration(&self, name: &str, tool: &Tool) -> ToolDeclaration {
        let schema = Value::Object((*tool.input_schema).clone());
        let description = tool.description.as_deref().unwrap_or_default();
        let mut declaration = ToolDeclaration::new(name, description, schema);
        let destructive = tool.annotations.as_ref().and_then(|a| a.destructive_hint) == Some(true);
        let floor = self.inner.config.safety;
        declaration.safety = if destructive { SafetyLevel::Dangerous } else { floor };
        if let Some(output) = &tool.output_schema {
            declaration = declaration.with_output_schema(Value::Object((**output).clone()));
        }
        let title = tool.title.clone().or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
        if let Some(title) = title {
            declaration = declaration.with_title(title);
        }
        declaration.with_category("mcp").with_category(self.inner.name.clone())
    }

    fn connection(&self) -> Option<Arc<RunningService<RoleClient, Handler>>> {
        self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn reconnecting_error(&self) -> ClientError {
        ClientError::Connect {
            server: self.inner.name.clone(),
            target: self.target(),
            message: "not connected; reconnecting, try again shortly".to_owned(),
        }
    }

    /// Where the server is, for messages: `at <url>` or ``started as `<command>` ``.
    fn target(&self) -> String {
        match &self.inner.config.transport {
            Transport::Command { command, .. } => format!("started as `{command}`"),
            Transport::Url { url, .. } => format!("at {url}"),
        }
    }

    /// Start the process or reach the URL and complete the handshake.
    async fn open(&self) -> Result<Arc<RunningService<RoleClient, Handler>>, ClientError> {
        let name = &self.inner.name;
        let connect_error =
            |message: String| ClientError::Connect { server: name.clone(), target: self.target(), message };
        let handler = Handler { server: Arc::downgrade(&self.inner) };
        let wait = self.inner.config.call_timeout;
        let started = match &self.inner.config.transport {
            Transport::Command { command, args, env, cwd } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(inherited_env()).envs(env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
                let mut child =
                    cmd.spawn().map_err(|e| connect_error(format!("cannot start `{command}`: {}", io_cause(&e))))?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(connect_error("its standard input and output cannot be read".to_owned()));
                };
                *self.inner.child.lock().unwrap_or_else(PoisonError::into_inner) = child.id();
                let stdout = crate::oversize::relay(stdout, crate::oversize::MAX_LINE);
                let reader = ChildOut::new(stdout, child, Arc::clone(&self.inner.task_only));
                tokio::time::timeout(wait, handler.serve((reader, stdin))).await
            }
            Transport::Url { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                let mut auth = None;
                for (key, value) in headers {
                    if key.eq_ignore_ascii_case("authorization") {
                        auth = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_owned());
                        continue;
                    }
                    let key = http::HeaderName::try_from(key.as_str())
                        .map_err(|e| connect_error(format!("header `{key}`: {e}")))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| connect_error(format!("header `{key}`: {e}")))?;
                    custom.insert(key, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
                if let Some(token) = auth {
                    config = config.auth_header(token);
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                let started = tokio::time::timeout(wait, handler.serve(transport)).await;
                if let Ok(Err(error)) = &started {
                    let mut cause = init_cause(error);
                    // A URL of the legacy HTTP+SSE transport, written without
                    // `"type": "sse"`: say what to use instead.
                    if url.trim_end_matches('/').ends_with("/sse") && cause.contains("HTTP 40") {
                        cause.push_str(
                            " (this looks like a legacy HTTP+SSE endpoint, which toolreg does not speak; use the \
                             server's streamable HTTP endpoint, often ending in /mcp)",
                        );
                    }
                    return Err(connect_error(cause));
                }
                started
            }
        };
        match started {
            Err(_) => Err(connect_error(format!("no answer to `initialize` within {wait:?}"))),
            Ok(Err(error)) => Err(connect_error(init_cause(&error))),
            Ok(Ok(running)) => Ok(Arc::new(running)),
        }
    }

    /// The connection is gone: drop it and reconnect in the background,
    /// backing off, unless that is under way already.
    fn lost(&self) {
        *self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner) = None;
        if self.inner.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut delay = BACKOFF_FIRST;
            loop {
                tokio::time::sleep(delay).await;
                let Some(inner) = weak.upgrade() else { return };
                let server = RemoteServer { inner };
                match server.open().await {
                    Ok(connection) => {
                        *server.inner.connection.lock().unwrap_or_else(PoisonError::into_inner) = Some(connection);
                        server.inner.reconnecting.store(false, Ordering::SeqCst);
                        if let Err(error) = server.refresh().await {
                            tracing::warn!(server = %server.inner.name, %error, "listing tools after reconnecting failed");
                        }
                        tracing::info!(server = %server.inner.name, "reconnected");
                        return;
                    }
                    Err(error) => {
                        // Reported once by whoever saw the connection go;
                        // each retry is only worth a debug line.
                        tracing::debug!(server = %server.inner.name, %error, retry_in = ?delay, "reconnecting failed");
                        delay = (delay * 2).min(BACKOFF_MAX);
                    }
                }
            }
        });
    }

    /// Call one tool by its remote name.
    async fn call(&self, remote: &str, cx: &CallContext, arguments: Value) -> Result<Value, ToolError> {
        let connection = self.connection().ok_or_else(|| ToolError::failed(self.reconnecting_error().to_string()))?;
        if connection.is_closed() {
            self.lost();
            return Err(ToolError::failed(self.reconnecting_error().to_string()));
        }
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => return Err(ToolError::failed(format!("arguments must be an object, got {other}"))),
        };
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = self.inner.config.call_timeout;
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let peer: &Peer<RoleClient> = connection.peer();
        let handle = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(error) => {
                self.lost();
                return Err(ToolError::failed(format!("MCP server `{}`: {error}", self.inner.name)));
            }
        };
        let id = handle.id.clone();
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = cx.cancelled() => {
                let param = CancelledNotificationParam::new(Some(id), Some("cancelled by the caller".to_owned()));
                let _ = peer.notify_cancelled(param).await;
                return Err(ToolError::Cancelled);
            }
        };
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let text: Vec<String> =
                    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
                if result.is_error == Some(true) {
                    let message = if text.is_empty() { "the remote tool failed".to_owned() } else { text.join("\n") };
                    return Err(ToolError::failed(message));
                }
                Ok(match result.structured_content {
                    Some(value) => value,
                    None => Value::String(text.join("\n")),
                })
            }
            Ok(other) => Err(ToolError::failed(format!(
                "MCP server `{}` answered tools/call with something else: {}",
                self.inner.name,
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Err(rmcp::ServiceError::Timeout { timeout }) => Err(ToolError::Timeout { limit: timeout }),
            Err(rmcp::ServiceError::McpError(error)) if error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND => {
                // The specification's answer to a plain call of a tool that
                // must run as a task: leave it out from now on, and say so.
                let new = self
                    .inner
                    .task_only_called
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(remote.to_owned());
                if new {
                    tracing::info!(server = %self.inner.name, tool = %remote, "tool left out: it runs only as an MCP task");
                    self.inner.changes.send_modify(|n| *n += 1);
                }
                Err(ToolError::failed(format!(
                    "MCP server `{}`: `{remote}` runs only as an MCP task, which toolreg does not support yet; \
                     it is left out from now on ({})",
                    self.inner.name, error.message
                )))
            }
            Err(rmcp::ServiceError::McpError(error)) => {
                Err(ToolError::failed(format!("MCP server `{}`: {}", self.inner.name, error.message)))
            }
            Err(error) => {
                if connection.is_closed() {
                    self.lost();
                }
                Err(ToolError::failed(format!("MCP server `{}`: {error}", self.inner.name)))
            }
        }
    }
}

/// One imported tool: a `tools/call` to its server.
struct RemoteTool {
    server: RemoteServer,
    remote: String,
}

impl ErasedTool for RemoteTool {
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        let server = self.server.clone();
        let remote = self.remote.clone();
        ToolFuture::new(async move { server.call(&remote, &cx, args).await })
    }
}

/// `server__tool`, the tool's name spelled by the core's strictest rule
/// ([`NameRule::OPENAI`]'s [`respell`](NameRule::respell): `[A-Za-z0-9_-]`,
/// `.` as `__`) and at most 64 characters; a name that had to change gets a
/// short hash of the original, so two remote names never collapse into one.
/// A name in `taken` is never given again, even when a remote name was
/// crafted to equal another's shortened form: the hash is then salted until
/// the name is free.
pub fn local_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    // The core's sanitiser; what it cannot promise (no two remote names
    // collide once the server is prefixed and the result shortened) is added here.
    let clean = NameRule::OPENAI.respell(tool);
    let plain = format!("{server}{SEPARATOR}{clean}");
    let changed = clean != tool;
    let mut name = plain.clone();
    let mut salt = 0u64;
    while changed || name.len() > toolreg::registry::MAX_NAME_LEN || taken.contains(&name) {
        // The core's stable hash of the remote name and a counter (0 on the
        // first try), so names stay the same across listings; a collision
        // counts up. Computed only when importing a listing.
        let hash = ArgumentsHash::of(&serde_json::json!([tool, salt]));
        let [a, b, c, d, ..] = *hash.as_bytes();
        let suffix = format!("_{a:02x}{b:02x}{c:02x}{d:02x}");
        let keep = toolreg::registry::MAX_NAME_LEN - suffix.len();
        name.clone_from(&plain);
        name.truncate(keep.min(name.len()));
        name.push_str(&suffix);
        if !taken.contains(&name) {
            break;
        }
        salt += 1;
    }
    taken.insert(name.clone());
    name
}

/// The length of a value's JSON, counted without building the text.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a value that cannot be written counts as nothing.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
