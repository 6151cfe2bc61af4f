//! Provider-native tool search, end to end: an agent over the Anthropic
//! client against a local server that answers as the Messages API does,
//! and over the OpenAI Responses client against one that answers as the
//! Responses API does, plain and streamed. The model searches, the deferred
//! tool it found is called, and every request holds the same tools.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::engine::ToolEngine;
use toolreg::{FunctionRegistry, tool};
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, Deferral, RunOutcome};
use toolreg_llm::client::{AnthropicClient, ClientConfig, OpenAiResponsesClient};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Convert an amount of money from one currency to another.
#[tool(safety = "safe")]
fn convert_currency(amount: f64, from: String, to: String) -> String {
    format!("{amount} {from} is {} {to}", amount * 2.0)
}

/// Add two numbers.
#[tool(safety = "safe")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Answers in order, the last one again once the others are used.
struct Sequence(Mutex<Vec<ResponseTemplate>>);

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut left = self.0.lock().unwrap();
        if left.len() > 1 { left.remove(0) } else { left[0].clone() }
    }
}

/// A model turn's call (id, tool, input), if it makes one.
type Call = Option<(&'static str, &'static str, Value)>;

/// The model's three turns: search, call the tool found, answer.
fn turns() -> [(Call, &'static str); 3] {
    [
        (Some(("toolu_1", "search_tools", json!({"query": "exchange money between currencies"}))), "tool_use"),
        (Some(("toolu_2", "convert_currency", json!({"amount": 1, "from": "EUR", "to": "USD"}))), "tool_use"),
        (None, "end_turn"),
    ]
}

fn message(call: &Call, stop: &str) -> ResponseTemplate {
    let content = match call {
        Some((id, name, input)) => json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
        None => json!([{"type": "text", "text": "1 EUR is 2 USD."}]),
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": content,
        "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 5}
    }))
}

fn streamed(call: &Call, stop: &str) -> ResponseTemplate {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-x", "content": [], "usage": {"input_tokens": 10, "output_tokens": 0}}});
    let mut events = vec![("message_start", start)];
    match call {
        Some((id, name, input)) => {
            let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
            let delta = json!({"type": "input_json_delta", "partial_json": input.to_string()});
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ));
            events.push(("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": delta})));
        }
        None => {
            let block = json!({"type": "text", "text": ""});
            let delta = json!({"type": "text_delta", "text": "1 EUR is 2 USD."});
            events.push((
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": block}),
            ));
            events.push(("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": delta})));
        }
    }
    events.push(("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    let body: String = events.iter().map(|(n, e)| format!("event: {n}\ndata: {e}\n\n")).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_native_search_finds_loads_and_calls_a_deferred_tool_plain_and_streamed() {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, [add_tool, convert_currency_tool]).unwrap();
    AgentTools::new().register(&mut registry).unwrap();
    for stream in [false, true] {
        let server = MockServer::start().await;
        let turns = turns();
        let answers = turns.iter().map(|(call, stop)| if stream { streamed(call, stop) } else { message(call, stop) });
        Mock::given(path("/v1/messages")).respond_with(Sequence(Mutex::new(answers.collect()))).mount(&server).await;
        let config = ClientConfig::new(server.uri()).stream(stream).request_timeout(Duration::from_secs(5));
        let client = AnthropicClient::new(config).unwrap();
        let agent = Agent::builder(client, "claude-x", ToolEngine::builder(&registry))
            .defer(Deferral::new().tools(["convert_currency"]))
            .build();
        let RunOutcome::Finished(done) = agent.run("Convert 1 EUR to USD.").await.unwrap() else {
            panic!("the run should finish");
        };
        assert_eq!(done.answer, "1 EUR is 2 USD.", "stream: {stream}");

        let bodies: Vec<Value> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        assert_eq!(bodies.len(), 3);
        // The same tools in every request, the deferred one marked so.
        for body in &bodies {
            assert_eq!(body["tools"], bodies[0]["tools"]);
        }
        let tools = bodies[0]["tools"].as_array().unwrap();
        let deferred: Vec<&str> =
            tools.iter().filter(|t| t["defer_loading"] == true).map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(deferred, ["convert_currency"]);
        assert!(tools.iter().any(|t| t["name"] == "search_tools" && t.get("defer_loading").is_none()));
        // The search's answer is a reference to the tool it found, in the
        // request after it and in every one after that.
        for body in &bodies[1..] {
            let messages = body["messages"].as_array().unwrap();
            assert_eq!(
                messages[1]["content"][0],
                json!({"type": "tool_use", "id": "toolu_1", "name": "search_tools",
                "input": {"query": "exchange money between currencies"}})
            );
            assert_eq!(
                messages[2]["content"][0],
                json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false,
                    "content": [{"type": "tool_reference", "tool_name": "convert_currency"}]})
            );
        }
        // The deferred tool ran once found.
        let last = bodies[2]["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["content"][0]["tool_use_id"], "toolu_2");
        assert_eq!(last["content"][0]["content"], "1 EUR is 2 USD");
    }
}

/// One Responses answer's output item: the model's `tool_search_call`, its
/// call of the tool it found, or its closing message.
fn responses_item(turn: usize, query: &str, call: &Value) -> Value {
    match turn {
        0 => json!({"type": "tool_search_call", "id": "tsc_1", "call_id": "call_search", "execution": "client",
            "status": "completed", "arguments": {"query": query}}),
        1 => call.clone(),
        _ => json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "1 EUR is 2 USD.", "annotations": []}]}),
    }
}

/// The model's call of the tool it found, in the first test.
fn convert_call() -> Value {
    json!({"type": "function_call", "id": "fc_1", "call_id": "call_convert", "name": "convert_currency",
        "arguments": "{\"amount\":1,\"from\":\"EUR\",\"to\":\"USD\"}", "status": "completed"})
}

fn responses_answer(turn: usize, stream: bool, query: &str, call: &Value) -> ResponseTemplate {
    let item = responses_item(turn, query, call);
    let response = |output: Value| {
        json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-x", "output": output,
            "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
    };
    if !stream {
        return ResponseTemplate::new(200).set_body_json(response(json!([item])));
    }
    // Streamed: the item arrives in `response.output_item.*` events, and
    // the final event leaves `output` empty, so the item is read from them.
    let mut events = vec![json!({"type": "response.created", "response": response(json!([]))})];
    events.push(json!({"type": "response.output_item.added", "output_index": 0, "item": item}));
    if turn == 2 {
        events.push(json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
            "delta": "1 EUR is 2 USD."}));
    }
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(json!({"type": "response.completed", "response": response(json!([]))}));
    let body: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_responses_native_search_finds_loads_and_calls_a_deferred_tool_plain_and_streamed() {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, [add_tool, convert_currency_tool]).unwrap();
    AgentTools::new().register(&mut registry).unwrap();
    for stream in [false, true] {
        let server = MockServer::start().await;
        let answers = (0..3)
            .map(|turn| responses_answer(turn, stream, "exchange money between currencies", &convert_call()))
            .collect();
        Mock::given(path("/v1/responses")).respond_with(Sequence(Mutex::new(answers))).mount(&server).await;
        let config =
            ClientConfig::new(format!("{}/v1", server.uri())).stream(stream).request_timeout(Duration::from_secs(5));
        let client = OpenAiResponsesClient::new(config).unwrap();
        assert!(toolreg_llm::LlmClient::native_tool_search(&client));
        let agent = Agent::builder(client, "gpt-x", ToolEngine::builder(&registry))
            .defer(Deferral::new().tools(["convert_currency"]))
            .build();
        let RunOutcome::Finished(done) = agent.run("Convert 1 EUR to USD.").await.unwrap() else {
            panic!("the run should finish");
        };
        assert_eq!(done.answer, "1 EUR is 2 USD.", "stream: {stream}");

        let bodies: Vec<Value> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        assert_eq!(bodies.len(), 3);
        // The same tools in every request: `search_tools` as the
        // client-executed `tool_search`, the deferred tool marked so.
        for body in &bodies {
            assert_eq!(body["tools"], bodies[0]["tools"]);
        }
        let tools = bodies[0]["tools"].as_array().unwrap();
        let search: Vec<&Value> = tools.iter().filter(|t| t["type"] == "tool_search").collect();
        assert_eq!(search.len(), 1);
        assert_eq!(search[0]["execution"], "client");
        assert_eq!(search[0]["parameters"]["properties"]["query"]["type"], "string");
        assert!(tools.iter().all(|t| t["name"] != "search_tools"));
        let deferred: Vec<&Value> = tools.iter().filter(|t| t["defer_loading"] == true).collect();
        assert_eq!(deferred.len(), 1);
        assert_eq!(deferred[0]["name"], "convert_currency");
        // The search call goes back as it came (less its item id), answered
        // by a `tool_search_output` with the found tool's definition.
        for body in &bodies[1..] {
            let input = body["input"].as_array().unwrap();
            assert_eq!(
                input[1],
                json!({"type": "tool_search_call", "call_id": "call_search", "execution": "client",
                    "status": "completed", "arguments": {"query": "exchange money between currencies"}})
            );
            assert_eq!(
                input[2],
                json!({"type": "tool_search_output", "call_id": "call_search", "execution": "client",
                    "status": "completed", "tools": [deferred[0]]})
            );
        }
        // The deferred tool ran once found.
        let input = bodies[2]["input"].as_array().unwrap();
        assert_eq!(input[3]["type"], "function_call");
        assert_eq!(input[3]["name"], "convert_currency");
        assert_eq!(
            input[4],
            json!({"type": "function_call_output", "call_id": "call_convert", "output": "1 EUR is 2 USD"})
        );
    }
}

/// An imported MCP server's deferred tools are declared in a `namespace`
/// named after the server; the model calls one as namespace + bare name,
/// which runs the tool by its one name and goes back with its namespace.
#[tokio::test(flavor = "multi_thread")]
async fn openai_responses_namespaced_tools_are_called_by_their_one_name() {
    let create_issue = toolreg::ToolRegistration::new(
        toolreg::ToolDeclaration::builder("github__create_issue")
            .description("Open an issue in a repository.")
            .param("title", toolreg::ParamType::String, "The issue's title.")
            .safety(toolreg::SafetyLevel::Safe)
            .build()
            .with_category("mcp")
            .with_category("github"),
        |args: Value| async move { Ok::<_, String>(format!("opened: {}", args["title"].as_str().unwrap_or(""))) },
    );
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, [add_tool]).unwrap();
    registry.register(create_issue).unwrap();
    AgentTools::new().register(&mut registry).unwrap();
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_issue", "namespace": "github",
        "name": "create_issue", "arguments": "{\"title\":\"Crash on start\"}", "status": "completed"});
    for stream in [false, true] {
        let server = MockServer::start().await;
        let answers =
            (0..3).map(|turn| responses_answer(turn, stream, "open an issue in a repository", &call)).collect();
        Mock::given(path("/v1/responses")).respond_with(Sequence(Mutex::new(answers))).mount(&server).await;
        let config =
            ClientConfig::new(format!("{}/v1", server.uri())).stream(stream).request_timeout(Duration::from_secs(5));
        let agent =
            Agent::builder(OpenAiResponsesClient::new(config).unwrap(), "gpt-x", ToolEngine::builder(&registry))
                .defer(Deferral::imported())
                .build();
        let RunOutcome::Finished(_) = agent.run("File the crash.").await.unwrap() else {
            panic!("the run should finish")
        };
        let bodies: Vec<Value> = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect();
        let tools = bodies[0]["tools"].as_array().unwrap();
        let namespace = tools.iter().find(|t| t["type"] == "namespace").expect("a namespace entry");
        assert_eq!(namespace["name"], "github", "stream: {stream}");
        assert_eq!(namespace["tools"][0]["name"], "create_issue");
        assert_eq!(namespace["tools"][0]["defer_loading"], true);
        let input = bodies[2]["input"].as_array().unwrap();
        let echoed = input.iter().find(|i| i["type"] == "function_call").unwrap();
        assert_eq!((&echoed["namespace"], &echoed["name"]), (&json!("github"), &json!("create_issue")));
        let output = input.iter().find(|i| i["type"] == "function_call_output").unwrap();
        assert_eq!(output["namespace"], "github", "{output}");
        assert_eq!(output["output"], "opened: Crash on start", "stream: {stream}");
    }
}
