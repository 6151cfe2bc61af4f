//! Mistral chat completions: the OpenAI shape, with two differences:
//! `arguments` may arrive as a string or an object, and a tool call id must
//! be exactly nine letters or digits (`^[a-zA-Z0-9]{9}$`).
//!
//! ```
//! use toolreg::provider::mistral::tool_call_id;
//! assert_eq!(tool_call_id("D681PevKs"), "D681PevKs");
//! let id = tool_call_id("call_1");
//! assert_eq!(id.len(), 9);
//! assert_eq!(id, tool_call_id("call_1"));
//! ```

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Declarations, Fnv, NameStyle, Provider, ProviderError, StrictOptions, ToolRef, chat_tool_call,
    chat_tool_calls, prepare, result_text,
};
use crate::exec::{ToolCall, ToolResult};

/// Renders tools for Mistral and reads its tool calls.
#[derive(Debug, Clone, Default)]
pub struct Mistral {
    names: NameStyle,
}

/// One entry of Mistral's `tools`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MistralTool<'a> {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: MistralFunction<'a>,
}

/// The `function` of a [`MistralTool`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct MistralFunction<'a> {
    /// The name as sent.
    pub name: Cow<'a, str>,
    /// What the tool does.
    pub description: &'a str,
    /// JSON Schema of the arguments.
    pub parameters: Cow<'a, Value>,
}

/// A tool result as a Mistral `tool` message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MistralToolMessage {
    /// Always `"tool"`.
    pub role: &'static str,
    /// The nine-character id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// The result's text.
    pub content: String,
}

/// A Mistral tool call id for `id`: the id itself when it already is nine
/// letters or digits, otherwise nine characters derived from it, the same
/// every time (so a call and its result agree).
pub fn tool_call_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_owned();
    }
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut h = Fnv::new();
    h.write(id.as_bytes());
    let mut n = h.finish();
    (0..9)
        .map(|_| {
            let c = ALPHABET[(n % 62) as usize] as char;
            n /= 62;
            c
        })
        .collect()
}

impl Mistral {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do with names Mistral cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as Mistral's `tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<MistralTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (prepared, mapping, not_strict) =
            prepare(Provider::Mistral, None, &StrictOptions::default(), self.names, tools)?;
        let tools = prepared
            .into_iter()
            .map(|p| MistralTool {
                kind: "function",
                function: MistralFunction {
                    name: p.name,
                    description: &p.tool.declaration().description,
                    parameters: p.schema,
                },
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// The tool calls of a Mistral response, message or `tool_calls` list;
    /// ids are made valid with [`tool_call_id`].
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::Mistral, body)?
            .into_iter()
            .map(|(i, call)| {
                let mut call = chat_tool_call(Provider::Mistral, i, call)?;
                call.id = tool_call_id(&call.id);
                Ok(call)
            })
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `tool` message (the name respelled through `mapping`).
    pub fn result_message(result: &ToolResult, mapping: &CallMapping) -> MistralToolMessage {
        MistralToolMessage {
            role: "tool",
            tool_call_id: tool_call_id(&result.id),
            name: mapping.provider_name(&result.name).to_owned(),
            content: result_text(result),
        }
    }
}
