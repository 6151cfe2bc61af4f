//! Provider-hosted programmatic calls, end to end: an agent over the
//! Anthropic client against a local server that answers as the Messages
//! API documents programmatic tool calling. The model's program (run on
//! the provider's side) calls one of our tools twice; each call goes
//! through the agent's engine — the approver decides, the audit records —
//! and every next request carries the turn verbatim, tool results only,
//! and the container. Then the same over the OpenAI Responses client, whose
//! programs go back as `program` items.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolreg::engine::ToolEngine;
use toolreg::policy::{AuditDecision, MemorySink, approver_fn};
use toolreg::provider::{Caller, CodeExecution, HostedTurn};
use toolreg::{FunctionRegistry, tool};
use toolreg_llm::Message;
use toolreg_llm::agent::{Agent, RunOutcome};
use toolreg_llm::client::{AnthropicClient, ClientConfig, OpenAiResponsesClient};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Run a SQL query against the sales database.
#[tool(safety = "dangerous")]
fn query_database(sql: String) -> Value {
    json!([{"region": "West", "revenue": 45000, "sql": sql}])
}

/// Answers in order, the last one again once the others are used.
struct Sequence(Mutex<Vec<ResponseTemplate>>);

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut left = self.0.lock().unwrap();
        if left.len() > 1 { left.remove(0) } else { left[0].clone() }
    }
}

fn caller() -> Value {
    json!({"type": "code_execution_20260120", "tool_id": "srvtoolu_1"})
}

/// The model's three turns: a program that calls `query_database`, the
/// same program calling it again, and the answer once the program is done.
fn turns() -> Vec<Value> {
    let code = "rows = await query_database('select region, revenue from sales')\n\
                await query_database('drop table sales')\nprint(rows[0]['region'])";
    let container = json!({"id": "container_1", "expires_at": "2026-01-15T14:30:00Z"});
    vec![
        json!({"content": [
            {"type": "text", "text": "I'll query the sales data."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {"code": code}},
            {"type": "tool_use", "id": "toolu_1", "name": "query_database",
             "input": {"sql": "select region, revenue from sales"}, "caller": caller()}],
            "container": container, "stop_reason": "tool_use"}),
        json!({"content": [
            {"type": "tool_use", "id": "toolu_2", "name": "query_database",
             "input": {"sql": "drop table sales"}, "caller": caller()}],
            "container": container, "stop_reason": "tool_use"}),
        json!({"content": [
            {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {
                "type": "code_execution_result", "stdout": "West\n", "stderr": "", "return_code": 0, "content": []}},
            {"type": "text", "text": "West had the highest revenue."}],
            "container": container, "stop_reason": "end_turn"}),
    ]
}

fn message(turn: &Value) -> ResponseTemplate {
    let mut body = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "usage": {"input_tokens": 10, "output_tokens": 5}});
    for (k, v) in turn.as_object().unwrap() {
        body[k] = v.clone();
    }
    ResponseTemplate::new(200).set_body_json(body)
}

/// The same turn as Anthropic streams it: the container in `message_start`,
/// each block started (text and inputs empty) and filled by deltas.
fn streamed(turn: &Value) -> ResponseTemplate {
    let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
        "container": turn["container"], "usage": {"input_tokens": 10, "output_tokens": 0}});
    let mut events = vec![json!({"type": "message_start", "message": message})];
    for (index, block) in turn["content"].as_array().unwrap().iter().enumerate() {
        let mut start = block.clone();
        let delta = match block["type"].as_str().unwrap() {
            "text" => {
                start["text"] = json!("");
                Some(json!({"type": "text_delta", "text": block["text"]}))
            }
            "tool_use" | "server_tool_use" => {
                start["input"] = json!({});
                Some(json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
            }
            _ => None,
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        if let Some(delta) = delta {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": turn["stop_reason"]}, "usage": {"output_tokens": 5}}),
    );
    events.push(json!({"type": "message_stop"}));
    let body: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

async fn server(turns: &[Value], stream: bool) -> MockServer {
    let server = MockServer::start().await;
    let answers = turns.iter().map(|t| if stream { streamed(t) } else { message(t) }).collect();
    Mock::given(path("/v1/messages")).respond_with(Sequence(Mutex::new(answers))).mount(&server).await;
    server
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server.received_requests().await.unwrap().iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect()
}

fn client(server: &MockServer, stream: bool) -> AnthropicClient {
    let config = ClientConfig::new(server.uri()).stream(stream).request_timeout(Duration::from_secs(5));
    AnthropicClient::new(config).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_from_the_providers_code_are_approved_audited_and_answered_in_its_container() {
    for stream in [false, true] {
        run(stream).await;
    }
}

async fn run(stream: bool) {
    let mut registry = FunctionRegistry::new();
    registry.register(query_database_tool::registration()).unwrap();
    let audit = Arc::new(MemorySink::new());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let approver = approver_fn("read-only", move |request| {
        // The approver sees which calls the provider's code made.
        let id = request.call_id().unwrap_or_default().to_owned();
        let from_code = request.extensions().get::<HostedTurn>().and_then(|t| t.caller(&id)).is_some();
        seen.lock().unwrap().push((id, from_code));
        async move {
            match request.arguments()["sql"].as_str() {
                Some(sql) if sql.starts_with("select") => request.approve(),
                _ => request.deny("only reads are allowed"),
            }
        }
    });
    let engine = ToolEngine::builder(&registry).approver(approver).audit(audit.clone());
    let turns = turns();
    let server = server(&turns, stream).await;
    let agent =
        Agent::builder(client(&server, stream), "claude-x", engine).code_execution(CodeExecution::new()).build();

    let RunOutcome::Finished(done) = agent.run("Which region had the highest revenue?").await.unwrap() else {
        panic!("the run should finish");
    };
    assert_eq!(done.answer, "West had the highest revenue.");

    // Each call the program made went through the engine: approved, then denied.
    assert_eq!(*asked.lock().unwrap(), [("toolu_1".to_owned(), true), ("toolu_2".to_owned(), true)]);
    let events = audit.events();
    let decisions: Vec<_> = events.iter().map(|e| (e.call_id.as_str(), e.decision)).collect();
    assert_eq!(decisions, [("toolu_1", AuditDecision::Approved), ("toolu_2", AuditDecision::Denied)]);

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    // Declared callable from code, with the code execution tool; no container yet.
    assert_eq!(bodies[0]["tools"][0]["allowed_callers"], json!(["direct", "code_execution_20260120"]));
    assert_eq!(bodies[0]["tools"][1], json!({"type": "code_execution_20260120", "name": "code_execution"}));
    assert!(bodies[0].get("container").is_none());
    // Each next request: the turn verbatim, tool results only, the container.
    for (i, body) in bodies.iter().enumerate().skip(1) {
        assert_eq!(body["container"], "container_1", "request {i}, stream: {stream}");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(
            messages[2 * i - 1],
            json!({"role": "assistant", "content": turns[i - 1]["content"]}),
            "request {i}"
        );
        let answer = &messages[2 * i];
        assert_eq!(answer["role"], "user");
        let blocks = answer["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 1, "request {i}");
        assert_eq!(blocks[0]["type"], "tool_result");
        assert_eq!(blocks[0]["tool_use_id"], format!("toolu_{i}"));
    }
    assert_eq!(bodies[1]["messages"][2]["content"][0]["is_error"], false);
    assert!(bodies[1]["messages"][2]["content"][0]["content"].as_str().unwrap().contains("45000"));
    assert_eq!(bodies[2]["messages"][4]["content"][0]["is_error"], true);
    assert!(bodies[2]["messages"][4]["content"][0]["content"].as_str().unwrap().contains("only reads are allowed"));

    // The transcript keeps the hosted turns with their callers, through serde.
    let transcript: Vec<Message> = serde_json::from_value(serde_json::to_value(&done.transcript).unwrap()).unwrap();
    assert_eq!(transcript, done.transcript);
    let Message::Assistant { hosted: Some(first), .. } = &transcript[1] else { panic!("a hosted turn") };
    assert_eq!(
        first.caller("toolu_1"),
        Some(&Caller::CodeExecution { kind: "code_execution_20260120".into(), tool_id: "srvtoolu_1".into() })
    );
    let Message::Assistant { hosted: Some(last), .. } = transcript.last().unwrap() else { panic!("a hosted turn") };
    assert_eq!(last.content[0]["type"], "code_execution_tool_result");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_code_execution_the_requests_are_as_before() {
    let mut registry = FunctionRegistry::new();
    registry.register(query_database_tool::registration()).unwrap();
    let answer = json!({"content": [{"type": "text", "text": "Nothing to do."}], "stop_reason": "end_turn"});
    let server = server(&[answer], false).await;
    let agent = Agent::builder(client(&server, false), "claude-x", ToolEngine::builder(&registry)).build();
    let RunOutcome::Finished(done) = agent.run("Hi").await.unwrap() else { panic!("the run should finish") };
    assert_eq!(done.answer, "Nothing to do.");
    let bodies = bodies(&server).await;
    assert_eq!(bodies[0]["tools"].as_array().unwrap().len(), 1);
    assert!(bodies[0]["tools"][0].get("allowed_callers").is_none());
    assert!(bodies[0].get("container").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_turn_goes_back_as_it_is_and_the_model_carries_it_on() {
    let registry = FunctionRegistry::new();
    let container = json!({"id": "container_9", "expires_at": "2026-01-15T14:30:00Z"});
    let paused = json!({"content": [
        {"type": "server_tool_use", "id": "srvtoolu_9", "name": "code_execution", "input": {"code": "print(6 * 7)"}}],
        "container": container, "stop_reason": "pause_turn"});
    let done = json!({"content": [
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_9", "content": {
            "type": "code_execution_result", "stdout": "42\n", "stderr": "", "return_code": 0, "content": []}},
        {"type": "text", "text": "42"}], "container": container, "stop_reason": "end_turn"});
    let server = server(&[paused.clone(), done], false).await;
    let agent = Agent::builder(client(&server, false), "claude-x", ToolEngine::builder(&registry))
        .code_execution(CodeExecution::new())
        .build();
    let RunOutcome::Finished(finished) = agent.run("What is 6 * 7?").await.unwrap() else { panic!("should finish") };
    assert_eq!(finished.answer, "42");
    assert_eq!(finished.steps, 2);
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    // The paused turn is the last message of the next request, as it came.
    assert_eq!(bodies[1]["container"], "container_9");
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1], json!({"role": "assistant", "content": paused["content"]}));
}

/// The Responses API's two turns: a program that calls `query_database`,
/// then the program's output and the answer.
fn responses_turns() -> Vec<Value> {
    vec![
        json!([
            {"type": "program", "id": "prog_1", "call_id": "call_prog_1",
             "code": "const rows = await query_database({sql: 'select region from sales'});\nreturn rows[0].region;",
             "fingerprint": "fp_1"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "query_database",
             "arguments": "{\"sql\":\"select region from sales\"}", "status": "completed",
             "caller": {"type": "program", "caller_id": "call_prog_1"}}]),
        json!([
            {"type": "program_output", "id": "po_1", "call_id": "call_prog_1", "result": "\"West\"", "status": "completed"},
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "West.", "annotations": []}]}]),
    ]
}

fn response(output: &Value, stream: bool) -> ResponseTemplate {
    let usage = json!({"input_tokens": 10, "output_tokens": 5, "total_tokens": 15});
    if !stream {
        let body =
            json!({"id": "resp_1", "object": "response", "status": "completed", "output": output, "usage": usage});
        return ResponseTemplate::new(200).set_body_json(body);
    }
    let mut events: Vec<Value> = output
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, item)| json!({"type": "response.output_item.done", "output_index": i, "item": item}))
        .collect();
    events.push(json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "output": [], "usage": usage}}));
    let body: String =
        events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
    ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string(body)
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_responses_programs_call_through_the_engine_and_go_back_as_they_came() {
    for stream in [false, true] {
        let mut registry = FunctionRegistry::new();
        registry.register(query_database_tool::registration()).unwrap();
        let audit = Arc::new(MemorySink::new());
        let approver = approver_fn("yes", |request| async move { request.approve() });
        let engine = ToolEngine::builder(&registry).approver(approver).audit(audit.clone());
        let turns = responses_turns();
        let server = MockServer::start().await;
        let answers = turns.iter().map(|t| response(t, stream)).collect();
        Mock::given(path("/responses")).respond_with(Sequence(Mutex::new(answers))).mount(&server).await;
        let config = ClientConfig::new(server.uri()).stream(stream).request_timeout(Duration::from_secs(5));
        let client = OpenAiResponsesClient::new(config).unwrap();
        let agent = Agent::builder(client, "gpt-x", engine).code_execution(CodeExecution::new()).build();

        let RunOutcome::Finished(done) = agent.run("Which region?").await.unwrap() else { panic!("should finish") };
        assert_eq!(done.answer, "West.", "stream: {stream}");
        let decisions: Vec<_> = audit.events().iter().map(|e| (e.call_id.clone(), e.decision)).collect();
        assert_eq!(decisions, [("call_1".to_owned(), AuditDecision::Approved)], "stream: {stream}");

        let bodies = bodies(&server).await;
        assert_eq!(bodies.len(), 2);
        assert_eq!(bodies[0]["tools"][0]["allowed_callers"], json!(["direct", "programmatic"]));
        assert_eq!(bodies[0]["tools"][1], json!({"type": "programmatic_tool_calling"}));
        let input = bodies[1]["input"].as_array().unwrap();
        // The user's task, the program as it came, its call (no item id), our output.
        assert_eq!(input.len(), 4, "stream: {stream}");
        assert_eq!(input[1], turns[0][0]);
        let mut call = turns[0][1].clone();
        call.as_object_mut().unwrap().remove("id");
        assert_eq!(input[2], call);
        assert_eq!(input[3]["type"], "function_call_output");
        assert_eq!(input[3]["call_id"], "call_1");
        assert!(input[3]["output"].as_str().unwrap().contains("West"));
        let Message::Assistant { hosted: Some(turn), .. } = &done.transcript[1] else { panic!("a hosted turn") };
        assert_eq!(turn.caller("call_1"), Some(&Caller::Program { caller_id: "call_prog_1".into() }));
    }
}
