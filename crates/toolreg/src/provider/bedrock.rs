//! AWS Bedrock Converse.
//!
//! - Declarations: `toolConfig.tools = [{"toolSpec":{"name","description","inputSchema":{"json":..}}}]`,
//!   the canonical JSON Schema passed through.
//! - Calls in: `toolUse` content blocks of `output.message`.
//! - Results out: one user message of `toolResult` blocks with `status: "success" | "error"`.

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, Prepared, Provider, ProviderError, SchemaMode, Shape,
    ToolRef, WireFormat, find, generated_id, invalid, object_arguments, prepare, result_text, sealed, str_field,
};
use crate::exec::{ToolCall, ToolResult};

/// Bedrock Converse's wire format.
#[derive(Debug, Clone, Default)]
pub struct Bedrock {
    options: FormatOptions,
}

/// One entry of `toolConfig.tools`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BedrockTool<'a> {
    #[serde(rename = "toolSpec")]
    tool_spec: ToolSpec<'a>,
}

/// A `toolSpec`.
#[derive(Debug, Clone, Serialize)]
struct ToolSpec<'a> {
    name: &'a str,
    /// Bedrock refuses an empty description, so it is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(rename = "inputSchema")]
    input_schema: InputSchema<'a>,
}

/// The `inputSchema` union: a JSON Schema document.
#[derive(Debug, Clone, Serialize)]
struct InputSchema<'a> {
    json: &'a Value,
}

/// A prepared tool as an entry of `toolConfig.tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> BedrockTool<'b> {
    BedrockTool {
        tool_spec: ToolSpec {
            name: &p.name,
            description: super::description(p.tool.declaration()),
            input_schema: InputSchema { json: &p.schema },
        },
    }
}

impl Bedrock {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Bedrock);

impl WireFormat for Bedrock {
    fn provider(&self) -> Provider {
        Provider::Bedrock
    }

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Bedrock, SchemaMode::Canonical, &self.options, tools).finish(Shape::Bedrock)
    }

    /// Objects go back as `{"json"}` content, anything else (and errors) as `{"text"}`.
    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let blocks: Vec<Value> = results
            .iter()
            .map(|result| {
                let content = match result.value() {
                    Some(value @ Value::Object(_)) => json!([{"json": value}]),
                    _ => json!([{"text": result_text(result)}]),
                };
                let status = if result.is_error() { "error" } else { "success" };
                json!({"toolResult": {"toolUseId": result.id, "content": content, "status": status}})
            })
            .collect();
        vec![json!({"role": "user", "content": blocks})]
    }
}

impl sealed::Format for Bedrock {
    /// The `toolUse` blocks of a Converse response, a message, or a content list.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
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
                    None => generated_id("tooluse_", i, name, tool_use.get("input").unwrap_or(&Value::Null), mapping),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(tool_use.get("input")) })
            })
            .collect()
    }
}
