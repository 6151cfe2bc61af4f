//! LLM clients over HTTP: OpenAI-compatible Chat Completions (OpenAI, Ollama,
//! vLLM, llama.cpp, LM Studio, OpenRouter, Mistral, Groq — one client, a base
//! URL), OpenAI Responses, Anthropic Messages and Gemini `generateContent`.
//!
//! Each client declares the tools in its provider's wire format (the core's
//! [`WireFormat`](toolreg::provider::WireFormat)), parses the calls back with
//! that format's name mapping — so calls carry the tools' real names — and
//! renders the conversation's tool results the way its provider wants them.
//! All of them share:
//!
//! - streaming over SSE (`stream(true)`): text deltas and completed tool calls
//!   reported as [`StreamEvent`]s while the answer arrives; a stream that ends
//!   before the provider's end marker is [`LlmError::Protocol`];
//! - retries of 429, 5xx and broken connections with exponential backoff and
//!   full jitter, honouring `Retry-After`, each reported as
//!   [`StreamEvent::Retrying`];
//! - a connect timeout and a whole-request timeout ([`LlmError::Timeout`]);
//!   a client that cannot be built with them is not built ([`LlmError::Config`]);
//! - answers read up to [`ClientConfig::max_response_bytes`] (32 MiB by
//!   default; [`LlmError::TooLarge`] past it), error bodies up to 64 KiB;
//! - an error the provider reports inside a stream is [`LlmError::Stream`],
//!   never a cut-short answer;
//! - redirects followed only within the base URL's origin: a redirect to
//!   another scheme, host or port is [`LlmError::Redirect`], so the key in
//!   the request's headers never reaches a host it was not configured for;
//! - token usage in every answer;
//! - API keys that never reach `Debug` output, logs, errors or events.
//!
//! ```
//! use toolreg_llm::client::{ClientConfig, OpenAiChatClient};
//!
//! // Any OpenAI-compatible server: here a local Ollama, which needs no key.
//! let client = OpenAiChatClient::new(ClientConfig::new("http://localhost:11434/v1").stream(true))?;
//! assert!(!format!("{client:?}").contains("sk-"));
//! # Ok::<(), toolreg_llm::LlmError>(())
//! ```

mod anthropic;
mod endpoint;
mod gemini;
mod openai_chat;
mod openai_responses;
mod sse;
mod wire;

use std::fmt;
use std::time::Duration;

use serde_json::Value;

pub use anthropic::AnthropicClient;
pub use endpoint::{Endpoint, UnknownEndpoint, from_env};
pub use gemini::GeminiClient;
pub use openai_chat::OpenAiChatClient;
pub use openai_responses::OpenAiResponsesClient;

use crate::model::{LlmError, ModelRequest, OnEvent, StreamEvent};
use toolreg::provider::{Declarations, DeclaredTools};

/// Every client, one line each: adding one is its file and its line here.
const ENDPOINTS: [&Endpoint; 4] =
    [&openai_chat::ENDPOINT, &openai_responses::ENDPOINT, &anthropic::ENDPOINT, &gemini::ENDPOINT];

/// The names [`Endpoint::parse`] knows, for an error: the shortest of each
/// client's names (`openai` for `openai-chat`).
fn endpoint_names() -> String {
    let shortest = |e: &Endpoint| {
        let name = e.provider.as_str().replace('_', "-");
        e.aliases.iter().map(|a| (*a).to_owned()).fold(name, |best, a| if a.len() < best.len() { a } else { best })
    };
    let names: Vec<String> = ENDPOINTS.iter().map(|e| shortest(e)).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// How to reach a provider: base URL, key, timeouts, retries, streaming.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientConfig {
    /// The API's base URL (`https://api.openai.com/v1`, `http://localhost:11434/v1`, …).
    pub base_url: String,
    /// The API key, if the server needs one. Never printed.
    api_key: Option<String>,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest a whole request may take (the answer streamed in full).
    pub request_timeout: Duration,
    /// Retries after a 429, a 5xx or a broken connection.
    pub max_retries: u32,
    /// The first backoff; doubled each retry, with full jitter.
    pub backoff: Duration,
    /// The longest single wait, `Retry-After` included.
    pub max_backoff: Duration,
    /// Stream the answer over SSE.
    pub stream: bool,
    /// Extra request headers (`OpenAI-Organization`, `HTTP-Referer`, …).
    pub headers: Vec<(String, String)>,
    /// The largest answer read: a whole body, or everything a streamed
    /// answer sends (default 32 MiB). Past it the request fails with
    /// [`LlmError::TooLarge`]. An error body is read up to 64 KiB only,
    /// the rest left unread (its message is shortened anyway).
    pub max_response_bytes: usize,
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("stream", &self.stream)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    /// A configuration for this base URL, no key, default limits (10 s to
    /// connect, 300 s per request, 3 retries from 500 ms up to 30 s).
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(300),
            max_retries: 3,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            stream: false,
            headers: Vec::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Set the largest answer read ([`LlmError::TooLarge`] past it).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Use this API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into()).filter(|k: &String| !k.is_empty());
        self
    }

    /// Whether a key is set.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// Stream answers over SSE.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Set the whole-request timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Set the connect timeout.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Set the number of retries and the first backoff.
    pub fn retries(mut self, max_retries: u32, backoff: Duration) -> Self {
        self.max_retries = max_retries;
        self.backoff = backoff;
        self
    }

    /// Add a request header (checked when the client is built: a name or
    /// value HTTP cannot carry is [`LlmError::Config`] then).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A configuration from the environment: the first of `base_vars` that
    /// is set (or `default_url`), and the first of `key_vars` that is set.
    pub fn from_env(base_vars: &[&str], default_url: &str, key_vars: &[&str]) -> Self {
        let base = first_env(base_vars).unwrap_or_else(|| default_url.to_owned());
        let mut config = ClientConfig::new(base);
        if let Some(key) = first_env(key_vars) {
            config = config.api_key(key);
        }
        config
    }
}

fn first_env(vars: &[&str]) -> Option<String> {
    vars.iter().find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
}

/// `{base}/{path}` for an API whose paths start with a version segment
/// (`v1`, `v1beta`): `version` is inserted unless the base URL already ends
/// with a version segment, so `https://api.anthropic.com` and
/// `https://api.anthropic.com/v1` both reach `…/v1/messages`.
pub(crate) fn versioned_url(base: &str, version: &str, path: &str) -> String {
    let base = base.trim_end_matches('/');
    let last = base.rsplit('/').next().unwrap_or_default();
    let is_version = last.strip_prefix('v').is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].bytes().all(|b| b.is_ascii_alphanumeric())
    });
    if is_version { format!("{base}/{path}") } else { format!("{base}/{version}/{path}") }
}

/// The default of [`ClientConfig::max_response_bytes`].
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// How much of an error body is read: enough for any provider's message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Redirects followed within the configured origin.
const MAX_REDIRECTS: usize = 10;

/// A request body: its fields, then the declared tools (when the request
/// offers any), written straight from their declarations into the text
/// sent, with no `Value` copy of every schema in between.
#[derive(serde::Serialize)]
pub(crate) struct Body<'a> {
    #[serde(flatten)]
    fields: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a DeclaredTools<'a>>,
}

impl<'a> Body<'a> {
    pub(crate) fn new(
        fields: &'a Value,
        request: &ModelRequest,
        declared: &'a Declarations<DeclaredTools<'a>>,
    ) -> Self {
        Body { fields, tools: (!request.tools.is_empty()).then_some(&declared.tools) }
    }
}

/// The HTTP side every client shares.
#[derive(Clone)]
pub(crate) struct Http {
    pub(crate) config: ClientConfig,
    client: reqwest::Client,
}

impl Http {
    /// The HTTP client for `config`; failing to build it (the TLS backend
    /// cannot start) is [`LlmError::Config`], never a client without the
    /// configured timeouts.
    pub(crate) fn new(config: ClientConfig) -> Result<Self, LlmError> {
        // The extra headers are checked here, once: a bad one is a
        // configuration error, not a failure of every request.
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &config.headers {
            let bad = || LlmError::Config(format!("the header `{name}` is not a valid HTTP header"));
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let value = reqwest::header::HeaderValue::from_str(value).map_err(|_| bad())?;
            headers.append(name, value);
        }
        // reqwest is built without a TLS provider of its own (see the
        // workspace's Cargo.toml): ring, unless the host installed one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .redirect(same_origin_redirects())
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {}", transport_error(&e))))?;
        Ok(Http { config, client })
    }

    pub(crate) fn key(&self) -> Option<&str> {
        self.config.api_key.as_deref()
    }

    /// POST `body` to `url` with `headers`, retrying what may succeed later;
    /// the answer's body, read in full (`stream`: parsed as SSE events and
    /// handed to `on_sse` as they come, the non-SSE body returned empty).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Body<'_>,
        on_event: OnEvent<'_>,
        mut on_sse: Option<&mut (dyn FnMut(sse::Event) -> Result<bool, LlmError> + Send + '_)>,
    ) -> Result<Value, LlmError> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.config.request_timeout;
        let mut attempt = 0u32;
        loop {
            let outcome = tokio::time::timeout_at(deadline, self.once(url, headers, body, on_sse.as_deref_mut())).await;
            let error = match outcome {
                Err(_) => LlmError::Timeout(self.config.request_timeout),
                Ok(Ok(value)) => return Ok(value),
                Ok(Err((error, _))) if !error.is_retryable() => return Err(error),
                Ok(Err((error, retry_after))) => {
                    if attempt >= self.config.max_retries {
                        return Err(error);
                    }
                    attempt += 1;
                    let delay = self.backoff(attempt, retry_after);
                    if tokio::time::Instant::now() + delay >= deadline {
                        return Err(error);
                    }
                    tracing::warn!(%error, attempt, ?delay, "model request failed; retrying");
                    on_event(StreamEvent::Retrying { attempt, delay });
                    tokio::time::sleep(delay).await;
                    continue;
                }
            };
            return Err(error);
        }
    }

    /// The wait before retry `attempt`: `Retry-After` when the server said,
    /// else exponential backoff with full jitter; capped either way.
    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.config.max_backoff);
        }
        let ceiling =
            self.config.backoff.saturating_mul(1u32 << attempt.min(16).saturating_sub(1)).min(self.config.max_backoff);
        ceiling.mul_f64(jitter())
    }

    async fn once(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Body<'_>,
        on_sse: Option<&mut (dyn FnMut(sse::Event) -> Result<bool, LlmError> + Send + '_)>,
    ) -> Result<Value, (LlmError, Option<Duration>)> {
        let mut request = self.client.post(url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.send().await.map_err(|e| (transport_error(&e), None))?;
        let status = response.status();
        if status.is_redirection() {
            // Only a redirect to another origin is left unfollowed (see
            // `same_origin_redirects`).
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| response.url().join(v).ok())
                .map_or_else(|| "an unreadable location".to_owned(), |url| url.origin().ascii_serialization());
            return Err((LlmError::Redirect { location }, None));
        }
        let limit = self.config.max_response_bytes;
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let text = read_capped(&mut response, MAX_ERROR_BODY).await.unwrap_or_default();
            let message = error_message(&String::from_utf8_lossy(&text));
            return Err((LlmError::Status { status: status.as_u16(), message }, retry_after));
        }
        match on_sse {
            None => {
                let bytes = read_capped(&mut response, limit).await.map_err(|e| (e, None))?;
                if bytes.len() > limit {
                    return Err((LlmError::TooLarge { limit }, None));
                }
                serde_json::from_slice(&bytes)
                    .map_err(|e| (LlmError::Protocol(format!("the answer is not JSON: {e}")), None))
            }
            Some(on_sse) => {
                let mut parser = sse::Parser::new(limit);
                let mut stream = response;
                let mut finished = false;
                let mut started = false;
                let mut received = 0usize;
                loop {
                    let chunk = match stream.chunk().await {
                        Ok(Some(chunk)) => chunk,
                        Ok(None) => break,
                        // Part of the answer was already reported: trying again
                        // would report it twice, so a broken stream is final.
                        Err(e) if started => {
                            return Err((
                                LlmError::Protocol(format!("the stream broke off: {}", transport_error(&e))),
                                None,
                            ));
                        }
                        Err(e) => return Err((transport_error(&e), None)),
                    };
                    started = true;
                    received = received.saturating_add(chunk.len());
                    if received > limit {
                        return Err((LlmError::TooLarge { limit }, None));
                    }
                    for event in parser.push(&chunk).map_err(|e| (e, None))? {
                        if on_sse(event).map_err(|e| (e, None))? {
                            finished = true;
                        }
                    }
                }
                for event in parser.finish().map_err(|e| (e, None))? {
                    if on_sse(event).map_err(|e| (e, None))? {
                        finished = true;
                    }
                }
                if !finished {
                    return Err((
                        LlmError::Protocol("truncated stream: it ended before the answer was complete".into()),
                        None,
                    ));
                }
                Ok(Value::Null)
            }
        }
    }
}

/// Follow a redirect only within the origin (scheme, host and port) of the
/// request's URL, so the key in its headers never reaches another host
/// (reqwest itself drops only `Authorization` on a host change, not
/// `x-api-key` or `x-goog-api-key`). Any other redirect is returned
/// unfollowed, and `Http::once` turns it into [`LlmError::Redirect`].
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !same {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// The body, read up to one byte past `limit` (so a caller can tell a body
/// of exactly `limit` bytes from a longer one); nothing more is read.
async fn read_capped(response: &mut reqwest::Response, limit: usize) -> Result<Vec<u8>, LlmError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        let room = (limit + 1).saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() > limit {
            break;
        }
    }
    Ok(body)
}

/// A number in [0, 1) from the clock and a counter: enough for jitter, which
/// only has to keep retrying clients from moving in step.
fn jitter() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let mut x = COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) ^ u64::from(nanos);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// `Retry-After` as seconds, or as an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// The provider's error message, shortened; never the request (which may
/// echo a key in some proxies' errors, so keys are scrubbed by the caller's
/// config not being part of it).
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")).or_else(|| v.get("error")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| body.to_owned());
    let mut short: String = message.chars().take(500).collect();
    if short.len() < message.len() {
        short.push('…');
    }
    short
}

fn transport_error(error: &reqwest::Error) -> LlmError {
    // reqwest's Display names the URL, never the headers.
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if error.is_timeout() { LlmError::Transport(format!("timed out: {message}")) } else { LlmError::Transport(message) }
}

/// The message of an `error` value in a stream chunk (`{"message": …}` or
/// a bare string), shortened like an error body's.
pub(crate) fn stream_error_message(error: &Value) -> String {
    match error {
        Value::String(text) => error_message(text),
        other => error_message(&serde_json::json!({ "error": other }).to_string()),
    }
}

/// Remove the key from a text that might contain it (a proxy's echo).
pub(crate) fn scrub(text: String, key: Option<&str>) -> String {
    match key {
        Some(key) if key.len() >= 4 && text.contains(key) => text.replace(key, "<redacted>"),
        _ => text,
    }
}

/// Scrub the key out of an error's messages.
pub(crate) fn scrub_error(error: LlmError, key: Option<&str>) -> LlmError {
    match error {
        LlmError::Status { status, message } => LlmError::Status { status, message: scrub(message, key) },
        LlmError::Transport(m) => LlmError::Transport(scrub(m, key)),
        LlmError::Protocol(m) => LlmError::Protocol(scrub(m, key)),
        LlmError::Stream(m) => LlmError::Stream(scrub(m, key)),
        other => other,
    }
}

/// `impl LlmClient` for a client with an `http` field and a
/// `complete_inner`: errors leave with the key scrubbed out.
macro_rules! llm_client {
    ($client:ty, $name:literal, $format:expr) => {
        impl $crate::model::LlmClient for $client {
            fn complete<'a>(
                &'a self,
                request: &'a $crate::model::ModelRequest,
                on_event: $crate::model::OnEvent<'a>,
            ) -> toolreg::BoxFuture<'a, Result<$crate::model::ModelResponse, $crate::model::LlmError>> {
                Box::pin(async move {
                    self.complete_inner(request, on_event).await.map_err(|e| super::scrub_error(e, self.http.key()))
                })
            }

            fn name(&self) -> &str {
                $name
            }

            fn native_tool_search(&self) -> bool {
                toolreg::provider::WireFormat::native_search(&$format)
            }

            fn code_execution(&self) -> bool {
                toolreg::provider::WireFormat::code_execution(&$format)
            }
        }
    };
}
pub(crate) use llm_client;

/// Report the calls of a streamed answer once they are complete.
pub(crate) fn announce(calls: &[toolreg::ToolCall], on_event: OnEvent<'_>) {
    for call in calls {
        on_event(StreamEvent::ToolCall(call.clone()));
    }
}

impl Http {
    /// `Authorization: Bearer <key>`, when there is a key.
    pub(crate) fn bearer(&self) -> Vec<(&'static str, String)> {
        self.key().map(|k| vec![("authorization", format!("Bearer {k}"))]).unwrap_or_default()
    }
}

/// The conversation's tool results as results again, for the request's
/// format to render (`WireFormat::render_results`): no client writes a
/// tool result by hand.
pub(crate) fn results(messages: &[crate::model::ToolResultMessage]) -> Vec<toolreg::ToolResult> {
    messages.iter().map(crate::model::ToolResultMessage::to_result).collect()
}

#[cfg(test)]
mod tests {
    use super::versioned_url;

    #[test]
    fn a_version_segment_is_added_once() {
        let url = |base| versioned_url(base, "v1", "messages");
        assert_eq!(url("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages");
        assert_eq!(url("https://api.anthropic.com/"), "https://api.anthropic.com/v1/messages");
        assert_eq!(url("https://api.anthropic.com/v1"), "https://api.anthropic.com/v1/messages");
        assert_eq!(url("http://proxy:8080/anthropic"), "http://proxy:8080/anthropic/v1/messages");
        let gemini = |base| versioned_url(base, "v1beta", "models/m:generateContent");
        assert_eq!(
            gemini("https://generativelanguage.googleapis.com"),
            "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent"
        );
        assert_eq!(gemini("http://localhost:9/v1beta"), "http://localhost:9/v1beta/models/m:generateContent");
        assert_eq!(gemini("http://localhost:9/v1"), "http://localhost:9/v1/models/m:generateContent");
        assert_eq!(gemini("http://localhost:9/v1alpha"), "http://localhost:9/v1alpha/models/m:generateContent");
    }
}
