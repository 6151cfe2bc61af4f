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
use toolreg::provider::{ProviderError, Strictness};

fn shown<T: serde::Serialize>(rendered: Result<toolreg::provider::Declarations<T>, ProviderError>) -> Value {
    match rendered {
        Ok(d) => {
            let not_strict: Vec<String> = d.not_strict.iter().map(|n| format!("{}: {}", n.tool, n.reason)).collect();
            if not_strict.is_empty() { d.to_value() } else { json!({"tools": d.to_value(), "not_strict": not_strict}) }
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

fn render(provider: &str, decl: &ToolDeclaration) -> Value {
    let one = [decl];
    match provider {
        "openai_chat" => shown(OpenAiChat::new().declare(one)),
        "openai_responses" => shown(OpenAiResponses::new().declare(one)),
        "anthropic" => shown(Anthropic::new().declare(one)),
        "anthropic_strict" => shown(Anthropic::new().strict(Strictness::IfCompatible).declare(one)),
        "gemini" => shown(Gemini::new().declare(one)),
        "gemini_json_schema" => shown(Gemini::new().json_schema(true).declare(one)),
        "mcp" => shown(Mcp::new().declare(one)),
        "bedrock" => shown(Bedrock::new().declare(one)),
        "mistral" => shown(Mistral::new().declare(one)),
        "ollama" => shown(Ollama::new().declare(one)),
        other => unreachable!("{other}"),
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
