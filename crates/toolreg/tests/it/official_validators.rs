//! The declarations and results toolreg emits, written out for the
//! providers' own SDK types to check.
//!
//! `cargo test` runs the export alone (pure Rust, offline) into a scratch
//! directory. `scripts/check_providers.sh` runs it with
//! `TOOLREG_PROVIDER_EXPORT=DIR`, adds the MCP protocol exchange from
//! `toolreg-mcp`, and checks the files with `scripts/validate_providers.py`
//! (the official Python SDKs, installed into a virtualenv).

use crate::support as common;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use toolreg::exec::ToolOutput;
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::mistral::{self, Mistral};
use toolreg::provider::ollama::Ollama;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{
    NameStyle, Provider, Strictness, ToolChoice, ToolRef, ToolStatus, WireFormat, with_tool_references,
};
use toolreg::{CallOptions, ParamType, ToolCall, ToolDeclaration, ToolExecutor, ToolResult};

fn write(dir: &Path, name: &str, value: &impl Serialize) {
    std::fs::write(dir.join(name), serde_json::to_string_pretty(value).unwrap()).unwrap();
}

fn run(calls: Vec<ToolCall>) -> Vec<ToolResult> {
    let registry = common::registry();
    common::block_on(async {
        futures_util::future::join_all(calls.into_iter().map(|c| registry.execute_call(c, CallOptions::default())))
            .await
    })
}

/// Every corpus declaration plus a namespaced one (`files.read`).
fn declarations() -> Vec<ToolDeclaration> {
    let mut decls: Vec<ToolDeclaration> = common::corpus().into_iter().map(|(d, _)| d).collect();
    decls.push(ToolDeclaration::new(
        "files.read",
        "Read a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ));
    decls
}

/// Declare, read the fixture's calls, run them and write both files. For
/// formats that answer a batch with one turn, `results` is that turn.
fn exchange(dir: &Path, name: &str, format: &dyn WireFormat, tools: &[ToolRef<'_>], fixture: &str) {
    let declared = format.declare(tools).unwrap();
    write(dir, &format!("{name}.tools.json"), &declared.tools);
    let response = common::fixture(fixture);
    // The fixtures call an undeclared tool on purpose, for the engine's answer.
    let results = run(format.parse_calls(&response, &declared.mapping.clone().accept_undeclared()).unwrap());
    let mut rendered = format.render_results(&results, &declared.mapping).messages;
    let one_turn = matches!(format.provider(), Provider::Anthropic | Provider::Gemini | Provider::Bedrock);
    let results = if one_turn { rendered.remove(0) } else { Value::Array(rendered) };
    write(dir, &format!("{name}.exchange.json"), &json!({"response": response, "results": results}));
}

fn export(dir: &Path) {
    let decls = declarations();
    let all = ToolRef::list(&decls);
    let without_recursion = ToolRef::list(decls.iter().filter(|d| d.name != "write_tree"));

    let chat = OpenAiChat::new().name_style(NameStyle::Respell);
    assert!(chat.declare(&all).unwrap().not_strict().any(|(tool, _)| tool == "set_labels"));
    exchange(dir, "openai_chat", &chat, &all, "openai_chat_response.json");
    let responses = OpenAiResponses::new().name_style(NameStyle::Respell);
    exchange(dir, "openai_responses", &responses, &all, "openai_responses_response.json");

    // Anthropic, plain and strict where possible; one user turn answers the batch.
    let anthropic = Anthropic::new().name_style(NameStyle::Respell);
    exchange(dir, "anthropic", &anthropic, &all, "anthropic_response.json");
    let strict = anthropic.clone().strict(Strictness::IfCompatible).declare(&all).unwrap();
    let strict_count = strict.report.iter().filter(|r| r.status == ToolStatus::Lowered { strict: true }).count();
    assert!(strict_count >= 4, "{strict_count}");
    write(dir, "anthropic_strict.tools.json", &strict.tools);

    // Gemini: `parameters` for every tool but the recursive one, and `parametersJsonSchema`.
    exchange(dir, "gemini", &Gemini::new(), &without_recursion, "gemini_response.json");
    write(dir, "gemini_json_schema.tools.json", &Gemini::new().json_schema(true).declare(&all).unwrap().tools);

    // MCP tools (the protocol exchange is written by toolreg-mcp).
    write(dir, "mcp.tools.json", &Mcp::new().declare(&all).unwrap().tools);

    // Bedrock: one user message answers the batch.
    let bedrock = Bedrock::new().name_style(NameStyle::Respell);
    exchange(dir, "bedrock", &bedrock, &all, "bedrock_response.json");

    // Mistral: calls as the assistant turn carries them (nine-character ids), and results.
    let mistral = Mistral::new().name_style(NameStyle::Respell);
    let tools = mistral.declare(&all).unwrap();
    write(dir, "mistral.tools.json", &tools.tools);
    let response = common::fixture("mistral_response.json");
    let calls = mistral.parse_calls(&response, &tools.mapping).unwrap();
    let sent: Vec<Value> = calls
        .iter()
        .map(|c| {
            let arguments = match &c.arguments {
                toolreg::ToolArguments::Raw(text) => text.clone(),
                toolreg::ToolArguments::Json(v) => v.to_string(),
            };
            json!({"id": c.id, "type": "function", "function": {"name": tools.mapping.provider_name(&c.name), "arguments": arguments}})
        })
        .collect();
    let results = run(calls);
    let messages = mistral.render_results(&results, &tools.mapping).messages;
    write(dir, "mistral.exchange.json", &json!({"response": response, "calls": sent, "results": messages}));

    // Ollama.
    write(dir, "ollama.tools.json", &Ollama::new().name_style(NameStyle::Respell).declare(&all).unwrap().tools);

    // Tool choices, each as every provider spells it (or cannot).
    let respelled = chat.declare(&all).unwrap().mapping;
    let choices = [
        ToolChoice::Auto,
        ToolChoice::Required,
        ToolChoice::None,
        ToolChoice::Validated,
        ToolChoice::Tool("files.read".into()),
        ToolChoice::Allowed { tools: vec!["ping".into(), "files.read".into()], required: true },
        ToolChoice::Allowed { tools: vec!["ping".into()], required: false },
    ];
    let mut all = serde_json::Map::new();
    for provider in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Bedrock,
        Provider::Mistral,
    ] {
        let rendered: Vec<Value> = choices.iter().filter_map(|c| c.render(provider, &respelled).ok()).collect();
        all.insert(provider.as_str().to_owned(), Value::Array(rendered));
    }
    write(dir, "tool_choices.json", &all);

    rich_results(dir);
    native_search(dir);
}

/// Anthropic's native tool search (`anthropic.native_search.json`): tools
/// with a deferred one, and the search's answer as `tool_reference` blocks.
fn native_search(dir: &Path) {
    let decls = declarations();
    let tools: Vec<ToolRef<'_>> = decls.iter().enumerate().map(|(i, d)| ToolRef::from(d).deferred(i > 0)).collect();
    let anthropic = Anthropic::new().name_style(NameStyle::Respell);
    let declared = anthropic.declare(&tools).unwrap();
    let found = with_tool_references(ToolOutput::new(json!({"found": 2})), ["files.read", "ping"]);
    let result = ToolResult { id: "toolu_search".into(), name: decls[0].name.clone(), outcome: Ok(found) };
    let rendered = anthropic.render_results(&[result], &declared.mapping).messages;
    assert_eq!(rendered[0]["content"][0]["content"][0]["type"], "tool_reference");
    write(dir, "anthropic.native_search.json", &json!({"tools": declared.tools, "results": rendered[0]}));

    // OpenAI Responses (`openai_responses.native_search.json`): the first
    // tool as the client-executed `tool_search`, the others deferred; the
    // model's `tool_search_call`, echoed back, and the search's answer as
    // a `tool_search_output` with the found tools' definitions.
    // An imported MCP server's deferred tool goes in its server's
    // `namespace`; its namespaced `function_call`, echoed back, and its
    // output carry the namespace.
    let issue = ToolDeclaration::builder("github__create_issue")
        .description("Open an issue.")
        .param("title", ParamType::String, "Title")
        .build()
        .with_category("mcp")
        .with_category("github");
    let mut tools: Vec<ToolRef<'_>> =
        decls.iter().enumerate().map(|(i, d)| ToolRef::from(d).deferred(i > 0).search_tool(i == 0)).collect();
    tools.push(ToolRef::from(&issue).deferred(true));
    let responses = OpenAiResponses::new().name_style(NameStyle::Respell);
    let declared = responses.declare(&tools).unwrap();
    assert!(declared.tools.as_array().unwrap().iter().any(|t| t["type"] == "namespace"));
    let response = json!({"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-x",
        "status": "completed", "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
        "output": [{"type": "tool_search_call", "id": "tsc_1", "call_id": "call_search", "execution": "client",
            "status": "completed", "arguments": {"query": "read a file"}},
            {"type": "function_call", "id": "fc_1", "call_id": "call_issue", "namespace": "github",
            "name": "create_issue", "arguments": "{\"title\":\"Bug\"}", "status": "completed"}]});
    let read = responses.read_calls(&response, &declared.mapping).unwrap();
    assert_eq!(read.calls[0].name, decls[0].name);
    assert_eq!(read.calls[1].name, "github__create_issue");
    let calls = responses.render_calls("", &read.sent, &declared.mapping);
    let found =
        with_tool_references(ToolOutput::new(json!({"found": 3})), ["files.read", "ping", "github__create_issue"]);
    let result = ToolResult { id: "call_search".into(), name: decls[0].name.clone(), outcome: Ok(found) };
    let issued = ToolResult {
        id: "call_issue".into(),
        name: "github__create_issue".into(),
        outcome: Ok(ToolOutput::new(json!("opened"))),
    };
    let results = responses.render_results(&[result, issued], &declared.mapping).messages;
    assert_eq!(results[0]["tools"].as_array().map(Vec::len), Some(3));
    assert_eq!(results[1]["namespace"], "github");
    write(
        dir,
        "openai_responses.native_search.json",
        &json!({"tools": declared.tools, "response": response, "calls": calls, "results": results}),
    );
}

/// Results holding every content block type, as each format renders them
/// (`<provider>.blocks.json`: the calls they answer, with the ids the
/// provider sent, and the messages), for the SDKs to check the rich shapes.
fn rich_results(dir: &Path) {
    let results = common::rich_results();
    for provider in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Bedrock,
        Provider::Mistral,
        Provider::Ollama,
    ] {
        let rendered = provider.wire_format().render_results(&results, &Default::default());
        let calls: Vec<Value> = results
            .iter()
            .map(|r| {
                let id = if provider == Provider::Mistral { mistral::tool_call_id(&r.id) } else { r.id.clone() };
                json!({"id": id, "name": r.name})
            })
            .collect();
        assert!(!rendered.fallbacks.is_empty(), "{provider}: the batch has blocks no provider takes");
        write(
            dir,
            &format!("{}.blocks.json", provider.as_str()),
            &json!({"calls": calls, "messages": rendered.messages}),
        );
    }
}

/// `TOOLREG_PROVIDER_EXPORT` when set (kept for the validators), else a
/// scratch directory removed afterwards.
fn export_dir() -> (PathBuf, bool) {
    match std::env::var_os("TOOLREG_PROVIDER_EXPORT") {
        Some(dir) => (PathBuf::from(dir), true),
        None => (std::env::temp_dir().join(format!("toolreg-provider-export-{}", std::process::id())), false),
    }
}

#[test]
fn every_provider_format_exports() {
    let (dir, keep) = export_dir();
    std::fs::create_dir_all(&dir).unwrap();
    export(&dir);
    // Every file the validators read is there and is JSON.
    for name in [
        "openai_chat.tools.json",
        "openai_chat.exchange.json",
        "openai_responses.tools.json",
        "openai_responses.exchange.json",
        "anthropic.tools.json",
        "anthropic_strict.tools.json",
        "anthropic.exchange.json",
        "anthropic.native_search.json",
        "openai_responses.native_search.json",
        "gemini.tools.json",
        "gemini_json_schema.tools.json",
        "gemini.exchange.json",
        "mcp.tools.json",
        "bedrock.tools.json",
        "bedrock.exchange.json",
        "mistral.tools.json",
        "mistral.exchange.json",
        "ollama.tools.json",
        "tool_choices.json",
        "openai_chat.blocks.json",
        "openai_responses.blocks.json",
        "anthropic.blocks.json",
        "gemini.blocks.json",
        "bedrock.blocks.json",
        "mistral.blocks.json",
        "ollama.blocks.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
