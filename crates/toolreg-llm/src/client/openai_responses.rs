//! OpenAI Responses.

use serde_json::{Value, json};
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{CallMapping, Provider, WireFormat};

use super::wire::{choice, declare};
use super::{Body, ClientConfig, Endpoint, Http, sse};
use crate::model::{FinishReason, LlmError, Message, ModelRequest, ModelResponse, OnEvent, StreamEvent, Usage};

/// At most this many output items are kept from one streamed answer.
const MAX_STREAMED_ITEMS: usize = toolreg::provider::MAX_STREAMED_CALLS;

/// The Responses API (`POST {base}/responses`), stateless: the whole
/// conversation is sent each time (`store: false`).
///
/// It has the provider's own tool search
/// ([`LlmClient::native_tool_search`](crate::LlmClient::native_tool_search)):
/// [`ModelRequest::deferred_tools`] go with `"defer_loading": true`, and
/// [`ModelRequest::search_tool`] as the client-executed `tool_search` tool,
/// whose `tool_search_call` items (in the answer's `output`, or streamed as
/// `response.output_item.done` events) are calls of that tool, kept in the
/// conversation and sent back as they came, and whose answer goes as a
/// `tool_search_output` item with the found tools' definitions (see
/// [`toolreg::provider::openai_responses`]).
///
/// It has programmatic tool calling
/// ([`LlmClient::code_execution`](crate::LlmClient::code_execution)):
/// with [`ModelRequest::code_execution`] the functions are callable from
/// programs OpenAI runs, and a turn with a `program` goes back whole (see
/// [`toolreg::provider::hosted`]).
#[derive(Debug, Clone)]
pub struct OpenAiResponsesClient {
    http: Http,
}

/// This client in the list of clients, with its environment as its
/// provider's official SDK reads it.
pub(crate) const ENDPOINT: Endpoint = Endpoint {
    provider: Provider::OpenAiResponses,
    aliases: &[],
    base_url_vars: &["OPENAI_BASE_URL"],
    default_url: "https://api.openai.com/v1",
    key_vars: &["OPENAI_API_KEY"],
    default_model: "gpt-4.1-mini",
    build: |config| Ok(Box::new(OpenAiResponsesClient::new(config)?)),
};

impl OpenAiResponsesClient {
    /// A client with this configuration.
    pub fn new(config: ClientConfig) -> Result<Self, LlmError> {
        Ok(OpenAiResponsesClient { http: Http::new(config)? })
    }

    /// From `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and
    /// `OPENAI_API_KEY` (required for the default URL only).
    pub fn from_env() -> Result<Self, LlmError> {
        Self::new(ENDPOINT.checked_env_config()?)
    }
}

fn input(format: &dyn WireFormat, request: &ModelRequest, mapping: &CallMapping) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls, hosted, .. } => {
                out.extend(format.render_turn(text, tool_calls, hosted.as_ref(), mapping));
            }
            Message::Tool { results } => out.extend(format.render_results(&super::results(results), mapping).messages),
        }
    }
    out
}

fn read(answer: &Value, format: &OpenAiResponses, mapping: &CallMapping) -> Result<ModelResponse, LlmError> {
    let mut text = String::new();
    for item in answer.get("output").and_then(Value::as_array).into_iter().flatten() {
        if item["type"] == "message" {
            for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
        }
    }
    let read = super::wire::read_calls(format, answer, mapping)?;
    let n = |p: &str| answer.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let usage = Usage { input_tokens: n("/usage/input_tokens"), output_tokens: n("/usage/output_tokens") };
    let finish = if !read.calls.is_empty() {
        FinishReason::ToolCalls
    } else {
        match answer.pointer("/incomplete_details/reason").and_then(Value::as_str) {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Stop,
        }
    };
    Ok(ModelResponse::new(text, read, usage, finish).generated_by(mapping))
}

impl OpenAiResponsesClient {
    async fn complete_inner(&self, request: &ModelRequest, on_event: OnEvent<'_>) -> Result<ModelResponse, LlmError> {
        let format = match &request.code_execution {
            Some(code) => OpenAiResponses::new().code_execution(code.clone()),
            None => OpenAiResponses::new(),
        };
        let declared = declare(&format, request);
        let mut body =
            json!({"model": request.model, "input": input(&format, request, &declared.mapping), "store": false});
        if let Some(system) = &request.system {
            body["instructions"] = system.clone().into();
        }
        if let Some(choice) = choice(&format, request, &declared.mapping) {
            body["tool_choice"] = choice;
        }
        if let Some(max) = request.max_tokens {
            body["max_output_tokens"] = max.into();
        }
        if let Some(t) = request.temperature {
            body["temperature"] = json!(t);
        }
        let url = format!("{}/responses", self.http.config.base_url);
        let headers = self.http.bearer();

        if !self.http.config.stream {
            let answer = self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, None).await?;
            return read(&answer, &format, &declared.mapping);
        }
        body["stream"] = true.into();
        let mut completed: Option<Value> = None;
        // The output items as streamed (`response.output_item.done`): the
        // answer's `output` when the final event leaves it out.
        let mut items: Vec<Value> = Vec::new();
        let mut on_sse = |event: sse::Event| -> Result<bool, LlmError> {
            if event.data.trim().is_empty() {
                return Ok(false);
            }
            let data: Value = serde_json::from_str(&event.data)
                .map_err(|e| LlmError::Protocol(format!("a stream event is not JSON: {e}")))?;
            match data.get("type").and_then(Value::as_str).unwrap_or_default() {
                "response.output_text.delta" => {
                    if let Some(delta) = data.get("delta").and_then(Value::as_str) {
                        on_event(StreamEvent::TextDelta(delta.to_owned()));
                    }
                }
                "response.output_item.done" => {
                    if let Some(item) = data.get("item") {
                        if items.len() >= MAX_STREAMED_ITEMS {
                            return Err(LlmError::Protocol(format!("more than {MAX_STREAMED_ITEMS} output items")));
                        }
                        items.push(item.clone());
                    }
                }
                "response.completed" | "response.incomplete" => {
                    completed = Some(data.get("response").cloned().unwrap_or(Value::Null));
                    return Ok(true);
                }
                "response.failed" | "error" => {
                    let message = data
                        .pointer("/response/error/message")
                        .or_else(|| data.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("the response failed");
                    return Err(LlmError::Stream(message.to_owned()));
                }
                _ => {}
            }
            Ok(false)
        };
        self.http.post(&url, &headers, &Body::new(&body, request, &declared), on_event, Some(&mut on_sse)).await?;
        let mut answer =
            completed.ok_or_else(|| LlmError::Protocol("truncated stream: no response.completed".into()))?;
        let no_output = answer.get("output").and_then(Value::as_array).is_none_or(Vec::is_empty);
        if no_output && !items.is_empty() && answer.is_object() {
            answer["output"] = Value::Array(items);
        }
        let response = read(&answer, &format, &declared.mapping)?;
        super::announce(&response.tool_calls, on_event);
        Ok(response)
    }
}

super::llm_client!(OpenAiResponsesClient, "openai-responses", OpenAiResponses::new());
