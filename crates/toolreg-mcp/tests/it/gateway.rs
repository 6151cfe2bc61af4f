//! The gateway as `toolreg serve --config` runs it: toolreg's MCP server in
//! front of an imported MCP server (the fake server of `servers/`, which
//! writes its JSON by hand, on stdio). What a client of the gateway
//! receives, block for block.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::Raw;
use serde_json::{Value, json};
use toolreg::FunctionRegistry;
use toolreg_mcp::client::RemoteServer;
use toolreg_mcp::config::{ServerConfig, Transport};
use toolreg_mcp::gateway::Gateway;
use toolreg_mcp::server::{McpServer, ServerOptions, StdioOptions};

/// The gateway's client, and the imported server (its child lives as long as it).
async fn gateway() -> (Raw, RemoteServer) {
    gateway_with(json!({})).await
}

/// [`gateway`] with a client declaring these capabilities.
async fn gateway_with(client_capabilities: Value) -> (Raw, RemoteServer) {
    gateway_of(client_capabilities, toolreg::SafetyLevel::Cautious).await
}

/// [`gateway_with`], the remote tools at least as dangerous as `safety`.
async fn gateway_of(client_capabilities: Value, safety: toolreg::SafetyLevel) -> (Raw, RemoteServer) {
    gateway_over(client_capabilities, safety, &[]).await
}

/// [`gateway_of`], the fake server started with these flags.
async fn gateway_over(client_capabilities: Value, safety: toolreg::SafetyLevel, flags: &[&str]) -> (Raw, RemoteServer) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    let mut args = vec!["-u".to_owned(), script.to_owned()];
    args.extend(flags.iter().map(|flag| (*flag).to_owned()));
    let transport = Transport::Command { command: "python3".into(), args, env: BTreeMap::new(), cwd: None };
    let config = ServerConfig::new(transport).call_timeout(Duration::from_secs(5)).safety(safety);
    let remote = RemoteServer::connect("fake", config).await.unwrap();
    let gateway = Gateway::new(vec![remote.clone()]);
    let mut registry = FunctionRegistry::new();
    let refused = gateway.register_into(&mut registry);
    assert!(refused.is_empty(), "{refused:?}");
    let options = ServerOptions::default();
    let server = McpServer::new(McpServer::engine_builder(&registry, &options).build(), options);
    server.set_upstream(gateway);
    let mut raw = Raw::start(server, StdioOptions::default());
    let init = raw.initialize(client_capabilities).await;
    let capabilities = &init["result"]["capabilities"];
    assert!(capabilities["resources"].is_object() && capabilities["prompts"].is_object(), "{init}");
    assert_eq!(capabilities["resources"]["subscribe"], true, "{init}");
    (raw, remote)
}

#[tokio::test]
async fn remote_blocks_reach_the_client_unchanged() {
    let (mut raw, _remote) = gateway().await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    let listed = raw.answer(json!(1)).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let blocks = tools.iter().find(|t| t["name"] == "fake__blocks").expect("fake__blocks is listed");
    assert_eq!(blocks["outputSchema"]["properties"]["points"]["type"], "integer", "{blocks}");

    let answer = raw.call(2, "fake__blocks", json!({})).await;
    let for_user = json!({"audience": ["user"], "priority": 0.25, "lastModified": "2026-01-02T03:04:05Z"});
    assert_eq!(
        answer["result"],
        json!({
            "content": [
                {"type": "text", "text": "The chart:", "annotations": for_user},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png", "annotations": for_user},
                {"type": "audio", "data": "AQI=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///data.csv", "name": "data.csv", "title": "The data",
                 "description": "Three points", "mimeType": "text/csv", "size": 42,
                 "annotations": {"audience": ["assistant"]}},
                {"type": "resource", "resource": {"uri": "mem://notes", "mimeType": "text/plain", "text": "three points"}},
                {"type": "resource", "resource": {"uri": "mem://raw", "mimeType": "application/octet-stream", "blob": "AP8="},
                 "annotations": {"priority": 1.0}},
            ],
            "structuredContent": {"points": 3},
            "isError": false,
        })
    );

    // A plain text answer is still plain text, its structured value beside it.
    let echo = raw.call(3, "fake__echo", json!({"text": "hi"})).await;
    assert_eq!(echo["result"]["content"], json!([{"type": "text", "text": "{\"text\": \"hi\"}"}]));
    assert_eq!(echo["result"]["structuredContent"], json!({"text": "hi"}));
}

#[tokio::test]
async fn unreadable_remote_blocks_are_reported_and_the_gateway_keeps_serving() {
    let (mut raw, _remote) = gateway().await;
    let answer = raw.call(1, "fake__bad_blocks", json!({})).await;
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 3, "{answer}");
    assert_eq!(content[0], json!({"type": "text", "text": "before"}));
    let text = |i: usize| content[i]["text"].as_str().unwrap_or_default().to_owned();
    assert!(text(1).contains("could not be read") && text(1).contains("invalid base64"), "{}", text(1));
    assert!(text(2).contains("could not be read") && text(2).contains("hologram"), "{}", text(2));

    let after = raw.call(2, "fake__echo", json!({"text": "still here"})).await;
    assert_eq!(after["result"]["structuredContent"], json!({"text": "still here"}));
}

#[tokio::test]
async fn remote_progress_reaches_the_client_on_its_token() {
    let (mut raw, _remote) = gateway().await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fake__progress", "arguments": {}, "_meta": {"progressToken": "p-9"}}}))
        .await;
    // Both reports come before the answer.
    let answer = raw.answer(json!(1)).await;
    let progress: Vec<&Value> = raw.other.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 2, "{:?}", raw.other);
    for (step, note) in progress.iter().enumerate() {
        let step = step as f64 + 1.0;
        assert_eq!(
            note["params"],
            json!({"progressToken": "p-9", "progress": step, "total": 2.0, "message": format!("step {step}")})
        );
    }
    // The remote server was sent a token of the gateway's own, not the client's.
    let got: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(!got["token"].is_null() && got["token"] != "p-9", "{got}");

    // A client that sent no token hears nothing (the remote server still
    // reports, on the gateway's token).
    raw.other.clear();
    let answer = raw.call(2, "fake__progress", json!({})).await;
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("token"), "{answer}");
    let echo = raw.call(3, "fake__echo", json!({})).await;
    assert_eq!(echo["result"]["isError"], false);
    assert!(!raw.other.iter().any(|m| m["method"] == "notifications/progress"), "{:?}", raw.other);
}

async fn request(raw: &mut Raw, id: i64, method: &str, params: Value) -> Value {
    raw.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    raw.answer(json!(id)).await
}

#[tokio::test]
async fn remote_resources_are_listed_and_read_namespaced() {
    let (mut raw, _remote) = gateway().await;
    let listed = request(&mut raw, 1, "resources/list", json!({})).await;
    assert_eq!(
        listed["result"]["resources"],
        json!([{"uri": "toolreg://fake/mem://notes", "name": "fake__notes", "mimeType": "text/plain"}]),
        "{listed}"
    );
    let templates = request(&mut raw, 2, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{"uriTemplate": "toolreg://fake/mem://notes/{id}", "name": "fake__note"}]),
        "{templates}"
    );

    // A listed URI, and an expanded template, read on their server under the URI asked for.
    for uri in ["toolreg://fake/mem://notes", "toolreg://fake/mem://notes/7"] {
        let read = request(&mut raw, 3, "resources/read", json!({"uri": uri})).await;
        let remote = uri.trim_start_matches("toolreg://fake/");
        assert_eq!(
            read["result"]["contents"],
            json!([{"uri": uri, "mimeType": "text/plain", "text": format!("contents of {remote}")}]),
            "{read}"
        );
    }

    // A resource link a remote tool returned is read as it is, once returned.
    let unknown = request(&mut raw, 4, "resources/read", json!({"uri": "file:///data.csv"})).await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    raw.call(5, "fake__blocks", json!({})).await;
    let linked = request(&mut raw, 6, "resources/read", json!({"uri": "file:///data.csv"})).await;
    assert_eq!(linked["result"]["contents"][0]["text"], "contents of file:///data.csv", "{linked}");

    // What the remote server refuses, or no server has, is an error, not a crash.
    let refused = request(&mut raw, 7, "resources/read", json!({"uri": "toolreg://fake/mem://nothing"})).await;
    assert!(refused["error"]["message"].as_str().unwrap().contains("no resource"), "{refused}");
    assert_eq!(refused["error"]["code"], -32002, "the remote server's code stands: {refused}");
    let nowhere = request(&mut raw, 8, "resources/read", json!({"uri": "toolreg://other/mem://notes"})).await;
    assert_eq!(nowhere["error"]["code"], -32002, "{nowhere}");
    assert_eq!(raw.call(9, "fake__echo", json!({})).await["result"]["isError"], false);
}

#[tokio::test]
async fn remote_prompts_are_listed_and_got_namespaced() {
    let (mut raw, _remote) = gateway().await;
    let listed = request(&mut raw, 1, "prompts/list", json!({})).await;
    assert_eq!(listed["result"]["prompts"][0]["name"], "fake__greet", "{listed}");
    assert_eq!(listed["result"]["prompts"][0]["arguments"][0]["name"], "who");
    let got = request(&mut raw, 2, "prompts/get", json!({"name": "fake__greet", "arguments": {"who": "Ada"}})).await;
    assert_eq!(
        got["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada"}}]),
        "{got}"
    );
    for name in ["fake__nope", "other__greet", "nope"] {
        let missing = request(&mut raw, 3, "prompts/get", json!({"name": name})).await;
        assert_eq!(missing["error"]["code"], -32602, "{name}: {missing}");
    }
}

#[tokio::test]
async fn plain_uris_and_prompt_names_reach_the_one_server_that_lists_them() {
    let (mut raw, remote) = gateway().await;
    // As the server itself names them: a listed URI, an expansion of its template, its prompt.
    for uri in ["mem://notes", "mem://notes/7"] {
        let read = request(&mut raw, 1, "resources/read", json!({"uri": uri})).await;
        assert_eq!(
            read["result"]["contents"],
            json!([{"uri": uri, "mimeType": "text/plain", "text": format!("contents of {uri}")}]),
            "{read}"
        );
    }
    let got = request(&mut raw, 2, "prompts/get", json!({"name": "greet", "arguments": {"who": "Ada"}})).await;
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "Hello, Ada", "{got}");
    // A URI no server lists (nor linked to) is still unknown.
    let unknown = request(&mut raw, 3, "resources/read", json!({"uri": "mem://other"})).await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");

    // Two servers listing the same names: neither is guessed; the namespaced names still work.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    let transport = Transport::Command {
        command: "python3".into(),
        args: vec!["-u".into(), script.into()],
        env: BTreeMap::new(),
        cwd: None,
    };
    let twin = RemoteServer::connect("twin", ServerConfig::new(transport)).await.unwrap();
    let options = ServerOptions::default();
    let server = McpServer::new(McpServer::engine_builder(&FunctionRegistry::new(), &options).build(), options);
    server.set_upstream(Gateway::new(vec![remote, twin]));
    let mut raw = Raw::start(server, StdioOptions::default());
    raw.initialize(json!({})).await;
    let ambiguous = request(&mut raw, 4, "resources/read", json!({"uri": "mem://notes"})).await;
    assert_eq!(ambiguous["error"]["code"], -32602, "{ambiguous}");
    assert!(ambiguous["error"]["message"].as_str().unwrap().contains("fake, twin"), "{ambiguous}");
    let ambiguous = request(&mut raw, 5, "prompts/get", json!({"name": "greet", "arguments": {"who": "Ada"}})).await;
    assert_eq!(ambiguous["error"]["code"], -32602, "{ambiguous}");
    let named = request(&mut raw, 6, "resources/read", json!({"uri": "toolreg://twin/mem://notes"})).await;
    assert_eq!(named["result"]["contents"][0]["text"], "contents of mem://notes", "{named}");
}

#[tokio::test]
async fn remote_questions_go_to_the_gateways_client() {
    let (mut raw, _remote) = gateway_with(json!({"elicitation": {}, "sampling": {}})).await;
    raw.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "fake__ask", "arguments": {}}}),
    )
    .await;
    let ask = raw.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Your name?");
    raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    let answer = raw.answer(json!(1)).await;
    let got: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["result"], json!({"action": "accept", "content": {"name": "Ada"}}), "{answer}");

    raw.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "fake__sample", "arguments": {}}}),
    )
    .await;
    let ask = raw.next().await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model"}}))
        .await;
    let answer = raw.answer(json!(2)).await;
    let got: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["result"]["content"]["text"], "hi", "{answer}");
    assert_eq!(got["result"]["model"], "test-model");
}

#[tokio::test]
async fn a_remote_question_no_one_can_answer_is_refused_with_a_reason() {
    let (mut raw, _remote) = gateway().await;
    for (tool, what) in [("fake__ask", "elicitation"), ("fake__sample", "sampling")] {
        let answer = raw.call(1, tool, json!({})).await;
        let got: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        let message = got["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("does not support {what}")), "{answer}");
        assert!(
            !raw.other.iter().any(|m| m.get("method").is_some_and(|m| m != "notifications/progress")),
            "{:?}",
            raw.other
        );
    }
}

/// A `tools/call` as a 2026-07-28 client sends it (no handshake).
fn call_2026(id: i64, tool: &str, capabilities: Value, retry: Option<(&Value, Value)>) -> Value {
    let mut params = json!({"name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities}});
    if let Some((state, responses)) = retry {
        params["requestState"] = state.clone();
        params["inputResponses"] = responses;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn remote_questions_reach_a_2026_07_28_client_as_multi_round_trip_requests() {
    let (mut raw, _remote) = gateway().await;
    let key = toolreg_mcp::gateway::FORWARDED_KEY;
    let both = json!({"elicitation": {}, "sampling": {}});
    raw.send(call_2026(1, "fake__ask", both.clone(), None)).await;
    let asked = raw.answer(json!(1)).await["result"].take();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(asked["inputRequests"][key]["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["inputRequests"][key]["params"]["message"], "Your name?", "{asked}");
    // Not answered: the same question again (the remote call still waits).
    raw.send(call_2026(2, "fake__ask", both.clone(), Some((&asked["requestState"], json!({}))))).await;
    let again = raw.answer(json!(2)).await["result"].take();
    assert_eq!(again["inputRequests"][key]["params"]["message"], "Your name?", "{again}");
    let answer = json!({key: {"action": "accept", "content": {"name": "Ada"}}});
    raw.send(call_2026(3, "fake__ask", both.clone(), Some((&again["requestState"], answer)))).await;
    let done = raw.answer(json!(3)).await["result"].take();
    assert_eq!(done["resultType"], "complete", "{done}");
    let got: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["result"], json!({"action": "accept", "content": {"name": "Ada"}}), "{done}");

    raw.send(call_2026(4, "fake__sample", both.clone(), None)).await;
    let asked = raw.answer(json!(4)).await["result"].take();
    assert_eq!(asked["inputRequests"][key]["method"], "sampling/createMessage", "{asked}");
    let answer = json!({key: {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model"}});
    raw.send(call_2026(5, "fake__sample", both, Some((&asked["requestState"], answer)))).await;
    let done = raw.answer(json!(5)).await["result"].take();
    let got: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["result"]["content"]["text"], "hi", "{done}");
    // No request was sent to the client outside the results.
    assert!(
        !raw.other.iter().any(|m| m.get("method").is_some_and(|m| m != "notifications/progress")),
        "{:?}",
        raw.other
    );

    // A client that cannot answer: the remote server is refused with the reason.
    raw.send(call_2026(6, "fake__ask", json!({}), None)).await;
    let done = raw.answer(json!(6)).await["result"].take();
    let got: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(got["error"]["message"].as_str().unwrap_or_default().contains("does not support elicitation"), "{done}");
}

/// A remote task's question is not put to a 2026-07-28 client (its rounds
/// do not reach into a task): the task is cancelled, saying so.
#[tokio::test]
async fn a_remote_tasks_question_does_not_reach_a_2026_07_28_client() {
    let (mut raw, _remote) = gateway().await;
    let mut call = call_2026(1, "fake__research", json!({"elicitation": {}}), None);
    call["params"]["arguments"] = json!({"topic": "tides", "ask": true});
    raw.send(call).await;
    let done = raw.answer(json!(1)).await;
    assert!(done.to_string().contains("does not forward from a task to a client on the 2026-07-28 revision"), "{done}");
}

#[tokio::test]
async fn an_approved_remote_call_asks_its_question_without_asking_approval_again() {
    // Every remote tool dangerous: the client approves, then the server asks.
    let (mut raw, _remote) = gateway_of(json!({}), toolreg::SafetyLevel::Dangerous).await;
    let elicits = json!({"elicitation": {}});
    raw.send(call_2026(1, "fake__ask", elicits.clone(), None)).await;
    let asked = raw.answer(json!(1)).await["result"].take();
    let approval = toolreg_mcp::server::APPROVAL_KEY;
    assert!(asked["inputRequests"][approval].is_object(), "{asked}");
    let yes = json!({approval: {"action": "accept", "content": {"approve": true}}});
    raw.send(call_2026(2, "fake__ask", elicits.clone(), Some((&asked["requestState"], yes)))).await;
    let asked = raw.answer(json!(2)).await["result"].take();
    let key = toolreg_mcp::gateway::FORWARDED_KEY;
    assert_eq!(asked["inputRequests"][key]["params"]["message"], "Your name?", "{asked}");
    let answer = json!({key: {"action": "accept", "content": {"name": "Ada"}}});
    raw.send(call_2026(3, "fake__ask", elicits, Some((&asked["requestState"], answer)))).await;
    let done = raw.answer(json!(3)).await["result"].take();
    assert_eq!(done["isError"], false, "{done}");
    let got: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(got["result"]["content"]["name"], "Ada", "{done}");
}

/// The next `notifications/resources/updated`, kept or read.
async fn updated(raw: &mut Raw) -> Value {
    if let Some(at) = raw.other.iter().position(|m| m["method"] == "notifications/resources/updated") {
        return raw.other.remove(at);
    }
    loop {
        let message = raw.next().await;
        if message["method"] == "notifications/resources/updated" {
            return message;
        }
        raw.other.push(message);
    }
}

/// What the fake server is subscribed to now, read through the gateway.
async fn subscribed_upstream(raw: &mut Raw, id: i64) -> String {
    let read = request(raw, id, "resources/read", json!({"uri": "toolreg://fake/mem://subscriptions"})).await;
    read["result"]["contents"][0]["text"].as_str().unwrap().to_owned()
}

/// A client subscribes through the gateway by the URI it reads by; the
/// server's update reaches it under that URI; unsubscribing stops it on
/// the server. A URI no server has is refused.
#[tokio::test]
async fn resource_subscriptions_pass_through_the_gateway() {
    let (mut raw, _remote) = gateway().await;
    let ok = request(&mut raw, 2, "resources/subscribe", json!({"uri": "toolreg://fake/mem://notes"})).await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    let update = updated(&mut raw).await;
    assert_eq!(update["params"]["uri"], "toolreg://fake/mem://notes", "{update}");
    assert_eq!(subscribed_upstream(&mut raw, 3).await, "mem://notes");

    // A URI as the server lists it works too, and is reported as written.
    request(&mut raw, 4, "resources/subscribe", json!({"uri": "mem://notes/7"})).await;
    assert_eq!(updated(&mut raw).await["params"]["uri"], "mem://notes/7");

    request(&mut raw, 5, "resources/unsubscribe", json!({"uri": "toolreg://fake/mem://notes"})).await;
    request(&mut raw, 6, "resources/unsubscribe", json!({"uri": "mem://notes/7"})).await;
    assert_eq!(subscribed_upstream(&mut raw, 7).await, "");

    let unknown = request(&mut raw, 8, "resources/subscribe", json!({"uri": "mem://other"})).await;
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
}

/// A 2026-07-28 client names the URIs in its `subscriptions/listen`
/// filter: the server's updates come on that stream for as long as it is
/// open, and closing it unsubscribes on the server.
#[tokio::test]
async fn a_listen_streams_resource_updates_through_the_gateway() {
    let (mut raw, _remote) = gateway().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    raw.send(json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": {
        "_meta": meta, "notifications": {"resourceSubscriptions": ["toolreg://fake/mem://notes"]}}}))
        .await;
    let update = updated(&mut raw).await;
    assert_eq!(update["params"]["uri"], "toolreg://fake/mem://notes", "{update}");
    assert_eq!(subscribed_upstream(&mut raw, 2).await, "mem://notes");
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen-1"}})).await;
    let mut upstream = String::from("?");
    for id in 3..50 {
        upstream = subscribed_upstream(&mut raw, id).await;
        if upstream.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(upstream, "", "{:?}", raw.other);
}

/// A tool a 2025-11-25 server runs only as a task (as server-everything's
/// `simulate-research-query`): a plain call is refused there, so the gateway
/// calls it with task augmentation, polls the task, and answers with its
/// result; the task's question reaches the gateway's client; a call
/// cancelled by the gateway's client cancels the remote task.
#[tokio::test]
async fn a_task_required_tool_of_a_2025_11_25_server_is_called_as_a_task() {
    let capabilities = json!({"elicitation": {}});
    let (mut raw, remote) = gateway_over(capabilities, toolreg::SafetyLevel::Cautious, &["--augmented-tasks"]).await;
    assert!(remote.left_out().is_empty(), "{:?}", remote.left_out());
    let listed = request(&mut raw, 1, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "fake__survey"), "{listed}");

    let answer = raw.call(2, "fake__survey", json!({"topic": "reefs"})).await;
    assert_eq!(answer["result"]["content"][0]["text"], "surveyed: reefs", "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // Called again: still offered, still answered.
    let again = raw.call(3, "fake__survey", json!({"topic": "kelp"})).await;
    assert_eq!(again["result"]["content"][0]["text"], "surveyed: kelp", "{again}");
    assert!(remote.left_out().is_empty());
    // A task-only tool whose listing does not say so (as a server read over
    // HTTP shows it): refused plainly, then called as a task.
    let quiet = raw.call(4, "fake__tasky", json!({"topic": "shoals"})).await;
    assert_eq!(quiet["result"]["content"][0]["text"], "surveyed: shoals", "{quiet}");
    assert!(remote.left_out().is_empty(), "{:?}", remote.left_out());

    // A task that waits for input asks the gateway's client.
    raw.send(json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call",
        "params": {"name": "fake__survey", "arguments": {"topic": "tides", "ask": true}}}))
        .await;
    let ask = raw.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Who is asking?", "{ask}");
    raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    let answer = raw.answer(json!(30)).await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, r#"surveyed: tides for {"action": "accept", "content": {"name": "Ada"}}"#, "{answer}");

    // Cancelled by the gateway's client: the remote task is cancelled too.
    raw.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "fake__survey", "arguments": {"topic": "abyss", "forever": true}}}))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}})).await;
    let started = std::time::Instant::now();
    loop {
        let seen = raw.call(50, "fake__cancelled", json!({})).await;
        let text = seen["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        if text.contains("task:survey-5") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the remote task was not cancelled: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An access policy's `servers` bound what a principal reaches of an
/// imported server: its tools, resources (listed, read, subscribed) and
/// prompts alike; refusals name the rule.
#[tokio::test]
async fn a_role_reaches_the_resources_and_prompts_only_of_its_servers() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/fake_server.py");
    for (servers, reaches) in [(json!(["fake"]), true), (json!(["other*"]), false)] {
        let transport = Transport::Command {
            command: "python3".into(),
            args: vec!["-u".into(), script.into()],
            env: BTreeMap::new(),
            cwd: None,
        };
        let remote = RemoteServer::connect("fake", ServerConfig::new(transport)).await.unwrap();
        let gateway = Gateway::new(vec![remote.clone()]);
        let mut registry = FunctionRegistry::new();
        assert!(gateway.register_into(&mut registry).is_empty());
        // Over stdio the caller is the local user: it holds `default`.
        let policy: toolreg::policy::AccessPolicy = serde_json::from_value(json!({"roles": {"default": {
            "allow": ["*"], "max_safety": "dangerous", "servers": servers}}}))
        .unwrap();
        let options = ServerOptions::default().allow_dangerous(true);
        let server = McpServer::new(McpServer::engine_builder(&registry, &options).access(policy).build(), options);
        server.set_upstream(gateway);
        let mut raw = Raw::start(server, StdioOptions::default());
        raw.initialize(json!({})).await;

        let resources = request(&mut raw, 1, "resources/list", json!({})).await;
        let templates = request(&mut raw, 2, "resources/templates/list", json!({})).await;
        let prompts = request(&mut raw, 3, "prompts/list", json!({})).await;
        let read = request(&mut raw, 4, "resources/read", json!({"uri": "toolreg://fake/mem://notes"})).await;
        let got =
            request(&mut raw, 5, "prompts/get", json!({"name": "fake__greet", "arguments": {"who": "Ada"}})).await;
        let subscribed =
            request(&mut raw, 6, "resources/subscribe", json!({"uri": "toolreg://fake/mem://notes"})).await;
        let called = raw.call(7, "fake__echo", json!({})).await;
        let counts = [
            resources["result"]["resources"].as_array().unwrap().len(),
            templates["result"]["resourceTemplates"].as_array().unwrap().len(),
            prompts["result"]["prompts"].as_array().unwrap().len(),
        ];
        if reaches {
            assert_eq!(counts, [1, 1, 1]);
            assert!(read["result"]["contents"].is_array(), "{read}");
            assert!(got["result"]["messages"].is_array(), "{got}");
            assert!(subscribed.get("error").is_none(), "{subscribed}");
            assert_eq!(called["result"]["isError"], false, "{called}");
        } else {
            assert_eq!(counts, [0, 0, 0]);
            for refused in [&read, &got, &subscribed] {
                let message = refused["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("no role of yours reaches the server `fake`"), "{refused}");
            }
            let text = called["result"]["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("role `default` does not reach the server `fake`"), "{called}");
        }
        remote.close().await;
    }
}
