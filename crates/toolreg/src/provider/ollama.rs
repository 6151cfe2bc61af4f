//! Ollama's native `/api/chat` (its `/v1` endpoint takes
//! [`openai_chat`](super::openai_chat)).
//!
//! - Declarations: the OpenAI function shape, without strict mode.
//! - Calls in: `message.tool_calls[].function{name, arguments}`, arguments
//!   an object, usually without an id: a stable one is generated.
//! - Results out: `{"role":"tool","content","tool_name"}`.

use serde::Serialize;
use serde_json::Value;

use super::openai_chat::{ChatFunction, ChatTool};
use super::{
    CallMapping, Declarations, NameStyle, Provider, ProviderError, StrictOptions, ToolRef, chat_tool_call,
    chat_tool_calls, prepare, result_text,
};
use crate::exec::{ToolCall, ToolResult};

/// Renders tools for Ollama and reads its tool calls.
#[derive(Debug, Clone, Default)]
pub struct Ollama {
    names: NameStyle,
}

/// A tool result as an Ollama `tool` message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OllamaToolMessage {
    /// Always `"tool"`.
    pub role: &'static str,
    /// The result's text.
    pub content: String,
    /// The tool that was called.
    pub tool_name: String,
}

impl Ollama {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do with names the OpenAI rule refuses.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as Ollama's `tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<ChatTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (prepared, mapping, not_strict) =
            prepare(Provider::Ollama, None, &StrictOptions::default(), self.names, tools)?;
        let tools = prepared
            .into_iter()
            .map(|p| ChatTool {
                kind: "function",
                function: ChatFunction {
                    name: p.name,
                    description: super::description(p.tool.declaration()),
                    parameters: p.schema,
                    strict: None,
                },
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// The tool calls of an `/api/chat` response or its `message`.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::Ollama, body)?
            .into_iter()
            .map(|(i, call)| chat_tool_call(Provider::Ollama, i, call))
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `tool` message (the name respelled through `mapping`).
    pub fn result_message(result: &ToolResult, mapping: &CallMapping) -> OllamaToolMessage {
        OllamaToolMessage {
            role: "tool",
            content: result_text(result),
            tool_name: mapping.provider_name(&result.name).to_owned(),
        }
    }
}
