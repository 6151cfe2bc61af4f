//! `toolreg run --suspend` stops at a dangerous call and keeps the run in
//! the store; `toolreg resume ID` continues it in another process, once —
//! a program in code mode included, each of its calls run exactly once.

use serde_json::{Value, json};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// A model that makes `call` (as `c1`) first and then answers with the tool's result.
async fn model(call: Value) -> MockServer {
    models(vec![call]).await
}

/// A model that makes `calls` (as `c1`, `c2`, …) in one turn, then answers
/// with the last tool result.
async fn models(calls: Vec<Value>) -> MockServer {
    let calls: Vec<Value> = calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| json!({"index": i, "id": format!("c{}", i + 1), "type": "function", "function": call}))
        .collect();
    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(move |request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let result = body["messages"].as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").cloned();
            let chunk = match result {
                Some(result) => json!({"choices": [{"index": 0, "delta": {"content": result["content"]}, "finish_reason": "stop"}]}),
                None => json!({"choices": [{"index": 0, "delta": {"tool_calls": calls.clone()}, "finish_reason": "tool_calls"}]}),
            };
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        })
        .mount(&server)
        .await;
    server
}

/// `toolreg ARGS --model local --no-shell --base-url URL` in `dir`: (exit code, stdout, stderr).
async fn toolreg(dir: &std::path::Path, url: &str, args: &[&str]) -> (i32, String, String) {
    let mut cmd = assert_cmd::Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(dir)
        .args(args)
        .args(["--model", "local", "--no-shell", "--base-url", url])
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLREG_KEY")
        .env("NO_COLOR", "1");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_suspended_run_resumes_from_the_store_once() {
    let call = json!({"name": "write_file", "arguments": json!({"path": "out.txt", "content": "hello"}).to_string()});
    let server = model(call).await;
    let dir = tempfile::tempdir().unwrap();
    let (code, id, stderr) = toolreg(dir.path(), &server.uri(), &["run", "Write it", "--suspend"]).await;
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("call c1: write_file") && stderr.contains("toolreg resume"), "{stderr}");
    assert!(!dir.path().join("out.txt").exists());

    let (code, answer, stderr) = toolreg(dir.path(), &server.uri(), &["resume", &id, "--approve"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("out.txt")).unwrap(), "hello");
    assert!(!answer.is_empty());

    // Once: a second resume is refused and writes nothing.
    std::fs::remove_file(dir.path().join("out.txt")).unwrap();
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", &id, "--approve"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("already resumed"), "{stderr}");
    assert!(!dir.path().join("out.txt").exists());

    // An unknown id: one clear line.
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", "s-nothing", "--deny", "no"]).await;
    assert_ne!(code, 0);
    assert!(stderr.contains("no suspended run `s-nothing`"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_stopped_twice_resumes_in_two_processes_running_each_call_once() {
    let program = "console.log('writing a.txt first');\nawait tools.write_file({path: 'a.txt', content: 'A'});\nlet \
                   second = 'written';\nconsole.log('now b.txt');\ntry { await tools.write_file({path: 'b.txt', \
                   content: 'B'}); } catch (e) { second = e.kind; }\nreturn second;";
    let call = json!({"name": "run_code", "arguments": json!({"code": program}).to_string()});
    let server = model(call).await;
    let dir = tempfile::tempdir().unwrap();
    let (code, first, stderr) =
        toolreg(dir.path(), &server.uri(), &["run", "Write both", "--code-mode", "--suspend"]).await;
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("a.txt"), "{stderr}");
    // The operator sees what the program printed before the call it stopped at.
    assert!(stderr.contains("the program printed before it:\n      writing a.txt first"), "{stderr}");
    assert!(!dir.path().join("a.txt").exists());

    let (code, second, stderr) =
        toolreg(dir.path(), &server.uri(), &["resume", &first, "--approve", "--code-mode", "--suspend"]).await;
    assert_eq!(code, 3, "stopped again at the second write: {stderr}");
    assert!(stderr.contains("b.txt"), "{stderr}");
    assert!(stderr.contains("      writing a.txt first\n      now b.txt"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "A");
    // Were `a.txt` written again on the next resume, this would show it.
    std::fs::write(dir.path().join("a.txt"), "kept").unwrap();

    let (code, answer, stderr) =
        toolreg(dir.path(), &server.uri(), &["resume", &second, "--deny", "not b", "--code-mode"]).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "kept", "a.txt was written once");
    assert!(!dir.path().join("b.txt").exists());
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"], "denied");
}

/// `toolreg resume` shows each call it waits for (id, tool, arguments as
/// they will run) before anything runs; with no decision and no terminal it
/// runs nothing and consumes nothing; calls are decided one by one by id.
#[tokio::test(flavor = "multi_thread")]
async fn resume_shows_each_call_and_decides_them_one_by_one() {
    let write = |path: &str, content: &str| json!({"name": "write_file", "arguments": json!({"path": path, "content": content}).to_string()});
    let server = models(vec![write("a.txt", "A"), write("b.txt", "B")]).await;
    let dir = tempfile::tempdir().unwrap();
    let (code, id, stderr) = toolreg(dir.path(), &server.uri(), &["run", "Write both", "--suspend"]).await;
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("call c1: write_file") && stderr.contains("call c2: write_file"), "{stderr}");

    // No decision, no terminal: the calls are shown, nothing runs.
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", &id]).await;
    assert_ne!(code, 0);
    for shown in [
        "call c1: write_file",
        "\"path\": \"a.txt\"",
        "\"content\": \"A\"",
        "call c2: write_file",
        "\"path\": \"b.txt\"",
    ] {
        assert!(stderr.contains(shown), "{shown} in {stderr}");
    }
    assert!(stderr.contains("no decision for call `c1`, `c2`"), "{stderr}");
    // A call it does not wait for, or one call left open: nothing runs either.
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", &id, "--approve-call", "c9"]).await;
    assert!(code != 0 && stderr.contains("does not wait for a call `c9`"), "{stderr}");
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", &id, "--approve-call", "c1"]).await;
    assert!(code != 0 && stderr.contains("no decision for call `c2`"), "{stderr}");
    assert!(!dir.path().join("a.txt").exists() && !dir.path().join("b.txt").exists());

    // One approved, one refused: shown first, then exactly that runs.
    let args = ["resume", &id, "--approve-call", "c1", "--deny-call", "c2", "--reason", "not b"];
    let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &args).await;
    assert_eq!(code, 0, "{stderr}");
    let shown = stderr.find("\"path\": \"a.txt\"").expect("the call is shown");
    let done = stderr.find("toolreg: done").expect("the run ends");
    assert!(shown < done, "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "A");
    assert!(!dir.path().join("b.txt").exists());
}

/// Two stored runs whose model used the same call id (`c1`) both resume,
/// each once.
#[tokio::test(flavor = "multi_thread")]
async fn two_stored_runs_with_the_same_call_id_both_resume() {
    let call = json!({"name": "write_file", "arguments": json!({"path": "out.txt", "content": "x"}).to_string()});
    let server = model(call).await;
    let dir = tempfile::tempdir().unwrap();
    let (code, first, stderr) = toolreg(dir.path(), &server.uri(), &["run", "Write it", "--suspend"]).await;
    assert_eq!(code, 3, "{stderr}");
    let (code, second, stderr) = toolreg(dir.path(), &server.uri(), &["run", "Write it", "--suspend"]).await;
    assert_eq!(code, 3, "{stderr}");
    assert_ne!(first, second);
    for id in [&first, &second] {
        let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", id, "--approve"]).await;
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains("call c1: write_file"), "what is approved is shown: {stderr}");
        std::fs::remove_file(dir.path().join("out.txt")).unwrap();
        let (code, _, stderr) = toolreg(dir.path(), &server.uri(), &["resume", id, "--approve"]).await;
        assert!(code != 0 && stderr.contains("already resumed"), "{stderr}");
        assert!(!dir.path().join("out.txt").exists());
    }
}
