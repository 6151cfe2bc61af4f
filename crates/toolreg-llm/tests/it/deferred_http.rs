//! Deferred loading through every LLM client, streamed and not, against
//! local servers that answer as each provider documents: the model
//! searches, the tool it finds joins the next request, and it runs.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::{FunctionRegistry, ToolEngine, tool};
use toolreg_llm::LlmClient;
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, Deferral, RunOutcome};
use toolreg_llm::client::{AnthropicClient, ClientConfig, GeminiClient, OpenAiChatClient, OpenAiResponsesClient};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Convert an amount of money from one currency to another.
#[tool(safety = "safe")]
fn convert_currency(amount: f64, from: String, to: String) -> String {
    format!("{amount} {from} is {} {to}", amount * 2.0)
}

/// Read a text file.
#[tool(safety = "safe")]
fn read_notes(path: String) -> String {
    path
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Provider {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

/// What the model does at each step: search, call what it found, answer.
fn step(n: usize) -> Option<(&'static str, Value)> {
    match n {
        0 => Some(("search_tools", json!({"query": "convert money between currencies"}))),
        1 => Some(("convert_currency", json!({"amount": 3, "from": "EUR", "to": "USD"}))),
        _ => None,
    }
}

/// A model server for one provider: answers each request with the next step.
struct Model {
    provider: Provider,
    stream: bool,
    step: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.bodies.lock().unwrap().push(serde_json::from_slice(&request.body).unwrap());
        let n = self.step.fetch_add(1, Ordering::SeqCst);
        let id = format!("call_{n}");
        let json_response = |body: Value| ResponseTemplate::new(200).set_body_json(body);
        let sse = |events: Vec<(Option<&str>, Value)>| {
            let body: String = events
                .iter()
                .map(|(name, data)| match name {
                    Some(name) => format!("event: {name}\ndata: {data}\n\n"),
                    None => format!("data: {data}\n\n"),
                })
                .collect();
            let body = if self.provider == Provider::Chat { format!("{body}data: [DONE]\n\n") } else { body };
            ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
        };
        match (self.provider, self.stream, step(n)) {
            (Provider::Chat, false, Some((name, args))) => json_response(json!({"choices": [{"index": 0,
                "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}}]})),
            (Provider::Chat, false, None) => json_response(json!({"choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done"}}]})),
            (Provider::Chat, true, Some((name, args))) => sse(vec![(
                None,
                json!({"choices": [{"index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}, "finish_reason": "tool_calls"}]}),
            )]),
            (Provider::Chat, true, None) => sse(vec![(
                None,
                json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}),
            )]),
            // The Responses API's own (client-executed) tool search: the
            // model searches with a `tool_search_call` item.
            (Provider::Responses, false, Some(("search_tools", args))) => {
                json_response(json!({"id": "resp", "object": "response", "status": "completed",
                "output": [{"type": "tool_search_call", "id": format!("tsc_{n}"), "call_id": id,
                "execution": "client", "status": "completed", "arguments": args}]}))
            }
            (Provider::Responses, false, Some((name, args))) => {
                json_response(json!({"id": "resp", "object": "response",
                "status": "completed", "output": [{"type": "function_call", "id": format!("fc_{n}"), "call_id": id,
                "name": name, "arguments": args.to_string()}]}))
            }
            (Provider::Responses, true, Some(("search_tools", args))) => {
                let item = json!({"type": "tool_search_call", "id": format!("tsc_{n}"), "call_id": id,
                    "execution": "client", "status": "completed", "arguments": args});
                sse(vec![
                    (None, json!({"type": "response.output_item.added", "output_index": 0, "item": item})),
                    (None, json!({"type": "response.output_item.done", "output_index": 0, "item": item})),
                    (
                        None,
                        json!({"type": "response.completed", "response": {"status": "completed", "output": [item]}}),
                    ),
                ])
            }
            (Provider::Responses, false, None) => json_response(json!({"id": "resp", "object": "response",
                "status": "completed", "output": [{"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}]}]})),
            (Provider::Responses, true, Some((name, args))) => {
                let item = json!({"type": "function_call", "id": format!("fc_{n}"), "call_id": id, "name": name,
                    "arguments": args.to_string()});
                let mut added = item.clone();
                added["arguments"] = json!("");
                sse(vec![
                    (None, json!({"type": "response.output_item.added", "output_index": 0, "item": added})),
                    (
                        None,
                        json!({"type": "response.function_call_arguments.delta", "output_index": 0,
                        "item_id": format!("fc_{n}"), "delta": args.to_string()}),
                    ),
                    (None, json!({"type": "response.output_item.done", "output_index": 0, "item": item})),
                    (
                        None,
                        json!({"type": "response.completed", "response": {"status": "completed", "output": [item]}}),
                    ),
                ])
            }
            (Provider::Responses, true, None) => sse(vec![
                (None, json!({"type": "response.output_text.delta", "delta": "done"})),
                (
                    None,
                    json!({"type": "response.completed", "response": {"status": "completed", "output": [
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]}}),
                ),
            ]),
            (Provider::Anthropic, false, Some((name, args))) => json_response(json!({"id": "msg", "type": "message",
                "role": "assistant", "model": "m", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": id, "name": name, "input": args}],
                "usage": {"input_tokens": 1, "output_tokens": 1}})),
            (Provider::Anthropic, false, None) => json_response(json!({"id": "msg", "type": "message",
                "role": "assistant", "model": "m", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 1, "output_tokens": 1}})),
            (Provider::Anthropic, true, Some((name, args))) => sse(vec![
                (
                    Some("message_start"),
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
                (
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ),
                (
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": args.to_string()}}),
                ),
                (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
                (
                    Some("message_delta"),
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 2}}),
                ),
                (Some("message_stop"), json!({"type": "message_stop"})),
            ]),
            (Provider::Anthropic, true, None) => sse(vec![
                (
                    Some("message_start"),
                    json!({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 1}}}),
                ),
                (
                    Some("content_block_start"),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                (
                    Some("content_block_delta"),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}}),
                ),
                (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 0})),
                (
                    Some("message_delta"),
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
                ),
                (Some("message_stop"), json!({"type": "message_stop"})),
            ]),
            (Provider::Gemini, stream, answer) => {
                let part = match answer {
                    Some((name, args)) => json!({"functionCall": {"name": name, "args": args}}),
                    None => json!({"text": "done"}),
                };
                let body = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
                    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}});
                if stream { sse(vec![(None, body)]) } else { json_response(body) }
            }
        }
    }
}

fn client(provider: Provider, server: &MockServer, stream: bool) -> Box<dyn LlmClient> {
    let config = ClientConfig::new(server.uri())
        .api_key("test-key")
        .retries(0, Duration::from_millis(10))
        .request_timeout(Duration::from_secs(5))
        .stream(stream);
    match provider {
        Provider::Chat => Box::new(OpenAiChatClient::new(config).unwrap()),
        Provider::Responses => Box::new(OpenAiResponsesClient::new(config).unwrap()),
        Provider::Anthropic => Box::new(AnthropicClient::new(config).unwrap()),
        Provider::Gemini => Box::new(GeminiClient::new(config).unwrap()),
    }
}

/// The tool names a request body offers for the model to call now (a
/// declaration a provider loads only on search, `defer_loading`, is not one).
fn offered(provider: Provider, body: &Value) -> Vec<String> {
    let tools = match provider {
        Provider::Gemini => body["tools"][0]["functionDeclarations"].clone(),
        _ => body["tools"].clone(),
    };
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter(|tool| tool["defer_loading"] != true)
        // OpenAI Responses' own search tool is `search_tools`, declared as `tool_search`.
        .filter_map(|tool| match tool["type"] == "tool_search" {
            true => Some("search_tools"),
            false => tool["name"].as_str().or(tool["function"]["name"].as_str()),
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn deferred_tools_are_searched_loaded_and_called_through_every_client() {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, [read_notes_tool, convert_currency_tool]).unwrap();
    AgentTools::new().register(&mut registry).unwrap();
    for provider in [Provider::Chat, Provider::Responses, Provider::Anthropic, Provider::Gemini] {
        for stream in [false, true] {
            let what = format!("{provider:?}, stream {stream}");
            let server = MockServer::start().await;
            let model = Model { provider, stream, step: AtomicUsize::new(0), bodies: Mutex::default() };
            let model = std::sync::Arc::new(model);
            Mock::given(wiremock::matchers::method("POST"))
                .respond_with(SharedModel(std::sync::Arc::clone(&model)))
                .mount(&server)
                .await;
            let client = client(provider, &server, stream);
            let native = client.native_tool_search();
            let agent = Agent::builder_shared(client.into(), "m", ToolEngine::builder(&registry))
                .defer(Deferral::new().tools(["convert_currency"]))
                .build();
            let outcome = agent.run("Convert 3 EUR to USD.").await.unwrap_or_else(|e| panic!("{what}: {e}"));
            let RunOutcome::Finished(done) = outcome else { panic!("{what}: suspended") };
            assert_eq!(done.answer, "done", "{what}");
            let bodies = model.bodies.lock().unwrap().clone();
            assert_eq!(bodies.len(), 3, "{what}");
            let first = offered(provider, &bodies[0]);
            assert!(
                first.contains(&"search_tools".to_owned()) && first.contains(&"read_notes".to_owned()),
                "{what}: {first:?}"
            );
            assert!(!first.contains(&"convert_currency".to_owned()), "{what}: deferred, yet offered: {first:?}");
            let second = offered(provider, &bodies[1]);
            if native {
                // The provider searches natively: the same tools in every
                // request, the found one loaded by the search's answer.
                assert_eq!(bodies[1]["tools"], bodies[0]["tools"], "{what}: the tools changed");
                let answer = if provider == Provider::Anthropic { "tool_reference" } else { "tool_search_output" };
                assert!(bodies[1].to_string().contains(answer), "{what}: {}", bodies[1]);
            } else {
                // Found by the search, it is offered from the next request on, after the others.
                assert!(second.contains(&"convert_currency".to_owned()), "{what}: {second:?}");
                assert_eq!(second[..first.len()], first[..], "{what}: the prefix changed");
            }
            // It ran: its result is in the last request.
            assert!(bodies[2].to_string().contains("3 EUR is 6 USD"), "{what}: {}", bodies[2]);
        }
    }
}

/// Lets the test keep a handle on the model server's record.
struct SharedModel(std::sync::Arc<Model>);

impl Respond for SharedModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}
