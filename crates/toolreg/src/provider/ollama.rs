//! Ollama's native `/api/chat` (its `/v1` endpoint takes
//! [`openai_chat`](super::openai_chat)).
//!
//! - Declarations: the OpenAI function shape, without strict mode.
//! - Calls in: `message.tool_calls[].function{name, arguments}`, arguments
//!   an object, usually without an id: a stable one is generated.
//! - Results out: one `{"role":"tool","content","tool_name"}` message per result.

use serde_json::{Value, json};

use super::openai_chat::{ChatTool, chat_tool_call, chat_tool_calls};
use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, Prepared, Provider, ProviderError, SchemaMode, Shape,
    ToolRef, WireFormat, prepare, result_text, sealed,
};
use crate::exec::{ToolCall, ToolResult};

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

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Ollama, SchemaMode::Canonical, &self.options, tools).finish(Shape::Ollama)
    }

    /// One `tool` message per result, the name respelled through `mapping`.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> Vec<Value> {
        results
            .iter()
            .map(|r| json!({"role": "tool", "content": result_text(r), "tool_name": mapping.provider_name(&r.name)}))
            .collect()
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
}
