//! The streamable HTTP transport, behind an axum router.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (sessions, or none in
//! stateless mode; SSE or JSON answers; `Host` checks; a body limit with
//! 413). Around it this module adds what a tool server must have before it
//! listens: the loopback address by default, `Origin` checked against an
//! allow-list (the DNS-rebinding protection the specification requires),
//! and an optional bearer token, without which a request is 401.
//!
//! Nothing from outside is held without a bound. Every check on headers
//! (token, `Host`, `Origin`) is made before a byte of the body is read; a
//! client has [`HttpOptions::header_read_timeout`] to send a request's
//! headers (an idle connection is closed after it too) and
//! [`HttpOptions::body_read_timeout`] for its body (408 after it); and at
//! most [`HttpOptions::max_connections`] connections are open at once: past
//! that, no more are accepted (they wait in the listener's backlog) until
//! one closes.
//!
//! A client on a revision before 2025-11-25 gets no SSE priming event (an
//! event with empty data, which those revisions do not have and some of
//! their clients fail to parse as a message); later clients get it, as from
//! the official SDKs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use toolreg::Principal;

use super::oauth::{self, OAuth};
use super::session::Transport;
use super::{McpServer, ServeError};

/// Where and how the HTTP endpoint listens.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address to bind (default `127.0.0.1:8080`).
    pub bind: SocketAddr,
    /// The path of the MCP endpoint (default `/mcp`).
    pub path: String,
    /// A token every request must carry as `Authorization: Bearer …`: one
    /// secret for every client (ignored when [`oauth`](Self::oauth) is set).
    pub bearer_token: Option<String>,
    /// Access tokens of an OAuth authorization server, verified per request:
    /// each client is the principal its token names.
    pub oauth: Option<OAuth>,
    /// No sessions: every request stands alone, so several server processes
    /// can sit behind a load balancer. Server-to-client messages outside a
    /// request's own answer (`list_changed`) need sessions.
    pub stateless: bool,
    /// Browser origins allowed to call (scheme, host and port; `:*` for any
    /// port). Requests without `Origin` (not from a browser) always pass.
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (loopback names by default; add your own
    /// hostnames when you bind elsewhere).
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes (413 above it; default 4 MiB).
    pub max_body_bytes: usize,
    /// How long a client has to send a request's headers, from the start of
    /// its connection or the end of its last request: a connection that
    /// takes longer, or stays idle longer, is closed (default 10 s).
    pub header_read_timeout: Duration,
    /// How long a client has to send a request's body once its headers
    /// are in: past it the request is answered 408 (default 30 s).
    pub body_read_timeout: Duration,
    /// Connections open at once (default 512); past that, new connections
    /// wait in the listener's backlog until one closes. An open SSE stream
    /// holds its connection.
    pub max_connections: usize,
    /// Stops the server when cancelled.
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<set>"))
            .field("oauth", &self.oauth)
            .field("stateless", &self.stateless)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".to_owned(),
            bearer_token: None,
            oauth: None,
            stateless: false,
            allowed_origins: ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec(),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            max_body_bytes: 4 * 1024 * 1024,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            max_connections: 512,
            shutdown: CancellationToken::new(),
        }
    }
}

impl HttpOptions {
    /// Bind this address.
    pub fn bind(mut self, bind: SocketAddr) -> Self {
        self.bind = bind;
        self
    }

    /// Require this bearer token.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Require access tokens of this authorization server (in place of a
    /// shared bearer token).
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Serve without sessions.
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Also accept this `Host` (a hostname, or `host:port`).
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Refuse request bodies larger than this (413).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Give clients this long to send a request's headers (at least 1 ms).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Give clients this long to send a request's body (at least 1 ms).
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Keep at most this many connections open (at least one).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.clamp(1, Semaphore::MAX_PERMITS);
        self
    }

    /// Also accept this browser origin.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }
}

/// The bearer token in `TOOLREG_MCP_TOKEN`, if set and not empty.
pub fn bearer_token_from_env() -> Option<String> {
    std::env::var("TOOLREG_MCP_TOKEN").ok().filter(|t| !t.is_empty())
}

impl McpServer {
    /// An axum router serving MCP at `options.path`, with the origin, host,
    /// body-size and bearer-token checks and the body read timeout; nest it
    /// in your own app or serve it. (The header read timeout and the
    /// connection bound are the server's: [`serve_http_on`](Self::serve_http_on).)
    pub fn http_router(&self, options: &HttpOptions) -> Router {
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(options.allowed_hosts.clone())
            .with_allowed_origins(options.allowed_origins.clone())
            .enforce_origin_validation();
        config.legacy_session_mode = !options.stateless;
        config.json_response = options.stateless;
        config.max_request_body_bytes = options.max_body_bytes;
        config.cancellation_token = options.shutdown.child_token();
        let server = self.clone();
        // Each session (each request, stateless) gets its own deferred-loading state.
        let transport = if options.stateless { Transport::Stateless } else { Transport::HttpSession };
        let service = StreamableHttpService::new(
            move || Ok(server.connection(transport)),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        // rmcp checks `Host` and `Origin` before it reads the body; this
        // layer only watches the body go by as rmcp reads it, and edits the
        // answer.
        let edge = Edge {
            server: self.shared.tasks.is_some().then(|| self.clone()),
            body_read_timeout: options.body_read_timeout,
        };
        let sessions = SessionOwners::default();
        let router = Router::new()
            .route_service(&options.path, service)
            .layer(middleware::from_fn(move |request: Request, next: Next| {
                let edge = edge.clone();
                async move { edge.handle(request, next).await }
            }))
            .layer(middleware::from_fn(move |request: Request, next: Next| {
                let sessions = sessions.clone();
                async move { sessions.handle(request, next).await }
            }));
        if let Some(oauth) = &options.oauth {
            let (metadata_url, metadata_paths) = metadata_location(oauth.audience(), &options.path);
            let metadata_url: Arc<str> = Arc::from(metadata_url);
            let checked = router.layer(middleware::from_fn({
                let oauth = oauth.clone();
                move |request: Request, next: Next| {
                    oauth::require_token(oauth.clone(), Arc::clone(&metadata_url), request, next)
                }
            }));
            let metadata: Arc<str> = Arc::from(oauth.resource_metadata().to_string());
            let mut open = Router::new();
            for path in metadata_paths {
                let metadata = Arc::clone(&metadata);
                let answer = move || {
                    let body = metadata.to_string();
                    std::future::ready(([(header::CONTENT_TYPE, "application/json")], body))
                };
                open = open.route(&path, axum::routing::get(answer));
            }
            return checked.merge(open);
        }
        match &options.bearer_token {
            None => router,
            Some(token) => {
                let expected: Arc<[u8]> = Arc::from(format!("Bearer {token}").into_bytes());
                router.layer(middleware::from_fn(move |request: Request, next: Next| {
                    let expected = Arc::clone(&expected);
                    async move { require_bearer(&expected, request, next).await }
                }))
            }
        }
    }

    /// Serve MCP over HTTP on `options.bind` until `options.shutdown` is cancelled.
    pub async fn serve_http(&self, options: HttpOptions) -> Result<(), ServeError> {
        let listener = tokio::net::TcpListener::bind(options.bind).await?;
        self.serve_http_on(listener, options).await
    }

    /// Serve MCP over HTTP on a listener already bound (port 0 in tests),
    /// with [`HttpOptions`]' header read timeout and connection bound. On
    /// shutdown, connections finish the request they are answering.
    pub async fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> Result<(), ServeError> {
        let router = self.http_router(&options);
        let shutdown = options.shutdown.clone();
        let max = options.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        let places = Arc::new(Semaphore::new(max));
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new()).header_read_timeout(options.header_read_timeout);
        loop {
            // At the bound, accept nothing: the backlog holds new
            // connections until one closes.
            let place = tokio::select! {
                () = shutdown.cancelled() => break,
                place = Arc::clone(&places).acquire_owned() => place.map_err(std::io::Error::other)?,
            };
            let stream = tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        // Out of file descriptors, or a connection reset
                        // before it was accepted: wait, then go on.
                        tracing::warn!(%error, "accepting an HTTP connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let _place = place;
                let mut connection = std::pin::pin!(connection);
                let ended = tokio::select! {
                    ended = connection.as_mut() => ended,
                    () = shutdown.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(error) = ended {
                    tracing::debug!(%error, "HTTP connection ended");
                }
            });
        }
        // Every connection gives its place back when it has closed.
        let all = u32::try_from(max).unwrap_or(u32::MAX);
        let _ = places.acquire_many(all).await;
        Ok(())
    }
}

/// The revision that brought the SSE priming event (an empty `data:`).
const PRIMING_SINCE: &str = "2025-11-25";

/// The revision a request without `MCP-Protocol-Version` is taken to speak.
const UNSTATED_REVISION: &str = "2025-03-26";

/// The most of a request body kept to look at (its method, its revision):
/// the requests looked at (`initialize`, `tools/list`) are far smaller.
const KEPT_BODY: usize = 64 << 10;

/// The largest `tools/list` answer rewritten (a bigger one passes as it is).
const MAX_LIST_ANSWER: usize = 64 << 20;

/// What the router does around rmcp's service, for every request.
#[derive(Clone)]
struct Edge {
    /// The server, when it has tasks: `tools/list` answers get `execution`.
    server: Option<McpServer>,
    body_read_timeout: Duration,
}

/// What was seen of a request body as rmcp read it.
#[derive(Default)]
struct Seen {
    /// Whether to keep the body: it is looked at only when the request does
    /// not state its revision (an `initialize`), or for `tools/list` with tasks.
    keeping: bool,
    /// Its start (all of it, when it is no longer than [`KEPT_BODY`]).
    kept: Mutex<Vec<u8>>,
    /// It came too late.
    timed_out: AtomicBool,
}

impl Seen {
    fn keep(&self, chunk: &[u8]) {
        if !self.keeping {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let room = (KEPT_BODY + 1).saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    /// The body as a JSON-RPC message, when it was kept whole and is one.
    fn message(&self) -> Option<serde_json::Value> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.is_empty() || kept.len() > KEPT_BODY {
            return None;
        }
        serde_json::from_slice(&kept).ok()
    }
}

impl Edge {
    async fn handle(&self, request: Request, next: Next) -> Response {
        let stated =
            request.headers().get("mcp-protocol-version").and_then(|value| value.to_str().ok()).map(str::to_owned);
        let (parts, body) = request.into_parts();
        let seen = Arc::new(Seen { keeping: stated.is_none() || self.server.is_some(), ..Seen::default() });
        let deadline = tokio::time::Instant::now() + self.body_read_timeout;
        let body = axum::body::Body::from_stream(read_by(body, deadline, Arc::clone(&seen)));
        let response = next.run(Request::from_parts(parts, body)).await;
        if seen.timed_out.load(Ordering::Relaxed) {
            let mut response =
                (StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time\n").into_response();
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        let message = seen.message();
        let method = message.as_ref().and_then(|m| m.get("method")).and_then(serde_json::Value::as_str);
        // An `initialize` says its revision in its body; every later request
        // in the header (none: 2025-03-26).
        let revision = match (method, stated) {
            (Some("initialize"), _) => message
                .as_ref()
                .and_then(|m| m.pointer("/params/protocolVersion"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or(UNSTATED_REVISION)
                .to_owned(),
            (_, Some(stated)) => stated,
            (_, None) => UNSTATED_REVISION.to_owned(),
        };
        let listing = method == Some("tools/list");
        let response =
            if revision.as_str() < PRIMING_SINCE && is_sse(&response) { without_priming(response) } else { response };
        match &self.server {
            Some(server) if listing && response.status().is_success() => with_execution(server, response).await,
            _ => response,
        }
    }
}

/// `body`, failing once `deadline` has passed, with what goes by kept in `seen`.
fn read_by(
    body: axum::body::Body,
    deadline: tokio::time::Instant,
    seen: Arc<Seen>,
) -> impl futures_util::Stream<Item = Result<axum::body::Bytes, std::io::Error>> + Send + 'static {
    futures_util::stream::unfold(Some(body.into_data_stream()), move |data| {
        let seen = Arc::clone(&seen);
        async move {
            let mut data = data?;
            match tokio::time::timeout_at(deadline, data.next()).await {
                Ok(None) => None,
                Ok(Some(Ok(chunk))) => {
                    seen.keep(&chunk);
                    Some((Ok(chunk), Some(data)))
                }
                Ok(Some(Err(error))) => Some((Err(std::io::Error::other(error)), None)),
                Err(_) => {
                    seen.timed_out.store(true, Ordering::Relaxed);
                    Some((Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request body timed out")), None))
                }
            }
        }
    })
}

fn is_sse(response: &Response) -> bool {
    response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// `response`'s SSE stream without its priming events: events with empty
/// data, an id and a retry hint (rmcp writes each event as one frame).
fn without_priming(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let events =
        body.into_data_stream().filter(|event| std::future::ready(!matches!(event, Ok(bytes) if is_priming(bytes))));
    Response::from_parts(parts, axum::body::Body::from_stream(events))
}

/// Whether this SSE event carries no message: only empty `data`, `id` and
/// `retry` fields.
fn is_priming(event: &[u8]) -> bool {
    let Some(fields) = event.strip_suffix(b"\n\n") else { return false };
    let mut empty_data = false;
    for line in fields.split(|&b| b == b'\n') {
        match line {
            b"data:" | b"data: " => empty_data = true,
            _ if line.starts_with(b"id:") || line.starts_with(b"retry:") => {}
            _ => return false,
        }
    }
    empty_data
}

/// A `tools/list` answer (a JSON body, or the `data:` lines of an SSE one)
/// with each tool's `execution` added: rmcp's `Tool` has no `execution`
/// (the tasks extension's), and its HTTP service takes only a `ServerHandler`.
async fn with_execution(server: &McpServer, response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_LIST_ANSWER).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let served = server.served();
    let Ok(text) = std::str::from_utf8(&bytes) else { return Response::from_parts(parts, bytes.into()) };
    let sse = parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let rewritten = if sse {
        text.split_inclusive('\n')
            .map(|line| match line.strip_prefix("data:") {
                Some(data) => {
                    let end = if line.ends_with('\n') { "\n" } else { "" };
                    match add_execution(data.trim(), &served.execution) {
                        Some(json) => format!("data: {json}{end}"),
                        None => line.to_owned(),
                    }
                }
                None => line.to_owned(),
            })
            .collect()
    } else {
        add_execution(text, &served.execution).unwrap_or_else(|| text.to_owned())
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, rewritten.into())
}

/// A JSON-RPC answer with a tool list, with `execution` added to the tools
/// that have one; `None` for anything else.
fn add_execution(text: &str, execution: &std::collections::HashMap<String, serde_json::Value>) -> Option<String> {
    let mut message: serde_json::Value = serde_json::from_str(text).ok()?;
    let tools = message.pointer_mut("/result/tools")?.as_array_mut()?;
    for tool in tools {
        let found = tool.get("name").and_then(serde_json::Value::as_str).and_then(|name| execution.get(name)).cloned();
        if let (Some(found), Some(fields)) = (found, tool.as_object_mut()) {
            fields.insert("execution".to_owned(), found);
        }
    }
    serde_json::to_string(&message).ok()
}

async fn require_bearer(expected: &[u8], request: Request, next: Next) -> Response {
    let given = request.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes).unwrap_or_default();
    if constant_time_eq(given, expected) {
        static HOLDER: LazyLock<Arc<Principal>> = LazyLock::new(|| Arc::new(Principal::shared_secret()));
        let mut request = request;
        request.extensions_mut().insert(Arc::clone(&HOLDER));
        next.run(request).await
    } else {
        let mut response = (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        // The body was never read: the connection ends with this answer, and says so.
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// Which principal made each MCP session (by a hash of its id): a request
/// naming a session another principal made is answered as for a session
/// that does not exist, so an id seen elsewhere reaches nothing of it.
/// Requests without a principal (no authentication) are not bound.
#[derive(Clone, Default)]
struct SessionOwners {
    owners: Arc<Mutex<SessionMap>>,
}

/// The sessions' owners, and their order of creation (the oldest are
/// forgotten past [`MAX_BOUND_SESSIONS`]).
#[derive(Default)]
struct SessionMap {
    owners: std::collections::HashMap<[u8; 32], String>,
    order: std::collections::VecDeque<[u8; 32]>,
}

/// The most session owners remembered.
const MAX_BOUND_SESSIONS: usize = 100_000;

impl SessionOwners {
    async fn handle(&self, request: Request, next: Next) -> Response {
        use sha2::{Digest, Sha256};
        let Some(who) = request.extensions().get::<Arc<Principal>>().map(|p| p.identity()) else {
            return next.run(request).await;
        };
        let key = |id: &[u8]| -> [u8; 32] { Sha256::digest(id).into() };
        if let Some(id) = request.headers().get("mcp-session-id") {
            let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            if owners.owners.get(&key(id.as_bytes())).is_some_and(|owner| *owner != who) {
                return (StatusCode::NOT_FOUND, "session not found\n").into_response();
            }
        }
        let response = next.run(request).await;
        if let Some(created) = response.headers().get("mcp-session-id") {
            let mut map = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
            let key = key(created.as_bytes());
            if map.owners.insert(key, who).is_none() {
                map.order.push_back(key);
                if map.order.len() > MAX_BOUND_SESSIONS
                    && let Some(oldest) = map.order.pop_front()
                {
                    map.owners.remove(&oldest);
                }
            }
        }
        response
    }
}

/// Where the Protected Resource Metadata is (RFC 9728): its URL, from the
/// audience (the server's canonical URI), and the paths it is served at
/// here (with the resource's path, and at the root for clients that look
/// there).
fn metadata_location(audience: &str, mcp_path: &str) -> (String, Vec<String>) {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let (origin, path) = crate::protocol::oauth::split_origin(audience);
    let mut paths = vec![format!("{WELL_KNOWN}{path}"), WELL_KNOWN.to_owned()];
    if path != mcp_path.trim_end_matches('/') {
        paths.push(format!("{WELL_KNOWN}{}", mcp_path.trim_end_matches('/')));
    }
    paths.dedup();
    (format!("{origin}{WELL_KNOWN}{path}"), paths)
}

/// Compare without stopping at the first difference, so the time taken
/// does not tell an attacker how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &byte) in b.iter().enumerate() {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ byte);
    }
    diff == 0
}
