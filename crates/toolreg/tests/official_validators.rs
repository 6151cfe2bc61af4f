//! The declarations and results toolreg emits, checked by the providers' own
//! SDK types (`scripts/validate_providers.py`, which installs them from PyPI
//! into `target/provider-venv` on first use).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;
use serde_json::{Value, json};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::{Mcp, McpRevision};
use toolreg::provider::mistral::Mistral;
use toolreg::provider::ollama::Ollama;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{NameStyle, Provider, Strictness, ToolChoice};
use toolreg::{ToolCall, ToolDeclaration, ToolExecutor, ToolResult};

fn write(dir: &Path, name: &str, value: &impl Serialize) {
    std::fs::write(dir.join(name), serde_json::to_string_pretty(value).unwrap()).unwrap();
}

fn run(calls: Vec<ToolCall>) -> Vec<ToolResult> {
    let registry = common::registry();
    common::block_on(async {
        futures_util::future::join_all(calls.into_iter().map(|c| registry.execute_call(c))).await
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

fn export(dir: &Path) {
    let decls = declarations();
    let without_recursion = || decls.iter().filter(|d| d.name != "write_tree");

    // OpenAI Chat Completions.
    let tools = OpenAiChat::new().name_style(NameStyle::Respell).declare(&decls).unwrap();
    assert!(tools.not_strict.iter().any(|n| n.tool == "set_labels"));
    write(dir, "openai_chat.tools.json", &tools);
    let response = common::fixture("openai_chat_response.json");
    let results = run(OpenAiChat::parse_calls_mapped(&response, &tools.mapping).unwrap());
    let messages: Vec<_> = results.iter().map(OpenAiChat::result_message).collect();
    write(dir, "openai_chat.exchange.json", &json!({"response": response, "results": messages}));

    // OpenAI Responses.
    let tools = OpenAiResponses::new().name_style(NameStyle::Respell).declare(&decls).unwrap();
    write(dir, "openai_responses.tools.json", &tools);
    let response = common::fixture("openai_responses_response.json");
    let results = run(OpenAiResponses::parse_calls_mapped(&response, &tools.mapping).unwrap());
    let items: Vec<_> = results.iter().map(OpenAiResponses::result_item).collect();
    write(dir, "openai_responses.exchange.json", &json!({"response": response, "results": items}));

    // Anthropic, plain and strict where possible.
    let tools = Anthropic::new().name_style(NameStyle::Respell).declare(&decls).unwrap();
    write(dir, "anthropic.tools.json", &tools);
    let strict =
        Anthropic::new().name_style(NameStyle::Respell).strict(Strictness::IfCompatible).declare(&decls).unwrap();
    assert!(strict.tools.iter().filter(|t| t.strict == Some(true)).count() >= 4);
    write(dir, "anthropic_strict.tools.json", &strict);
    let response = common::fixture("anthropic_response.json");
    let results = run(Anthropic::parse_calls_mapped(&response, &tools.mapping).unwrap());
    write(
        dir,
        "anthropic.exchange.json",
        &json!({"response": response, "results": Anthropic::results_message(&results)}),
    );

    // Gemini: `parameters` for every tool but the recursive one, and `parametersJsonSchema`.
    let tools = Gemini::new().declare(without_recursion()).unwrap();
    write(dir, "gemini.tools.json", &tools);
    write(dir, "gemini_json_schema.tools.json", &Gemini::new().json_schema(true).declare(&decls).unwrap());
    let response = common::fixture("gemini_response.json");
    let results = run(Gemini::parse_calls_mapped(&response, &tools.mapping).unwrap());
    write(
        dir,
        "gemini.exchange.json",
        &json!({"response": response, "results": Gemini::results_content(&results, &tools.mapping)}),
    );

    // MCP.
    let tools = Mcp::new().declare(&decls).unwrap();
    write(dir, "mcp.tools.json", &tools);
    let requests = common::fixture("mcp_requests.json");
    let requests = requests.as_array().unwrap();
    let calls: Vec<ToolCall> = requests.iter().map(|r| Mcp::parse_call(r).unwrap()).collect();
    let results = run(calls);
    let responses: Vec<Value> =
        requests.iter().zip(&results).map(|(req, res)| Mcp::response(&req["id"], res)).collect();
    let page = Mcp::list_result(&tools, Some("2"), 3).unwrap();
    let next = Mcp::new().revision(McpRevision::V2026_07_28).cache(60_000, true);
    let page_2026 = next.tools_list(&tools, None, 5).unwrap();
    let responses_2026: Vec<Value> =
        requests.iter().zip(&results).map(|(req, res)| next.respond(&req["id"], res)).collect();
    write(
        dir,
        "mcp.exchange.json",
        &json!({"requests": requests, "responses": responses, "list_page": page,
                "responses_2026": responses_2026, "list_page_2026": page_2026}),
    );

    // Bedrock.
    let tools = Bedrock::new().name_style(NameStyle::Respell).declare(&decls).unwrap();
    write(dir, "bedrock.tools.json", &tools);
    let response = common::fixture("bedrock_response.json");
    let results = run(Bedrock::parse_calls_mapped(&response, &tools.mapping).unwrap());
    write(dir, "bedrock.exchange.json", &json!({"response": response, "results": Bedrock::results_message(&results)}));

    // Mistral: calls as the assistant turn carries them (nine-character ids), and results.
    let tools = Mistral::new().name_style(NameStyle::Respell).declare(&decls).unwrap();
    write(dir, "mistral.tools.json", &tools);
    let response = common::fixture("mistral_response.json");
    let calls = Mistral::parse_calls_mapped(&response, &tools.mapping).unwrap();
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
    let messages: Vec<_> = results.iter().map(|r| Mistral::result_message(r, &tools.mapping)).collect();
    write(dir, "mistral.exchange.json", &json!({"response": response, "calls": sent, "results": messages}));

    // Ollama.
    write(dir, "ollama.tools.json", &Ollama::new().name_style(NameStyle::Respell).declare(&decls).unwrap());

    // Tool choices, each as every provider spells it (or cannot).
    let respelled = OpenAiChat::new().name_style(NameStyle::Respell).declare(&decls).unwrap().mapping;
    let choices = [
        ToolChoice::Auto,
        ToolChoice::Required,
        ToolChoice::None,
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
}

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolreg-provider-export-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn official_sdks_accept_every_export() {
    let dir = scratch_dir();
    export(&dir);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/validate_providers.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python).arg(&script).arg(&dir).output().unwrap_or_else(|e| {
        panic!("could not run `{python} {}`: {e}. Python 3 with venv and pip is needed.", script.display())
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the providers' validators refused some exports:\n{stdout}\n{stderr}");
    assert!(stdout.contains("checks passed"), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
    if std::env::var_os("TOOLREG_KEEP_EXPORT").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
