//! Model Context Protocol (revisions 2025-11-25 and 2026-07-28).
//!
//! - Declarations: `tools/list` tools `{name, description, inputSchema,
//!   outputSchema?, annotations}`; the input schema is the canonical one,
//!   passed through without a copy (a tool without parameters gets
//!   `{"type":"object","additionalProperties":false}`), annotations come from
//!   the tool's safety level.
//! - Calls in: `tools/call` requests.
//! - Results out: `CallToolResult` with `isError`; tool failures, argument
//!   errors included, are results; an unknown tool is JSON-RPC error -32602.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    Declarations, NameStyle, Provider, ProviderError, ToolRef, invalid, object_arguments, spell_names, str_field,
};
use crate::declaration::SafetyLevel;
use crate::exec::{ToolCall, ToolError, ToolResult};

/// JSON-RPC "invalid params", MCP's code for an unknown tool or a malformed call.
pub const INVALID_PARAMS: i64 = -32602;

/// Renders tools for MCP `tools/list` and reads `tools/call` requests.
#[derive(Debug, Clone, Default)]
pub struct Mcp {
    names: NameStyle,
    revision: McpRevision,
    ttl_ms: u64,
    public: bool,
}

/// The MCP revision results are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum McpRevision {
    /// 2025-11-25.
    #[default]
    V2025_11_25,
    /// 2026-07-28: results carry `resultType`, and `tools/list` results
    /// also `ttlMs` and `cacheScope`.
    V2026_07_28,
}

/// An MCP `Tool`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct McpTool<'a> {
    /// The name as listed.
    pub name: Cow<'a, str>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// JSON Schema of the arguments (`type: object`).
    pub input_schema: &'a Value,
    /// JSON Schema of `structuredContent`, when the tool promises an object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<&'a Value>,
    /// Hints derived from the safety level.
    pub annotations: ToolAnnotations,
}

/// MCP tool annotations, from [`SafetyLevel`]: `safe` is read-only,
/// `cautious` changes things but destroys nothing, `dangerous` may destroy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool does not change its environment.
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite.
    pub destructive_hint: bool,
}

impl From<SafetyLevel> for ToolAnnotations {
    fn from(safety: SafetyLevel) -> Self {
        match safety {
            SafetyLevel::Safe => ToolAnnotations { read_only_hint: true, destructive_hint: false },
            SafetyLevel::Cautious => ToolAnnotations { read_only_hint: false, destructive_hint: false },
            SafetyLevel::Dangerous => ToolAnnotations { read_only_hint: false, destructive_hint: true },
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

impl Mcp {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do with names MCP's rule refuses.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// The revision results are written for.
    pub fn revision(mut self, revision: McpRevision) -> Self {
        self.revision = revision;
        self
    }

    /// How long (milliseconds) a client may cache a `tools/list` result, and
    /// whether the cache may be shared (`public`) or is per user (2026-07-28).
    pub fn cache(mut self, ttl_ms: u64, public: bool) -> Self {
        self.ttl_ms = ttl_ms;
        self.public = public;
        self
    }

    /// A `tools/list` result for this server's revision: [`list_result`](Self::list_result),
    /// plus `resultType`, `ttlMs` and `cacheScope` for 2026-07-28.
    pub fn tools_list<T: Serialize>(
        &self,
        declarations: &Declarations<T>,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<Value, Value> {
        let mut result = Self::list_result(declarations, cursor, page_size)?;
        if self.revision == McpRevision::V2026_07_28 {
            result["resultType"] = json!("complete");
            result["ttlMs"] = json!(self.ttl_ms);
            result["cacheScope"] = json!(if self.public { "public" } else { "private" });
        }
        Ok(result)
    }

    /// The JSON-RPC response to a `tools/call` request for this server's
    /// revision: [`response`](Self::response), with `resultType` for 2026-07-28.
    pub fn respond(&self, request_id: &Value, result: &ToolResult) -> Value {
        let mut response = Self::response(request_id, result);
        if self.revision == McpRevision::V2026_07_28 {
            if let Some(result) = response.get_mut("result") {
                result["resultType"] = json!("complete");
            }
        }
        response
    }

    /// Render tools as MCP `Tool`s.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<McpTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let tools: Vec<ToolRef<'a>> = tools.into_iter().map(Into::into).collect();
        let (names, mapping) = spell_names(Provider::Mcp, self.names, &tools)?;
        let tools = tools
            .into_iter()
            .zip(names)
            .map(|(tool, name)| {
                let decl = tool.declaration();
                let output_schema =
                    decl.output_schema.as_ref().filter(|s| s.get("type").is_some_and(|t| t == "object"));
                McpTool {
                    name,
                    description: super::description(decl),
                    input_schema: tool.mcp_input(),
                    output_schema,
                    annotations: decl.safety.into(),
                }
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict: Vec::new() })
    }

    /// A `tools/list` result: one page of `page_size` tools from `cursor`
    /// (an opaque string this function wrote as `nextCursor`). An invalid
    /// cursor is JSON-RPC error -32602, returned as the error object.
    pub fn list_result<T: Serialize>(
        declarations: &Declarations<T>,
        cursor: Option<&str>,
        page_size: usize,
    ) -> Result<Value, Value> {
        let start = match cursor {
            None => 0,
            Some(c) => match c.parse::<usize>() {
                Ok(n) if n <= declarations.tools.len() => n,
                _ => return Err(json!({"code": INVALID_PARAMS, "message": format!("invalid cursor `{c}`")})),
            },
        };
        let end = start.saturating_add(page_size.max(1)).min(declarations.tools.len());
        let mut result = json!({"tools": &declarations.tools[start..end]});
        if end < declarations.tools.len() {
            result["nextCursor"] = Value::String(end.to_string());
        }
        Ok(result)
    }

    /// The call in a `tools/call` request (or its `params`). The id is the
    /// JSON-RPC id as text.
    pub fn parse_call(request: &Value) -> Result<ToolCall, ProviderError> {
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
        Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(params.get("arguments")) })
    }

    /// A result as a `CallToolResult`.
    pub fn call_result(result: &ToolResult) -> CallToolResult {
        let structured_content = match result.value() {
            Some(value @ Value::Object(_)) => Some(value.clone()),
            _ => None,
        };
        CallToolResult {
            content: vec![json!({"type": "text", "text": result.text()})],
            structured_content,
            is_error: result.is_error(),
        }
    }

    /// The JSON-RPC response to a `tools/call` request with id `request_id`:
    /// an unknown tool is error -32602, anything else a `CallToolResult`.
    pub fn response(request_id: &Value, result: &ToolResult) -> Value {
        match &result.outcome {
            Err(error @ ToolError::UnknownTool { .. }) => json!({
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": INVALID_PARAMS, "message": error.model_text(&result.name)}
            }),
            _ => json!({"jsonrpc": "2.0", "id": request_id, "result": Self::call_result(result)}),
        }
    }
}
