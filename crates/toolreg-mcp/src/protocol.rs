//! JSON-RPC plumbing of MCP: envelopes, error codes, `tools/list` paging
//! and protocol revisions.
//!
//! Tool failures, argument-validation failures included, are `tools/call`
//! *results* with `isError: true` ([`respond`]); an unknown tool or a
//! malformed request is a JSON-RPC *error* ([`RpcError`], code
//! [`INVALID_PARAMS`]), which the server decides before it runs anything.
//!
//! ```
//! use serde_json::json;
//! use toolreg_mcp::protocol::{self, RpcError};
//!
//! let error = RpcError::unknown_tool("delete_everything");
//! let response = protocol::error_response(&json!(7), &error);
//! assert_eq!(response["error"]["code"], protocol::INVALID_PARAMS);
//! assert_eq!(response["id"], 7);
//! ```

use std::fmt;

use serde_json::{Map, Value, json};
use toolreg::ToolResult;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::{CallMapping, Declarations, WireFormat};

/// JSON-RPC "parse error": the request is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "invalid request": JSON, but not a request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params": MCP's code for an unknown tool, a malformed
/// call or an invalid cursor.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC "internal error".
pub const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
#[non_exhaustive]
pub struct RpcError {
    /// One of the codes above, or a server-defined one.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Anything more the client may use.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// `tools/call` for a tool the server does not have.
    pub fn unknown_tool(name: &str) -> Self {
        RpcError::new(INVALID_PARAMS, format!("unknown tool `{name}`"))
    }

    /// A `cursor` this server did not hand out.
    pub fn invalid_cursor(cursor: &str) -> Self {
        RpcError::new(INVALID_PARAMS, format!("invalid cursor `{cursor}`"))
    }

    /// The error object (`{"code","message","data"?}`).
    pub fn to_value(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// The MCP revisions this crate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Revision {
    /// 2025-11-25.
    #[default]
    V2025_11_25,
    /// 2026-07-28: results carry `resultType`, `tools/list` results also
    /// `ttlMs` and `cacheScope`, and there is no initialize handshake.
    V2026_07_28,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];
    /// The newest revision.
    pub const LATEST: Revision = Revision::V2026_07_28;

    /// The revision's date, as the protocol writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision written `date`, if this crate speaks it.
    pub fn parse(date: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == date)
    }

    /// The revision to answer a client that asked for `requested`: the same
    /// one when spoken here, otherwise the latest (the client then decides
    /// whether it can go on).
    pub fn negotiate(requested: &str) -> Revision {
        Revision::parse(requested).unwrap_or(Revision::LATEST)
    }

    /// Whether results carry `resultType` (and list results cache hints).
    fn typed_results(self) -> bool {
        self >= Revision::V2026_07_28
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who may share a cached `tools/list` result (2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CacheScope {
    /// Per user.
    #[default]
    Private,
    /// Any client of this server.
    Public,
}

/// How `tools/list` results are paged and cached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListOptions {
    /// Tools per page (at least one).
    pub page_size: usize,
    /// How long a client may cache a result, in milliseconds (2026-07-28).
    pub ttl_ms: u64,
    /// Who may share the cache (2026-07-28).
    pub cache_scope: CacheScope,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions { page_size: 100, ttl_ms: 0, cache_scope: CacheScope::Private }
    }
}

impl ListOptions {
    /// Tools per page.
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size;
        self
    }

    /// Cache hints for 2026-07-28.
    pub fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.ttl_ms = ttl_ms;
        self.cache_scope = scope;
        self
    }
}

/// A `tools/list` result: one page of the declared tools from `cursor` (an
/// opaque string this function wrote as `nextCursor`), with what the
/// revision asks for. An invalid cursor is [`INVALID_PARAMS`].
pub fn tools_list(
    declared: &Declarations,
    cursor: Option<&str>,
    revision: Revision,
    options: &ListOptions,
) -> Result<Value, RpcError> {
    let tools: &[Value] = declared.tools.as_array().map_or(&[], Vec::as_slice);
    let start = match cursor {
        None => 0,
        Some(c) => match c.parse::<usize>() {
            Ok(n) if n <= tools.len() && c == n.to_string() => n,
            _ => return Err(RpcError::invalid_cursor(c)),
        },
    };
    let end = start.saturating_add(options.page_size.max(1)).min(tools.len());
    let mut result = Map::new();
    result.insert("tools".into(), Value::Array(tools[start..end].to_vec()));
    if end < tools.len() {
        result.insert("nextCursor".into(), Value::String(end.to_string()));
    }
    if revision.typed_results() {
        result.insert("resultType".into(), json!("complete"));
        result.insert("ttlMs".into(), json!(options.ttl_ms));
        let scope = match options.cache_scope {
            CacheScope::Private => "private",
            CacheScope::Public => "public",
        };
        result.insert("cacheScope".into(), json!(scope));
    }
    Ok(Value::Object(result))
}

/// A `CallToolResult` for `revision`: the core's MCP result format, with
/// `resultType` from 2026-07-28 on.
pub fn call_tool_result(revision: Revision, result: &ToolResult) -> Value {
    let mut rendered = Mcp::new().render_results(std::slice::from_ref(result), &CallMapping::default()).messages;
    let mut value = rendered.pop().unwrap_or_else(|| json!({"content": [], "isError": true}));
    if revision.typed_results() {
        value["resultType"] = json!("complete");
    }
    value
}

/// The JSON-RPC response to the `tools/call` request `id`: its result as a
/// `CallToolResult`, failures included (`isError`).
pub fn respond(id: &Value, revision: Revision, result: &ToolResult) -> Value {
    response(id, call_tool_result(revision, result))
}

/// A JSON-RPC success response.
pub fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response (`id` is `null` when the request's id could
/// not be read).
pub fn error_response(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolreg::provider::ToolRef;
    use toolreg::{ToolDeclaration, ToolError};

    fn declared(n: usize) -> Declarations {
        let decls: Vec<ToolDeclaration> = (0..n)
            .map(|i| ToolDeclaration::new(format!("t{i}"), "", json!({"type": "object", "properties": {}})))
            .collect();
        Mcp::new().declare(&ToolRef::list(&decls)).unwrap()
    }

    #[test]
    fn pages_follow_the_cursor_and_refuse_strange_ones() {
        let tools = declared(11);
        let options = ListOptions::default().page_size(4);
        let page = tools_list(&tools, None, Revision::V2025_11_25, &options).unwrap();
        assert_eq!(page["tools"].as_array().unwrap().len(), 4);
        assert_eq!(page["nextCursor"], "4");
        assert!(page.get("resultType").is_none());
        let last = tools_list(&tools, Some("8"), Revision::V2025_11_25, &options).unwrap();
        assert_eq!(last["tools"].as_array().unwrap().len(), 3);
        assert_eq!(last["tools"][0]["name"], "t8");
        assert!(last.get("nextCursor").is_none());
        for bad in ["nope", "12", "-1", "04", "+4", ""] {
            let err = tools_list(&tools, Some(bad), Revision::V2025_11_25, &options).unwrap_err();
            assert_eq!(err.code, INVALID_PARAMS, "{bad}");
        }
        // A page size of zero still moves forward.
        let one = tools_list(&tools, None, Revision::V2025_11_25, &ListOptions::default().page_size(0)).unwrap();
        assert_eq!(one["nextCursor"], "1");
    }

    #[test]
    fn revision_2026_adds_result_type_and_cache_hints() {
        let tools = declared(2);
        let options = ListOptions::default().cache(30_000, CacheScope::Public);
        let page = tools_list(&tools, None, Revision::V2026_07_28, &options).unwrap();
        assert_eq!(
            (&page["resultType"], &page["ttlMs"], &page["cacheScope"]),
            (&json!("complete"), &json!(30_000), &json!("public"))
        );
        let result =
            ToolResult { id: "1".into(), name: "t0".into(), outcome: Ok(toolreg::ToolOutput::new(json!({"a": 1}))) };
        let old = respond(&json!(1), Revision::V2025_11_25, &result);
        assert!(old["result"].get("resultType").is_none());
        assert_eq!(old["result"]["structuredContent"], json!({"a": 1}));
        let new = respond(&json!(1), Revision::V2026_07_28, &result);
        assert_eq!(new["result"]["resultType"], "complete");
        assert_eq!(new["jsonrpc"], "2.0");
    }

    #[test]
    fn failures_are_results_and_unknown_tools_errors() {
        let failed = ToolResult {
            id: "3".into(),
            name: "t0".into(),
            outcome: Err(ToolError::Failed { message: "disk full".into() }),
        };
        let response = respond(&json!(3), Revision::V2025_11_25, &failed);
        assert_eq!(response["result"]["isError"], true);
        assert_eq!(response["result"]["content"][0]["text"], "disk full");
        let error = error_response(&json!("req-2"), &RpcError::unknown_tool("nope"));
        assert_eq!(
            error,
            json!({"jsonrpc": "2.0", "id": "req-2", "error": {"code": -32602, "message": "unknown tool `nope`"}})
        );
    }

    #[test]
    fn revisions_parse_and_negotiate() {
        assert_eq!(Revision::parse("2025-11-25"), Some(Revision::V2025_11_25));
        assert_eq!(Revision::parse("2024-11-05"), None);
        assert_eq!(Revision::negotiate("2026-07-28"), Revision::V2026_07_28);
        assert_eq!(Revision::negotiate("1999-01-01"), Revision::LATEST);
        assert_eq!(Revision::V2026_07_28.to_string(), "2026-07-28");
    }
}
