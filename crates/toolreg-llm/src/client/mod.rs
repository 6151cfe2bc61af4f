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
//! - token usage in every answer;
//! - API keys that never reach `Debug` output, logs, errors or events.
//!
//! ```
//! use toolreg_llm::client::{ClientConfig, OpenAiChatClient};
//!
//! // Any OpenAI-compatible server: here a local Ollama, which needs no key.
//! let client = OpenAiChatClient::new(ClientConfig::new("http://localhost:11434/v1").stream(true));
//! assert!(!format!("{client:?}").contains("sk-"));
//! ```

mod anthropic;
mod gemini;
mod openai_chat;
mod openai_responses;
mod sse;

use std::fmt;
use std::time::Duration;

use serde_json::Value;

pub use anthropic::AnthropicClient;
pub use gemini::GeminiClient;
pub use openai_chat::OpenAiChatClient;
pub use openai_responses::OpenAiResponsesClient;

use crate::model::{LlmError, OnEvent, StreamEvent};

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
        }
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

    /// Add a request header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// A configuration from the environment: `base_var` (or `default_url`)
    /// and `key_var`.
    pub fn from_env(base_var: &str, default_url: &str, key_var: &str) -> Self {
        let base = std::env::var(base_var).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default_url.to_owned());
        let mut config = ClientConfig::new(base);
        if let Ok(key) = std::env::var(key_var) {
            config = config.api_key(key);
        }
        config
    }
}

/// Which client [`from_env`] builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    OpenAiChat,
    /// OpenAI Responses (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    OpenAiResponses,
    /// Anthropic Messages (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
    Anthropic,
    /// Gemini (`GEMINI_BASE_URL`, `GEMINI_API_KEY`).
    Gemini,
}

/// A client for `kind`, configured from the environment. A provider that
/// needs a key and has none is [`LlmError::Config`]; an OpenAI-compatible
/// server with a custom `OPENAI_BASE_URL` may go without one.
pub fn from_env(kind: ProviderKind) -> Result<Box<dyn crate::LlmClient>, LlmError> {
    Ok(match kind {
        ProviderKind::OpenAiChat => Box::new(OpenAiChatClient::from_env()?),
        ProviderKind::OpenAiResponses => Box::new(OpenAiResponsesClient::from_env()?),
        ProviderKind::Anthropic => Box::new(AnthropicClient::from_env()?),
        ProviderKind::Gemini => Box::new(GeminiClient::from_env()?),
    })
}

/// The HTTP side every client shares.
#[derive(Clone)]
pub(crate) struct Http {
    pub(crate) config: ClientConfig,
    client: reqwest::Client,
}

impl Http {
    pub(crate) fn new(config: ClientConfig) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Http { config, client }
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
        body: &Value,
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
        body: &Value,
        on_sse: Option<&mut (dyn FnMut(sse::Event) -> Result<bool, LlmError> + Send + '_)>,
    ) -> Result<Value, (LlmError, Option<Duration>)> {
        let mut request = self.client.post(url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        for (name, value) in &self.config.headers {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|e| (transport_error(&e), None))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let text = response.text().await.unwrap_or_default();
            let message = error_message(&text);
            return Err((LlmError::Status { status: status.as_u16(), message }, retry_after));
        }
        match on_sse {
            None => {
                let bytes = response.bytes().await.map_err(|e| (transport_error(&e), None))?;
                serde_json::from_slice(&bytes)
                    .map_err(|e| (LlmError::Protocol(format!("the answer is not JSON: {e}")), None))
            }
            Some(on_sse) => {
                let mut parser = sse::Parser::default();
                let mut stream = response;
                let mut finished = false;
                let mut started = false;
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
                    for event in parser.push(&chunk) {
                        if on_sse(event).map_err(|e| (e, None))? {
                            finished = true;
                        }
                    }
                }
                for event in parser.finish() {
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
        other => other,
    }
}

/// `impl LlmClient` for a client with an `http` field and a
/// `complete_inner`: errors leave with the key scrubbed out.
macro_rules! llm_client {
    ($client:ty, $name:literal) => {
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

/// OpenAI's configuration from the environment: `OPENAI_BASE_URL` (default
/// the OpenAI API) and `OPENAI_API_KEY`, required for the OpenAI API only.
pub(crate) fn openai_config() -> Result<ClientConfig, LlmError> {
    let config = ClientConfig::from_env("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY");
    if !config.has_api_key() && config.base_url.contains("api.openai.com") {
        return Err(LlmError::Config("OPENAI_API_KEY is not set".into()));
    }
    Ok(config)
}

impl Http {
    /// `Authorization: Bearer <key>`, when there is a key.
    pub(crate) fn bearer(&self) -> Vec<(&'static str, String)> {
        self.key().map(|k| vec![("authorization", format!("Bearer {k}"))]).unwrap_or_default()
    }
}

/// A tool's JSON arguments as the text to send back in history.
pub(crate) fn arguments_text(arguments: &toolreg::ToolArguments) -> String {
    arguments.to_string()
}

/// The arguments as a JSON value (invalid text becomes an empty object: the
/// model is told through the tool result that its call was malformed).
pub(crate) fn arguments_value(arguments: &toolreg::ToolArguments) -> Value {
    match arguments {
        toolreg::ToolArguments::Json(value) => value.clone(),
        toolreg::ToolArguments::Raw(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Default::default()))
        }
    }
}
