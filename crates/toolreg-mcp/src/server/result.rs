//! An engine result as rmcp carries it to the client: the one rendering
//! every answer of the server uses (a direct call, a deferred `call_tool`,
//! a task's result).

use rmcp::model::{CallToolResult, ErrorData};

/// rmcp's `CallToolResult` for an engine result: the core's MCP rendering
/// ([`toolreg::provider::mcp::CallToolResult`]: every block, annotations,
/// `structuredContent`, `isError`), carried in rmcp's type unchanged.
/// rmcp reads every block that rendering writes; should it ever refuse
/// one, the client gets an internal error saying why, not a result with
/// blocks missing.
pub(super) fn to_call_tool_result(result: &toolreg::ToolResult) -> Result<CallToolResult, ErrorData> {
    let rendered = toolreg::provider::mcp::CallToolResult::new(result);
    // Block by block, moving each one's JSON (no copy of an image's base64).
    let content = rendered
        .content
        .into_iter()
        .map(serde_json::from_value::<rmcp::model::ContentBlock>)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            ErrorData::internal_error(format!("the result of `{}` cannot be sent: {error}", result.name), None)
        })?;
    let mut out = if rendered.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    // `success` and `error` set `resultType` as rmcp's constructors do; rmcp
    // leaves it out for clients older than 2026-07-28.
    out.structured_content = rendered.structured_content;
    Ok(out)
}
