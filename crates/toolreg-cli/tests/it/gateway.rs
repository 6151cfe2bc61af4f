//! The gateway's start-up: `--config` with servers that are slow, down or
//! come up late, run as a user runs `toolreg`.

use crate::support as common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command as StdCommand, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../toolreg-mcp/tests/servers/fake_server.py");

fn toolreg(root: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(root).env_remove("TOOLREG_MCP_TOKEN").env_remove("TOOLREG_LOG").env("NO_COLOR", "1");
    cmd
}

/// An `mcpServers` entry for the fake server with these flags.
fn fake(flags: &[&str]) -> Value {
    let mut args = vec!["-u", FAKE];
    args.extend_from_slice(flags);
    json!({"command": "python3", "args": args})
}

fn write_config(dir: &std::path::Path, servers: Value) -> std::path::PathBuf {
    let path = dir.join("servers.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// A URL on which nothing listens.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/mcp")
}

/// One server that is down: the others and the built-ins are still served,
/// and it is reported in one plain line; `--strict-servers` makes it fatal.
#[test]
fn a_server_that_is_down_is_reported_in_one_line_and_the_rest_served() {
    let dir = tempfile::tempdir().unwrap();
    let url = refused_url();
    let config = write_config(dir.path(), json!({"broken": {"url": url}, "fake": fake(&[])}));

    let out = toolreg(dir.path()).args(["tools", "--config"]).arg(&config).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.lines().any(|l| l.starts_with("fake__echo ")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("read_file ")), "{table}");
    // A tool that only runs as an MCP task is offered (called through the
    // tasks extension), not left out.
    assert!(table.lines().any(|l| l.starts_with("fake__research")), "{table}");
    assert!(!table.contains("Left out"), "{table}");
    let json = toolreg(dir.path()).args(["tools", "--json", "--config"]).arg(&config).output().unwrap();
    let listed: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(listed.to_string().contains("fake__research"), "{listed}");
    let json_stderr = String::from_utf8(json.stderr).unwrap();
    assert!(!json_stderr.contains("`research`"), "{json_stderr}");
    assert_eq!(
        stderr,
        format!(
            "toolreg: warning: cannot connect to MCP server 'broken' at {url}: connection refused; its tools are \
             left out until it answers\n"
        )
    );

    let out = toolreg(dir.path()).args(["tools", "--strict-servers", "--config"]).arg(&config).output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("toolreg: cannot connect to MCP server 'broken' at {url}: connection refused\n")
    );
}

/// A key another client reads is a warning, not a reason to refuse the file;
/// `"type": "sse"` is refused when the file is read, with the fix.
#[test]
fn other_clients_keys_are_warned_about_and_sse_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let mut entry = fake(&[]);
    entry["alwaysAllow"] = json!(["echo"]);
    let config = write_config(dir.path(), json!({"fake": entry}));
    let out = toolreg(dir.path()).args(["tools", "--config"]).arg(&config).output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8(out.stdout).unwrap().contains("fake__echo"));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("server `fake`: unknown key `alwaysAllow` ignored"), "{stderr}");

    let config = write_config(dir.path(), json!({"legacy": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}));
    let out = toolreg(dir.path()).args(["tools", "--config"]).arg(&config).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("server `legacy`") && stderr.contains("\"type\": \"http\""), "{stderr}");
}

/// The host's secrets stay with the host: an imported server sees only the
/// basic variables and its own `env` entry.
#[test]
fn an_imported_server_does_not_see_the_hosts_api_keys() {
    let dir = tempfile::tempdir().unwrap();
    let mut entry = fake(&[]);
    entry["env"] = json!({"REGION": "eu"});
    let config = write_config(dir.path(), json!({"fake": entry}));
    let out = toolreg(dir.path())
        .args(["call", "fake__env", "{}", "--yes", "--config"])
        .arg(&config)
        .env("OPENAI_API_KEY", "sk-host-secret")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(seen["env"]["REGION"], "eu", "{seen}");
    assert_eq!(seen["env"]["TERM"], "xterm", "{seen}");
    assert!(!stdout.contains("sk-host-secret"), "{stdout}");
}

/// When toolreg exits, an imported server is ended as the MCP stdio
/// transport asks: its input closes and it exits on its own (here, writing
/// down that it saw the end of its input), rather than being killed.
#[test]
fn imported_servers_exit_on_their_own_when_toolreg_does() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("exited");
    let config = write_config(dir.path(), json!({"fake": fake(&["--on-exit", marker.to_str().unwrap()])}));
    let out = toolreg(dir.path())
        .args(["call", "fake__echo", r#"{"text": "hi"}"#, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "eof\n");
}

/// Five servers that each take two seconds to start are connected at once.
#[test]
fn servers_are_connected_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let servers: serde_json::Map<String, Value> =
        (0..5).map(|i| (format!("slow{i}"), fake(&["--slow-start", "2"]))).collect();
    let config = write_config(dir.path(), Value::Object(servers));
    let started = Instant::now();
    let out = toolreg(dir.path()).args(["tools", "--config"]).arg(&config).output().unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    for i in 0..5 {
        assert!(table.contains(&format!("slow{i}__echo")), "{table}");
    }
    // One after another would take more than ten seconds.
    assert!(took < Duration::from_secs(7), "{took:?}");
}

/// `serve` with a server that fails its first start: the rest is served at
/// once, and when the server comes up its tools are announced with
/// `notifications/tools/list_changed`.
#[test]
fn serve_announces_a_server_that_comes_up_later() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started-once");
    // Slow to start, so that it comes up after the client has connected.
    let config = write_config(
        dir.path(),
        json!({"late": fake(&["--slow-start", "1", "--fail-first", marker.to_str().unwrap()])}),
    );
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .args(["serve", "--no-shell", "--config"])
        .arg(&config)
        .env_remove("TOOLREG_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if lines_tx.send(message).is_err() {
                return;
            }
        }
    });
    let next = |what: &str| lines.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("no {what}"));
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    let init = next("initialize answer");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true, "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let names = |list: &Value| -> Vec<String> {
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };
    let mut announced = false;
    let mut listed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 2;
    while Instant::now() < deadline {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        loop {
            let message = next("tools/list answer");
            if message["method"] == "notifications/tools/list_changed" {
                announced = true;
            } else if message["id"] == id {
                listed = names(&message);
                break;
            }
        }
        assert!(listed.iter().any(|n| n == "read_file"), "{listed:?}");
        if announced && listed.iter().any(|n| n == "late__echo") {
            break;
        }
        id += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(announced, "no list_changed; last list: {listed:?}");
    assert!(listed.iter().any(|n| n == "late__echo"), "{listed:?}");
    assert!(listed.iter().any(|n| n == "late__research"), "{listed:?}");
    drop(stdin);
    let _ = child.wait();
    // The log says what did not start.
    let log = log.join().unwrap();
    assert!(log.contains("cannot connect to MCP server 'late'"), "{log}");
    assert!(!log.contains("`research`"), "{log}");
}

/// `toolreg serve` runs MCP tasks: a remote task-only tool is listed with its
/// `execution`, and a client with the tasks extension gets a task (kept in
/// the store) that ends with the remote task's result.
#[test]
fn the_gateway_serves_remote_task_tools_as_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fake": fake(&[])}));
    let args = ["serve", "--no-shell", "--strict-servers", "--config", config.to_str().unwrap()];
    let (mut child, mut stdin, lines) = common::serve_stdio(dir.path(), &args, &[]);
    let mut ask = |id: i64, method: &str, params: Value| -> Value {
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        loop {
            let message =
                lines.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("no answer to {method}"));
            if message["id"] == id {
                return message;
            }
        }
    };
    let init = ask(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}),
    );
    assert!(init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(), "{init}");
    let list = ask(2, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let research = tools.iter().find(|t| t["name"] == "fake__research").expect("listed");
    assert_eq!(research["execution"]["taskSupport"], "required", "{research}");

    let created = ask(3, "tools/call", json!({"name": "fake__research", "arguments": {"topic": "kelp"}}));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let got = ask(4, "tasks/get", json!({"taskId": task}));
        if got["result"]["status"] != "working" {
            break got;
        }
        assert!(Instant::now() < deadline, "{got}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "found: kelp", "{done}");
    drop(stdin);
    let _ = child.wait();
}

/// A local model speaking OpenAI's Chat protocol, streamed: `reply` turns
/// each request's body into the delta it answers with.
async fn chat_model(reply: fn(&Value) -> Value) -> wiremock::MockServer {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let model = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(move |request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let chunk = json!({"choices": [{"index": 0, "delta": reply(&body), "finish_reason": "stop"}]});
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        })
        .mount(&model)
        .await;
    model
}

/// `toolreg run --yes` with the fake server imported, against `model`:
/// its exit status checked, its answer returned.
async fn run_with_fake(model: &wiremock::MockServer, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), json!({"fake": fake(&[])}));
    let mut cmd = toolreg(dir.path());
    cmd.args(["run", "Go", "--model", "local", "--no-shell", "--yes", "--base-url", &model.uri()])
        .args(extra)
        .arg("--config")
        .arg(&config)
        .env_remove("OPENAI_API_KEY")
        .write_stdin("");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `toolreg run` answers an imported server's sampling request with the
/// agent's own model (`--yes` allows it without a terminal) and refuses its
/// elicitation with the reason (no terminal to fill the form in).
#[tokio::test(flavor = "multi_thread")]
async fn run_answers_a_remote_servers_sampling_with_its_model() {
    let model = chat_model(|body| {
        let messages = body["messages"].as_array().unwrap();
        let said = |text: &str| messages.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains(text)));
        let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        if said("Say hi") {
            // The server's sampling request, as the agent's model gets it.
            json!({"content": "hi from the model"})
        } else if results.len() == 2 {
            let both: Vec<&str> = results.iter().map(|m| m["content"].as_str().unwrap()).collect();
            json!({"content": format!("done: {}", both.join(" | "))})
        } else {
            json!({"tool_calls": [
                {"index": 0, "id": "c1", "type": "function", "function": {"name": "fake__sample", "arguments": "{}"}},
                {"index": 1, "id": "c2", "type": "function", "function": {"name": "fake__ask", "arguments": "{}"}}]})
        }
    })
    .await;
    let answer = run_with_fake(&model, &[]).await;
    assert!(answer.contains("hi from the model"), "{answer}");
    assert!(answer.contains("not on a terminal, so no one can fill in the form"), "{answer}");
}

/// `toolreg run` follows an imported server's `list_changed`: the tool the
/// server added mid-run is offered to the model from a later step on.
#[tokio::test(flavor = "multi_thread")]
async fn run_offers_tools_an_imported_server_adds_mid_run() {
    let model = chat_model(|body| {
        let offered: Vec<&str> =
            body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
        let steps = body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count();
        let call = |name: &str| {
            json!({"tool_calls": [{"index": 0, "id": format!("c{steps}"), "type": "function",
                "function": {"name": name, "arguments": "{}"}}]})
        };
        if steps == 0 {
            call("fake__change")
        } else if offered.contains(&"fake__added") {
            json!({"content": format!("fake__added is offered after {steps} steps")})
        } else {
            // The new list is read on another task: look again.
            call("fake__echo")
        }
    })
    .await;
    let answer = run_with_fake(&model, &["--max-steps", "30"]).await;
    assert!(answer.contains("fake__added is offered"), "{answer}");
}
