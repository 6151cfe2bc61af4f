//! The MCP server, driven by rmcp's client and by raw JSON-RPC lines.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolreg::exec::{Annotations, Role};
use toolreg::{
    CallContext, Content, FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration, ToolEngine, ToolOutput,
    ToolRegistration,
};
use toolreg_mcp::server::{ElicitationApprover, InputRound, McpServer, RequestStates, ServerOptions, StdioOptions};

use crate::support::{HANG, Raw};

fn decl(name: &str, safety: SafetyLevel) -> ToolDeclaration {
    ToolDeclaration::builder(name)
        .description(format!("The {name} tool."))
        .optional_param("n", ParamType::Integer, "a number")
        .safety(safety)
        .build()
}

struct Seen {
    cancelled: AtomicBool,
    wiped: AtomicBool,
}

fn registry(seen: &Arc<Seen>) -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    r.register_sync_tool(
        "echo",
        |args: Value| Ok::<_, String>(args),
        decl("echo", SafetyLevel::Safe).with_title("Echo"),
    )
    .unwrap();
    r.register_sync_tool("fail", |_: Value| Err::<Value, _>("disk on fire"), decl("fail", SafetyLevel::Safe)).unwrap();
    r.register_sync_tool(
        "boom",
        |_: Value| -> Result<Value, String> { panic!("kaboom") },
        decl("boom", SafetyLevel::Safe),
    )
    .unwrap();
    let s = Arc::clone(seen);
    r.register(ToolRegistration::new(decl("wait", SafetyLevel::Safe), move |cx: CallContext, _: Value| {
        let s = Arc::clone(&s);
        async move {
            cx.report_progress(1.0, Some(3.0), Some("started"));
            cx.cancelled().await;
            s.cancelled.store(true, Ordering::SeqCst);
            Ok::<_, String>(json!("stopped"))
        }
    }))
    .unwrap();
    let s = Arc::clone(seen);
    r.register_sync_tool(
        "wipe",
        move |_: Value| {
            s.wiped.store(true, Ordering::SeqCst);
            Ok::<_, String>(json!({"wiped": true}))
        },
        decl("wipe", SafetyLevel::Dangerous).with_idempotent(true),
    )
    .unwrap();
    r
}

fn seen() -> Arc<Seen> {
    Arc::new(Seen { cancelled: AtomicBool::new(false), wiped: AtomicBool::new(false) })
}

fn server(seen: &Arc<Seen>, options: ServerOptions) -> McpServer {
    McpServer::from_registry(&registry(seen), options)
}

#[tokio::test]
async fn rmcp_client_lists_and_calls_through_the_engine() {
    let seen = seen();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server_io);
    let served = server(&seen, ServerOptions::default().page_size(2));
    tokio::spawn(async move { served.serve_stream(r, w, StdioOptions::default()).await });
    let client = ().serve(client_io).await.unwrap();

    // Paged listing: five tools, two per page.
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["echo", "fail", "boom", "wait", "wipe"]);
    let echo = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    let wipe = serde_json::to_value(&tools[4]).unwrap();
    assert_eq!(wipe["annotations"]["destructiveHint"], true);
    assert_eq!(wipe["annotations"]["idempotentHint"], true);
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert_eq!(first.next_cursor.as_deref(), Some("2"));

    let call = |name: &str, args: Value| {
        CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().cloned().unwrap_or_default())
    };
    let ok = client.call_tool(call("echo", json!({"n": 4}))).await.unwrap();
    assert_eq!(ok.is_error, Some(false));
    assert_eq!(ok.structured_content, Some(json!({"n": 4})));

    // Bad arguments, a failing tool and a panicking tool are results the model reads.
    let bad = client.call_tool(call("echo", json!({"n": "four"}))).await.unwrap();
    assert_eq!(bad.is_error, Some(true));
    let text = serde_json::to_value(&bad.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("`/n`") && text.contains("integer"), "{text}");
    let failed = client.call_tool(call("fail", json!({}))).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert!(serde_json::to_string(&failed.content).unwrap().contains("disk on fire"));
    let panicked = client.call_tool(call("boom", json!({}))).await.unwrap();
    assert_eq!(panicked.is_error, Some(true));

    // An unknown tool is the protocol error the specification names.
    let unknown = client.call_tool(call("nope", json!({}))).await.unwrap_err();
    assert!(unknown.to_string().contains("-32602") || unknown.to_string().contains("unknown tool"), "{unknown}");

    // The server is still serving, and the dangerous tool was refused: this client cannot be asked.
    let refused = client.call_tool(call("wipe", json!({}))).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(serde_json::to_string(&refused.content).unwrap().contains("--allow-dangerous"));
    assert!(!seen.wiped.load(Ordering::SeqCst));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn allow_dangerous_runs_dangerous_tools() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default().allow_dangerous(true)), StdioOptions::default());
    raw.initialize(json!({})).await;
    let answer = raw.call(1, "wipe", json!({})).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(seen.wiped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn allow_dangerous_is_honoured_for_any_engine_served() {
    // An engine built without an approver would refuse the dangerous tool;
    // the operator's option on the server overrides it, at start and after
    // `set_engine`.
    let seen = seen();
    let engine = ToolEngine::builder(&registry(&seen)).build();
    let served = McpServer::new(engine.clone(), ServerOptions::default().allow_dangerous(true));
    let mut raw = Raw::start(served.clone(), StdioOptions::default());
    raw.initialize(json!({})).await;
    let answer = raw.call(1, "wipe", json!({})).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(seen.wiped.swap(false, Ordering::SeqCst));
    served.set_engine(engine.clone()).await;
    let answer = raw.call(2, "wipe", json!({})).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(seen.wiped.load(Ordering::SeqCst));

    // Without the option the engine is served as it is: refused.
    let seen = self::seen();
    let mut raw = Raw::start(
        McpServer::new(ToolEngine::builder(&registry(&seen)).build(), ServerOptions::default()),
        StdioOptions::default(),
    );
    raw.initialize(json!({})).await;
    let answer = raw.call(1, "wipe", json!({})).await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!seen.wiped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn dangerous_tools_are_approved_through_elicitation() {
    for (action, content, runs) in [
        ("accept", json!({"approve": true}), true),
        ("accept", json!({"approve": false}), false),
        ("decline", Value::Null, false),
    ] {
        let seen = seen();
        let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
        raw.initialize(json!({"elicitation": {}})).await;
        raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wipe", "arguments": {"n": 7}}}))
            .await;
        // The server asks the client before it runs anything.
        let ask = raw.next().await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert!(ask["params"]["message"].as_str().unwrap().contains("\"n\": 7"), "{ask}");
        assert!(!seen.wiped.load(Ordering::SeqCst));
        let mut reply = json!({"action": action});
        if !content.is_null() {
            reply["content"] = content;
        }
        raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": reply})).await;
        let answer = raw.answer(json!(1)).await;
        assert_eq!(answer["result"]["isError"], !runs, "{action}: {answer}");
        assert_eq!(seen.wiped.load(Ordering::SeqCst), runs);
    }
}

#[tokio::test]
async fn progress_is_sent_and_cancellation_reaches_the_tool() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    raw.initialize(json!({})).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "wait", "arguments": {}, "_meta": {"progressToken": "p-1"}}}))
        .await;
    let progress = raw.next().await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "p-1");
    assert_eq!(progress["params"]["progress"], 1.0);
    assert_eq!(progress["params"]["total"], 3.0);
    assert_eq!(progress["params"]["message"], "started");

    raw.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "reason": "user"}}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + HANG;
    while !seen.cancelled.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "the tool never saw the cancellation");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Still serving.
    let answer = raw.call(6, "echo", json!({"n": 1})).await;
    assert_eq!(answer["result"]["structuredContent"], json!({"n": 1}));
}

#[tokio::test]
async fn list_changed_reaches_connected_clients() {
    let seen = seen();
    let served = server(&seen, ServerOptions::default());
    let mut raw = Raw::start(served.clone(), StdioOptions::default());
    raw.initialize(json!({})).await;
    // Make sure the initialized notification was handled before swapping.
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(raw.answer(json!(1)).await["result"]["tools"].as_array().unwrap().len(), 5);

    let mut smaller = FunctionRegistry::new();
    smaller.register_sync_tool("only", |args: Value| Ok::<_, String>(args), decl("only", SafetyLevel::Safe)).unwrap();
    served.set_engine(ToolEngine::builder(&smaller).approver(ElicitationApprover::new(false)).build()).await;
    let note = raw.next().await;
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let tools = raw.answer(json!(2)).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "only");
    assert_eq!(raw.call(3, "echo", json!({})).await["error"]["code"], -32602);
}

#[tokio::test]
async fn bad_input_is_answered_and_the_server_keeps_serving() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default().max_message_bytes(4096));

    // Before initialize, a tools call is refused, and the server still initialises after.
    raw.send(json!({"jsonrpc": "2.0", "id": 90, "method": "tools/list"})).await;
    let early = raw.answer(json!(90)).await;
    assert!(early.get("error").is_some(), "{early}");
    raw.initialize(json!({})).await;

    raw.send_line("{not json").await;
    let parse = raw.next().await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);

    raw.send_line(&format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"s\":\"{}\"}}}}}}", "x".repeat(10_000)))
        .await;
    let large = raw.next().await;
    assert_eq!(large["error"]["code"], -32600, "{large}");
    assert!(large["error"]["message"].as_str().unwrap().contains("4096"));

    raw.send(json!({"jsonrpc": "2.0", "id": 8, "method": "no/such/method"})).await;
    assert_eq!(raw.answer(json!(8)).await["error"]["code"], -32601);

    raw.send(json!({"jsonrpc": "2.0", "id": 9, "result_of_nothing": true})).await;
    let invalid = raw.answer(json!(9)).await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");

    // Deep nesting is refused by the parser, not by a stack overflow.
    raw.send_line(&format!("{}{}", "[".repeat(2000), "]".repeat(2000))).await;
    assert_eq!(raw.next().await["error"]["code"], -32700);

    // A flood of cancellations for requests that do not exist.
    for id in 0..500 {
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10_000 + id}}))
            .await;
    }
    let answer = raw.call(11, "echo", json!({"n": 2})).await;
    assert_eq!(answer["result"]["structuredContent"], json!({"n": 2}));
}

#[tokio::test]
async fn many_requests_in_flight_all_answered() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    raw.initialize(json!({})).await;
    for id in 1..=200 {
        raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"n": id}}}))
            .await;
    }
    let answers = Arc::new(Mutex::new(Vec::new()));
    for id in 1..=200 {
        let answer = raw.answer(json!(id)).await;
        answers.lock().unwrap().push(answer["result"]["structuredContent"]["n"].as_i64().unwrap());
    }
    let mut got = answers.lock().unwrap().clone();
    got.sort_unstable();
    assert_eq!(got, (1..=200).collect::<Vec<i64>>());
}

#[tokio::test]
async fn requests_past_the_in_flight_limit_wait_their_turn_and_a_cancellation_frees_a_place() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default().max_in_flight(2));
    raw.initialize(json!({})).await;
    for id in [1, 2] {
        raw.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "wait", "arguments": {},
            "_meta": {"progressToken": id}}}),
        )
        .await;
    }
    // Both calls started (each reports progress) before the third is sent.
    let mut started = 0;
    while started < 2 {
        if raw.next().await["method"] == "notifications/progress" {
            started += 1;
        }
    }
    // The third waits, unanswered, for a place...
    raw.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"n": 3}}}),
    )
    .await;
    let early = tokio::time::timeout(Duration::from_millis(300), raw.next()).await;
    assert!(early.is_err(), "answered with every place taken: {early:?}");
    // ...and a cancellation, still read, frees one: the third runs.
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
    let answer = raw.answer(json!(3)).await;
    assert_eq!(answer["result"]["structuredContent"]["n"], 3, "{answer}");
}

#[tokio::test]
async fn a_call_whose_id_cannot_bind_an_approval_is_refused() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default().allow_dangerous(true)), StdioOptions::default());
    raw.initialize(json!({})).await;
    raw.send(json!({"jsonrpc": "2.0", "id": "", "method": "tools/call", "params": {"name": "wipe", "arguments": {}}}))
        .await;
    let refused = raw.answer(json!("")).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(!seen.wiped.load(Ordering::SeqCst));
}

/// A tool returning every block type, annotated, with a structured value
/// its output schema describes.
fn rich_registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    let decl = decl("chart", SafetyLevel::Safe).with_output_schema(json!({
        "type": "object", "properties": {"points": {"type": "integer"}}, "required": ["points"]}));
    r.register(ToolRegistration::new(decl, |_: Value| {
        let for_user = Annotations::for_audience([Role::User]).priority(0.25);
        Ok::<_, String>(
            ToolOutput::from(vec![
                Content::text("The chart:").annotated(for_user.clone()),
                Content::image(vec![0x89, b'P', b'N', b'G'], "image/png").annotated(for_user),
                Content::audio(vec![1, 2], "audio/wav"),
                Content::resource_link("file:///data.csv", "data.csv"),
                Content::resource_text("mem://notes", "three points", Some("text/plain".into())),
                Content::resource_blob("mem://raw", vec![0, 255], Some("application/octet-stream".into())),
                Content::file(b"%PDF".to_vec(), "application/pdf", "chart.pdf"),
            ])
            .with_value(json!({"points": 3}))
            .with_meta("host_only", json!("never sent")),
        )
    }))
    .unwrap();
    r
}

#[tokio::test]
async fn every_block_type_is_sent_with_annotations_and_structured_content() {
    let mut raw =
        Raw::start(McpServer::from_registry(&rich_registry(), ServerOptions::default()), StdioOptions::default());
    raw.initialize(json!({})).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    let listed = raw.answer(json!(1)).await;
    assert_eq!(listed["result"]["tools"][0]["outputSchema"]["required"], json!(["points"]), "{listed}");

    let answer = raw.call(2, "chart", json!({})).await;
    let user = json!({"audience": ["user"], "priority": 0.25});
    assert_eq!(
        answer["result"],
        json!({
            "content": [
                {"type": "text", "text": "The chart:", "annotations": user},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png", "annotations": user},
                {"type": "audio", "data": "AQI=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///data.csv", "name": "data.csv"},
                {"type": "resource", "resource": {"uri": "mem://notes", "mimeType": "text/plain", "text": "three points"}},
                {"type": "resource", "resource": {"uri": "mem://raw", "mimeType": "application/octet-stream", "blob": "AP8="}},
                {"type": "resource", "resource": {"uri": "file:///chart.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="}},
            ],
            "structuredContent": {"points": 3},
            "isError": false,
        })
    );

    // rmcp's own client reads every block.
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server_io);
    let served = McpServer::from_registry(&rich_registry(), ServerOptions::default());
    tokio::spawn(async move { served.serve_stream(r, w, StdioOptions::default()).await });
    let client = ().serve(client_io).await.unwrap();
    let result = client.call_tool(CallToolRequestParams::new("chart")).await.unwrap();
    assert_eq!(result.content.len(), 7);
    assert_eq!(result.structured_content, Some(json!({"points": 3})));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn progress_comes_in_order_and_before_the_answer() {
    let mut r = FunctionRegistry::new();
    r.register(ToolRegistration::new(decl("steps", SafetyLevel::Safe), |cx: CallContext, _: Value| {
        for step in 1..=20 {
            cx.report_progress(f64::from(step), Some(20.0), None);
        }
        Ok::<_, String>("done")
    }))
    .unwrap();
    let mut raw = Raw::start(McpServer::from_registry(&r, ServerOptions::default()), StdioOptions::default());
    raw.initialize(json!({})).await;
    for id in 1..=5 {
        raw.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "steps", "arguments": {}, "_meta": {"progressToken": format!("t{id}")}}}))
            .await;
        let answer = raw.answer(json!(id)).await;
        assert_eq!(answer["result"]["content"][0]["text"], "done");
        let steps: Vec<f64> = raw
            .other
            .drain(..)
            .filter(|m| m["method"] == "notifications/progress")
            .inspect(|m| assert_eq!(m["params"]["progressToken"], format!("t{id}")))
            .map(|m| m["params"]["progress"].as_f64().unwrap())
            .collect();
        assert_eq!(steps, (1..=20).map(f64::from).collect::<Vec<_>>());
    }
}

/// A `tools/call` as a 2026-07-28 client sends it: no handshake, the
/// revision and the client's capabilities in `_meta`.
fn call_2026(id: i64, arguments: Value, capabilities: Value, retry: Option<(&str, Value)>) -> Value {
    let mut params = json!({"name": "wipe", "arguments": arguments, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities}});
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn a_2026_07_28_client_approves_with_a_multi_round_trip_request() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    let elicits = json!({"elicitation": {}});
    raw.send(call_2026(1, json!({"n": 7}), elicits.clone(), None)).await;
    let asked = raw.answer(json!(1)).await["result"].take();
    // The question comes back as the call's result; nothing has run.
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"][toolreg_mcp::server::APPROVAL_KEY];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(question["params"]["message"].as_str().unwrap().contains("\"n\": 7"), "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(!seen.wiped.load(Ordering::SeqCst));

    let yes = json!({toolreg_mcp::server::APPROVAL_KEY: {"action": "accept", "content": {"approve": true}}});
    // The sealed state does not carry the approval to other arguments...
    raw.send(call_2026(2, json!({"n": 8}), elicits.clone(), Some((&state, yes.clone())))).await;
    let moved = raw.answer(json!(2)).await;
    assert_eq!(moved["error"]["code"], -32602, "{moved}");
    // ...nor can it be changed...
    let mut forged = state.clone().into_bytes();
    let middle = forged.len() / 2;
    forged[middle] = if forged[middle] == b'x' { b'y' } else { b'x' };
    let forged = String::from_utf8(forged).unwrap();
    raw.send(call_2026(3, json!({"n": 7}), elicits.clone(), Some((&forged, yes.clone())))).await;
    assert_eq!(raw.answer(json!(3)).await["error"]["code"], -32602);
    // ...and an answer without the server's state is a new question, not an approval.
    let mut unasked = call_2026(4, json!({"n": 7}), elicits.clone(), None);
    unasked["params"]["inputResponses"] = yes.clone();
    raw.send(unasked).await;
    assert_eq!(raw.answer(json!(4)).await["result"]["resultType"], "input_required");
    assert!(!seen.wiped.load(Ordering::SeqCst));

    // Declined: refused.
    let no = json!({toolreg_mcp::server::APPROVAL_KEY: {"action": "decline"}});
    raw.send(call_2026(5, json!({"n": 7}), elicits.clone(), Some((&state, no)))).await;
    let declined = raw.answer(json!(5)).await["result"].take();
    assert_eq!((&declined["resultType"], &declined["isError"]), (&json!("complete"), &json!(true)), "{declined}");
    assert!(!seen.wiped.load(Ordering::SeqCst));

    // The state was spent by that answer; a new question, then approved: the call runs.
    raw.send(call_2026(6, json!({"n": 7}), elicits.clone(), Some((&state, yes.clone())))).await;
    assert_eq!(raw.answer(json!(6)).await["error"]["code"], -32602);
    raw.send(call_2026(7, json!({"n": 7}), elicits.clone(), None)).await;
    let asked = raw.answer(json!(7)).await["result"].take();
    let state = asked["requestState"].as_str().unwrap().to_owned();
    raw.send(call_2026(8, json!({"n": 7}), elicits.clone(), Some((&state, yes.clone())))).await;
    let done = raw.answer(json!(8)).await["result"].take();
    assert_eq!((&done["resultType"], &done["isError"]), (&json!("complete"), &json!(false)), "{done}");
    assert!(seen.wiped.load(Ordering::SeqCst));
    // The approval cannot be replayed to run the call again.
    seen.wiped.store(false, Ordering::SeqCst);
    raw.send(call_2026(9, json!({"n": 7}), elicits, Some((&state, yes)))).await;
    assert_eq!(raw.answer(json!(9)).await["error"]["code"], -32602);
    assert!(!seen.wiped.load(Ordering::SeqCst));

    // A client that cannot answer an elicitation is refused with the reason.
    let seen = self::seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    raw.send(call_2026(1, json!({}), json!({}), None)).await;
    let refused = raw.answer(json!(1)).await["result"].take();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains("cannot be asked"), "{refused}");
    assert!(!seen.wiped.load(Ordering::SeqCst));
}

/// Replicas behind a load balancer: a retry may reach another replica than
/// the question came from. Sharing the key and a store, any of them opens
/// the state, and the approval in it runs the call once between them.
#[tokio::test]
async fn replicas_sharing_a_key_and_a_store_answer_each_others_rounds_once() {
    let store = toolreg_store::SqliteStore::in_memory().await.unwrap();
    let key = toolreg::seal::SealingKey::new([3; 32]);
    let seen = seen();
    let replica = || {
        let states = RequestStates::shared(key.clone(), store.namespace("mcp-request-states").unwrap());
        Raw::start(server(&seen, ServerOptions::default().request_states(states)), StdioOptions::default())
    };
    let (mut first, mut second) = (replica(), replica());
    let elicits = json!({"elicitation": {}});
    first.send(call_2026(1, json!({"n": 7}), elicits.clone(), None)).await;
    let asked = first.answer(json!(1)).await["result"].take();
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let yes = json!({toolreg_mcp::server::APPROVAL_KEY: {"action": "accept", "content": {"approve": true}}});
    second.send(call_2026(2, json!({"n": 7}), elicits.clone(), Some((&state, yes.clone())))).await;
    let done = second.answer(json!(2)).await["result"].take();
    assert_eq!((&done["resultType"], &done["isError"]), (&json!("complete"), &json!(false)), "{done}");
    assert!(seen.wiped.swap(false, Ordering::SeqCst));
    // Replayed to either replica: refused, and nothing runs.
    for (id, raw) in [(3, &mut first), (4, &mut second)] {
        raw.send(call_2026(id, json!({"n": 7}), elicits.clone(), Some((&state, yes.clone())))).await;
        let replayed = raw.answer(json!(id)).await;
        assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
        assert!(replayed["error"]["message"].as_str().unwrap().contains("already used"), "{replayed}");
    }
    assert!(!seen.wiped.load(Ordering::SeqCst));
    // A server with its own key does not open it at all.
    let mut stranger = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    stranger.send(call_2026(5, json!({"n": 7}), elicits, Some((&state, yes)))).await;
    assert_eq!(stranger.answer(json!(5)).await["error"]["code"], -32602);
}

/// A tool that asks its client in two rounds, keeping state between them.
// rmcp marks MCP logging deprecated (a protocol draft drops it); 2026-07-28 has it.
#[allow(deprecated)]
fn asking_registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    r.register(ToolRegistration::new(decl("ask", SafetyLevel::Safe), |cx: CallContext, args: Value| async move {
        let Some(round) = cx.extensions().get::<InputRound>() else {
            return Ok::<_, String>(json!("no rounds for this client"));
        };
        if args["n"] == 0 {
            round.require(serde_json::from_value(json!({"sampling": {}})).unwrap());
            return Ok(Value::Null);
        }
        let logged = cx.extensions().get::<rmcp::model::LoggingLevel>().is_some();
        match (round.state(), round.response("color")) {
            (Some(state), Some(answer)) => {
                Ok(json!({"name": state["name"], "color": answer["content"]["color"], "logged": logged}))
            }
            _ => {
                let question = json!({"color": {"method": "elicitation/create", "params": {"mode": "form",
                    "message": "Which color?", "requestedSchema": {"type": "object",
                    "properties": {"color": {"type": "string"}}}}}});
                round.ask(serde_json::from_value(question).unwrap(), json!({"name": "Ada"}));
                Ok(json!("asked"))
            }
        }
    }))
    .unwrap();
    r
}

#[tokio::test]
async fn a_tool_asks_a_2026_07_28_client_through_its_input_round() {
    let served = McpServer::from_registry(&asking_registry(), ServerOptions::default());
    let mut raw = Raw::start(served.clone(), StdioOptions::default());
    let call = |id: i64, args: Value, extra: Value| {
        let mut params = json!({"name": "ask", "arguments": args, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    raw.send(call(1, json!({"n": 1}), json!({}))).await;
    let asked = raw.answer(json!(1)).await["result"].take();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(asked["inputRequests"]["color"]["params"]["message"], "Which color?", "{asked}");
    // The state is sealed: the tool's `{"name": "Ada"}` is not readable in it.
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(!state.contains("Ada"), "{state}");
    let mut retry = call(
        2,
        json!({"n": 1}),
        json!({"requestState": state, "inputResponses": {"color": {"action": "accept", "content": {"color": "red"}}}}),
    );
    retry["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    raw.send(retry).await;
    let done = raw.answer(json!(2)).await["result"].take();
    assert_eq!(done["structuredContent"], json!({"name": "Ada", "color": "red", "logged": true}), "{done}");

    // A call that needs a capability the client did not declare: -32021, naming it.
    raw.send(call(3, json!({"n": 0}), json!({}))).await;
    let refused = raw.answer(json!(3)).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(refused["error"]["data"]["requiredCapabilities"]["sampling"].is_object(), "{refused}");

    // A handshake-era client has no rounds (it is asked over the connection).
    let mut old = Raw::start(served, StdioOptions::default());
    old.initialize(json!({"elicitation": {}})).await;
    let answer = old.call(1, "ask", json!({"n": 1})).await;
    assert_eq!(answer["result"]["structuredContent"], Value::Null, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "no rounds for this client", "{answer}");
}

/// A server whose only tool is `ask_user`.
fn ask_user_server() -> McpServer {
    let mut r = FunctionRegistry::new();
    r.register(toolreg_mcp::server::ask_user()).unwrap();
    let options = ServerOptions::default();
    McpServer::new(McpServer::engine_builder(&r, &options).build(), options)
}

/// `ask_user` puts the question to the client's user as a form: over the
/// connection for a handshake-era client, as an `input_required` round for
/// a 2026-07-28 one; a declined form is a tool error; a client that cannot
/// be asked is told so.
#[tokio::test]
async fn ask_user_asks_the_clients_user() {
    let mut raw = Raw::start(ask_user_server(), StdioOptions::default());
    raw.initialize(json!({"elicitation": {}})).await;
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_user",
        "arguments": {"question": "Which plan?", "choices": ["free", "pro"]}}}))
        .await;
    let ask = raw.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "Which plan?");
    assert_eq!(ask["params"]["requestedSchema"]["properties"]["answer"]["enum"], json!(["free", "pro"]));
    raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "pro"}}}))
        .await;
    let answer = raw.answer(json!(1)).await;
    assert_eq!(answer["result"]["structuredContent"], json!({"answer": "pro"}), "{answer}");
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user",
        "arguments": {"question": "Name?"}}}))
        .await;
    let ask = raw.next().await;
    raw.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}})).await;
    let declined = raw.answer(json!(2)).await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert!(declined["result"]["content"][0]["text"].as_str().unwrap().contains("declined"), "{declined}");

    // A 2026-07-28 client: the question as the call's result, the answer in the next round.
    let mut raw = Raw::start(ask_user_server(), StdioOptions::default());
    let call = |id: i64, capabilities: Value, retry: Option<(&Value, Value)>| {
        let mut params = json!({"name": "ask_user", "arguments": {"question": "Name?"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities}});
        if let Some((state, responses)) = retry {
            params["requestState"] = state.clone();
            params["inputResponses"] = responses;
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    raw.send(call(3, json!({"elicitation": {}}), None)).await;
    let asked = raw.answer(json!(3)).await["result"].take();
    let key = toolreg_mcp::server::ASK_KEY;
    assert_eq!(asked["inputRequests"][key]["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["inputRequests"][key]["params"]["message"], "Name?");
    let answer = json!({key: {"action": "accept", "content": {"answer": "Ada"}}});
    raw.send(call(4, json!({"elicitation": {}}), Some((&asked["requestState"], answer)))).await;
    let done = raw.answer(json!(4)).await;
    assert_eq!(done["result"]["structuredContent"], json!({"answer": "Ada"}), "{done}");
    raw.send(call(5, json!({}), None)).await;
    let missing = raw.answer(json!(5)).await;
    assert_eq!(missing["error"]["code"], -32021, "{missing}");
}

// The stdio transport's flow control and shutdown.

/// A registry whose `nap` tool takes a moment, so that calls pile up.
fn napping_registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    r.register(ToolRegistration::new(decl("nap", SafetyLevel::Safe), |_: CallContext, args: Value| async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok::<_, String>(args)
    }))
    .unwrap();
    r
}

/// A client that pipelines far more calls than the server works on at once
/// is held back by the pipe, not refused: every call is answered.
#[tokio::test]
async fn a_thousand_pipelined_calls_are_all_answered() {
    let server = McpServer::from_registry(&napping_registry(), ServerOptions::default());
    let mut raw = Raw::start(server, StdioOptions::default());
    raw.initialize(json!({})).await;
    let mut lines = String::new();
    for id in 1..=1000 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "nap", "arguments": {"n": id}}});
        lines.push_str(&call.to_string());
        lines.push('\n');
    }
    // Everything at once, as a client that pipelines writes it.
    raw.send_line(lines.trim_end()).await;
    let mut got = Vec::new();
    for id in 1..=1000 {
        let answer = raw.answer(json!(id)).await;
        assert!(answer.get("error").is_none(), "call {id}: {answer}");
        got.push(answer["result"]["structuredContent"]["n"].as_i64().unwrap());
    }
    assert_eq!(got, (1..=1000).collect::<Vec<i64>>());
}

/// Closing stdin ends the server promptly even while a 2026-07-28 client's
/// `subscriptions/listen` stream is open (the stream ends with the input).
#[tokio::test]
async fn closing_the_input_ends_the_server_with_a_listen_stream_open() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let seen = seen();
    let server = server(&seen, ServerOptions::default());
    let (client, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving =
        tokio::spawn(async move { server.serve_stream(server_read, server_write, StdioOptions::default()).await });
    let (read, mut write) = tokio::io::split(client);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let request = |id: i64, method: &str, params: Value| {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}});
        format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    };
    write.write_all(request(1, "tools/list", json!({})).as_bytes()).await.unwrap();
    let listed: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(listed["id"], 1, "{listed}");
    let listen = request(2, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    write.write_all(listen.as_bytes()).await.unwrap();
    let ack: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");

    let closed = std::time::Instant::now();
    write.shutdown().await.unwrap();
    let ended = tokio::time::timeout(HANG, serving).await.expect("the server ended").unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    assert!(closed.elapsed() < Duration::from_secs(2), "the server took {:?} to end", closed.elapsed());
}

/// Capabilities are declared for what is served: no `prompts` or
/// `resources` without an imported server that has some.
#[tokio::test]
async fn only_what_is_served_is_declared() {
    let seen = seen();
    let mut raw = Raw::start(server(&seen, ServerOptions::default()), StdioOptions::default());
    let answer = raw.initialize(json!({})).await;
    let capabilities = &answer["result"]["capabilities"];
    assert!(capabilities["tools"].is_object(), "{capabilities}");
    // Prompts are answered (an empty list) and so declared; resources only
    // when an import offers them.
    assert!(capabilities["prompts"].is_object(), "{capabilities}");
    assert!(capabilities.get("resources").is_none(), "{capabilities}");
}
