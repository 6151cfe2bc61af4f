//! Code mode from the command line: `toolreg serve --code-mode` lists
//! `run_code` (with search) and runs programs in its own sandboxed worker
//! (`toolreg code-worker`); `toolreg run --code-mode` lets the model send one.

use crate::support as common;

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const PROGRAM: &str = "const files = await tools.list_files({});\nconst texts = await Promise.all(files.files.map((path) \
                       => tools.read_file({path})));\nconsole.log('read', texts.length);\nreturn \
                       texts.map((t) => t.value.size);";

#[test]
fn serve_code_mode_lists_run_code_and_runs_a_program_over_the_built_ins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta beta").unwrap();
    let (mut child, mut stdin, lines) = common::serve_stdio(dir.path(), &["serve", "--no-shell", "--code-mode"], &[]);
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    answer(&lines, 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let list = answer(&lines, 2);
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["run_code", "search_tools", "call_tool"]);
    let description = list["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(description.contains("read_file(args: {"), "{description}");

    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "run_code", "arguments": {"code": PROGRAM}}}));
    let result = answer(&lines, 3);
    assert_ne!(result["result"]["isError"], true, "{result}");
    let value = &result["result"]["structuredContent"];
    assert_eq!(value["output"], "read 2\n", "{result}");
    let mut sizes: Vec<i64> = value["result"].as_array().unwrap().iter().map(|n| n.as_i64().unwrap()).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [5, 9]);

    // A dangerous built-in from a program: this client cannot be asked, so
    // the program sees the refusal and nothing is written.
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "run_code", "arguments": {
        "code": "try { await tools.write_file({path: 'x.txt', content: 'x'}); return 'wrote'; } catch (e) { return e.kind; }"}}}));
    let result = answer(&lines, 4);
    assert_eq!(result["result"]["structuredContent"]["result"], "denied", "{result}");
    assert!(!dir.path().join("x.txt").exists());
    drop(stdin);
    let _ = child.wait();
}

/// `toolreg run --code-mode` against a local OpenAI-compatible server: the
/// model sends one program, reads its result, answers.
#[tokio::test(flavor = "multi_thread")]
async fn run_code_mode_offers_run_code_to_the_model() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let offered = body["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "run_code");
            let result = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned();
            let chunk = match (offered, result) {
                (false, _) => json!({"choices": [{"index": 0, "delta": {"content": "no run_code"}, "finish_reason": "stop"}]}),
                (true, Some(result)) => json!({"choices": [{"index": 0, "delta": {"content": result["content"]}, "finish_reason": "stop"}]}),
                (true, None) => json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "run_code", "arguments": json!({"code": PROGRAM}).to_string()}}]}, "finish_reason": "tool_calls"}]}),
            };
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        })
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\n").unwrap();
    let mut cmd = assert_cmd::Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(dir.path())
        .args(["run", "Sizes?", "--model", "local", "--no-shell", "--code-mode", "--base-url", &server.uri()])
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let answer: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(answer, json!({"result": [11], "output": "read 1\n"}));
    assert!(stderr.contains("run_code"), "{stderr}");
}

/// The answer to request `id`.
fn answer(lines: &mpsc::Receiver<Value>, id: i64) -> Value {
    loop {
        let message = lines.recv_timeout(Duration::from_secs(20)).expect("no answer in time");
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
    }
}

/// `run_code` called as a 2026-07-28 client calls a tool: no handshake, the
/// revision and the client's capabilities in `_meta`; a later round echoes
/// the sealed state with the answers.
fn run_code_2026(id: i64, program: &str, retry: Option<(&str, Value)>) -> Value {
    let mut params = json!({"name": "run_code", "arguments": {"code": program}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}});
    if let Some((state, responses)) = retry {
        params["requestState"] = json!(state);
        params["inputResponses"] = responses;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Over Multi Round-Trip, an approval covers exactly the call its form
/// showed: a program making two dangerous calls, one after the other or
/// together (`Promise.all`), has each asked about in a round of its own; the
/// approved call runs once, though the program runs again in every round; a
/// call the user was never shown never runs; a state used once is refused.
#[test]
fn serve_code_mode_asks_a_2026_07_28_client_about_each_call_in_a_round_of_its_own() {
    let shown = "tools.shell({command: 'echo shown >> shown.txt'})";
    let hidden = "tools.shell({command: 'touch never-approved'})";
    let sequential = format!("await {shown};\nawait {hidden};\nreturn 'both';");
    let together = format!("await Promise.all([{shown}, {hidden}]);\nreturn 'both';");
    for program in [sequential, together] {
        let dir = tempfile::tempdir().unwrap();
        let (mut child, mut stdin, lines) = common::serve_stdio(dir.path(), &["serve", "--code-mode"], &[]);
        let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
        let key = "toolreg_approve";
        let yes = json!({key: {"action": "accept", "content": {"approve": true}}});
        let no = json!({key: {"action": "decline"}});
        let question = |asked: &Value| -> (String, String) {
            assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
            let message = asked["result"]["inputRequests"][key]["params"]["message"].as_str().unwrap().to_owned();
            (message, asked["result"]["requestState"].as_str().unwrap().to_owned())
        };

        // The user approves the `echo` and declines the `touch`, whichever is asked first.
        let decide = |form: &str| if form.contains("echo shown") { yes.clone() } else { no.clone() };

        // Round 1: one form, for one call; nothing runs.
        send(run_code_2026(1, &program, None));
        let (first, state) = question(&answer(&lines, 1));
        assert_ne!(first.contains("echo shown"), first.contains("never-approved"), "one call per form: {first}");
        assert!(!dir.path().join("shown.txt").exists());

        // Answered: the other call is asked about in a round of its own.
        send(run_code_2026(2, &program, Some((&state, decide(&first)))));
        let (second, next) = question(&answer(&lines, 2));
        assert_ne!(second.contains("echo shown"), first.contains("echo shown"), "the other call: {second}");

        // The first round's state again: refused, and nothing runs again.
        send(run_code_2026(3, &program, Some((&state, yes.clone()))));
        let replayed = answer(&lines, 3);
        assert!(replayed["error"]["message"].as_str().unwrap().contains("already used"), "{replayed}");

        // Round 3: the program ends. The approved call ran once though the
        // program ran three times; the declined one never ran.
        send(run_code_2026(4, &program, Some((&next, decide(&second)))));
        let done = answer(&lines, 4);
        assert_eq!(done["result"]["resultType"], "complete", "{done}");
        assert_eq!(std::fs::read_to_string(dir.path().join("shown.txt")).unwrap(), "shown\n", "{done}");
        assert!(!dir.path().join("never-approved").exists(), "a call nobody approved ran: {done}");
        drop(stdin);
        let _ = child.wait();
    }
}
