//! Round trips per provider: declarations out, the provider's documented
//! response in (fixtures), execution, results out in the provider's shape.

use crate::support as common;

use serde_json::{Value, json};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::mistral::{Mistral, tool_call_id};
use toolreg::provider::ollama::Ollama;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{CallMapping, Provider, ProviderError, ToolRef, WireFormat};
use toolreg::{CallOptions, ToolArguments, ToolCall, ToolExecutor, ToolResult, prompt};

fn none() -> CallMapping {
    CallMapping::default()
}

fn run(calls: Vec<ToolCall>) -> Vec<ToolResult> {
    let registry = common::registry();
    common::block_on(async {
        futures_util::future::join_all(calls.into_iter().map(|c| registry.execute_call(c, CallOptions::default())))
            .await
    })
}

#[test]
fn openai_chat_round_trip() {
    let registry = common::registry();
    let tools = OpenAiChat::new().declare(&ToolRef::list(registry.list())).unwrap();
    let v = &tools.tools;
    assert_eq!(v.as_array().unwrap().len(), registry.len());
    assert_eq!(v[0]["type"], "function");
    assert_eq!(v[0]["function"]["name"], "create_event");
    assert_eq!(v[0]["function"]["description"], "Create a calendar event.");
    assert_eq!(v[0]["function"]["strict"], true);

    let response = common::fixture("openai_chat_response.json");
    // `call_3` names a tool that was not declared: the response is refused,
    // unless the caller answers unknown tools itself (here the engine does).
    assert_eq!(
        OpenAiChat::new().parse_calls(&response, &tools.mapping),
        Err(ProviderError::UndeclaredTool { provider: Provider::OpenAiChat, tool: "delete_everything".into() })
    );
    let calls = OpenAiChat::new().parse_calls(&response, &tools.mapping.clone().accept_undeclared()).unwrap();
    assert_eq!(calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["call_1", "call_2", "call_3"]);
    let results = run(calls);
    let messages = OpenAiChat::new().render_results(&results, &tools.mapping).messages;
    assert_eq!(messages.len(), 3, "one message per result");
    assert_eq!(messages[0]["role"], "tool");
    assert_eq!(messages[0]["tool_call_id"], "call_1");
    let echoed: Value = serde_json::from_str(messages[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["query"], "crash");
    // Invalid argument JSON is a result the model reads, not a failed run.
    let text = messages[1]["content"].as_str().unwrap();
    assert!(text.starts_with("Error: `numbers`: the arguments are not valid JSON: EOF while parsing"), "{text}");
    assert!(messages[2]["content"].as_str().unwrap().starts_with("Error: unknown tool `delete_everything`."));
}

#[test]
fn openai_chat_accepts_messages_lists_and_compatible_servers() {
    let response = common::fixture("openai_chat_response.json");
    let message = &response["choices"][0]["message"];
    let chat = OpenAiChat::new();
    assert_eq!(chat.parse_calls(message, &none()).unwrap().len(), 3);
    assert_eq!(chat.parse_calls(&message["tool_calls"], &none()).unwrap().len(), 3);
    // A plain answer has no calls.
    let plain = json!({"choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]});
    assert!(chat.parse_calls(&plain, &none()).unwrap().is_empty());
    // Local servers sometimes send objects and no id.
    let local = json!({"tool_calls": [{"type": "function", "function": {"name": "ping", "arguments": {}}}]});
    let mapping = none();
    let calls = chat.parse_calls(&local, &mapping).unwrap();
    assert_eq!(calls[0].arguments, ToolArguments::Json(json!({})));
    assert_eq!(calls[0].id, chat.parse_calls(&local, &none()).unwrap()[0].id, "generated ids are stable");
    assert!(mapping.is_generated_id(&calls[0].id));
    assert!(calls[0].id.starts_with("call_0_"));
    let err = chat.parse_calls(&json!({"foo": 1}), &none()).unwrap_err();
    assert!(matches!(err, ProviderError::InvalidResponse { .. }), "{err:?}");
}

#[test]
fn openai_responses_round_trip() {
    let registry = common::registry();
    let tools = OpenAiResponses::new().declare(&ToolRef::list(registry.list())).unwrap();
    let v = &tools.tools;
    assert_eq!(v[1]["type"], "function");
    assert_eq!(v[1]["name"], "search_issues");
    assert_eq!(v[1]["strict"], true);
    assert_eq!(v[3]["strict"], false, "set_labels cannot be strict and says so");

    let response = common::fixture("openai_responses_response.json");
    let calls = OpenAiResponses::new().parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls.len(), 2, "the reasoning item is not a call");
    assert_eq!(calls[0].id, "call_1");
    assert_eq!(calls[1].arguments, ToolArguments::Raw(String::new()));
    let results = run(calls);
    let items = OpenAiResponses::new().render_results(&results, &tools.mapping).messages;
    assert_eq!(items[0]["type"], "function_call_output");
    assert_eq!(items[0]["call_id"], "call_1");
    let echoed: Value = serde_json::from_str(items[0]["output"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["assignees"], json!(["ada"]));
    assert_eq!(echoed["sort"], "newest", "strict null dropped, default filled");
    assert_eq!(items[1], json!({"type": "function_call_output", "call_id": "call_2", "output": "{}"}));
}

#[test]
fn anthropic_round_trip() {
    let registry = common::registry();
    let tools = Anthropic::new().declare(&ToolRef::list(registry.list())).unwrap();
    let v = &tools.tools;
    assert_eq!(v[1]["name"], "search_issues");
    assert_eq!(v[1]["input_schema"], registry.get("search_issues").unwrap().declaration().input_schema);
    assert!(v[8].get("description").is_none(), "get_time has no description");

    let response = common::fixture("anthropic_response.json");
    let calls = Anthropic::new().parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls.len(), 2, "text blocks are not calls");
    assert_eq!(calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(calls[0].arguments, ToolArguments::Json(json!({"query": "crash", "limit": 5})));
    let results = run(calls);
    let messages = Anthropic::new().render_results(&results, &tools.mapping).messages;
    assert_eq!(messages.len(), 1, "one user turn answers the batch");
    let message = &messages[0];
    assert_eq!(message["role"], "user");
    let blocks = message["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "tool_result");
    assert_eq!(blocks[0]["tool_use_id"], "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(blocks[0]["is_error"], false);
    assert_eq!(blocks[1]["is_error"], true);
    let text = blocks[1]["content"].as_str().unwrap();
    assert!(text.contains("`/byte`: expected integer, got string \"seven\""), "{text}");
}

#[test]
fn gemini_round_trip() {
    let registry = common::registry();
    let gemini = Gemini::new();
    let all = ToolRef::list(registry.list());
    // The recursive type cannot be `parameters`: all or nothing refuses, partial sends the rest.
    assert!(gemini.declare(&all).is_err());
    let tools = gemini.declare_partial(&all).into_value();
    let refused: Vec<&str> = tools.refused().map(|(tool, _)| tool).collect();
    assert_eq!(refused, ["write_tree"]);
    let v = &tools.tools;
    assert_eq!(v.as_array().unwrap().len(), 1, "one Tool holds every declaration");
    let decls = v[0]["functionDeclarations"].as_array().unwrap();
    assert_eq!(decls.len(), registry.len() - 1);
    let ping = decls.iter().find(|d| d["name"] == "ping").unwrap();
    assert!(ping.get("parameters").is_none(), "no parameters: no schema");
    assert_eq!(decls[1]["parameters"]["type"], "OBJECT");

    let json_schema = Gemini::new().json_schema(true).declare(&all).unwrap().tools;
    let tree = json_schema[0]["functionDeclarations"].as_array().unwrap().iter().find(|d| d["name"] == "write_tree");
    assert!(tree.unwrap()["parametersJsonSchema"]["$defs"]["TreeNode"].is_object());
    assert!(tree.unwrap().get("parameters").is_none());

    let response = common::fixture("gemini_response.json");
    let calls = gemini.parse_calls(&response, &tools.mapping).unwrap();
    assert!(calls[0].id.starts_with("gemini_call_0_"), "{}", calls[0].id);
    assert_eq!(calls[0].id, gemini.parse_calls(&response, &none()).unwrap()[0].id, "stable");
    assert_eq!(calls[1].id, "abc123");
    let results = run(calls);
    let content = &gemini.render_results(&results, &tools.mapping).messages[0];
    assert_eq!(content["role"], "user");
    let parts = content["parts"].as_array().unwrap();
    assert_eq!(parts[0]["functionResponse"]["name"], "search_issues");
    assert!(parts[0]["functionResponse"].get("id").is_none(), "a made-up id is not sent");
    assert_eq!(parts[0]["functionResponse"]["response"]["output"]["priority"], "high");
    assert_eq!(parts[1]["functionResponse"]["id"], "abc123");

    let failed = ToolResult {
        id: "x".into(),
        name: "ping".into(),
        outcome: Err(toolreg::ToolError::Failed { message: "down".into() }),
    };
    let content = &gemini.render_results(&[failed], &none()).messages[0];
    assert_eq!(content["parts"][0]["functionResponse"]["response"], json!({"error": "down"}));
    assert!(gemini.render_results(&[], &none()).messages.is_empty());
}

#[test]
fn gemini_keeps_a_real_id_that_looks_generated() {
    let registry = common::registry();
    let gemini = Gemini::new();
    let tools = gemini.declare(&ToolRef::list(registry.get("ping"))).unwrap();
    let response = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "gemini_call_7", "name": "ping", "args": {}}},
        {"functionCall": {"name": "ping", "args": {}}}]}}]});
    let calls = gemini.parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls[0].id, "gemini_call_7");
    let results = run(calls);
    let content = &gemini.render_results(&results, &tools.mapping).messages[0];
    assert_eq!(content["parts"][0]["functionResponse"]["id"], "gemini_call_7", "Gemini's own id goes back");
    assert!(content["parts"][1]["functionResponse"].get("id").is_none(), "the made-up one does not");
}

#[test]
fn bedrock_round_trip() {
    let registry = common::registry();
    let tools = Bedrock::new().declare(&ToolRef::list(registry.list())).unwrap();
    let config = json!({"tools": tools.tools});
    assert_eq!(config["tools"][0]["toolSpec"]["name"], "create_event");
    assert_eq!(config["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"], "object");

    let response = common::fixture("bedrock_response.json");
    let calls = Bedrock::new().parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q");
    let results = run(calls);
    let message = &Bedrock::new().render_results(&results, &tools.mapping).messages[0];
    let ok = &message["content"][0]["toolResult"];
    assert_eq!(ok["status"], "success");
    assert_eq!(ok["content"][0]["json"]["title"], "Standup");
    let err = &message["content"][1]["toolResult"];
    assert_eq!(err["status"], "error");
    assert!(err["content"][0]["text"].as_str().unwrap().contains("`/byte`: must be at most 255"), "{err}");
}

#[test]
fn mcp_round_trip() {
    let registry = common::registry();
    let mcp = Mcp::new();
    let tools = mcp.declare(&ToolRef::list(registry.list())).unwrap();
    assert_eq!(tools.tools.as_array().unwrap().len(), registry.len());
    let requests = common::fixture("mcp_requests.json");
    let requests = requests.as_array().unwrap();
    let mapping = tools.mapping.clone().accept_undeclared();
    let calls: Vec<ToolCall> = requests.iter().flat_map(|r| mcp.parse_calls(r, &mapping).unwrap()).collect();
    assert_eq!(calls[0].id, "1");
    assert_eq!(calls[1].id, "req-2");
    let results = run(calls);
    let rendered = mcp.render_results(&results, &tools.mapping).messages;
    assert_eq!(rendered.len(), 3, "one CallToolResult per result");
    assert_eq!(rendered[0]["isError"], false);
    assert_eq!(rendered[0]["structuredContent"], json!({"query": "crash", "page": 0, "sort": "newest"}));
    assert_eq!(rendered[0]["content"][0]["type"], "text");
    // Unknown tool and argument validation failure: results with isError
    // (the server answers an unknown tool with a protocol error instead).
    assert_eq!(rendered[1]["isError"], true);
    assert_eq!(rendered[2]["isError"], true);
    assert!(rendered[2].get("structuredContent").is_none());
    let err = mcp.parse_calls(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}), &none());
    assert!(matches!(err, Err(ProviderError::InvalidResponse { .. })), "{err:?}");
}

#[test]
fn mistral_round_trip() {
    let registry = common::registry();
    let tools = Mistral::new().declare(&ToolRef::list(registry.list())).unwrap();
    assert_eq!(tools.tools[8]["function"]["description"], "", "Mistral always has a description");
    let response = common::fixture("mistral_response.json");
    let calls = Mistral::new().parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls[0].id, "D681PevKs");
    assert_eq!(calls[0].arguments, ToolArguments::Raw("{\"query\": \"crash\"}".into()));
    assert_eq!(calls[1].arguments, ToolArguments::Json(json!({})));
    let id = calls[1].id.clone();
    assert!(id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
    assert_eq!(id, tool_call_id("call_abc_1"));
    let results = run(calls);
    let messages = Mistral::new().render_results(&results, &tools.mapping).messages;
    assert_eq!(messages[1], json!({"role": "tool", "tool_call_id": id, "name": "ping", "content": "{}"}));
}

#[test]
fn ollama_round_trip() {
    let registry = common::registry();
    let ollama = Ollama::new();
    let tools = ollama.declare(&ToolRef::list(registry.list())).unwrap();
    let v = &tools.tools;
    assert!(v[0]["function"].get("strict").is_none());
    assert_eq!(v[0]["function"]["parameters"], registry.get("create_event").unwrap().declaration().input_schema);
    let response = common::fixture("ollama_response.json");
    let calls = ollama.parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(calls, ollama.parse_calls(&response, &none()).unwrap(), "ids are stable across parses");
    let results = run(calls);
    let message = &ollama.render_results(&results, &tools.mapping).messages[0];
    assert_eq!(message["role"], "tool");
    assert_eq!(message["tool_name"], "search_issues");
    assert!(results[1].is_error(), "numbers is missing required fields");
}

#[test]
fn prompt_lists_every_function() {
    let registry = common::registry();
    let text = prompt::available_functions(registry.list().map(|tool| tool.declaration()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Available functions:");
    assert_eq!(lines.len(), registry.len() + 1);
    assert_eq!(lines[7], "- ping(): Check the service is up.");
    assert_eq!(
        lines[8],
        // Parameters in the order they were declared.
        "- normalize_scores(scores: array, precision: integer? - Decimal places, scale: number? - Upper bound): \
         Normalize an array of scores to 0-1 range"
    );
    assert_eq!(lines[9], "- get_time()");
    assert!(lines[2].contains("label: string?"), "{}", lines[2]);
    assert!(lines[2].contains("query: string - Free-text query."), "{}", lines[2]);
    assert!(lines[2].contains("priority: string?"), "{}", lines[2]);
    assert_eq!(prompt::available_functions(toolreg::FunctionRegistry::new().list().map(|tool| tool.declaration())), "");
}

#[test]
fn tool_choice_per_provider() {
    use toolreg::provider::{NameStyle, Provider, ToolChoice};
    let decl = toolreg::ToolDeclaration::new("files.read", "", json!({"type": "object", "properties": {}}));
    let chat = OpenAiChat::new().name_style(NameStyle::Respell);
    let tools = chat.declare(&[ToolRef::from(&decl)]).unwrap();
    assert_eq!(
        chat.tool_choice(&ToolChoice::Tool("files.read".into()), &tools.mapping).unwrap(),
        json!({"type": "function", "function": {"name": "files__read"}})
    );
    let only = ToolChoice::Tool("files.read".into());
    assert_eq!(
        only.render(Provider::OpenAiChat, &tools.mapping).unwrap(),
        json!({"type": "function", "function": {"name": "files__read"}})
    );
    assert_eq!(
        only.render(Provider::OpenAiResponses, &tools.mapping).unwrap(),
        json!({"type": "function", "name": "files__read"})
    );
    assert_eq!(only.render(Provider::Bedrock, &tools.mapping).unwrap(), json!({"tool": {"name": "files__read"}}));
    let allowed = ToolChoice::Allowed { tools: vec!["a".into(), "b".into()], required: false };
    let none = CallMapping::default();
    assert_eq!(
        allowed.render(Provider::Gemini, &none).unwrap(),
        json!({"functionCallingConfig": {"mode": "VALIDATED", "allowedFunctionNames": ["a", "b"]}})
    );
    assert_eq!(ToolChoice::Required.render(Provider::Anthropic, &none).unwrap(), json!({"type": "any"}));
    assert_eq!(ToolChoice::Required.render(Provider::Mistral, &none).unwrap(), json!("any"));
    // Gemini: every choice is one of its four modes, names only with ANY or VALIDATED.
    let gemini = [
        (ToolChoice::Auto, json!({"mode": "AUTO"})),
        (ToolChoice::Required, json!({"mode": "ANY"})),
        (ToolChoice::None, json!({"mode": "NONE"})),
        (ToolChoice::Validated, json!({"mode": "VALIDATED"})),
        (ToolChoice::Tool("a".into()), json!({"mode": "ANY", "allowedFunctionNames": ["a"]})),
        (
            ToolChoice::Allowed { tools: vec!["a".into(), "b".into()], required: true },
            json!({"mode": "ANY", "allowedFunctionNames": ["a", "b"]}),
        ),
    ];
    for (choice, config) in gemini {
        assert_eq!(choice.render(Provider::Gemini, &none).unwrap(), json!({"functionCallingConfig": config}));
    }
    // Validated is Gemini's alone; the others say so.
    for provider in Provider::ALL.into_iter().filter(|p| *p != Provider::Gemini) {
        let err = ToolChoice::Validated.render(provider, &none).unwrap_err();
        assert!(matches!(err, ProviderError::UnsupportedChoice { provider: p, .. } if p == provider), "{err:?}");
    }
    for (choice, provider) in
        [(&allowed, Provider::Anthropic), (&ToolChoice::None, Provider::Bedrock), (&allowed, Provider::Mistral)]
    {
        let err = choice.render(provider, &none).unwrap_err();
        assert!(matches!(err, ProviderError::UnsupportedChoice { .. }), "{err:?}");
    }
}

// ---- The model's turn written back -----------------------------------------

#[test]
fn argument_text_is_echoed_verbatim_where_the_provider_sent_text() {
    let text = r#"{"limit": null,  "q":"x"}"#;
    let calls = [ToolCall::new("c1", "find", text)];
    let mapping = none();
    let chat = OpenAiChat::new().render_calls("", &calls, &mapping);
    assert_eq!(chat[0]["tool_calls"][0]["function"]["arguments"], text);
    assert_eq!(chat[0]["content"], Value::Null);
    let responses = OpenAiResponses::new().render_calls("Looking.", &calls, &mapping);
    assert_eq!(responses[0], json!({"role": "assistant", "content": "Looking."}));
    assert_eq!(responses[1]["arguments"], text);
    let anthropic = Anthropic::new().render_calls("", &calls, &mapping);
    assert_eq!(anthropic[0]["content"][0]["input"], json!({"limit": null, "q": "x"}));
    assert_eq!(Mcp::new().render_calls("x", &calls, &mapping), Vec::<Value>::new());
    // Ollama's own API takes the arguments as an object.
    let ollama = Ollama::new().render_calls("", &calls, &mapping);
    assert_eq!(ollama[0]["tool_calls"][0]["function"]["arguments"], json!({"limit": null, "q": "x"}));
}

#[test]
fn gemini_leaves_out_ids_it_never_sent() {
    let mapping = none();
    mapping.note_generated_id("made_up");
    let calls = [ToolCall::new("made_up", "t", json!({})), ToolCall::new("real", "t", json!({}))];
    let parts = &Gemini::new().render_calls("", &calls, &mapping)[0]["parts"];
    assert!(parts[0]["functionCall"].get("id").is_none());
    assert_eq!(parts[1]["functionCall"]["id"], "real");
}
