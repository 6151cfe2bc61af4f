//! OpenAI Chat Completions, and the servers that copy its shape (vLLM,
//! llama.cpp, Ollama's `/v1`).
//!
//! - Declarations: `{"type":"function","function":{"name","description","parameters","strict"}}`.
//! - Calls in: `choices[0].message.tool_calls`, whose `arguments` is a JSON
//!   *string* that may not parse: it is kept as [`ToolArguments::Raw`], and
//!   execution answers it with a `MalformedArguments` result.
//! - Results out: `{"role":"tool","tool_call_id","content"}`.
//!
//! ```
//! use toolreg::provider::openai_chat::OpenAiChat;
//! use toolreg::{ToolArguments, ToolDeclaration};
//! use serde_json::json;
//!
//! let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 1"}}
//! ]}, "finish_reason": "tool_calls"}]});
//! let calls = OpenAiChat::parse_calls(&response)?;
//! assert_eq!(calls[0].arguments, ToolArguments::Raw("{\"a\": 1".into()));
//! # Ok::<(), toolreg::provider::ProviderError>(())
//! ```
//!
//! [`ToolArguments::Raw`]: crate::ToolArguments::Raw

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Declarations, Lowering, NameStyle, Provider, ProviderError, StrictOptions, Strictness, ToolRef,
    chat_tool_call, chat_tool_calls, prepare, result_text,
};
use crate::exec::{ToolCall, ToolResult};

/// OpenAI's limit on tools in one request.
pub const MAX_TOOLS: usize = 128;

/// Renders tools for Chat Completions and reads its tool calls.
///
/// Strict mode defaults to [`Strictness::IfCompatible`]: a tool is strict
/// when its schema can be made strict, and otherwise sent as it is and
/// listed in [`Declarations::not_strict`].
#[derive(Debug, Clone, Default)]
pub struct OpenAiChat {
    strict: StrictOptions,
    names: NameStyle,
}

/// One entry of Chat Completions' `tools`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ChatTool<'a> {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: ChatFunction<'a>,
}

/// The `function` of a [`ChatTool`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ChatFunction<'a> {
    /// The name as sent (respelled when asked for).
    pub name: Cow<'a, str>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// JSON Schema of the arguments (lowered for strict mode).
    pub parameters: Cow<'a, Value>,
    /// Whether the model must follow the schema exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// A tool result as a Chat Completions message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ChatToolMessage {
    /// Always `"tool"`.
    pub role: &'static str,
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The result's text (errors included: this format has no error flag).
    pub content: String,
}

impl OpenAiChat {
    /// Default options: strict if compatible, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Strict mode for every tool without its own setting.
    pub fn strict(mut self, strictness: Strictness) -> Self {
        self.strict.default = strictness;
        self
    }

    /// Strict mode for one tool.
    pub fn strict_for(mut self, tool: impl Into<String>, strictness: Strictness) -> Self {
        self.strict.per_tool.insert(tool.into(), strictness);
        self
    }

    /// What to do with names OpenAI cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools (registry entries or bare declarations) as `tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<ChatTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (prepared, mapping, not_strict) =
            prepare(Provider::OpenAiChat, Some(Lowering::OpenAiStrict), &self.strict, self.names, tools)?;
        check_count(Provider::OpenAiChat, prepared.len())?;
        let tools = prepared
            .into_iter()
            .map(|p| ChatTool {
                kind: "function",
                function: ChatFunction {
                    name: p.name,
                    description: super::description(p.tool.declaration()),
                    parameters: p.schema,
                    strict: Some(p.strict),
                },
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// The tool calls of a chat completion, of its `message`, or of a bare
    /// `tool_calls` array. A call without an id gets a stable generated one.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::OpenAiChat, body)?
            .into_iter()
            .map(|(i, call)| chat_tool_call(Provider::OpenAiChat, i, call))
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `{"role":"tool"}` message.
    pub fn result_message(result: &ToolResult) -> ChatToolMessage {
        ChatToolMessage { role: "tool", tool_call_id: result.id.clone(), content: result_text(result) }
    }
}

pub(crate) fn check_count(provider: Provider, count: usize) -> Result<(), ProviderError> {
    if count > MAX_TOOLS {
        return Err(ProviderError::TooMany { provider, what: "tools", count, limit: MAX_TOOLS });
    }
    Ok(())
}
