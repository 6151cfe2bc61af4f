//! The MCP protocol exchange (responses to the fixture's `tools/call`
//! requests, `tools/list` pages, both revisions), written for the official
//! SDK check when `TOOLREG_PROVIDER_EXPORT=DIR` is set
//! (`scripts/check_providers.sh`), and checked for shape here either way.

use serde_json::{Value, json};
use toolreg::provider::mcp::Mcp;
use toolreg::provider::{ToolRef, WireFormat};
use toolreg::{FunctionRegistry, SafetyLevel, ToolDeclaration, ToolExecutor, ToolResult};
use toolreg_mcp::protocol::{self, CacheScope, ListOptions, Revision, RpcError};

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let search = ToolDeclaration::new(
        "search_issues",
        "Search the issue tracker.",
        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    )
    .with_safety(SafetyLevel::Safe);
    registry.register_sync_tool("search_issues", |args: Value| Ok::<_, String>(args), search).unwrap();
    let numbers = ToolDeclaration::new(
        "numbers",
        "Record numbers.",
        json!({"type": "object", "properties": {"byte": {"type": "integer", "minimum": 0, "maximum": 255}}, "required": ["byte"]}),
    )
    .with_safety(SafetyLevel::Safe);
    registry.register_sync_tool("numbers", |_: Value| Ok::<_, String>("ok"), numbers).unwrap();
    for i in 0..6 {
        let decl = ToolDeclaration::new(format!("tool_{i}"), "", json!({"type": "object", "properties": {}}))
            .with_safety(SafetyLevel::Safe);
        registry.register_sync_tool(&format!("tool_{i}"), |_: Value| Ok::<_, String>("ok"), decl).unwrap();
    }
    registry
}

/// A server's answer to one request: unknown tools are protocol errors,
/// everything else a result.
async fn answer(registry: &FunctionRegistry, request: &Value, revision: Revision) -> Value {
    let mcp = Mcp::new();
    let id = &request["id"];
    let call = match mcp.parse_calls(request, &Default::default()) {
        Ok(mut calls) => calls.remove(0),
        Err(e) => return protocol::error_response(id, &RpcError::new(protocol::INVALID_PARAMS, e.to_string())),
    };
    if !registry.contains(&call.name) {
        return protocol::error_response(id, &RpcError::unknown_tool(&call.name));
    }
    let result: ToolResult = registry.execute_call(call).await;
    protocol::respond(id, revision, &result)
}

#[tokio::test]
async fn protocol_exchange_exports() {
    let registry = registry();
    let requests = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_issues", "arguments": {"query": "crash"}}},
        {"jsonrpc": "2.0", "id": "req-2", "method": "tools/call", "params": {"name": "delete_everything", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "numbers", "arguments": {"byte": -1}}}
    ]);
    let requests = requests.as_array().unwrap();
    let mut responses = Vec::new();
    let mut responses_2026 = Vec::new();
    for request in requests {
        responses.push(answer(&registry, request, Revision::V2025_11_25).await);
        responses_2026.push(answer(&registry, request, Revision::V2026_07_28).await);
    }
    assert_eq!(responses[0]["result"]["isError"], false);
    assert_eq!(responses[0]["result"]["structuredContent"], json!({"query": "crash"}));
    assert_eq!(responses[1]["error"]["code"], protocol::INVALID_PARAMS);
    assert_eq!(responses[2]["result"]["isError"], true, "bad arguments are a result");
    assert_eq!(responses_2026[0]["result"]["resultType"], "complete");

    let declared = Mcp::new().declare(&ToolRef::list(registry.entries())).unwrap();
    let page = protocol::tools_list(&declared, Some("2"), Revision::V2025_11_25, &ListOptions::default().page_size(3))
        .unwrap();
    assert_eq!(page["nextCursor"], "5");
    let options = ListOptions::default().page_size(5).cache(60_000, CacheScope::Public);
    let page_2026 = protocol::tools_list(&declared, None, Revision::V2026_07_28, &options).unwrap();
    assert_eq!(page_2026["cacheScope"], "public");

    let exchange = json!({"requests": requests, "responses": responses, "list_page": page,
                          "responses_2026": responses_2026, "list_page_2026": page_2026});
    if let Some(dir) = std::env::var_os("TOOLREG_PROVIDER_EXPORT") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mcp.exchange.json"), serde_json::to_string_pretty(&exchange).unwrap()).unwrap();
    }
}
