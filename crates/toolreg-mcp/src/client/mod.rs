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
//! - its output is data, passed on block for block: a result of one plain
//!   text block is that text (the tool's value), anything else keeps every
//!   block (text, image, audio, resource link, embedded resource, with their
//!   annotations) and `structuredContent` as the structured value beside
//!   them; a block that cannot be read (bad base64, a type this crate does
//!   not know) becomes a text block saying why, never a failed call nor a
//!   silent gap; `isError: true` is a failed call with the server's text;
//! - progress the server reports on a call reaches the caller's
//!   [`CallContext::report_progress`](toolreg::CallContext::report_progress)
//!   while the call runs (behind the gateway: the gateway's client, on its
//!   own progress token);
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
//! The client declares the MCP tasks extension (`io.modelcontextprotocol/tasks`),
//! so a server may answer a call with a task instead of its result; the
//! call then polls `tasks/get` (at the interval the server suggests, backing
//! off up to 5 s, the call's status messages as its progress) until the task
//! ends, within the call's timeout. A call cancelled or timed out cancels
//! the remote task with `tasks/cancel`. A tool that runs only as a task
//! (`execution.taskSupport: "required"`) is called that way; on a server
//! of the 2025-11-25 revision, which does not declare the extension and
//! runs a task only when the call asks for one, it is called with task
//! augmentation (`params.task`, then `tasks/get` and `tasks/result`), as is a
//! tool such a server refused plainly with "method not found". rmcp's `Tool`
//! has no `execution` field, so toolreg reads it from the raw answer of a
//! command server (where it reads the lines itself) and keeps it on the
//! imported declaration ([`ToolDeclaration::task_support`](toolreg::ToolDeclaration::task_support)),
//! which the gateway serves on. A server that still refuses the call with
//! "method not found" has that tool left out from then on
//! ([`RemoteServer::left_out`]; [`RemoteServer::changes`] announces it). A
//! remote task that asks its client a question (`input_required`) has it
//! answered like a request of the server (below) and gets the answer with
//! `tasks/update`; a question no one can answer cancels the task, and the
//! call fails saying why. A caller that cannot be asked a task's questions
//! (a 2026-07-28 client's rounds, behind the gateway) says so in the call's
//! extensions: its task is cancelled when it asks, saying why.
//!
//! Its elicitation and sampling requests go to the [`Answerer`] set with
//! [`RemoteServer::answer_with`], or are refused with a reason where there
//! is none or it cannot answer. Who is behind a call is not the client's
//! business: a [`Gateway`](crate::gateway::Gateway) sets itself as the
//! answerer and puts the servers' questions to the MCP client of the call
//! in flight, parking a 2026-07-28 client's call between its rounds.
//!
//! Its resources and prompts are offered too, namespaced like its tools
//! ([`RemoteServer::list_resources`], [`RemoteServer::read_resource`],
//! [`RemoteServer::list_prompts`], [`RemoteServer::get_prompt`]: URIs as
//! `toolreg://<server>/<uri>`, names as `server__name`); the gateway serves
//! them ([`Gateway`](crate::gateway::Gateway)).
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
//! gateway in the `toolreg` binary does). [`RemoteServer::close`] ends a
//! child process as the MCP stdio transport asks: its input is closed and
//! it has a moment to exit on its own, then SIGTERM, then SIGKILL (the same
//! happens, without waiting, when the last handle to its server is dropped).
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
//! assert!(registry.list().map(|tool| tool.name()).all(|name| name.starts_with("everything__")));
//! # Ok(())
//! # }
//! ```

use std::collections::{HashMap, HashSet, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use rmcp::model::{PaginatedRequestParams, ProgressNotificationParam, ProgressToken, Tool};
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::{broadcast, watch};
use toolreg::CallContext;

use crate::config::{ServerConfig, Transport};
use error::required_scope;

mod answer;
mod child;
mod error;
mod handler;
mod oauth;
mod resources;
mod task;
mod tools;

pub use answer::Answerer;
use child::{ChildOut, inherited_env};
pub use error::ClientError;
use error::{cut, init_cause, io_cause};
use handler::Handler;
pub use resources::{MAX_LINKS, URI_PREFIX};
pub(crate) use task::NoTaskQuestions;
pub use tools::local_name;

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
    /// The task support (`execution.taskSupport`) of the listed tools that
    /// declare one, by remote name, as read from a child's raw lines.
    task_support: Arc<Mutex<HashMap<String, toolreg::TaskSupport>>>,
    /// Remote names of tools whose plain `tools/call` the server refused as
    /// "method not found", which the specification reserves for a tool that
    /// must run as a task: how such a tool is found where the listing does
    /// not show `execution` (streamable HTTP). Kept for the connection.
    task_only_called: Mutex<HashSet<String>>,
    changes: watch::Sender<u64>,
    /// The child process of the live connection, for a command server.
    child: Mutex<Option<u32>>,
    /// Hears that the live connection's child has exited, once it ends.
    exited: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
    /// [`RemoteServer::close`] was called: no reconnecting.
    closed: AtomicBool,
    /// The calls in flight whose caller takes progress, by the progress
    /// token sent to the server for them (an entry lives as long as its call).
    progress: Mutex<HashMap<ProgressToken, CallContext>>,
    /// Its `notifications/resources/updated`, by the server's own URI.
    updates: broadcast::Sender<String>,
    /// The URIs of the resource links its tools returned lately, oldest first.
    links: Mutex<VecDeque<String>>,
    /// Who answers its questions (elicitation, sampling, its tasks').
    answerer: Mutex<Option<Arc<dyn Answerer>>>,
    /// Its access tokens, for a server that requires OAuth.
    tokens: Option<oauth::TokenSource>,
}

impl std::fmt::Debug for RemoteServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteServer")
            .field("name", &self.inner.name)
            .field("tools", &self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).len())
            .finish_non_exhaustive()
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
        let tokens = match (&config.oauth, &config.transport) {
            (Some(settings), Transport::Url { url, .. }) => Some(oauth::TokenSource::new(settings.clone(), url)),
            _ => None,
        };
        let inner = Arc::new(Inner {
            name: name.to_owned(),
            config,
            tokens,
            connection: Mutex::new(None),
            reconnecting: AtomicBool::new(false),
            tools: Mutex::new(Vec::new()),
            task_support: Arc::default(),
            task_only_called: Mutex::default(),
            changes: watch::channel(0).0,
            child: Mutex::new(None),
            exited: Mutex::new(None),
            closed: AtomicBool::new(false),
            progress: Mutex::default(),
            updates: broadcast::channel(64).0,
            links: Mutex::default(),
            answerer: Mutex::new(None),
        });
        Ok(RemoteServer { inner })
    }

    /// Close the connection for good (it is not re-established; later calls
    /// fail saying so) and, for a command server, end its process as the
    /// MCP stdio transport asks: its input is closed and it has a moment to
    /// exit on its own, then SIGTERM, then SIGKILL. Returns once it has
    /// exited (at most about five seconds), so a host that calls this before
    /// it exits lets its servers finish what they do on the way out.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let connection = self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner).take();
        let exited = self.inner.exited.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(connection) = connection {
            // Ends the connection's task, which drops the transport: the
            // child's input closes and `child::shut_down` takes over.
            connection.cancellation_token().cancel();
        }
        if let Some(exited) = exited {
            let _ = tokio::time::timeout(child::EXIT_GRACE * 2 + Duration::from_secs(1), exited).await;
        }
    }

    /// Whether the server is connected now.
    pub fn is_connected(&self) -> bool {
        self.connection().is_some_and(|c| !c.is_closed())
    }

    /// The server's name (the prefix of its tools).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The tools as the server last listed them (`tools/list`), under their
    /// remote names; [`registrations`](Self::registrations) are what to
    /// register.
    pub fn listed_tools(&self) -> Vec<Tool> {
        self.inner.tools.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Ticks when the tool list changed (after `notifications/tools/list_changed`
    /// or a reconnection); read [`registrations`](Self::registrations) again.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// The listed tools that are not offered, by remote name, with why: the
    /// ones whose plain `tools/call` the server refused as "method not
    /// found" (a server that wants a task but did not answer with one,
    /// though this client declares the tasks extension).
    pub fn left_out(&self) -> Vec<(String, String)> {
        let called = self.inner.task_only_called.lock().unwrap_or_else(PoisonError::into_inner);
        let mut left: Vec<(String, String)> = self
            .listed_tools()
            .iter()
            .filter(|tool| called.contains(tool.name.as_ref()))
            .map(|tool| {
                let why = "the server refused a plain call of it (\"method not found\") and did not run it as an \
                           MCP task";
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
        self.inner.task_support.lock().unwrap_or_else(PoisonError::into_inner).clear();
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

    fn connection(&self) -> Option<Arc<RunningService<RoleClient, Handler>>> {
        self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn reconnecting_error(&self) -> ClientError {
        let message = if self.inner.closed.load(Ordering::SeqCst) {
            "the connection was closed"
        } else {
            "not connected; reconnecting, try again shortly"
        };
        ClientError::Connect { server: self.inner.name.clone(), target: self.target(), message: message.to_owned() }
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
                let (reader, exited) = ChildOut::new(stdout, child, Arc::clone(&self.inner.task_support));
                *self.inner.exited.lock().unwrap_or_else(PoisonError::into_inner) = Some(exited);
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
                // rmcp's reqwest is built without a TLS provider of its own
                // (see the workspace's Cargo.toml): ring, unless the host
                // installed one.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut handler = Some(handler);
                let mut stepped_up = false;
                let started = loop {
                    if let Some(tokens) = &self.inner.tokens {
                        let token = tokens
                            .token(wait)
                            .await
                            .map_err(|e| connect_error(format!("cannot get an access token: {e}")))?;
                        auth = Some(token);
                    }
                    let mut config =
                        StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom.clone());
                    if let Some(token) = &auth {
                        config = config.auth_header(token.clone());
                    }
                    let transport = StreamableHttpClientTransport::from_config(config);
                    let handler = handler.take().unwrap_or_else(|| Handler { server: Arc::downgrade(&self.inner) });
                    let started = tokio::time::timeout(wait, handler.serve(transport)).await;
                    if let (Ok(Err(error)), Some(tokens)) = (&started, &self.inner.tokens) {
                        // Refused (or failed) with this token: the next attempt gets a new one,
                        // with more scope once when the server said which it needs (step-up).
                        tokens.forget();
                        if !stepped_up && required_scope(error).is_some_and(|scope| tokens.step_up(&scope)) {
                            stepped_up = true;
                            continue;
                        }
                    }
                    break started;
                };
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
        if self.inner.closed.load(Ordering::SeqCst) || self.inner.reconnecting.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut delay = BACKOFF_FIRST;
            loop {
                tokio::time::sleep(delay).await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.closed.load(Ordering::SeqCst) {
                    return;
                }
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
