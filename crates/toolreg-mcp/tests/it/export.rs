//! The MCP protocol exchange as the server sends it (answers to `tools/call`
//! requests, every content block type among them, and `tools/list` pages,
//! for a 2025-11-25 client and a 2026-07-28 one), written for the official
//! SDK check when `TOOLREG_PROVIDER_EXPORT=DIR` is set
//! (`scripts/check_providers.sh`), and checked for shape here either way.

use crate::support::Raw;
use serde_json::{Value, json};
use toolreg::exec::{Annotations, Role};
use toolreg::provider::mcp::Mcp;
use toolreg::provider::{ToolRef, WireFormat};
use toolreg::{Content, FunctionRegistry, SafetyLevel, ToolDeclaration, ToolOutput, ToolRegistration};
use toolreg_mcp::server::{McpServer, ServerOptions, StdioOptions};

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
    let chart = ToolDeclaration::new("chart", "Draw a chart.", json!({"type": "object", "properties": {}}))
        .with_safety(SafetyLevel::Safe)
        .with_output_schema(json!({"type": "object", "properties": {"points": {"type": "integer"}}}));
    registry
        .register(ToolRegistration::new(chart, |_: Value| {
            let for_user = Annotations::for_audience([Role::User]).priority(0.5);
            Ok::<_, String>(
                ToolOutput::from(vec![
                    Content::text("The chart:").annotated(for_user.clone()),
                    Content::image(vec![0x89, b'P', b'N', b'G'], "image/png").annotated(for_user),
                    Content::audio(vec![1, 2], "audio/wav"),
                    Content::resource_link("file:///data.csv", "data.csv"),
                    Content::resource_text("mem://notes", "three points", Some("text/plain".into())),
                    Content::resource_blob("mem://raw", vec![0, 255], None),
                    Content::file(b"%PDF".to_vec(), "application/pdf", "chart.pdf"),
                ])
                .with_value(json!({"points": 3})),
            )
        }))
        .unwrap();
    for i in 0..5 {
        let decl = ToolDeclaration::new(format!("tool_{i}"), "", json!({"type": "object", "properties": {}}))
            .with_safety(SafetyLevel::Safe);
        registry.register_sync_tool(&format!("tool_{i}"), |_: Value| Ok::<_, String>("ok"), decl).unwrap();
    }
    registry
}

/// A connection to the server, three tools per `tools/list` page.
fn connect() -> Raw {
    Raw::start(McpServer::from_registry(&registry(), ServerOptions::default().page_size(3)), StdioOptions::default())
}

/// `request` as a 2026-07-28 client sends it: no handshake, the revision
/// and the client's capabilities in every request's `_meta`.
fn revision_2026(request: &Value) -> Value {
    let mut request = request.clone();
    let params = request.as_object_mut().unwrap().entry("params").or_insert_with(|| json!({}));
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    request
}

#[tokio::test]
async fn protocol_exchange_exports() {
    let requests = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_issues", "arguments": {"query": "crash"}}},
        {"jsonrpc": "2.0", "id": "req-2", "method": "tools/call", "params": {"name": "delete_everything", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "numbers", "arguments": {"byte": -1}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "chart", "arguments": {}}}
    ]);
    let requests = requests.as_array().unwrap();
    let list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {"cursor": "3"}});

    let mut old = connect();
    old.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "export", "version": "1"}}}))
        .await;
    assert_eq!(old.answer(json!(0)).await["result"]["protocolVersion"], "2025-11-25");
    old.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut new = connect();
    let mut responses = Vec::new();
    let mut responses_2026 = Vec::new();
    for request in requests {
        old.send(request.clone()).await;
        responses.push(old.answer(request["id"].clone()).await);
        new.send(revision_2026(request)).await;
        responses_2026.push(new.answer(request["id"].clone()).await);
    }
    old.send(list.clone()).await;
    let page = old.answer(json!("list")).await["result"].take();
    new.send(revision_2026(&list)).await;
    let page_2026 = new.answer(json!("list")).await["result"].take();

    assert_eq!(responses[0]["result"]["isError"], false);
    assert_eq!(responses[0]["result"]["structuredContent"], json!({"query": "crash"}));
    assert!(responses[0]["result"].get("resultType").is_none(), "{}", responses[0]);
    assert_eq!(responses[1]["error"]["code"], -32602);
    assert_eq!(responses[2]["result"]["isError"], true, "bad arguments are a result");
    assert_eq!(responses[3]["result"]["content"].as_array().map(Vec::len), Some(7), "{}", responses[3]);
    assert_eq!(responses_2026[0]["result"]["resultType"], "complete", "{}", responses_2026[0]);
    assert_eq!(responses_2026[3]["result"]["content"], responses[3]["result"]["content"]);
    assert_eq!(page["nextCursor"], "6");
    assert!(page.get("ttlMs").is_none(), "{page}");
    assert_eq!((&page_2026["ttlMs"], &page_2026["cacheScope"]), (&json!(0), &json!("private")), "{page_2026}");
    // The pages hold what the core's MCP format declares.
    let declared = Mcp::new().declare(&ToolRef::list(registry().list())).unwrap();
    assert_eq!(page["tools"], json!(declared.tools.as_array().unwrap()[3..6]));

    let exchange = json!({"requests": requests, "responses": responses, "list_page": page,
                          "responses_2026": responses_2026, "list_page_2026": page_2026});
    if let Some(dir) = std::env::var_os("TOOLREG_PROVIDER_EXPORT") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mcp.exchange.json"), serde_json::to_string_pretty(&exchange).unwrap()).unwrap();
    }
}
