//! The streamable HTTP transport, behind an axum router.
//!
//! rmcp's `StreamableHttpService` speaks the protocol (sessions, or none in
//! stateless mode; SSE or JSON answers; `Host` checks; a body limit with
//! 413). Around it this module adds what a tool server must have before it
//! listens: the loopback address by default, `Origin` checked against an
//! allow-list (the DNS-rebinding protection the specification requires),
//! and an optional bearer token, without which a request is 401.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::catalog::Transport;
use super::{McpServer, ServeError};

/// Where and how the HTTP endpoint listens.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The address to bind (default `127.0.0.1:8080`).
    pub bind: SocketAddr,
    /// The path of the MCP endpoint (default `/mcp`).
    pub path: String,
    /// A token every request must carry as `Authorization: Bearer …`.
    pub bearer_token: Option<String>,
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
    /// The largest request body, in bytes (413 above it).
    pub max_body_bytes: usize,
    /// Stops the server when cancelled.
    pub shutdown: CancellationToken,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("bind", &self.bind)
            .field("path", &self.path)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<set>"))
            .field("stateless", &self.stateless)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("max_body_bytes", &self.max_body_bytes)
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".to_owned(),
            bearer_token: None,
            stateless: false,
            allowed_origins: ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).to_vec(),
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            max_body_bytes: 4 * 1024 * 1024,
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
    /// body-size and bearer-token checks; nest it in your own app or serve it.
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
        let mut router = Router::new().route_service(&options.path, service);
        if self.shared.tasks.is_some() {
            // rmcp's `Tool` has no `execution` (the tasks extension's), and its
            // HTTP service takes only a `ServerHandler`: the field is added to
            // `tools/list` answers here, on their way out.
            let server = self.clone();
            let limit = options.max_body_bytes;
            router = router.layer(middleware::from_fn(move |request: Request, next: Next| {
                let server = server.clone();
                async move { with_execution(&server, limit, request, next).await }
            }));
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

    /// Serve MCP over HTTP on a listener already bound (port 0 in tests).
    pub async fn serve_http_on(
        &self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> Result<(), ServeError> {
        let router = self.http_router(&options);
        let shutdown = options.shutdown.clone();
        axum::serve(listener, router).with_graceful_shutdown(async move { shutdown.cancelled().await }).await?;
        Ok(())
    }
}

/// The largest `tools/list` answer rewritten (a bigger one passes as it is).
const MAX_LIST_ANSWER: usize = 64 << 20;

/// Pass `request` on; when it is a `tools/list`, add each tool's
/// `execution` to the answer (a JSON body, or the `data:` lines of an SSE
/// one).
async fn with_execution(server: &McpServer, limit: usize, request: Request, next: Next) -> Response {
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // Over the limit: rmcp answers 413 for the body it is given again.
    let Ok(bytes) = axum::body::to_bytes(body, limit.saturating_add(1)).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let listing = serde_json::from_slice::<serde_json::Value>(&bytes)
        .is_ok_and(|message| message.get("method").and_then(serde_json::Value::as_str) == Some("tools/list"));
    let response = next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await;
    if !listing || !response.status().is_success() {
        return response;
    }
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
        next.run(request).await
    } else {
        let mut response = (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        response
    }
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
