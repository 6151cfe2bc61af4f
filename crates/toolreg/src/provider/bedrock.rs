//! AWS Bedrock Converse.
//!
//! - Declarations: `toolConfig.tools = [{"toolSpec":{"name","description","inputSchema":{"json":..}}}]`,
//!   the canonical JSON Schema passed through.
//! - Calls in: `toolUse` content blocks of `output.message`.
//! - Results out: `toolResult` blocks with `status: "success" | "error"`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Declarations, NameStyle, Provider, ProviderError, StrictOptions, ToolRef, find, generated_id, invalid,
    object_arguments, prepare, result_text, str_field,
};
use crate::exec::{ToolCall, ToolResult};

/// Renders tools for Bedrock Converse and reads its `toolUse` blocks.
#[derive(Debug, Clone, Default)]
pub struct Bedrock {
    names: NameStyle,
}

/// One entry of `toolConfig.tools`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BedrockTool<'a> {
    /// The tool specification.
    #[serde(rename = "toolSpec")]
    pub tool_spec: ToolSpec<'a>,
}

/// A `toolSpec`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolSpec<'a> {
    /// The name as sent.
    pub name: Cow<'a, str>,
    /// What the tool does (Bedrock refuses an empty one, so it is left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// `{"json": schema}`.
    #[serde(rename = "inputSchema")]
    pub input_schema: InputSchema<'a>,
}

/// The `inputSchema` union: a JSON Schema document.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct InputSchema<'a> {
    /// The JSON Schema.
    pub json: Cow<'a, Value>,
}

impl Bedrock {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do with names Bedrock cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as `toolConfig.tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<BedrockTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (prepared, mapping, not_strict) =
            prepare(Provider::Bedrock, None, &StrictOptions::default(), self.names, tools)?;
        let tools = prepared
            .into_iter()
            .map(|p| BedrockTool {
                tool_spec: ToolSpec {
                    name: p.name,
                    description: super::description(p.tool.declaration()),
                    input_schema: InputSchema { json: p.schema },
                },
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// `{"tools": [...]}`, the request's `toolConfig` without a `toolChoice`.
    pub fn tool_config<T: Serialize>(declarations: &Declarations<T>) -> Value {
        serde_json::json!({"tools": declarations.tools})
    }

    /// The `toolUse` blocks of a Converse response, a message, or a content list.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Bedrock;
        let blocks = match body {
            Value::Array(blocks) => blocks,
            _ => match find(body, &["/output/message/content", "/content"]) {
                Some(Value::Array(blocks)) => blocks,
                _ => return Err(invalid(p, "expected a Converse response, a message or a content list")),
            },
        };
        blocks
            .iter()
            .filter_map(|b| b.get("toolUse"))
            .enumerate()
            .map(|(i, tool_use)| {
                let name = str_field(p, tool_use, "name", "a toolUse block")?;
                let id = match tool_use.get("toolUseId").and_then(Value::as_str) {
                    Some(id) => id.to_owned(),
                    None => generated_id("tooluse_", i, name, tool_use.get("input").unwrap_or(&Value::Null)),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(tool_use.get("input")) })
            })
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `toolResult` block: objects as `{"json"}`, anything
    /// else (and errors) as `{"text"}`.
    pub fn result_block(result: &ToolResult) -> Value {
        let content = match result.value() {
            Some(value @ Value::Object(_)) => serde_json::json!([{"json": value}]),
            _ => serde_json::json!([{"text": result_text(result)}]),
        };
        let status = if result.is_error() { "error" } else { "success" };
        serde_json::json!({"toolResult": {"toolUseId": result.id, "content": content, "status": status}})
    }

    /// The user message that answers a batch of calls.
    pub fn results_message(results: &[ToolResult]) -> Value {
        let blocks: Vec<Value> = results.iter().map(Self::result_block).collect();
        serde_json::json!({"role": "user", "content": blocks})
    }
}
