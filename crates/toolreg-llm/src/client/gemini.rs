//! Gemini `generateContent`.

use serde_json::{Value, json};
use toolreg::provider::gemini::Gemini;
use toolreg::provider::{CallAssembler, CallMapping, Provider, WireFormat};

use super::wire::{choice, declare, read_calls, refused};
use super::{Body, ClientConfig, Endpoint, Http, sse};
use crate::model::{FinishReason, LlmError, Message, ModelRequest, ModelResponse, OnEvent, StreamEvent, Usage};

/// Gemini (`POST {base}/v1beta/models/{model}:generateContent`, or
/// `:streamGenerateContent?alt=sse` when streaming). The base URL is the
/// host root, as in Google's SDK, which keeps the API version apart; one
/// that already ends with a version (`…/v1beta`, `…/v1`) is taken as it is.
#[derive(Debug, Clone)]
pub struct GeminiClient {
    http: Http,
}

/// This client in the list of clients, with its environment as its
/// provider's official SDK reads it.
pub(crate) const ENDPOINT: Endpoint = Endpoint {
    provider: Provider::Gemini,
    aliases: &["google"],
    // `GEMINI_BASE_URL` is what earlier versions read; the SDK's own
    // variable wins.
    base_url_vars: &["GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"],
    default_url: "https://generativelanguage.googleapis.com",
    key_vars: &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
    default_model: "gemini-2.5-flash",
    build: |config| Ok(Box::new(GeminiClient::new(config)?)),
};

/// The API version inserted after a base URL that names none.
const API_VERSION: &str = "v1beta";

impl GeminiClient {
    /// A client with this configuration (base URL
    /// `https://generativelanguage.googleapis.com`).
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        Ok(GeminiClient { http: Http::new(config)? })
    }

    /// From `GOOGLE_GEMINI_BASE_URL` (or `GEMINI_BASE_URL`; default
    /// `https://generativelanguage.googleapis.com`) and `GOOGLE_API_KEY`, or
    /// `GEMINI_API_KEY` when that is unset (one of them required for the
    /// default URL).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::new(ENDPOINT.checked_env_config()?)
    }
}

fn contents(format: &dyn WireFormat, request: &ModelRequest, mapping: &CallMapping) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "parts": [{"text": text}]})),
            Message::Assistant { text, tool_calls, generated_ids, .. } => {
                // Ids toolreg made up are known from the conversation's own
                // record, so neither the call nor its result sends them.
                for id in generated_ids {
                    mapping.note_generated_id(id);
                }
                out.extend(format.render_calls(text, tool_calls, mapping));
            }
            Message::Tool { results } => out.extend(format.render_results(&super::results(results), mapping).messages),
        }
    }
    out
}

fn usage(body: &Value) -> Option<Usage> {
    let meta = body.get("usageMetadata")?;
    let n = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage { input_tokens: n("promptTokenCount"), output_tokens: n("candidatesTokenCount") })
}

fn text_of(body: &Value) -> String {
    body.pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .map(|parts| parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect())
        .unwrap_or_default()
}

impl GeminiClient {
    async fn complete_inner(&self, request: &ModelRequest, on_event: OnEvent<'_>) -> Result<ModelResponse, LlmError> {
        let format = Gemini::new();
        let declared = declare(&format, request);
        let mut body = json!({"contents": contents(&format, request, &declared.mapping)});
        if let Some(system) = &request.system {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if let Some(choice) = choice(&format, request, &declared.mapping) {
            body["toolConfig"] = choice;
        }
        let mut generation = serde_json::Map::new();
        if let Some(max) = request.max_tokens {
            generation.insert("maxOutputTokens".into(), max.into());
        }
        if let Some(t) = request.temperature {
            generation.insert("temperature".into(), json!(t));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        let mut headers = Vec::new();
        if let Some(key) = self.http.key() {
            headers.push(("x-goog-api-key", key.to_owned()));
        }
        let base = &self.http.config.base_url;

        if !self.http.config.stream {
            let url = super::versioned_url(base, API_VERSION, &format!("models/{}:generateContent", request.model));
            let answer = self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, None).await?;
            let read = read_calls(&format, &answer, &declared.mapping)?;
            let finish = finish_reason(answer.pointer("/candidates/0/finishReason").and_then(Value::as_str));
            return Ok(ModelResponse::new(text_of(&answer), read, usage(&answer).unwrap_or_default(), finish)
                .generated_by(&declared.mapping));
        }

        let url =
            super::versioned_url(base, API_VERSION, &format!("models/{}:streamGenerateContent?alt=sse", request.model));
        let mut text = String::new();
        // The format's own assembler collects the call parts.
        let mut calls = CallAssembler::new(format.provider());
        let mut used = Usage::default();
        let mut finish = None;
        let mut on_sse = |event: sse::Event| -> Result<bool, LlmError> {
            if event.data.trim().is_empty() {
                return Ok(false);
            }
            let chunk: Value = serde_json::from_str(&event.data)
                .map_err(|e| LlmError::Protocol(format!("a stream chunk is not JSON: {e}")))?;
            if let Some(error) = chunk.get("error") {
                return Err(LlmError::Stream(super::stream_error_message(error)));
            }
            let delta = text_of(&chunk);
            if !delta.is_empty() {
                text.push_str(&delta);
                on_event(StreamEvent::TextDelta(delta));
            }
            calls.push(&chunk).map_err(refused)?;
            if let Some(u) = usage(&chunk) {
                used = u;
            }
            if let Some(reason) = chunk.pointer("/candidates/0/finishReason").and_then(Value::as_str) {
                finish = Some(reason.to_owned());
                return Ok(true);
            }
            Ok(false)
        };
        self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, Some(&mut on_sse)).await?;
        let read = calls.finish(&format, &declared.mapping).map_err(refused)?;
        super::announce(&read.calls, on_event);
        Ok(ModelResponse::new(text, read, used, finish_reason(finish.as_deref())).generated_by(&declared.mapping))
    }
}

super::llm_client!(GeminiClient, "gemini", Gemini::new());

/// A Gemini candidate's `finishReason`.
fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("STOP") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some("SAFETY") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}
