//! Every corpus tool as every provider receives it: one snapshot per tool
//! and provider, so any change to a rendering shows in review.

use crate::support as common;

use serde_json::{Value, json};
use toolreg::ToolDeclaration;
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::mistral::Mistral;
use toolreg::provider::ollama::Ollama;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{Strictness, ToolRef, WireFormat};

fn render(provider: &str, decl: &ToolDeclaration) -> Value {
    let format: Box<dyn WireFormat> = match provider {
        "openai_chat" => Box::new(OpenAiChat::new()),
        "openai_responses" => Box::new(OpenAiResponses::new()),
        "anthropic" => Box::new(Anthropic::new()),
        "anthropic_strict" => Box::new(Anthropic::new().strict(Strictness::IfCompatible)),
        "gemini" => Box::new(Gemini::new()),
        "gemini_json_schema" => Box::new(Gemini::new().json_schema(true)),
        "mcp" => Box::new(Mcp::new()),
        "bedrock" => Box::new(Bedrock::new()),
        "mistral" => Box::new(Mistral::new()),
        "ollama" => Box::new(Ollama::new()),
        other => unreachable!("{other}"),
    };
    match format.declare(&[ToolRef::from(decl)]) {
        Ok(d) => {
            let not_strict: Vec<String> = d.not_strict().map(|(tool, reason)| format!("{tool}: {reason}")).collect();
            if not_strict.is_empty() { d.tools } else { json!({"tools": d.tools, "not_strict": not_strict}) }
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

#[test]
fn every_tool_for_every_provider() {
    const PROVIDERS: &[&str] = &[
        "openai_chat",
        "openai_responses",
        "anthropic",
        "anthropic_strict",
        "gemini",
        "gemini_json_schema",
        "mcp",
        "bedrock",
        "mistral",
        "ollama",
    ];
    for (decl, _) in common::corpus() {
        for provider in PROVIDERS {
            insta::assert_json_snapshot!(format!("{provider}__{}", decl.name), render(provider, &decl));
        }
    }
}

/// Native tool search as each format renders it: Anthropic declares the
/// deferred tool with `defer_loading` and answers the search with
/// `tool_reference` blocks; a format without native search sends both as
/// it always does.
#[test]
fn native_search_renderings() {
    use toolreg::exec::ToolOutput;
    use toolreg::provider::with_tool_references;
    use toolreg::{ParamType, ToolResult};

    let search = ToolDeclaration::builder("search_tools")
        .description("Find tools.")
        .param("query", ParamType::String, "What you need")
        .build();
    let convert = ToolDeclaration::builder("convert_currency")
        .description("Convert money.")
        .param("amount", ParamType::Number, "Amount")
        .build();
    let tools = [ToolRef::from(&search), ToolRef::from(&convert).deferred(true)];
    let found = with_tool_references(ToolOutput::new(json!({"found": ["convert_currency"]})), ["convert_currency"]);
    let result = ToolResult { id: "call_1".into(), name: "search_tools".into(), outcome: Ok(found) };
    for (name, format) in
        [("anthropic", Box::new(Anthropic::new()) as Box<dyn WireFormat>), ("openai_chat", Box::new(OpenAiChat::new()))]
    {
        let declared = format.declare(&tools).unwrap();
        let results = format.render_results(std::slice::from_ref(&result), &declared.mapping).messages;
        let rendered = json!({"native_search": format.native_search(), "tools": declared.tools, "results": results});
        insta::assert_json_snapshot!(format!("native_search__{name}"), rendered);
    }
}

/// OpenAI Responses' client-executed tool search: the search tool declared
/// as `tool_search`, the deferred tool with `defer_loading`, the model's
/// `tool_search_call` read as a call of the search tool and echoed back as
/// it came, and the search's answer a `tool_search_output` holding the
/// found tool's definition as declared.
#[test]
fn native_search_openai_responses() {
    use toolreg::exec::ToolOutput;
    use toolreg::provider::with_tool_references;
    use toolreg::{ParamType, ToolResult};

    let search = ToolDeclaration::builder("search_tools")
        .description("Find tools.")
        .param("query", ParamType::String, "What you need")
        .build();
    let convert = ToolDeclaration::builder("convert_currency")
        .description("Convert money.")
        .param("amount", ParamType::Number, "Amount")
        .build();
    let add = ToolDeclaration::builder("add").description("Add.").param("a", ParamType::Number, "A").build();
    // An imported MCP server's tool: declared inside the server's namespace.
    let issue = ToolDeclaration::builder("github__create_issue")
        .description("Open an issue.")
        .param("title", ParamType::String, "Title")
        .build()
        .with_category("mcp")
        .with_category("github");
    let tools = [
        ToolRef::from(&search).search_tool(true),
        ToolRef::from(&add),
        ToolRef::from(&convert).deferred(true),
        ToolRef::from(&issue).deferred(true),
    ];
    let format = OpenAiResponses::new();
    let declared = format.declare(&tools).unwrap();
    let response = json!({"output": [{"type": "tool_search_call", "id": "tsc_1", "call_id": "call_1",
        "execution": "client", "status": "completed", "arguments": {"query": "exchange money"}}]});
    let read = format.read_calls(&response, &declared.mapping).unwrap();
    assert_eq!(read.calls[0].name, "search_tools");
    assert_eq!(read.calls[0].id, "call_1");
    // Stricter readings: a client search call without `call_id` cannot be
    // answered, so the response is refused; a server-executed one is not
    // toolreg's to answer, so it is skipped; without a declared
    // `tool_search` tool a search call is refused.
    let no_id = json!([{"type": "tool_search_call", "execution": "client", "arguments": {"query": "x"}}]);
    assert!(matches!(
        format.read_calls(&no_id, &declared.mapping),
        Err(toolreg::provider::ProviderError::InvalidResponse { .. })
    ));
    let server = json!([{"type": "tool_search_call", "call_id": "c", "execution": "server", "arguments": {}}]);
    assert!(format.read_calls(&server, &declared.mapping).unwrap().calls.is_empty());
    let plain = format.declare(&[ToolRef::from(&search), ToolRef::from(&convert)]).unwrap();
    assert!(format.read_calls(&response, &plain.mapping).is_err());
    assert_eq!(plain.tools[0]["type"], "function");
    let calls = format.render_calls("", &read.sent, &declared.mapping);
    // Found: the deferred tool and an always-on one (already loaded: not sent again).
    let found =
        with_tool_references(ToolOutput::new(json!({"found": 3})), ["github__create_issue", "convert_currency", "add"]);
    let result = ToolResult { id: "call_1".into(), name: "search_tools".into(), outcome: Ok(found) };
    let results = format.render_results(&[result], &declared.mapping).messages;
    let failed = ToolResult {
        id: "call_2".into(),
        name: "search_tools".into(),
        outcome: Err(toolreg::ToolError::failed("index gone")),
    };
    let failed = format.render_results(&[failed], &declared.mapping).messages;
    // A namespaced call: read back to the one real name, echoed with its
    // namespace and bare name, and answered with its namespace.
    let namespaced = json!({"output": [{"type": "function_call", "call_id": "call_3", "namespace": "github",
        "name": "create_issue", "arguments": "{\"title\":\"Bug\"}"}]});
    let read = format.read_calls(&namespaced, &declared.mapping).unwrap();
    assert_eq!(read.calls[0].name, "github__create_issue");
    let namespaced_calls = format.render_calls("", &read.sent, &declared.mapping);
    assert_eq!(namespaced_calls, namespaced["output"].as_array().unwrap().clone());
    let output = ToolResult {
        id: "call_3".into(),
        name: "github__create_issue".into(),
        outcome: Ok(ToolOutput::new(json!("opened"))),
    };
    let namespaced_results = format.render_results(&[output], &declared.mapping).messages;
    assert_eq!(namespaced_results[0]["namespace"], "github");
    let rendered = json!({"native_search": format.native_search(), "tools": declared.tools, "calls": calls,
        "results": results, "failed": failed, "namespaced_calls": namespaced_calls,
        "namespaced_results": namespaced_results});
    insta::assert_json_snapshot!("native_search__openai_responses", rendered);
}
