//! Ollama's native `/api/chat` (its `/v1` endpoint takes
//! [`openai_chat`](super::openai_chat)).
//!
//! - Declarations: the OpenAI function shape, without strict mode.
//! - Calls in: `message.tool_calls[].function{name, arguments}`, arguments
//!   an object, usually without an id: a stable one is generated.
//! - Results out: one `{"role":"tool","content","tool_name"}` message per
//!   result. Ollama's messages carry images in an `images` list of base64
//!   strings, and vision models read them in user messages: images go in one
//!   user message after the tool messages (its `content` says which call of
//!   the batch, counted from 1, and which tool each is from), and the tool
//!   message says so
//!   ([`Fallback::FollowUpMessage`](super::Fallback::FollowUpMessage)).
//!   Ollama takes no audio or files: those, links and embedded text
//!   resources are their summary text
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.

use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted, attachments_of};
use super::declared::Entries;
use super::history::as_object;
use super::openai_chat::{
    ChatTool, chat_choice, chat_stream_event, chat_streamed_answer, chat_tool_call, chat_tool_calls, chat_turn,
};
use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, NameRule, Prepared, Provider, ProviderError, Registration,
    RenderedResults, SchemaMode, StreamedCalls, ToolChoice, ToolRef, WireFormat, prepare, sealed,
};
use crate::exec::{ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Ollama,
    name: "ollama",
    aliases: &[],
    title: "Ollama",
    name_rule: NameRule::OPENAI,
    build: |options| Box::new(Ollama::with_options(options)),
};

/// Ollama's native wire format.
#[derive(Debug, Clone, Default)]
pub struct Ollama {
    options: FormatOptions,
}

/// A prepared tool as an entry of `tools`: OpenAI's shape, never strict.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> ChatTool<'b> {
    let mut entry = super::openai_chat::entry(p);
    entry.function.strict = None;
    entry
}

impl Ollama {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Ollama);

impl WireFormat for Ollama {
    fn provider(&self) -> Provider {
        Provider::Ollama
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Ollama, SchemaMode::Canonical, &self.options, tools)
            .finish(|tools, _| Box::new(Entries(tools, entry)))
    }

    /// OpenAI's spelling.
    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        chat_choice(Provider::Ollama, choice, mapping)
    }

    /// OpenAI's assistant message, but Ollama's own API takes the
    /// arguments as an object.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        chat_turn(text, calls, mapping, as_object)
    }

    /// One `tool` message per result, the name respelled through `mapping`.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults {
        blocks::follow_up(
            results,
            |r, content| json!({"role": "tool", "content": content, "tool_name": mapping.provider_name(&r.name)}),
            |media| accepted(&media.mime_type, WEB_IMAGES).map(|_| Value::String(media.base64())),
            |moved| {
                // Ollama's calls have no ids the model saw: say which call
                // (its place in the batch) of which tool.
                let mut lines = Vec::with_capacity(moved.len());
                let mut images = Vec::new();
                for (r, parts) in moved {
                    let place = results.iter().position(|x| std::ptr::eq(x, r)).map_or(0, |i| i + 1);
                    let call = format!("{place} ({})", mapping.provider_name(&r.name));
                    lines.push(format!("{} {} image(s)", attachments_of(&call), parts.len()));
                    images.extend(parts);
                }
                json!({"role": "user", "content": lines.join("\n"), "images": images})
            },
        )
    }
}

impl sealed::Format for Ollama {
    /// The tool calls of an `/api/chat` response or its `message`.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::Ollama, body)?
            .into_iter()
            .map(|(i, call)| chat_tool_call(Provider::Ollama, i, call, mapping))
            .collect()
    }

    /// OpenAI's stream chunks.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        chat_stream_event(stream, event)
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        Some(chat_streamed_answer(stream))
    }
}
