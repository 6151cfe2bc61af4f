//! The tools the official MCP conformance suite calls, written as toolreg
//! tools and served by toolreg's MCP server over streamable HTTP:
//!
//! ```sh
//! cargo run -p toolreg-mcp --example conformance -- 127.0.0.1:3001
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp
//! ```
//!
//! It also shows how a tool reaches the MCP client that called it: the
//! connection is in the call's context (`cx.extensions()`), to send log
//! messages, ask the user (elicitation) or ask the client's model (sampling).
//! The content scenarios show a tool returning blocks: an image, audio, an
//! embedded resource, or several of them in a `ToolOutput`. The
//! `test_input_required_result_*` tools ask their questions to clients on the
//! 2026-07-28 revision with Multi Round-Trip Requests ([`InputRound`]). The
//! tasks scenarios' tools (`slow_compute`, `failing_job`, ...) declare task
//! support and run as MCP tasks kept in a context store.

// The suite tests MCP logging and sampling, which rmcp marks deprecated
// (a protocol draft drops them); every revision it tests has them.
#![allow(deprecated)]

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, InputRequests, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use toolreg::{CallContext, Content, FunctionRegistry, TaskSupport, ToolOutput, tool};
use toolreg_mcp::server::{HttpOptions, InputRound, McpServer, ServerOptions, TaskOptions};
use toolreg_store::SqliteStore;

fn peer(cx: &CallContext) -> Result<Peer<RoleServer>, String> {
    cx.extensions().get::<Peer<RoleServer>>().cloned().ok_or_else(|| "not called over MCP".to_owned())
}

/// Returns a simple text.
#[tool(safety = "safe")]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Always fails, to test error results.
#[tool(safety = "safe")]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".to_owned())
}

/// Reports progress three times.
#[tool(safety = "safe")]
async fn test_tool_with_progress(#[context] cx: CallContext) -> String {
    for step in [0.0, 50.0, 100.0] {
        cx.report_progress(step, Some(100.0), Some(&format!("step {step}")));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    "Progress complete".to_owned()
}

/// A 1x1 red PNG.
const RED_PIXEL: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn red_pixel() -> Result<Content, String> {
    Content::from_json(&json!({"type": "image", "data": RED_PIXEL, "mimeType": "image/png"})).map_err(|e| e.to_string())
}

/// Returns an image.
#[tool(safety = "safe")]
fn test_image_content() -> Result<Content, String> {
    red_pixel()
}

/// Returns audio: a WAV file of one silent sample (8 kHz, mono, 8-bit).
#[tool(safety = "safe")]
fn test_audio_content() -> Result<Content, String> {
    let mut wav = Vec::new();
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&37u32.to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    for field in [16u32.to_le_bytes().as_slice(), &1u16.to_le_bytes(), &1u16.to_le_bytes()] {
        wav.extend_from_slice(field);
    }
    for field in [8000u32.to_le_bytes().as_slice(), &8000u32.to_le_bytes(), &1u16.to_le_bytes(), &8u16.to_le_bytes()] {
        wav.extend_from_slice(field);
    }
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&1u32.to_le_bytes());
    wav.push(128);
    Ok(Content::audio(wav, "audio/wav"))
}

/// Returns a resource embedded with its text.
#[tool(safety = "safe")]
fn test_embedded_resource() -> Result<Content, String> {
    Ok(Content::resource_text(
        "test://embedded-resource",
        "This is an embedded resource content.",
        Some("text/plain".to_owned()),
    ))
}

/// Returns text, an image and an embedded resource.
#[tool(safety = "safe")]
fn test_multiple_content_types() -> Result<ToolOutput, String> {
    Ok(ToolOutput::from(vec![
        Content::text("Multiple content types test:"),
        red_pixel()?,
        Content::resource_text(
            "test://mixed-content-resource",
            r#"{"test":"data","value":123}"#,
            Some("application/json".to_owned()),
        ),
    ]))
}

/// Sends three log messages to the client.
#[tool(safety = "safe")]
async fn test_tool_with_logging(#[context] cx: CallContext) -> Result<String, String> {
    let peer = peer(&cx)?;
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
        let param: LoggingMessageNotificationParam =
            serde_json::from_value(json!({"level": "info", "logger": "conformance", "data": message}))
                .map_err(|e| e.to_string())?;
        peer.notify_logging_message(param).await.map_err(|e| e.to_string())?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok("Logging complete".to_owned())
}

async fn elicit(cx: &CallContext, params: Value) -> Result<String, String> {
    let params: ElicitRequestParams = serde_json::from_value(params).map_err(|e| e.to_string())?;
    let answer = peer(cx)?.create_elicitation(params).await.map_err(|e| e.to_string())?;
    Ok(serde_json::to_string(&answer).unwrap_or_default())
}

/// Asks the user for some information.
#[tool(safety = "safe")]
async fn test_elicitation(#[context] cx: CallContext, message: String) -> Result<String, String> {
    elicit(
        &cx,
        json!({"mode": "form", "message": message, "requestedSchema": {"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        }, "required": ["username", "email"]}}),
    )
    .await
}

/// Asks the user with default values for every primitive type.
#[tool(safety = "safe")]
async fn test_elicitation_sep1034_defaults(#[context] cx: CallContext) -> Result<String, String> {
    elicit(
        &cx,
        json!({"mode": "form", "message": "Please review and update the form fields with defaults", "requestedSchema": {
            "type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }, "required": []}}),
    )
    .await
}

/// Asks the user with every kind of enum field.
#[tool(safety = "safe")]
async fn test_elicitation_sep1330_enums(#[context] cx: CallContext) -> Result<String, String> {
    elicit(
        &cx,
        json!({"mode": "form", "message": "Please select options", "requestedSchema": {
            "type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Pick one", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Pick one", "oneOf": [
                    {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "description": "Pick one", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "description": "Pick some", "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "description": "Pick some", "minItems": 1, "maxItems": 3,
                    "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"}, {"const": "value3", "title": "Third Choice"}]}}
            }, "required": []}}),
    )
    .await
}

/// Asks the client's model to answer a prompt.
#[tool(safety = "safe")]
async fn test_sampling(#[context] cx: CallContext, prompt: String) -> Result<String, String> {
    let params: CreateMessageRequestParams = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    }))
    .map_err(|e| e.to_string())?;
    let answer = peer(&cx)?.create_message(params).await.map_err(|e| e.to_string())?;
    Ok(format!("LLM response: {}", serde_json::to_string(&answer.message.content).unwrap_or_default()))
}

fn round(cx: &CallContext) -> Result<&InputRound, String> {
    cx.extensions().get::<InputRound>().ok_or_else(|| "this tool needs a client on the 2026-07-28 revision".to_owned())
}

/// The questions of one round, from their JSON (`{"key": {"method", "params"}}`).
fn questions(requests: Value) -> InputRequests {
    serde_json::from_value(requests).unwrap_or_default()
}

fn ask_name(key: &str, message: &str) -> Value {
    json!({key: {"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}})
}

fn ask_capital() -> Value {
    json!({"capital_question": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100}}})
}

fn ask_roots() -> Value {
    json!({"client_roots": {"method": "roots/list", "params": {}}})
}

/// A string field of an accepted elicitation answer.
fn accepted(answer: Option<&Value>, field: &str) -> Option<String> {
    let answer = answer?;
    (answer.get("action")? == "accept").then(|| answer.get("content")?.get(field)?.as_str().map(str::to_owned))?
}

/// The text of a sampling answer.
fn sampled(answer: Option<&Value>) -> Option<String> {
    answer?.get("content")?.get("text")?.as_str().map(str::to_owned)
}

/// The root URIs of a roots answer.
fn roots(answer: Option<&Value>) -> Option<Vec<String>> {
    let roots = answer?.get("roots")?.as_array()?;
    roots.iter().map(|root| root.get("uri")?.as_str().map(str::to_owned)).collect()
}

/// Asks the user's name with a Multi Round-Trip Request, then greets them.
#[tool(safety = "safe")]
fn test_input_required_result_elicitation(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    match accepted(round.response("user_name"), "name") {
        Some(name) => Ok(format!("Hello, {name}!")),
        // Missing, wrong or malformed answers are asked again.
        None => {
            round.ask(questions(ask_name("user_name", "What is your name?")), Value::Null);
            Ok(String::new())
        }
    }
}

/// Asks the client's model with a Multi Round-Trip Request.
#[tool(safety = "safe")]
fn test_input_required_result_sampling(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    match sampled(round.response("capital_question")) {
        Some(text) => Ok(format!("The model said: {text}")),
        None => {
            round.ask(questions(ask_capital()), Value::Null);
            Ok(String::new())
        }
    }
}

/// Asks for the client's roots with a Multi Round-Trip Request.
#[tool(safety = "safe")]
fn test_input_required_result_list_roots(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    match roots(round.response("client_roots")) {
        Some(roots) => Ok(format!("The client's roots: {}", roots.join(", "))),
        None => {
            round.ask(questions(ask_roots()), Value::Null);
            Ok(String::new())
        }
    }
}

/// Keeps state between rounds (sealed by the server) and checks it.
#[tool(safety = "safe")]
fn test_input_required_result_request_state(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    let confirmed = round.response("confirm").and_then(|a| a.get("content")?.get("ok")?.as_bool()).is_some();
    if round.state() == Some(&json!({"asked": "confirm"})) && confirmed {
        return Ok("state-ok: the request state came back as the server sealed it".to_owned());
    }
    round.ask(
        questions(json!({"confirm": {"method": "elicitation/create", "params": {"mode": "form",
            "message": "Please confirm", "requestedSchema": {"type": "object",
            "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}})),
        json!({"asked": "confirm"}),
    );
    Ok(String::new())
}

/// Asks three questions of three kinds at once.
#[tool(safety = "safe")]
fn test_input_required_result_multiple_inputs(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    let name = accepted(round.response("user_name"), "name");
    let greeting = sampled(round.response("greeting"));
    let roots = roots(round.response("client_roots"));
    if let (Some(name), Some(greeting), Some(roots)) = (name, greeting, roots) {
        return Ok(format!("{greeting} {name} (roots: {})", roots.join(", ")));
    }
    let mut requests = ask_name("user_name", "What is your name?");
    requests["greeting"] = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}], "maxTokens": 50}});
    requests["client_roots"] = ask_roots()["client_roots"].take();
    round.ask(questions(requests), json!({"asked": "all"}));
    Ok(String::new())
}

/// Asks in two rounds, the state telling which round it is.
#[tool(safety = "safe")]
fn test_input_required_result_multi_round(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    let step = round.state().and_then(|state| state.get("step")).and_then(Value::as_u64);
    if step == Some(2)
        && let Some(color) = accepted(round.response("step2"), "color")
    {
        let name = round.state().and_then(|s| s.get("name")).and_then(Value::as_str).unwrap_or_default();
        return Ok(format!("{name} likes {color}"));
    }
    if step == Some(1)
        && let Some(name) = accepted(round.response("step1"), "name")
    {
        round.ask(
            questions(json!({"step2": {"method": "elicitation/create", "params": {"mode": "form",
                "message": "Step 2: What is your favorite color?", "requestedSchema": {"type": "object",
                "properties": {"color": {"type": "string"}}, "required": ["color"]}}}})),
            json!({"step": 2, "name": name}),
        );
        return Ok(String::new());
    }
    round.ask(questions(ask_name("step1", "Step 1: What is your name?")), json!({"step": 1}));
    Ok(String::new())
}

/// Keeps sealed state: a changed state is refused by the server.
#[tool(safety = "safe")]
fn test_input_required_result_tampered_state(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    if round.state().is_some()
        && let Some(name) = accepted(round.response("user_name"), "name")
    {
        return Ok(format!("Hello, {name}!"));
    }
    round.ask(questions(ask_name("user_name", "What is your name?")), json!({"asked": "user_name"}));
    Ok(String::new())
}

/// Asks only what the client declared it can answer.
#[tool(safety = "safe")]
fn test_input_required_result_capabilities(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    if let Some(text) = sampled(round.response("capital_question")) {
        return Ok(format!("The model said: {text}"));
    }
    if let Some(name) = accepted(round.response("user_name"), "name") {
        return Ok(format!("Hello, {name}!"));
    }
    let capabilities = round.client_capabilities();
    if capabilities.is_some_and(|c| c.sampling.is_some()) {
        round.ask(questions(ask_capital()), Value::Null);
    } else if capabilities.is_some_and(|c| c.elicitation.is_some()) {
        round.ask(questions(ask_name("user_name", "What is your name?")), Value::Null);
    } else {
        return Ok("The client can answer no questions.".to_owned());
    }
    Ok(String::new())
}

/// Needs sampling: a client that did not declare it gets the protocol's
/// missing-capability error, not a question it cannot answer.
#[tool(safety = "safe")]
fn test_missing_capability(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    if let Some(text) = sampled(round.response("capital_question")) {
        return Ok(format!("The model said: {text}"));
    }
    if round.client_capabilities().is_none_or(|c| c.sampling.is_none()) {
        round.require(serde_json::from_value(json!({"sampling": {}})).map_err(|e| e.to_string())?);
    } else {
        round.ask(questions(ask_capital()), Value::Null);
    }
    Ok(String::new())
}

/// Asks the user; a 2026-07-28 client through an `input_required` result
/// (nothing but the answer on the response stream), an earlier one through
/// the connection.
#[tool(safety = "safe")]
async fn test_streaming_elicitation(#[context] cx: CallContext) -> Result<String, String> {
    let Some(round) = cx.extensions().get::<InputRound>() else {
        return elicit(&cx, ask_name("user_name", "What is your name?")["user_name"]["params"].take()).await;
    };
    match accepted(round.response("user_name"), "name") {
        Some(name) => Ok(format!("Hello, {name}!")),
        None => {
            round.ask(questions(ask_name("user_name", "What is your name?")), Value::Null);
            Ok(String::new())
        }
    }
}

/// Logs only at the client's request: a 2026-07-28 client asks in each
/// request's `_meta`, an earlier one with `logging/setLevel`.
#[tool(safety = "safe")]
async fn test_logging_tool(#[context] cx: CallContext) -> Result<String, String> {
    let asked = cx.extensions().get::<rmcp::model::LoggingLevel>().is_some();
    if asked || cx.extensions().get::<InputRound>().is_none() {
        let param: LoggingMessageNotificationParam =
            serde_json::from_value(json!({"level": "info", "logger": "conformance", "data": "logged"}))
                .map_err(|e| e.to_string())?;
        peer(&cx)?.notify_logging_message(param).await.map_err(|e| e.to_string())?;
    }
    Ok("Logging complete".to_owned())
}

/// Greets by name (answered directly, never a task).
#[tool(safety = "safe")]
fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Computes for `seconds` seconds, reporting progress each second, then
/// answers. May run as an MCP task; stops when cancelled.
#[tool(safety = "safe")]
async fn slow_compute(#[context] cx: CallContext, seconds: f64, label: Option<String>) -> Result<String, String> {
    let total = seconds.clamp(0.0, 3600.0);
    let mut done = 0.0;
    while done < total {
        let step = (total - done).min(1.0);
        tokio::select! {
            () = cx.cancelled() => return Err("cancelled".to_owned()),
            () = tokio::time::sleep(Duration::from_secs_f64(step)) => {}
        }
        done += step;
        cx.report_progress(done, Some(total), Some("computing"));
    }
    Ok(format!("Computed {} in {total} s", label.unwrap_or_default()))
}

/// Fails after a second, as a tool error. Runs only as an MCP task.
#[tool(safety = "safe")]
async fn failing_job() -> Result<String, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err("the job failed".to_owned())
}

/// Panics: a task that fails with a protocol error, not a tool error.
#[tool(safety = "safe")]
#[allow(clippy::panic)]
fn protocol_error_job() -> String {
    panic!("the job broke down")
}

fn ask_confirm(key: &str, message: &str) -> Value {
    json!({key: {"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}}}})
}

fn accepted_answer(answer: Option<&Value>) -> bool {
    answer.and_then(|a| a.get("action")).is_some_and(|action| action == "accept")
}

/// Asks the user to confirm, then "deletes" the file. As an MCP task, the
/// question parks the task in `input_required` until `tasks/update`.
#[tool(safety = "safe")]
fn confirm_delete(#[context] cx: CallContext, filename: String) -> Result<String, String> {
    let round = round(&cx)?;
    if accepted_answer(round.response("confirm")) {
        return Ok(format!("Deleted {filename}"));
    }
    round.ask(questions(ask_confirm("confirm", &format!("Delete {filename}?"))), Value::Null);
    Ok(String::new())
}

/// Asks two questions at once.
#[tool(safety = "safe")]
fn multi_input(#[context] cx: CallContext) -> Result<String, String> {
    let round = round(&cx)?;
    if accepted_answer(round.response("first")) && accepted_answer(round.response("second")) {
        return Ok("Both answered".to_owned());
    }
    let mut asked = ask_name("first", "First name?");
    if let (Some(all), Value::Object(second)) = (asked.as_object_mut(), ask_name("second", "Second name?")) {
        all.extend(second);
    }
    round.ask(questions(asked), Value::Null);
    Ok(String::new())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bind: SocketAddr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3001".to_owned()).parse()?;
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(
        registry,
        [
            test_simple_text_tool,
            test_error_handling_tool,
            test_tool_with_progress_tool,
            test_tool_with_logging_tool,
            test_elicitation_tool,
            test_elicitation_sep1034_defaults_tool,
            test_elicitation_sep1330_enums_tool,
            test_sampling_tool,
            test_image_content_tool,
            test_audio_content_tool,
            test_embedded_resource_tool,
            test_multiple_content_types_tool,
            test_input_required_result_elicitation_tool,
            test_input_required_result_sampling_tool,
            test_input_required_result_list_roots_tool,
            test_input_required_result_request_state_tool,
            test_input_required_result_multiple_inputs_tool,
            test_input_required_result_multi_round_tool,
            test_input_required_result_tampered_state_tool,
            test_input_required_result_capabilities_tool,
            test_missing_capability_tool,
            test_streaming_elicitation_tool,
            test_logging_tool_tool,
            greet_tool,
        ]
    )?;
    // The tasks scenarios' tools: `slow_compute` and its kin may run as MCP
    // tasks, `failing_job` only as one.
    for (registration, support) in [
        (slow_compute_tool::registration(), TaskSupport::Optional),
        (failing_job_tool::registration(), TaskSupport::Required),
        (protocol_error_job_tool::registration(), TaskSupport::Optional),
        (confirm_delete_tool::registration(), TaskSupport::Optional),
        (multi_input_tool::registration(), TaskSupport::Optional),
    ] {
        registry.register(registration.map_declaration(|decl| decl.with_task_support(support)))?;
    }
    // Task state in the context store (here in memory; a shared file or
    // PostgreSQL lets replicas answer for each other's tasks).
    let store = SqliteStore::in_memory().await?;
    let options =
        ServerOptions::default().name("toolreg-conformance").tasks(TaskOptions::new(store.namespace("mcp-tasks")?));
    let server = McpServer::from_registry(&registry, options);
    eprintln!("conformance server at http://{bind}/mcp");
    server.serve_http(HttpOptions::default().bind(bind)).await?;
    Ok(())
}
