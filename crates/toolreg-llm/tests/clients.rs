//! The HTTP clients against local servers that answer as each provider
//! documents: plain and streamed answers, tool calls, results sent back,
//! retries, timeouts, truncated streams, keys kept out of errors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::{ParamType, SafetyLevel, ToolArguments, ToolCall, ToolDeclaration, ToolResult};
use toolreg_llm::client::{AnthropicClient, ClientConfig, GeminiClient, OpenAiChatClient, OpenAiResponsesClient};
use toolreg_llm::{LlmClient, LlmError, Message, ModelRequest, StreamEvent};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "sk-test-secret-key-123";

fn weather() -> Arc<ToolDeclaration> {
    Arc::new(
        ToolDeclaration::builder("get_weather")
            .description("Weather now.")
            .param("city", ParamType::String, "The city.")
            .safety(SafetyLevel::Safe)
            .build(),
    )
}

fn request() -> ModelRequest {
    ModelRequest::new("model-x", vec![Message::user("Weather in Oslo?")]).system("Be brief.").tools(vec![weather()])
}

/// The same request after the tool ran: the result goes back.
fn follow_up(call: &ToolCall) -> ModelRequest {
    let result = ToolResult { id: call.id.clone(), name: call.name.clone(), outcome: Ok(json!("-3 C").into()) };
    let mut r = request();
    r.messages.push(Message::assistant("", vec![call.clone()]));
    r.messages.push(Message::tool_results(&[result]));
    r
}

fn config(server: &MockServer) -> ClientConfig {
    ClientConfig::new(server.uri())
        .api_key(KEY)
        .retries(3, Duration::from_millis(10))
        .request_timeout(Duration::from_secs(5))
}

fn sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

fn sse_named(events: &[(&str, Value)]) -> ResponseTemplate {
    let body: String = events.iter().map(|(n, e)| format!("event: {n}\ndata: {e}\n\n")).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

/// Collects stream events.
#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<StreamEvent>>>);

impl Events {
    fn sink(&self) -> impl Fn(StreamEvent) + Send + Sync + '_ {
        move |e| self.0.lock().unwrap().push(e)
    }
    fn text(&self) -> String {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| if let StreamEvent::TextDelta(t) = e { Some(t.clone()) } else { None })
            .collect()
    }
    fn retries(&self) -> Vec<Duration> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| if let StreamEvent::Retrying { delay, .. } = e { Some(*delay) } else { None })
            .collect()
    }
}

async fn last_body(server: &MockServer) -> Value {
    let requests = server.received_requests().await.unwrap();
    serde_json::from_slice(&requests.last().unwrap().body).unwrap()
}

// ---- OpenAI Chat Completions ------------------------------------------------

#[tokio::test]
async fn openai_chat_plain_tool_calls_and_results() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "model-x",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": "}}
                ]}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}
        })))
        .mount(&server)
        .await;
    let client = OpenAiChatClient::new(config(&server));
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.tool_calls.len(), 2, "parallel calls");
    // OpenAI sends argument *text*: kept as it came, parsed when the call runs,
    // so a malformed one becomes an error result the model can correct.
    assert_eq!(answer.tool_calls[0].arguments, ToolArguments::Raw("{\"city\": \"Oslo\"}".into()));
    assert_eq!(answer.tool_calls[1].arguments, ToolArguments::Raw("{\"city\": ".into()), "malformed kept as text");
    assert_eq!((answer.usage.input_tokens, answer.usage.output_tokens), (20, 7));

    let body = last_body(&server).await;
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");

    client.complete(&follow_up(&answer.tool_calls[0]), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(body["messages"][3], json!({"role": "tool", "tool_call_id": "call_1", "content": "-3 C"}));
}

#[tokio::test]
async fn openai_chat_streams_text_and_assembles_tool_call_deltas() {
    let server = MockServer::start().await;
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": "Let me "}), Value::Null),
        chunk(json!({"content": "check."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"Oslo\"}"}}]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        json!({"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 4}}),
    ];
    let mut body: String = events.drain(..).map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    Mock::given(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body),
        )
        .mount(&server)
        .await;
    let client = OpenAiChatClient::new(config(&server).stream(true));
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!(seen.text(), "Let me check.");
    assert_eq!(answer.text, "Let me check.");
    assert_eq!(answer.tool_calls, vec![ToolCall::new("call_9", "get_weather", "{\"city\": \"Oslo\"}")]);
    assert_eq!(answer.usage.input_tokens, 11);
    let sent = last_body(&server).await;
    assert_eq!(sent["stream"], true);
}

#[tokio::test]
async fn openai_chat_truncated_stream_is_an_error() {
    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(sse(&[json!({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]})]))
        .mount(&server)
        .await;
    let client = OpenAiChatClient::new(config(&server).stream(true));
    let error = client.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(&error, LlmError::Protocol(m) if m.contains("truncated")), "{error:?}");
}

/// Answers with the given responses in turn, then the last one forever.
struct Sequence(Mutex<Vec<ResponseTemplate>>);

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut left = self.0.lock().unwrap();
        if left.len() > 1 { left.remove(0) } else { left[0].clone() }
    }
}

#[tokio::test]
async fn retries_honour_retry_after_then_succeed() {
    let server = MockServer::start().await;
    let ok = ResponseTemplate::new(200).set_body_json(json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hi"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}));
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(json!({"error": {"message": "slow down"}}));
    Mock::given(path("/chat/completions"))
        .respond_with(Sequence(Mutex::new(vec![limited, ResponseTemplate::new(500), ok])))
        .mount(&server)
        .await;
    let client = OpenAiChatClient::new(config(&server));
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!(answer.text, "hi");
    let delays = seen.retries();
    assert_eq!(delays.len(), 2);
    assert_eq!(delays[0], Duration::from_secs(1), "Retry-After honoured");
    assert!(delays[1] <= Duration::from_millis(20), "backoff with jitter: {:?}", delays[1]);
}

#[tokio::test]
async fn errors_after_retries_and_timeouts_never_show_the_key() {
    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {"message": format!("bad key {KEY}")}})))
        .mount(&server)
        .await;
    let client = OpenAiChatClient::new(config(&server));
    let error = client.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(error, LlmError::Status { status: 503, .. }));
    assert_eq!(server.received_requests().await.unwrap().len(), 4, "one try and three retries");
    for text in [error.to_string(), format!("{error:?}"), format!("{client:?}")] {
        assert!(!text.contains(KEY), "{text}");
    }

    let slow = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(10)))
        .mount(&slow)
        .await;
    let client = OpenAiChatClient::new(config(&slow).request_timeout(Duration::from_millis(300)));
    let error = client.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");

    let unreachable =
        OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9").api_key(KEY).retries(0, Duration::ZERO));
    let error = unreachable.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)) && !format!("{error:?}").contains(KEY), "{error:?}");
}

// ---- Anthropic ---------------------------------------------------------------

#[tokio::test]
async fn anthropic_plain_and_streamed() {
    let server = MockServer::start().await;
    Mock::given(path("/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "model-x", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Checking."},
                        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
            "usage": {"input_tokens": 30, "output_tokens": 9}
        })))
        .mount(&server)
        .await;
    let client = AnthropicClient::new(config(&server));
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.text, "Checking.");
    assert_eq!(answer.tool_calls, vec![ToolCall::new("toolu_1", "get_weather", json!({"city": "Oslo"}))]);
    assert_eq!(answer.usage.output_tokens, 9);
    client.complete(&follow_up(&answer.tool_calls[0]), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["tools"][0]["name"], "get_weather");
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(
        body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3 C", "is_error": false})
    );

    let streamed = MockServer::start().await;
    Mock::given(path("/messages"))
        .respond_with(sse_named(&[
            ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}})),
            ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sure"}})),
            ("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"Oslo\"}"}})),
            ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 15}})),
            ("message_stop", json!({"type": "message_stop"})),
        ]))
        .mount(&streamed)
        .await;
    let client = AnthropicClient::new(config(&streamed).stream(true));
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!(seen.text(), "Sure");
    assert_eq!(answer.tool_calls, vec![ToolCall::new("toolu_2", "get_weather", json!({"city": "Oslo"}))]);
    assert_eq!((answer.usage.input_tokens, answer.usage.output_tokens), (12, 15));
}

// ---- Gemini ------------------------------------------------------------------

#[tokio::test]
async fn gemini_plain_and_streamed() {
    let server = MockServer::start().await;
    Mock::given(path("/models/model-x:generateContent"))
        .and(header("x-goog-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 3}
        })))
        .mount(&server)
        .await;
    let client = GeminiClient::new(config(&server));
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(answer.tool_calls[0].arguments, ToolArguments::Json(json!({"city": "Oslo"})));
    assert_eq!(answer.usage.input_tokens, 8);
    client.complete(&follow_up(&answer.tool_calls[0]), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], "Be brief.");
    assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "get_weather");
    let response = &body["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "get_weather");
    assert_eq!(response["response"]["content"], "-3 C");
    assert!(response.get("id").is_none(), "ids toolreg made up are not sent: {response}");

    let streamed = MockServer::start().await;
    Mock::given(path("/models/model-x:streamGenerateContent"))
        .respond_with(sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "It is "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "cold."}]}, "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4}}),
        ]))
        .mount(&streamed)
        .await;
    let client = GeminiClient::new(config(&streamed).stream(true));
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!((answer.text.as_str(), seen.text().as_str()), ("It is cold.", "It is cold."));
    assert_eq!(answer.usage.output_tokens, 4);
}

// ---- OpenAI Responses ----------------------------------------------------------

#[tokio::test]
async fn openai_responses_plain_and_streamed() {
    let server = MockServer::start().await;
    Mock::given(path("/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}],
            "usage": {"input_tokens": 40, "output_tokens": 6}
        })))
        .mount(&server)
        .await;
    let client = OpenAiResponsesClient::new(config(&server));
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.tool_calls, vec![ToolCall::new("call_1", "get_weather", "{\"city\":\"Oslo\"}")]);
    client.complete(&follow_up(&answer.tool_calls[0]), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["input"][1]["type"], "function_call");
    assert_eq!(body["input"][2], json!({"type": "function_call_output", "call_id": "call_1", "output": "-3 C"}));

    let streamed = MockServer::start().await;
    Mock::given(path("/responses"))
        .respond_with(sse(&[
            json!({"type": "response.output_text.delta", "delta": "Hello"}),
            json!({"type": "response.completed", "response": {"status": "completed", "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]}],
                "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ]))
        .mount(&streamed)
        .await;
    let client = OpenAiResponsesClient::new(config(&streamed).stream(true));
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!((answer.text.as_str(), seen.text().as_str()), ("Hello", "Hello"));
}

#[test]
fn missing_keys_are_config_errors() {
    // Setting variables is unsafe in edition 2024 and the crate forbids
    // unsafe code: the check reads the environment as it is.
    if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
        assert!(matches!(AnthropicClient::from_env(), Err(LlmError::Config(_))));
    }
    if std::env::var_os("GEMINI_API_KEY").is_none() {
        assert!(matches!(GeminiClient::from_env(), Err(LlmError::Config(_))));
    }
}

/// The agent loop over a real HTTP client: a multi-step run with parallel
/// calls (one malformed) against an OpenAI-compatible server, and a model
/// that never stops calling tools.
#[tokio::test(flavor = "multi_thread")]
async fn agent_loop_over_http() {
    use toolreg_llm::agent::{Agent, AgentError, Limits, Outcome};

    let server = MockServer::start().await;
    let calls =
        ResponseTemplate::new(200).set_body_json(json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
            {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\""}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}}));
    let done = ResponseTemplate::new(200).set_body_json(json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Cold in Oslo."}}], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}));
    Mock::given(path("/chat/completions"))
        .respond_with(Sequence(Mutex::new(vec![calls.clone(), done])))
        .mount(&server)
        .await;

    let mut registry = toolreg::FunctionRegistry::new();
    registry
        .register_sync_tool(
            "get_weather",
            |args: Value| Ok::<_, String>(format!("-3 C in {}", args["city"])),
            (*weather()).clone(),
        )
        .unwrap();
    let agent = Agent::builder(OpenAiChatClient::new(config(&server)), "model-x", &registry).build();
    let Outcome::Finished(finished) = agent.run("Weather?").await.unwrap() else { panic!("suspended") };
    assert_eq!(finished.answer, "Cold in Oslo.");
    assert_eq!(finished.usage.total(), 22);
    let body = last_body(&server).await;
    let results: Vec<&Value> = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results[0]["content"], "-3 C in \"Oslo\"");
    assert!(results[1]["content"].as_str().unwrap().contains("JSON"), "{}", results[1]);

    let forever = MockServer::start().await;
    Mock::given(path("/chat/completions")).respond_with(calls).mount(&forever).await;
    let agent = Agent::builder(OpenAiChatClient::new(config(&forever)), "model-x", &registry)
        .limits(Limits::default().max_steps(4))
        .build();
    assert!(matches!(agent.run("Weather?").await, Err(AgentError::StepLimit { limit: 4, .. })));
    assert_eq!(forever.received_requests().await.unwrap().len(), 4);
}
