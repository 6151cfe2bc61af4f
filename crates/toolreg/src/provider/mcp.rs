//! Model Context Protocol tool and result formats.
//!
//! - Declarations: `tools/list` tools `{name, description, inputSchema,
//!   outputSchema?, annotations}`; the input schema is the canonical one (a
//!   tool without parameters gets `{"type":"object","additionalProperties":false}`),
//!   annotations come from the tool's safety level.
//! - Calls in: `tools/call` requests (or their `params`); the call id is the
//!   JSON-RPC id as text.
//! - Results out: one `CallToolResult` per result, with `isError`; tool
//!   failures, argument errors included, are results.
//!
//! Only the formats live here. JSON-RPC envelopes, paging of `tools/list`
//! and protocol revisions belong to the MCP server and client (the
//! `toolreg-mcp` crate).

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, Prepared, Provider, ProviderError, SchemaMode, Shape,
    ToolRef, WireFormat, invalid, object_arguments, prepare, result_text, sealed, str_field,
};
use crate::declaration::{SafetyLevel, ToolDeclaration};
use crate::exec::{ToolCall, ToolResult};

/// MCP's tool and result formats.
#[derive(Debug, Clone, Default)]
pub struct Mcp {
    options: FormatOptions,
}

/// An MCP `Tool`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    annotations: ToolAnnotations,
}

/// MCP tool annotations, from [`SafetyLevel`]: `safe` is read-only,
/// `cautious` changes things but destroys nothing, `dangerous` may destroy;
/// the title and the idempotent and open-world hints when the declaration
/// says them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool's human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite.
    pub destructive_hint: bool,
    /// Repeating a call has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside systems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl From<SafetyLevel> for ToolAnnotations {
    fn from(safety: SafetyLevel) -> Self {
        ToolAnnotations {
            title: None,
            read_only_hint: safety == SafetyLevel::Safe,
            destructive_hint: safety == SafetyLevel::Dangerous,
            idempotent_hint: None,
            open_world_hint: None,
        }
    }
}

impl From<&ToolDeclaration> for ToolAnnotations {
    fn from(decl: &ToolDeclaration) -> Self {
        ToolAnnotations {
            title: decl.title.clone(),
            idempotent_hint: decl.idempotent,
            open_world_hint: decl.open_world,
            ..ToolAnnotations::from(decl.safety)
        }
    }
}

/// An MCP `CallToolResult`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// One text block with the result's text.
    pub content: Vec<Value>,
    /// The result itself, when it is a JSON object and not an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl CallToolResult {
    /// The `CallToolResult` of a result.
    pub fn new(result: &ToolResult) -> Self {
        let structured_content = result.value().filter(|v| v.is_object()).cloned();
        CallToolResult {
            content: vec![json!({"type": "text", "text": result_text(result)})],
            structured_content,
            is_error: result.is_error(),
        }
    }
}

/// A prepared tool as an MCP `Tool`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> McpTool<'b> {
    let decl = p.tool.declaration();
    let output_schema = decl.output_schema.as_ref().filter(|s| s.get("type").is_some_and(|t| t == "object"));
    McpTool {
        name: &p.name,
        title: decl.title.as_deref(),
        description: super::description(decl),
        input_schema: &p.schema,
        output_schema,
        annotations: ToolAnnotations::from(decl),
    }
}

impl Mcp {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Mcp);

impl WireFormat for Mcp {
    fn provider(&self) -> Provider {
        Provider::Mcp
    }

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Mcp, SchemaMode::Mcp, &self.options, tools).finish(Shape::Mcp)
    }

    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> super::RenderedResults {
        let messages = results.iter().map(|r| super::to_json(&CallToolResult::new(r))).collect();
        super::RenderedResults { messages, fallbacks: Vec::new() }
    }
}

impl sealed::Format for Mcp {
    /// The call in a `tools/call` request (or its `params`).
    fn calls_in(&self, request: &Value, _mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Mcp;
        let params = match request.get("params") {
            Some(params) => {
                if request.get("method").is_some_and(|m| m != "tools/call") {
                    return Err(invalid(p, "the request is not `tools/call`"));
                }
                params
            }
            None => request,
        };
        let name = str_field(p, params, "name", "tools/call params")?;
        let id = match request.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        Ok(vec![ToolCall { id, name: name.to_owned(), arguments: object_arguments(params.get("arguments")) }])
    }
}
