//! Provider-native tool search, end to end: an agent over the Anthropic
//! client against a local server that answers as the Messages API does,
//! plain and streamed. The model searches, the deferred tool it found is
//! called, and every request holds the same tools.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::engine::ToolEngine;
use toolreg::{FunctionRegistry, tool};
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, Deferral, Outcome};
use toolreg_llm::client::{AnthropicClient, ClientConfig};
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
        let Outcome::Finished(done) = agent.run("Convert 1 EUR to USD.").await.unwrap() else {
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
