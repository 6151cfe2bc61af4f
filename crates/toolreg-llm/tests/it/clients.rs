//! The HTTP clients against local servers that answer as each provider
//! documents: plain and streamed answers, tool calls, results sent back,
//! retries, timeouts, truncated streams, keys kept out of errors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::{ParamType, SafetyLevel, ToolArguments, ToolCall, ToolDeclaration, ToolResult};
use toolreg_llm::client::{AnthropicClient, ClientConfig, GeminiClient, OpenAiChatClient, OpenAiResponsesClient};
use toolreg_llm::{LlmClient, LlmError, Message, ModelRequest, ModelResponse, StreamEvent};
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

/// The same request after the tool ran: the answer (as the conversation
/// records it) and the result go back.
fn follow_up(answer: &ModelResponse) -> ModelRequest {
    let call = &answer.tool_calls[0];
    let result = ToolResult { id: call.id.clone(), name: call.name.clone(), outcome: Ok(json!("-3 C").into()) };
    let mut r = request();
    r.messages.push(answer.to_message());
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

/// An OpenAI Chat stream: the chunks, then `[DONE]`.
fn chat_sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(format!("{body}data: [DONE]\n\n"))
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
    let client = OpenAiChatClient::new(config(&server)).unwrap();
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

    client.complete(&follow_up(&answer), &|_| {}).await.unwrap();
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
    let client = OpenAiChatClient::new(config(&server).stream(true)).unwrap();
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
    let client = OpenAiChatClient::new(config(&server).stream(true)).unwrap();
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
    let client = OpenAiChatClient::new(config(&server)).unwrap();
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
    let client = OpenAiChatClient::new(config(&server)).unwrap();
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
    let client = OpenAiChatClient::new(config(&slow).request_timeout(Duration::from_millis(300))).unwrap();
    let error = client.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error:?}");

    let unreachable =
        OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9").api_key(KEY).retries(0, Duration::ZERO)).unwrap();
    let error = unreachable.complete(&request(), &|_| {}).await.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)) && !format!("{error:?}").contains(KEY), "{error:?}");
}

// ---- Anthropic ---------------------------------------------------------------

#[tokio::test]
async fn anthropic_plain_and_streamed() {
    let server = MockServer::start().await;
    Mock::given(path("/v1/messages"))
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
    let client = AnthropicClient::new(config(&server)).unwrap();
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.text, "Checking.");
    assert_eq!(answer.tool_calls, vec![ToolCall::new("toolu_1", "get_weather", json!({"city": "Oslo"}))]);
    assert_eq!(answer.usage.output_tokens, 9);
    client.complete(&follow_up(&answer), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["tools"][0]["name"], "get_weather");
    // The answer as the conversation recorded it: its text, then its call.
    assert_eq!(body["messages"][1]["content"][0], json!({"type": "text", "text": "Checking."}));
    assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(
        body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "-3 C", "is_error": false})
    );

    let streamed = MockServer::start().await;
    Mock::given(path("/v1/messages"))
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
    let client = AnthropicClient::new(config(&streamed).stream(true)).unwrap();
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
    Mock::given(path("/v1beta/models/model-x:generateContent"))
        .and(header("x-goog-api-key", KEY))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 3}
        })))
        .mount(&server)
        .await;
    let client = GeminiClient::new(config(&server)).unwrap();
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.tool_calls[0].name, "get_weather");
    assert_eq!(answer.tool_calls[0].arguments, ToolArguments::Json(json!({"city": "Oslo"})));
    assert_eq!(answer.usage.input_tokens, 8);
    client.complete(&follow_up(&answer), &|_| {}).await.unwrap();
    let body = last_body(&server).await;
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], "Be brief.");
    assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "get_weather");
    let response = &body["contents"][2]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "get_weather");
    // The core's Gemini format renders the result: `{"output": value}`.
    assert_eq!(response["response"], json!({"output": "-3 C"}));
    assert!(response.get("id").is_none(), "ids toolreg made up are not sent: {response}");

    let streamed = MockServer::start().await;
    Mock::given(path("/v1beta/models/model-x:streamGenerateContent"))
        .respond_with(sse(&[
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "It is "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "cold."}]}, "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 4}}),
        ]))
        .mount(&streamed)
        .await;
    let client = GeminiClient::new(config(&streamed).stream(true)).unwrap();
    let seen = Events::default();
    let answer = client.complete(&request(), &seen.sink()).await.unwrap();
    assert_eq!((answer.text.as_str(), seen.text().as_str()), ("It is cold.", "It is cold."));
    assert_eq!(answer.usage.output_tokens, 4);
}

#[tokio::test]
async fn gemini_function_calling_modes_reach_the_request() {
    use toolreg::provider::ToolChoice;

    let server = MockServer::start().await;
    Mock::given(path("/v1beta/models/model-x:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]
        })))
        .mount(&server)
        .await;
    let client = GeminiClient::new(config(&server)).unwrap();
    let cases = [
        (ToolChoice::Auto, None),
        (ToolChoice::Required, Some(json!({"mode": "ANY"}))),
        (ToolChoice::None, Some(json!({"mode": "NONE"}))),
        (ToolChoice::Validated, Some(json!({"mode": "VALIDATED"}))),
        (ToolChoice::Tool("get_weather".into()), Some(json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]}))),
        (
            ToolChoice::Allowed { tools: vec!["get_weather".into()], required: false },
            Some(json!({"mode": "VALIDATED", "allowedFunctionNames": ["get_weather"]})),
        ),
    ];
    for (choice, config) in cases {
        let answer = client.complete(&request().tool_choice(choice.clone()), &|_| {}).await.unwrap();
        assert_eq!(answer.text, "ok");
        let body = last_body(&server).await;
        // AUTO is Gemini's default: nothing is sent for it.
        let expected = config.map(|c| json!({"functionCallingConfig": c}));
        assert_eq!(body.get("toolConfig").cloned(), expected, "{choice:?}");
    }
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
    let client = OpenAiResponsesClient::new(config(&server)).unwrap();
    let answer = client.complete(&request(), &|_| {}).await.unwrap();
    assert_eq!(answer.tool_calls, vec![ToolCall::new("call_1", "get_weather", "{\"city\":\"Oslo\"}")]);
    client.complete(&follow_up(&answer), &|_| {}).await.unwrap();
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
    let client = OpenAiResponsesClient::new(config(&streamed).stream(true)).unwrap();
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
    use toolreg_llm::agent::{Agent, AgentError, AgentLimits, RunOutcome};

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
    let agent = Agent::builder(
        OpenAiChatClient::new(config(&server)).unwrap(),
        "model-x",
        toolreg::ToolEngine::builder(&registry),
    )
    .build();
    let RunOutcome::Finished(finished) = agent.run("Weather?").await.unwrap() else { panic!("suspended") };
    assert_eq!(finished.answer, "Cold in Oslo.");
    assert_eq!(finished.usage.total(), 22);
    let body = last_body(&server).await;
    let results: Vec<&Value> = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results[0]["content"], "-3 C in \"Oslo\"");
    assert!(results[1]["content"].as_str().unwrap().contains("JSON"), "{}", results[1]);

    let forever = MockServer::start().await;
    Mock::given(path("/chat/completions")).respond_with(calls).mount(&forever).await;
    let agent = Agent::builder(
        OpenAiChatClient::new(config(&forever)).unwrap(),
        "model-x",
        toolreg::ToolEngine::builder(&registry),
    )
    .limits(AgentLimits::default().max_steps(4))
    .build();
    assert!(matches!(agent.run("Weather?").await, Err(AgentError::StepLimit { limit: 4, .. })));
    assert_eq!(forever.received_requests().await.unwrap().len(), 4);
}

// ---- Base URLs, as each official SDK reads them ------------------------------

/// Anthropic's and Gemini's base URLs are the host root (the SDKs append the
/// version); one that already ends with the version is not doubled. OpenAI's
/// includes the version, and is used as it is.
#[tokio::test]
async fn base_urls_follow_each_sdks_convention() {
    let server = MockServer::start().await;
    let anthropic = json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"});
    let gemini =
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]});
    let openai =
        json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]});
    Mock::given(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic))
        .mount(&server)
        .await;
    Mock::given(path("/v1beta/models/model-x:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(gemini))
        .mount(&server)
        .await;
    Mock::given(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(openai))
        .mount(&server)
        .await;
    let at = |base: String| ClientConfig::new(base).api_key(KEY).retries(0, Duration::ZERO);
    let root = server.uri();
    for base in [root.clone(), format!("{root}/"), format!("{root}/v1")] {
        let answer = AnthropicClient::new(at(base.clone())).unwrap().complete(&request(), &|_| {}).await;
        assert_eq!(answer.map(|a| a.text), Ok("ok".into()), "anthropic at {base}");
    }
    for base in [root.clone(), format!("{root}/v1beta")] {
        let answer = GeminiClient::new(at(base.clone())).unwrap().complete(&request(), &|_| {}).await;
        assert_eq!(answer.map(|a| a.text), Ok("ok".into()), "gemini at {base}");
    }
    let answer = OpenAiChatClient::new(at(format!("{root}/v1"))).unwrap().complete(&request(), &|_| {}).await;
    assert_eq!(answer.map(|a| a.text), Ok("ok".into()));
}

/// Through `Endpoint`, the one door the CLI uses: every client parses and
/// builds; a key is required for the provider's own API only.
#[test]
fn endpoints_require_a_key_for_their_own_api_only() {
    use toolreg_llm::client::Endpoint;
    for (name, official) in [
        ("openai", "https://api.openai.com/v1"),
        ("openai-responses", "https://api.openai.com/v1"),
        ("anthropic", "https://api.anthropic.com"),
        ("gemini", "https://generativelanguage.googleapis.com"),
        ("google", "https://generativelanguage.googleapis.com"),
    ] {
        let endpoint = Endpoint::parse(name).unwrap();
        assert!(matches!(endpoint.client(ClientConfig::new(official)), Err(LlmError::Config(_))), "{name}");
        assert!(endpoint.client(ClientConfig::new(official).api_key(KEY)).is_ok(), "{name}");
        assert!(endpoint.client(ClientConfig::new("http://localhost:4000")).is_ok(), "{name}: a local server");
    }
    let unknown = Endpoint::parse("cobol").unwrap_err();
    assert_eq!(unknown.to_string(), "unknown provider `cobol`; use openai, openai-responses, anthropic or gemini");
    // A provider the core renders but no client here speaks.
    assert!(Endpoint::parse("bedrock").is_err());
    assert!(Endpoint::of(toolreg::provider::Provider::Mcp).is_none());
}

// ---- Redirects never carry the key to another host -------------------------

/// Records the headers of every request it gets.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<wiremock::http::HeaderMap>>>);

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.lock().unwrap().push(request.headers.clone());
        ResponseTemplate::new(200).set_body_json(json!({
            "content": [{"type": "text", "text": "ok"}],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
            "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}],
            "output": []
        }))
    }
}

/// A 307 to another host (`localhost` vs `127.0.0.1`, another port) is
/// refused by every client, and the other host never sees a request; a
/// redirect within the configured origin is followed.
#[tokio::test]
async fn cross_host_redirects_are_refused_by_every_client() {
    let elsewhere = MockServer::start().await;
    let seen = Recorder::default();
    Mock::given(method("POST")).respond_with(seen.clone()).mount(&elsewhere).await;
    let other = elsewhere.uri().replace("127.0.0.1", "localhost");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(wiremock::matchers::path_regex("^/moved/"))
        .respond_with(seen.clone())
        .mount(&server)
        .await;
    let target = Arc::new(Mutex::new(String::new()));
    let to = Arc::clone(&target);
    Mock::given(method("POST"))
        .respond_with(move |r: &Request| {
            let location = format!("{}{}", to.lock().unwrap(), r.url.path());
            ResponseTemplate::new(307).insert_header("location", location.as_str())
        })
        .mount(&server)
        .await;
    let clients = |base: &str| -> Vec<Box<dyn LlmClient>> {
        let config = || ClientConfig::new(base).api_key(KEY).retries(0, Duration::ZERO);
        vec![
            Box::new(OpenAiChatClient::new(config()).unwrap()),
            Box::new(OpenAiResponsesClient::new(config()).unwrap()),
            Box::new(AnthropicClient::new(config()).unwrap()),
            Box::new(GeminiClient::new(config()).unwrap()),
        ]
    };
    for location in [other.clone(), elsewhere.uri()] {
        *target.lock().unwrap() = location.clone();
        for client in clients(&server.uri()) {
            let error = client.complete(&request(), &|_| {}).await.unwrap_err();
            assert!(
                matches!(&error, LlmError::Redirect { location: l } if location.starts_with(l.as_str())),
                "{}: {error}",
                client.name()
            );
        }
    }
    assert!(seen.0.lock().unwrap().is_empty(), "no request reached the other host");

    // Within the origin: followed, with the key.
    *target.lock().unwrap() = format!("{}/moved", server.uri());
    for client in clients(&server.uri()) {
        client.complete(&request(), &|_| {}).await.unwrap();
    }
    assert_eq!(seen.0.lock().unwrap().len(), 4);
}

// ---- Bounded answers -------------------------------------------------------

/// A body past `max_response_bytes` is a typed error, plain or streamed;
/// an error body is read only so far, its status still reported.
#[tokio::test]
async fn answers_past_the_bound_are_typed_errors() {
    let server = MockServer::start().await;
    let big = format!("{{\"choices\": [], \"pad\": \"{}\"}}", "x".repeat(64 * 1024));
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_string(big.clone()))
        .mount(&server)
        .await;
    let limit = 16 * 1024;
    let client = OpenAiChatClient::new(config(&server).max_response_bytes(limit)).unwrap();
    assert_eq!(client.complete(&request(), &|_| {}).await, Err(LlmError::TooLarge { limit }));
    let streamed = OpenAiChatClient::new(config(&server).max_response_bytes(limit).stream(true)).unwrap();
    assert_eq!(streamed.complete(&request(), &|_| {}).await, Err(LlmError::TooLarge { limit }));

    let failing = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(400).set_body_string("e".repeat(1024 * 1024)))
        .mount(&failing)
        .await;
    let client = OpenAiChatClient::new(config(&failing)).unwrap();
    match client.complete(&request(), &|_| {}).await {
        Err(LlmError::Status { status: 400, message }) => assert!(message.chars().count() <= 501),
        other => panic!("{other:?}"),
    }
}

// ---- Errors inside a stream ------------------------------------------------

/// An `error` chunk is an error, even when `[DONE]` follows it, in every
/// streamed format.
#[tokio::test]
async fn an_error_inside_a_stream_is_an_error() {
    let server = MockServer::start().await;
    let body = "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Half\"}}]}\n\n\
                data: {\"error\": {\"message\": \"upstream overloaded\", \"code\": 503}}\n\ndata: [DONE]\n\n";
    Mock::given(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body),
        )
        .mount(&server)
        .await;
    Mock::given(path("/v1beta/models/model-x:streamGenerateContent"))
        .respond_with(sse(&[json!({"error": {"code": 500, "message": "upstream overloaded"}})]))
        .mount(&server)
        .await;
    Mock::given(path("/v1/messages"))
        .respond_with(sse_named(&[
            ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            (
                "error",
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "upstream overloaded"}}),
            ),
        ]))
        .mount(&server)
        .await;
    let streaming = config(&server).stream(true);
    let clients: Vec<Box<dyn LlmClient>> = vec![
        Box::new(OpenAiChatClient::new(streaming.clone()).unwrap()),
        Box::new(GeminiClient::new(streaming.clone()).unwrap()),
        Box::new(AnthropicClient::new(streaming).unwrap()),
    ];
    for client in clients {
        match client.complete(&request(), &|_| {}).await {
            Err(LlmError::Stream(message)) => assert!(message.contains("upstream overloaded"), "{message}"),
            other => panic!("{}: {other:?}", client.name()),
        }
    }
}

/// Building the HTTP client can fail (here on a header HTTP cannot carry):
/// the error is returned, never a fallback client without the configured
/// timeouts and headers.
#[test]
fn a_client_that_cannot_be_built_is_an_error() {
    let config = ClientConfig::new("http://localhost:4000").header("bad header", "x");
    assert!(matches!(OpenAiChatClient::new(config.clone()), Err(LlmError::Config(m)) if m.contains("bad header")));
    assert!(matches!(AnthropicClient::new(config.clone()), Err(LlmError::Config(_))));
    assert!(matches!(GeminiClient::new(config.clone()), Err(LlmError::Config(_))));
    assert!(matches!(OpenAiResponsesClient::new(config), Err(LlmError::Config(_))));
}

// ---- Calls are read the same way, streamed or not --------------------------

fn find_files() -> Arc<ToolDeclaration> {
    Arc::new(
        ToolDeclaration::builder("find_files")
            .description("Find files.")
            .optional_param("path", ParamType::String, "Where.")
            .optional_param("limit", ParamType::Integer, "At most.")
            .build(),
    )
}

/// With a strict tool the model sends `null` for absent optionals; the tool
/// gets them dropped, but the history repeats the call exactly as sent
/// (id, name, argument text), streamed or not.
#[tokio::test]
async fn the_history_repeats_the_calls_exactly_as_the_model_sent_them() {
    let text = r#"{"path": null,  "limit": null}"#;
    let chunk = |delta: Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let streamed = chat_sse(&[
        chunk(json!({"tool_calls": [{"index": 0, "id": "call_7", "type": "function",
            "function": {"name": "find_files", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": &text[..10]}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": &text[10..]}}]})),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ]);
    let whole =
        ResponseTemplate::new(200).set_body_json(json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_7", "type": "function",
            "function": {"name": "find_files", "arguments": text}}]}}]}));
    for (stream, answer) in [(true, streamed), (false, whole)] {
        let server = MockServer::start().await;
        Mock::given(path("/chat/completions")).respond_with(answer).mount(&server).await;
        let client = OpenAiChatClient::new(config(&server).stream(stream)).unwrap();
        let request = ModelRequest::new("model-x", vec![Message::user("Find.")]).tools(vec![find_files()]);
        let answer = client.complete(&request, &|_| {}).await.unwrap();
        assert_eq!(answer.tool_calls[0].arguments, ToolArguments::Json(json!({})), "the tool sees absent arguments");

        let mut next = request.clone();
        next.messages.push(answer.to_message());
        client.complete(&next, &|_| {}).await.unwrap();
        let body = last_body(&server).await;
        let echoed = &body["messages"][1]["tool_calls"][0];
        assert_eq!(echoed["id"], "call_7");
        assert_eq!(echoed["function"]["name"], "find_files");
        assert_eq!(echoed["function"]["arguments"], text, "stream: {stream}");
    }
}

/// Two calls with one id refuse the answer; a call to a tool the request
/// did not declare is answered, never run; streamed or not, in every client.
#[tokio::test]
async fn duplicate_ids_and_undeclared_tools_are_refused_streamed_or_not() {
    let twice = |name: &str, id2: &str| {
        let chat = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
            {"index": 1, "id": id2, "type": "function", "function": {"name": name, "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]});
        let anthropic = vec![
            ("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": id2, "name": name, "input": {}}}),
            ),
            ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": "call_1", "name": "get_weather", "args": {}}},
            {"functionCall": {"id": id2, "name": name, "args": {}}}]}, "finishReason": "STOP"}]});
        (chat, anthropic, gemini)
    };
    for (name, id2, expect) in [("get_weather", "call_1", "share the id"), ("rm_rf", "call_2", "did not declare")] {
        let (chat, anthropic, gemini) = twice(name, id2);
        let server = MockServer::start().await;
        Mock::given(path("/chat/completions")).respond_with(chat_sse(&[chat])).mount(&server).await;
        Mock::given(path("/v1/messages")).respond_with(sse_named(&anthropic)).mount(&server).await;
        Mock::given(path("/v1beta/models/model-x:streamGenerateContent"))
            .respond_with(sse(&[gemini]))
            .mount(&server)
            .await;
        let streaming = config(&server).stream(true);
        let clients: Vec<Box<dyn LlmClient>> = vec![
            Box::new(OpenAiChatClient::new(streaming.clone()).unwrap()),
            Box::new(AnthropicClient::new(streaming.clone()).unwrap()),
            Box::new(GeminiClient::new(streaming).unwrap()),
        ];
        for client in clients {
            match client.complete(&request(), &|_| {}).await {
                Err(LlmError::Protocol(message)) if id2 == "call_1" => {
                    assert!(message.contains(expect), "{}: {message}", client.name());
                }
                Ok(response) if id2 == "call_2" => {
                    let names: Vec<&str> = response.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    assert_eq!(names, ["get_weather"], "{}", client.name());
                    assert_eq!(response.sent_calls.len(), 2, "{}", client.name());
                    assert_eq!(response.refused.len(), 1, "{}", client.name());
                    let refused = &response.refused[0];
                    assert_eq!((refused.id.as_str(), refused.name.as_str()), ("call_2", "rm_rf"));
                    assert!(refused.text().contains("not available"), "{}: {}", client.name(), refused.text());
                    let _ = expect;
                }
                other => panic!("{}: {other:?}", client.name()),
            }
        }
    }
}

// ---- Rich results in the history ----------------------------------------------

/// A conversation whose tool returned text and an image: every client sends
/// the image the way its provider takes one (rendered by the provider's
/// `WireFormat`), not as base64 text.
#[tokio::test]
async fn an_image_result_reaches_every_provider_as_an_image() {
    use toolreg::{Content, ToolOutput};
    let png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    let b64 = "iVBORw0KGgo=";
    let call = ToolCall::new("call_1", "get_weather", json!({"city": "Oslo"}));
    let output = ToolOutput::from(vec![Content::text("The chart:"), Content::image(png, "image/png")]);
    let mut conversation = request();
    conversation.messages.push(Message::assistant("", vec![call.clone()]));
    conversation.messages.push(Message::tool_results(&[ToolResult {
        id: call.id.clone(),
        name: call.name.clone(),
        outcome: Ok(output),
    }]));

    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(400)).mount(&server).await;
    let clients: Vec<(&str, Box<dyn LlmClient>)> = vec![
        ("openai-chat", Box::new(OpenAiChatClient::new(config(&server)).unwrap())),
        ("openai-responses", Box::new(OpenAiResponsesClient::new(config(&server)).unwrap())),
        ("anthropic", Box::new(AnthropicClient::new(config(&server)).unwrap())),
        ("gemini", Box::new(GeminiClient::new(config(&server)).unwrap())),
    ];
    for (name, client) in clients {
        let _ = client.complete(&conversation, &|_| {}).await;
        let body = last_body(&server).await;
        let image = match name {
            // Chat's tool messages take text: the image follows in a user message.
            "openai-chat" => {
                let messages = body["messages"].as_array().unwrap();
                let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
                assert!(messages.iter().any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_1"), "{name}");
                user["content"].as_array().unwrap().iter().find(|p| p["type"] == "image_url").unwrap()["image_url"]["url"]
                    .clone()
            }
            "openai-responses" => {
                let output = body["input"].as_array().unwrap().iter().find(|i| i["type"] == "function_call_output");
                let parts = output.unwrap()["output"].as_array().unwrap().clone();
                parts.iter().find(|p| p["type"] == "input_image").unwrap()["image_url"].clone()
            }
            "anthropic" => {
                let result = &body["messages"][2]["content"][0];
                assert_eq!(result["type"], "tool_result", "{name}");
                let image =
                    result["content"].as_array().unwrap().iter().find(|b| b["type"] == "image").unwrap().clone();
                assert_eq!(image["source"]["media_type"], "image/png");
                image["source"]["data"].clone()
            }
            _ => {
                let parts = &body["contents"][2]["parts"][0]["functionResponse"]["parts"];
                assert_eq!(parts[0]["inlineData"]["mimeType"], "image/png", "{name}: {body}");
                parts[0]["inlineData"]["data"].clone()
            }
        };
        assert!(image.as_str().is_some_and(|s| s.ends_with(b64)), "{name}: {image}");
        // Chat's tool message and Gemini's `output` text name the image the
        // model gets beside them; the others carry only the blocks.
        if name == "anthropic" || name == "openai-responses" {
            assert!(!body.to_string().contains("[image:"), "{name}: the image went as its summary");
        }
    }
}
