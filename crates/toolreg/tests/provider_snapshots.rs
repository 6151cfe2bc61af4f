//! Every corpus tool as every provider receives it: one snapshot per tool
//! and provider, so any change to a rendering shows in review.

mod common;

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
