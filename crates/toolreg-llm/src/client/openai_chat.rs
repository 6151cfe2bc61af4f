//! OpenAI-compatible Chat Completions.

use serde_json::{Value, json};
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::{CallAssembler, CallMapping, Provider, WireFormat};

use super::wire::{choice, declare, read_calls, refused};
use super::{Body, ClientConfig, Endpoint, Http, sse};
use crate::model::{FinishReason, LlmError, Message, ModelRequest, ModelResponse, OnEvent, StreamEvent, Usage};

/// Chat Completions (`POST {base}/chat/completions`): OpenAI and every
/// server that copies it — Ollama, vLLM, llama.cpp, LM Studio, OpenRouter,
/// Mistral, Groq.
#[derive(Debug, Clone)]
pub struct OpenAiChatClient {
    http: Http,
}

/// This client in the list of clients, with its environment as its
/// provider's official SDK reads it.
pub(crate) const ENDPOINT: Endpoint = Endpoint {
    provider: Provider::OpenAiChat,
    aliases: &["openai"],
    base_url_vars: &["OPENAI_BASE_URL"],
    default_url: "https://api.openai.com/v1",
    key_vars: &["OPENAI_API_KEY"],
    default_model: "gpt-4.1-mini",
    build: |config| Ok(Box::new(OpenAiChatClient::new(config)?)),
};

impl OpenAiChatClient {
    /// A client with this configuration.
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        Ok(OpenAiChatClient { http: Http::new(config)? })
    }

    /// From `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and
    /// `OPENAI_API_KEY` (required for the default URL only).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::new(ENDPOINT.checked_env_config()?)
    }
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").field("config", &self.config).finish_non_exhaustive()
    }
}

fn messages(format: &dyn WireFormat, request: &ModelRequest, mapping: &CallMapping) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls, .. } => out.extend(format.render_calls(text, tool_calls, mapping)),
            Message::Tool { results } => out.extend(format.render_results(&super::results(results), mapping).messages),
        }
    }
    out
}

/// Chat Completions' `finish_reason`.
fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("stop") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn usage(body: &Value) -> Usage {
    let n = |p: &str| body.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Usage { input_tokens: n("/usage/prompt_tokens"), output_tokens: n("/usage/completion_tokens") }
}

impl OpenAiChatClient {
    async fn complete_inner(&self, request: &ModelRequest, on_event: OnEvent<'_>) -> Result<ModelResponse, LlmError> {
        let format = OpenAiChat::new();
        let declared = declare(&format, request);
        let mut body = json!({"model": request.model, "messages": messages(&format, request, &declared.mapping)});
        if let Some(choice) = choice(&format, request, &declared.mapping) {
            body["tool_choice"] = choice;
        }
        if let Some(max) = request.max_tokens {
            body["max_tokens"] = max.into();
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        let url = format!("{}/chat/completions", self.http.config.base_url);
        let headers = self.http.bearer();

        if !self.http.config.stream {
            let answer = self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, None).await?;
            let message = answer
                .pointer("/choices/0/message")
                .ok_or_else(|| LlmError::Protocol("the answer has no `choices[0].message`".into()))?;
            let text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_owned();
            let read = read_calls(&format, &answer, &declared.mapping)?;
            let finish = finish_reason(answer.pointer("/choices/0/finish_reason").and_then(Value::as_str));
            return Ok(ModelResponse::new(text, read, usage(&answer), finish).generated_by(&declared.mapping));
        }

        body["stream"] = true.into();
        body["stream_options"] = json!({"include_usage": true});
        let mut text = String::new();
        // The format's own assembler collects the calls' deltas.
        let mut calls = CallAssembler::new(format.provider());
        let mut finish = None;
        let mut used = Usage::default();
        let mut on_sse = |event: sse::Event| -> Result<bool, LlmError> {
            if event.data.trim() == "[DONE]" {
                return Ok(true);
            }
            let chunk: Value = serde_json::from_str(&event.data)
                .map_err(|e| LlmError::Protocol(format!("a stream chunk is not JSON: {e}")))?;
            // Compatible servers report a failure mid-stream as a chunk with
            // `error` (often followed by `[DONE]`): the answer is broken.
            if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                return Err(LlmError::Stream(super::stream_error_message(error)));
            }
            if chunk.get("usage").is_some_and(Value::is_object) {
                used = usage(&chunk);
            }
            calls.push(&chunk).map_err(refused)?;
            let Some(choice) = chunk.pointer("/choices/0") else { return Ok(false) };
            if let Some(delta) = choice.pointer("/delta/content").and_then(Value::as_str)
                && !delta.is_empty()
            {
                text.push_str(delta);
                on_event(StreamEvent::TextDelta(delta.to_owned()));
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                finish = Some(reason.to_owned());
            }
            Ok(false)
        };
        self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, Some(&mut on_sse)).await?;
        let read = calls.finish(&format, &declared.mapping).map_err(refused)?;
        super::announce(&read.calls, on_event);
        Ok(ModelResponse::new(text, read, used, finish_reason(finish.as_deref())).generated_by(&declared.mapping))
    }
}

super::llm_client!(OpenAiChatClient, "openai-chat", OpenAiChat::new());
