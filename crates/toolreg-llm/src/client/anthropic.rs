//! Anthropic Messages.

use serde_json::{Value, json};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::hosted::last_container;
use toolreg::provider::{CallAssembler, CallMapping, Provider, WireFormat};

use super::wire::{choice, declare, read_calls, refused};
use super::{Body, ClientConfig, Endpoint, Http, sse};
use crate::model::{FinishReason, LlmError, Message, ModelRequest, ModelResponse, OnEvent, StreamEvent, Usage};

/// The Messages API (`POST {base}/v1/messages`; the base URL is the host
/// root, as in Anthropic's SDKs, and one that already ends in `/v1` is
/// taken as it is).
#[derive(Debug, Clone)]
pub struct AnthropicClient {
    http: Http,
}

/// This client in the list of clients, with its environment as its
/// provider's official SDK reads it.
pub(crate) const ENDPOINT: Endpoint = Endpoint {
    provider: Provider::Anthropic,
    aliases: &[],
    base_url_vars: &["ANTHROPIC_BASE_URL"],
    default_url: "https://api.anthropic.com",
    key_vars: &["ANTHROPIC_API_KEY"],
    default_model: "claude-sonnet-4-5",
    build: |config| Ok(Box::new(AnthropicClient::new(config)?)),
};

/// `max_tokens` is required by the API; this is sent when the request sets none.
const DEFAULT_MAX_TOKENS: u32 = 4096;

impl AnthropicClient {
    /// A client with this configuration (base URL `https://api.anthropic.com`).
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        Ok(AnthropicClient { http: Http::new(config)? })
    }

    /// From `ANTHROPIC_BASE_URL` (the host root, default
    /// `https://api.anthropic.com`) and `ANTHROPIC_API_KEY` (required for the
    /// default URL only).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::new(ENDPOINT.checked_env_config()?)
    }
}

fn messages(format: &dyn WireFormat, request: &ModelRequest, mapping: &CallMapping) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": [{"type": "text", "text": text}]})),
            Message::Assistant { text, tool_calls, hosted, .. } => {
                out.extend(format.render_turn(text, tool_calls, hosted.as_ref(), mapping));
            }
            Message::Tool { results } => out.extend(format.render_results(&super::results(results), mapping).messages),
        }
    }
    out
}

impl AnthropicClient {
    async fn complete_inner(&self, request: &ModelRequest, on_event: OnEvent<'_>) -> Result<ModelResponse, LlmError> {
        let format = match &request.code_execution {
            Some(code) => Anthropic::new().code_execution(code.clone()),
            None => Anthropic::new(),
        };
        let declared = declare(&format, request);
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages(&format, request, &declared.mapping),
        });
        if let Some(system) = &request.system {
            body["system"] = system.clone().into();
        }
        if let Some(choice) = choice(&format, request, &declared.mapping) {
            body["tool_choice"] = choice;
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        // A program waiting for our answers runs on in its container, which
        // the request must name (the latest one, as Anthropic's SDKs do).
        let hosted = request.messages.iter().filter_map(|m| match m {
            Message::Assistant { hosted, .. } => hosted.as_ref(),
            _ => None,
        });
        if let Some(container) = last_container(hosted) {
            body["container"] = container.into();
        }
        let url = super::versioned_url(&self.http.config.base_url, "v1", "messages");
        let mut headers = vec![("anthropic-version", "2023-06-01".to_owned())];
        if let Some(key) = self.http.key() {
            headers.push(("x-api-key", key.to_owned()));
        }

        if !self.http.config.stream {
            let answer = self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, None).await?;
            let text: String = answer
                .get("content")
                .and_then(Value::as_array)
                .map(|blocks| {
                    blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
                })
                .unwrap_or_default();
            let read = read_calls(&format, &answer, &declared.mapping)?;
            let n = |p: &str| answer.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            let usage = Usage { input_tokens: n("/usage/input_tokens"), output_tokens: n("/usage/output_tokens") };
            let finish = finish_reason(answer.get("stop_reason").and_then(Value::as_str));
            return Ok(ModelResponse::new(text, read, usage, finish).generated_by(&declared.mapping));
        }

        body["stream"] = true.into();
        let mut text = String::new();
        // The format's own assembler collects the tool-use blocks.
        let mut calls = CallAssembler::new(format.provider());
        let mut usage = Usage::default();
        let mut stop = None;
        let mut on_sse = |event: sse::Event| -> Result<bool, LlmError> {
            if event.data.is_empty() {
                return Ok(false);
            }
            let data: Value = serde_json::from_str(&event.data)
                .map_err(|e| LlmError::Protocol(format!("a stream event is not JSON: {e}")))?;
            calls.push(&data).map_err(refused)?;
            match data.get("type").and_then(Value::as_str).unwrap_or_default() {
                "message_start" => {
                    usage.input_tokens =
                        data.pointer("/message/usage/input_tokens").and_then(Value::as_u64).unwrap_or(0);
                }
                "content_block_delta" if data.pointer("/delta/type") == Some(&json!("text_delta")) => {
                    let delta = data.pointer("/delta/text").and_then(Value::as_str).unwrap_or_default();
                    text.push_str(delta);
                    on_event(StreamEvent::TextDelta(delta.to_owned()));
                }
                "message_delta" => {
                    if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                        stop = Some(reason.to_owned());
                    }
                    if let Some(out) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                        usage.output_tokens = out;
                    }
                }
                "message_stop" => return Ok(true),
                "error" => {
                    let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or("stream error");
                    return Err(LlmError::Stream(message.to_owned()));
                }
                _ => {}
            }
            Ok(false)
        };
        self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, Some(&mut on_sse)).await?;
        let read = calls.finish(&format, &declared.mapping).map_err(refused)?;
        super::announce(&read.calls, on_event);
        Ok(ModelResponse::new(text, read, usage, finish_reason(stop.as_deref())).generated_by(&declared.mapping))
    }
}

super::llm_client!(AnthropicClient, "anthropic", Anthropic::new());

/// The Messages API's `stop_reason`.
fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("end_turn") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}
