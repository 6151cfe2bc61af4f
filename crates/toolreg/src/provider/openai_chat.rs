//! OpenAI Chat Completions, and the servers that copy its shape (vLLM,
//! llama.cpp, Ollama's `/v1`).
//!
//! - Declarations: `{"type":"function","function":{"name","description","parameters","strict"}}`.
//! - Calls in: `choices[0].message.tool_calls`, whose `arguments` is a JSON
//!   *string* that may not parse: it is kept as [`ToolArguments::Raw`], and
//!   execution answers it with a `MalformedArguments` result.
//! - Results out: one `{"role":"tool","tool_call_id","content"}` message per
//!   result. A tool message carries text only (the API reference's
//!   `ChatCompletionToolMessageParam`), so images (`image_url` with a data
//!   URL), audio (`input_audio`, WAV or MP3) and files (`file` with
//!   `file_data` and `filename`) go in one user message after every tool
//!   message of the batch, each introduced by the call's id, and the tool
//!   message says so in a line per block
//!   ([`Fallback::FollowUpMessage`](super::Fallback::FollowUpMessage)).
//!   Other blocks (a link, an embedded text resource, an image type OpenAI
//!   does not take) are their summary text
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.
//!
//! ```
//! use toolreg::provider::{CallMapping, WireFormat, openai_chat::OpenAiChat};
//! use toolreg::ToolArguments;
//! use serde_json::json;
//!
//! let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1"}}
//! ]}, "finish_reason": "tool_calls"}]});
//! let calls = OpenAiChat::new().parse_calls(&response, &CallMapping::default())?;
//! assert_eq!(calls[0].arguments, ToolArguments::Raw("{\"a\": 1".into()));
//! # Ok::<(), toolreg::provider::ProviderError>(())
//! ```
//!
//! [`ToolArguments::Raw`]: crate::ToolArguments::Raw

use serde::Serialize;
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted, attachments_of};
use super::choice::{spelled, unsupported_validated};
use super::declared::Entries;
use super::history::assistant_text;
use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, NameRule, Prepared, Provider, ProviderError,
    Registration, RenderedResults, SchemaMode, StreamedCalls, Strictness, ToolChoice, ToolRef, WireFormat, find,
    generated_id, invalid, object_arguments, prepare, sealed, str_field,
};
use crate::exec::{Media, ToolArguments, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::OpenAiChat,
    name: "openai_chat",
    aliases: &["openai"],
    title: "OpenAI Chat Completions",
    name_rule: NameRule::OPENAI,
    build: |options| Box::new(OpenAiChat::with_options(options)),
};

/// OpenAI's limit on tools in one request.
pub const MAX_TOOLS: usize = 128;

/// Chat Completions' wire format.
///
/// Strict mode defaults to [`Strictness::IfCompatible`]: a tool is strict
/// when its schema can be made strict, and otherwise sent as it is and
/// reported as [`ToolStatus::NotStrict`](super::ToolStatus::NotStrict).
#[derive(Debug, Clone, Default)]
pub struct OpenAiChat {
    options: FormatOptions,
}

/// One entry of Chat Completions' `tools` (also Ollama's).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatTool<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: ChatFunction<'a>,
}

/// The `function` of a [`ChatTool`].
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatFunction<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<&'a str>,
    pub(crate) parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) strict: Option<bool>,
}

/// A prepared tool as an entry of `tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> ChatTool<'b> {
    ChatTool {
        kind: "function",
        function: ChatFunction {
            name: &p.name,
            description: super::description(p.tool.declaration()),
            parameters: &p.schema,
            strict: Some(p.strict),
        },
    }
}

impl OpenAiChat {
    /// Default options: strict if compatible, names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(OpenAiChat, strict);

impl WireFormat for OpenAiChat {
    fn provider(&self) -> Provider {
        Provider::OpenAiChat
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        let mode = SchemaMode::Strict(Dialect::OpenAiStrict, Strictness::IfCompatible);
        let mut prepared = prepare(Provider::OpenAiChat, mode, &self.options, tools);
        prepared.limit(MAX_TOOLS);
        prepared.finish(|tools, _| Box::new(Entries(tools, entry)))
    }

    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        chat_choice(Provider::OpenAiChat, choice, mapping)
    }

    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        chat_turn(text, calls, mapping, |arguments| json!(arguments.to_string()))
    }

    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> RenderedResults {
        blocks::follow_up(
            results,
            |r, content| json!({"role": "tool", "tool_call_id": r.id, "content": content}),
            |media| user_part(media, true),
            |moved| user_message(moved.into_iter().map(|(r, parts)| (r.id.as_str(), parts))),
        )
    }
}

/// The audio types Chat Completions' `input_audio` takes, with its `format`.
const AUDIO: &[(&str, &str)] =
    &[("audio/wav", "wav"), ("audio/x-wav", "wav"), ("audio/wave", "wav"), ("audio/mpeg", "mp3"), ("audio/mp3", "mp3")];

/// A block's bytes as a content part of a Chat Completions user message
/// (also Mistral's, which has no `file` part): `image_url` for the image
/// types OpenAI takes, `input_audio` for WAV and MP3, `file` for any other
/// file when `files`. `None`: the part cannot carry it.
pub(crate) fn user_part(media: &Media, files: bool) -> Option<Value> {
    let mime = &media.mime_type;
    if let Some(image) = accepted(mime, WEB_IMAGES) {
        let url = format!("data:{image};base64,{}", media.base64());
        return Some(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    if blocks::is(mime, "audio") {
        let essence = blocks::essence(mime);
        let (_, format) = AUDIO.iter().find(|(m, _)| m.eq_ignore_ascii_case(essence))?;
        return Some(json!({"type": "input_audio", "input_audio": {"data": media.base64(), "format": format}}));
    }
    if files && !blocks::is(mime, "image") {
        let file = json!({"filename": blocks::file_name(media), "file_data": media.data_url()});
        return Some(json!({"type": "file", "file": file}));
    }
    None
}

/// The user message after the tool messages: for each call, a text part
/// naming it, then its parts.
pub(crate) fn user_message<S: AsRef<str>>(moved: impl Iterator<Item = (S, Vec<Value>)>) -> Value {
    let mut content = Vec::new();
    for (call, parts) in moved {
        content.push(json!({"type": "text", "text": attachments_of(call.as_ref())}));
        content.extend(parts);
    }
    json!({"role": "user", "content": content})
}

impl sealed::Format for OpenAiChat {
    /// The tool calls of a chat completion, of its `message`, or of a bare
    /// `tool_calls` array.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::OpenAiChat, body)?
            .into_iter()
            .map(|(i, call)| chat_tool_call(Provider::OpenAiChat, i, call, mapping))
            .collect()
    }

    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        chat_stream_event(stream, event)
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        Some(chat_streamed_answer(stream))
    }
}

/// The `tool_choice` of Chat Completions (also Ollama's).
pub(crate) fn chat_choice(
    provider: Provider,
    choice: &ToolChoice,
    mapping: &CallMapping,
) -> Result<Value, ProviderError> {
    let function = |n: &String| json!({"type": "function", "function": {"name": spelled(mapping, n)}});
    Ok(match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(n) => function(n),
        ToolChoice::Validated => return Err(unsupported_validated(provider)),
        ToolChoice::Allowed { tools, required } => json!({
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": if *required { "required" } else { "auto" },
                "tools": tools.iter().map(function).collect::<Vec<_>>()
            }
        }),
    })
}

/// The model's turn as one OpenAI-shaped assistant message (also Mistral's
/// and Ollama's), each call's arguments as `arguments` writes them: the
/// text the model wrote for OpenAI and Mistral, an object for Ollama.
pub(crate) fn chat_turn(
    text: &str,
    calls: &[ToolCall],
    mapping: &CallMapping,
    arguments: impl Fn(&ToolArguments) -> Value,
) -> Vec<Value> {
    let mut message = serde_json::Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), assistant_text(text));
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                let name = mapping.provider_name(&c.name);
                json!({"id": c.id, "type": "function", "function": {"name": name, "arguments": arguments(&c.arguments)}})
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    vec![Value::Object(message)]
}

/// One chunk of an OpenAI-shaped stream (also Mistral's and Ollama's):
/// indexed deltas of each call's id, name and argument text.
pub(crate) fn chat_stream_event(stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
    let deltas = event.pointer("/choices/0/delta/tool_calls").and_then(Value::as_array);
    for delta in deltas.into_iter().flatten() {
        let next = stream.next_index();
        let call = stream.at(delta.get("index").and_then(Value::as_u64).unwrap_or(next))?;
        if let Some(id) = delta.get("id").and_then(Value::as_str) {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = delta.pointer("/function/name").and_then(Value::as_str) {
            call.name.push_str(name);
        }
        if let Some(text) = delta.pointer("/function/arguments").and_then(Value::as_str) {
            call.arguments.push_str(text);
        }
    }
    Ok(())
}

/// The chat completion a finished OpenAI-shaped stream amounts to.
pub(crate) fn chat_streamed_answer(stream: StreamedCalls) -> Value {
    let calls: Vec<Value> = stream
        .into_calls()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    json!({"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]})
}

/// The OpenAI-shaped `tool_calls` of a chat response, message or bare list.
pub(crate) fn chat_tool_calls(provider: Provider, body: &Value) -> Result<Vec<(usize, &Value)>, ProviderError> {
    let list = if body.is_array() {
        Some(body)
    } else {
        find(body, &["/choices/0/message/tool_calls", "/message/tool_calls", "/tool_calls"])
    };
    match list {
        Some(Value::Array(calls)) => Ok(calls.iter().enumerate().collect()),
        Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(invalid(provider, "`tool_calls` is not an array")),
        None if body.pointer("/choices/0/message").is_some() || body.get("message").is_some() => Ok(Vec::new()),
        None if body.get("role").is_some() => Ok(Vec::new()),
        None => Err(invalid(provider, "expected a chat completion, a message or a `tool_calls` array")),
    }
}

/// One OpenAI-shaped tool call: `{"id","type":"function","function":{"name","arguments"}}`.
pub(crate) fn chat_tool_call(
    provider: Provider,
    index: usize,
    call: &Value,
    mapping: &CallMapping,
) -> Result<ToolCall, ProviderError> {
    let function = call.get("function").ok_or_else(|| invalid(provider, "a tool call has no `function`"))?;
    let name = str_field(provider, function, "name", "a tool call's function")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
        other => object_arguments(other),
    };
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => generated_id("call_", index, name, function.get("arguments").unwrap_or(&Value::Null), mapping),
    };
    Ok(ToolCall { id, name: name.to_owned(), arguments })
}
