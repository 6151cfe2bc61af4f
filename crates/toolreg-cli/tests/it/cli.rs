//! The `toolreg` binary, run as a user runs it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command as StdCommand, Stdio};

use assert_cmd::Command;
use serde_json::{Value, json};

fn toolreg(root: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(root).env_remove("TOOLREG_MCP_TOKEN").env("NO_COLOR", "1");
    state_env(cmd.env_remove("TOOLREG_STATE_DIR"));
    cmd
}

/// The per-user state directory of these tests' processes: one for the
/// test run, each root keeping its own subdirectory, as a user's roots do.
fn state_home() -> &'static std::path::Path {
    static HOME: std::sync::LazyLock<tempfile::TempDir> = std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());
    HOME.path()
}

fn state_env(cmd: &mut Command) -> &mut Command {
    cmd.env("XDG_STATE_HOME", state_home()).env_remove("TOOLREG_KEY").env_remove("TOOLREG_STORE")
}

/// Every path under `dir` (relative), sorted.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n").unwrap();
    dir
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn tools_lists_the_builtins_as_a_table_and_as_json() {
    let dir = workspace();
    let table = stdout(toolreg(dir.path()).arg("tools"));
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("read_file") && l.contains("safe")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("write_file") && l.contains("dangerous")), "{table}");

    let json: Value = serde_json::from_str(&stdout(toolreg(dir.path()).args(["tools", "--json"]))).unwrap();
    let names: Vec<&str> = json.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"store_set") && names.contains(&"search_files"), "{names:?}");
    // The store lives outside the root.
    assert!(!dir.path().join(".toolreg").exists());

    let without_shell = stdout(toolreg(dir.path()).args(["tools", "--no-shell"]));
    assert!(!without_shell.lines().any(|l| l.starts_with("shell ")));
}

#[test]
fn schema_renders_each_provider_and_refuses_unknown_ones() {
    let dir = workspace();
    for (provider, check) in [
        ("openai", "/0/function/name"),
        ("openai-responses", "/0/name"),
        ("anthropic", "/0/input_schema"),
        ("gemini", "/0/functionDeclarations/0/name"),
        ("mcp", "/0/inputSchema"),
        ("bedrock", "/0/toolSpec/name"),
    ] {
        let out: Value =
            serde_json::from_str(&stdout(toolreg(dir.path()).args(["schema", "--provider", provider]))).unwrap();
        assert!(out.pointer(check).is_some(), "{provider}: {out}");
    }
    let only: Value =
        serde_json::from_str(&stdout(toolreg(dir.path()).args(["schema", "-p", "anthropic", "--tool", "read_file"])))
            .unwrap();
    assert_eq!(only.as_array().unwrap().len(), 1);

    let out = toolreg(dir.path()).args(["schema", "--provider", "cobol"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("unknown provider `cobol`"), "{err}");
}

#[test]
fn call_runs_a_tool_and_reports_errors_in_one_line() {
    let dir = workspace();
    let read = stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "notes.txt", "limit": 1}"#]));
    assert!(read.contains("first line") && !read.contains("second line"), "{read}");

    // Stored in one process, read back in another.
    stdout(toolreg(dir.path()).args(["call", "store_set", r#"{"key": "plan", "value": "[1, 2, 3]"}"#]));
    let got: Value =
        serde_json::from_str(&stdout(toolreg(dir.path()).args(["call", "store_get", r#"{"key": "plan"}"#]))).unwrap();
    assert_eq!(got["value"], json!([1, 2, 3]), "{got}");

    for (args, expected) in [
        (vec!["call", "nope"], "unknown tool `nope`"),
        (vec!["call", "read_file", "{not json"], "not JSON"),
        (vec!["call", "read_file", r#"{"path": 5}"#], "`/path`"),
        (vec!["call", "read_file", r#"{"path": "../outside"}"#], ".."),
    ] {
        let out = toolreg(dir.path()).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("toolreg: ") && err.contains(expected), "{args:?}: {err}");
    }
}

/// A 1×1 red PNG.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90\x77\x53\xde\
\x00\x00\x00\x0cIDAT\x78\x9c\x63\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xae\x42\x60\x82";

/// A one-page PDF.
const PDF: &[u8] =
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n\
3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 3 3]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// Blocks that are not text print as one-line summaries; `--out DIR`
/// writes each to a file there, byte for byte, and says where.
#[test]
fn call_prints_blocks_as_summaries_and_out_saves_them() {
    let dir = workspace();
    std::fs::write(dir.path().join("pic.png"), PNG).unwrap();
    std::fs::write(dir.path().join("report.pdf"), PDF).unwrap();

    let shown = stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "pic.png"}"#]));
    assert_eq!(shown, "[image: image/png, 69 bytes]\n");
    assert!(!dir.path().join("saved").exists());

    let saved = stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "pic.png"}"#, "--out", "saved"]));
    // An image block has no name: it is numbered, with the extension of its type.
    assert_eq!(saved, "[image: image/png, 69 bytes] saved to saved/block-1.png\n");
    assert_eq!(std::fs::read(dir.path().join("saved/block-1.png")).unwrap(), PNG);

    // A directory that does not exist yet is created.
    let pdf = stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "report.pdf"}"#, "--out", "a/b"]));
    assert_eq!(pdf, "[file: report.pdf, application/pdf, 189 bytes] saved to a/b/report.pdf\n");
    assert_eq!(std::fs::read(dir.path().join("a/b/report.pdf")).unwrap(), PDF);

    // Text prints as the model reads it, and nothing is written.
    let text = stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "notes.txt"}"#, "--out", "txt"]));
    assert_eq!(text, "notes.txt: lines 1-2 of 2\n     1\tfirst line\n     2\tsecond line\n\n");
    assert!(!dir.path().join("txt").exists());

    // A tool output kept in the store comes back from store_get as its blocks.
    let pdf_block = json!({"type": "file", "data": "JVBERi0xLjQK", "mimeType": "application/pdf", "name": "r.pdf"});
    let value = json!({"key": "kept", "value": json!({"$tool_output": {"content": [pdf_block]}}).to_string()});
    stdout(toolreg(dir.path()).args(["call", "store_set", &value.to_string()]));
    let kept = stdout(toolreg(dir.path()).args(["call", "store_get", r#"{"key": "kept"}"#, "--out", "kept"]));
    assert_eq!(kept, "[file: r.pdf, application/pdf, 9 bytes] saved to kept/r.pdf\n");
    assert_eq!(std::fs::read(dir.path().join("kept/r.pdf")).unwrap(), b"%PDF-1.4\n");
}

/// A link already at the name is replaced, not written through, and a
/// directory that cannot be made is one clear line.
#[cfg(unix)]
#[test]
fn out_never_writes_through_a_link_and_reports_what_it_cannot_do() {
    let dir = workspace();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("keep.txt");
    std::fs::write(&target, "untouched").unwrap();
    std::fs::write(dir.path().join("pic.png"), PNG).unwrap();
    std::fs::create_dir(dir.path().join("saved")).unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("saved/block-1.png")).unwrap();

    stdout(toolreg(dir.path()).args(["call", "read_file", r#"{"path": "pic.png"}"#, "--out", "saved"]));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
    let meta = std::fs::symlink_metadata(dir.path().join("saved/block-1.png")).unwrap();
    assert!(meta.is_file(), "the link was replaced by the file");
    assert_eq!(std::fs::read(dir.path().join("saved/block-1.png")).unwrap(), PNG);
    assert_eq!(std::fs::read_dir(dir.path().join("saved")).unwrap().count(), 1, "no temporary file left");

    let out = toolreg(dir.path())
        .args(["call", "read_file", r#"{"path": "pic.png"}"#, "--out", "notes.txt"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot create the directory notes.txt"), "{err}");
}

#[test]
fn dangerous_calls_need_approval() {
    let dir = workspace();
    // Not a terminal and no --yes: refused before anything runs.
    let out =
        toolreg(dir.path()).args(["call", "write_file", r#"{"path": "new.txt", "content": "hi"}"#]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8(out.stderr).unwrap().contains("--yes"));
    assert!(!dir.path().join("new.txt").exists());

    stdout(toolreg(dir.path()).args(["call", "write_file", r#"{"path": "new.txt", "content": "hi"}"#, "--yes"]));
    assert_eq!(std::fs::read_to_string(dir.path().join("new.txt")).unwrap(), "hi");
}

#[test]
fn audit_file_records_calls() {
    let dir = workspace();
    let audit = dir.path().join("audit.jsonl");
    stdout(toolreg(dir.path()).args(["call", "list_files", "{}", "--audit"]).arg(&audit));
    let line: Value = serde_json::from_str(std::fs::read_to_string(&audit).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(line["tool"], "list_files", "{line}");
    #[cfg(unix)]
    assert_eq!(mode(&audit), 0o600, "the audit file is its owner's only");
    // No tool reads or changes the trail it is recorded in.
    for (tool, args) in [
        ("read_file", json!({"path": "audit.jsonl"})),
        ("search_files", json!({"regex": "list_files", "path": "audit.jsonl"})),
        ("write_file", json!({"path": "audit.jsonl", "content": "{}"})),
    ] {
        let out = toolreg(dir.path()).args(["call", tool, &args.to_string(), "--yes", "--audit"]).arg(&audit).output();
        let out = out.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("is the host's own state"), "{tool}: {err}");
    }
    let listed = stdout(toolreg(dir.path()).args(["call", "list_files", "{}", "--audit"]).arg(&audit));
    assert!(!listed.contains("audit.jsonl"), "{listed}");
}

/// `toolreg serve` in an empty directory leaves it empty: the key and the
/// store go to the per-user state directory, one per root, owner-only, and
/// a model reading `.toolreg/key` finds nothing.
#[test]
fn host_state_is_kept_outside_the_root_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"));
    child.current_dir(&root).env("XDG_STATE_HOME", state_home()).env_remove("TOOLREG_KEY").env_remove("TOOLREG_STORE");
    let mut child = child
        .env_remove("TOOLREG_STATE_DIR")
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    lines.next().unwrap().unwrap();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "store_set",
        "arguments": {"key": "k", "value": "1"}}}));
    let stored: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(stored["result"]["isError"], false, "{stored}");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file",
        "arguments": {"path": ".toolreg/key"}}}));
    let read: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(read["result"]["isError"], true, "{read}");
    drop(stdin);
    assert!(child.wait().unwrap().success());

    assert_eq!(tree(&root), Vec::<String>::new(), "toolreg made files in the root it serves");
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    let roots = state_home().join("toolreg/roots");
    let mine: Vec<_> = std::fs::read_dir(&roots)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("{name}-")))
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    let state = &mine[0];
    let held = tree(state);
    assert!(held.contains(&"key".to_owned()) && held.contains(&"store.db".to_owned()), "{held:?}");
    #[cfg(unix)]
    {
        assert_eq!(mode(state), 0o700);
        assert_eq!(mode(&state_home().join("toolreg")), 0o700);
        for file in &held {
            assert_eq!(mode(&state.join(file)), 0o600, "{file}");
        }
    }
}

/// Host state an earlier toolreg kept in `ROOT/.toolreg` is not moved from
/// under a replica that may still use it: toolreg refuses to start and says
/// how to move it, or to keep it with `--state-dir` (then no tool reads it).
#[test]
fn an_earlier_root_state_directory_is_refused_until_moved_or_named() {
    let dir = workspace();
    std::fs::create_dir(dir.path().join(".toolreg")).unwrap();
    let key = "ab".repeat(32);
    std::fs::write(dir.path().join(".toolreg/key"), &key).unwrap();
    let out = toolreg(dir.path()).arg("tools").output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(".toolreg holds host state") && err.contains("mv ") && err.contains("--state-dir"), "{err}");

    let kept = dir.path().join(".toolreg");
    let out = toolreg(dir.path())
        .arg("--state-dir")
        .arg(&kept)
        .args(["call", "read_file", r#"{"path": ".toolreg/key"}"#])
        .output();
    let out = out.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is the host's own state") && !err.contains(&key), "{err}");
    stdout(toolreg(dir.path()).arg("--state-dir").arg(&kept).args([
        "call",
        "store_set",
        r#"{"key": "k", "value": "1"}"#,
    ]));
    assert!(kept.join("store.db").exists());
    assert_eq!(std::fs::read_to_string(kept.join("key")).unwrap(), key);
}

#[test]
fn help_teaches_by_example_and_bad_flags_fail() {
    let dir = workspace();
    let help = stdout(toolreg(dir.path()).arg("--help"));
    assert!(help.contains("Examples:") && help.contains("mcpServers"), "{help}");
    let out = toolreg(dir.path()).arg("--no-such-flag").output().unwrap();
    assert!(!out.status.success());
    let out = toolreg(dir.path()).args(["--root", "/definitely/not/here", "tools"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/definitely/not/here"), "{err}");
}

/// The default job: serve over stdio, answering an MCP client's requests.
#[test]
fn serves_mcp_over_stdio_by_default() {
    let dir = workspace();
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("XDG_STATE_HOME", state_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    let init: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "toolreg");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "notes.txt"}}}),
    );
    let call: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(call["result"]["isError"], false, "{call}");
    assert!(call["result"]["content"][0]["text"].as_str().unwrap().contains("second line"));
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "write_file", "arguments": {"path": "x", "content": "y"}}}),
    );
    let refused: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(!dir.path().join("x").exists());
    drop(stdin); // end of input: the server exits
    assert!(child.wait().unwrap().success());
}

/// The gateway: a second `toolreg serve` imported from an `mcpServers` file,
/// its tools listed, declared and called through this one's engine.
#[test]
fn imports_the_servers_of_an_mcp_servers_file() {
    let outer = workspace();
    let inner = workspace();
    std::fs::write(inner.path().join("inner.txt"), "from the inner server\n").unwrap();
    let config = outer.path().join("servers.json");
    let bin = assert_cmd::cargo::cargo_bin("toolreg");
    std::fs::write(
        &config,
        json!({"mcpServers": {"inner": {"command": bin, "args": ["serve", "--no-shell", "--root", inner.path()]}}})
            .to_string(),
    )
    .unwrap();

    let table = stdout(toolreg(outer.path()).args(["tools", "--config"]).arg(&config));
    assert!(table.lines().any(|l| l.starts_with("inner__read_file ")), "{table}");
    // Imported tools are never trusted more than cautious, whatever the remote says.
    assert!(table.lines().any(|l| l.starts_with("inner__read_file ") && l.contains("cautious")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("inner__write_file ") && l.contains("dangerous")), "{table}");

    let read = stdout(
        toolreg(outer.path())
            .args(["call", "inner__read_file", r#"{"path": "inner.txt"}"#, "--yes", "--config"])
            .arg(&config),
    );
    assert!(read.contains("from the inner server"), "{read}");

    let bad =
        toolreg(outer.path()).args(["tools", "--config"]).arg(outer.path().join("missing.json")).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8(bad.stderr).unwrap().contains("missing.json"));
}

/// `toolreg run` against a local server speaking OpenAI's protocol: the
/// agent lists the files, then answers; progress goes to stderr.
#[tokio::test(flavor = "multi_thread")]
async fn run_drives_an_agent_against_an_openai_compatible_server() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let answered = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
            // Streamed, as the client asks.
            let chunk = if answered {
                json!({"choices": [{"index": 0, "delta": {"content": "There is one file: notes.txt."}, "finish_reason": "stop"}]})
            } else {
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]})
            };
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        })
        .mount(&server)
        .await;
    let dir = workspace();
    let mut cmd = toolreg(dir.path());
    cmd.args(["run", "What files are here?", "--model", "local", "--no-shell", "--base-url", &server.uri()])
        .env_remove("OPENAI_API_KEY");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "There is one file: notes.txt.");
    assert!(stderr.contains("step 1") && stderr.contains("list_files"), "{stderr}");

    // No key for the real API: one clear line.
    let mut cmd = toolreg(dir.path());
    cmd.args(["run", "hi"]).env_remove("OPENAI_API_KEY").env_remove("OPENAI_BASE_URL");
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
}

/// `toolreg run` shows a result's image as its summary on the terminal.
#[tokio::test(flavor = "multi_thread")]
async fn run_shows_an_image_result_as_its_summary() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(path("/chat/completions"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let answered = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
            let chunk = if answered {
                json!({"choices": [{"index": 0, "delta": {"content": "A red pixel."}, "finish_reason": "stop"}]})
            } else {
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\": \"pic.png\"}"}}]}, "finish_reason": "tool_calls"}]})
            };
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        })
        .mount(&server)
        .await;
    let dir = workspace();
    std::fs::write(dir.path().join("pic.png"), PNG).unwrap();
    let mut cmd = toolreg(dir.path());
    cmd.args(["run", "What is in pic.png?", "--model", "local", "--no-shell", "--base-url", &server.uri()])
        .env_remove("OPENAI_API_KEY");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("✓ read_file: [image: image/png, 69 bytes]\n"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "A red pixel.");
}

/// `--base-url` applies to the chosen provider, read as its SDK reads it
/// (Anthropic's: the host root), and `--no-stream` asks for whole answers.
#[tokio::test(flavor = "multi_thread")]
async fn run_without_streaming_against_an_anthropic_compatible_server() {
    use wiremock::matchers::path;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(path("/v1/messages"))
        .respond_with(|request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert!(body.get("stream").is_none(), "--no-stream: {body}");
            ResponseTemplate::new(200).set_body_json(json!({"type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "Hello."}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 2}}))
        })
        .expect(1)
        .mount(&server)
        .await;
    let dir = workspace();
    let mut cmd = toolreg(dir.path());
    cmd.args(["run", "hi", "--provider", "anthropic", "--no-stream", "--no-shell", "--base-url", &server.uri()])
        .env("ANTHROPIC_API_KEY", "test-key");
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Hello.");
}

/// A client that closes its input before saying anything: a clean exit.
#[test]
fn input_closed_before_initialize_is_a_clean_exit() {
    let dir = workspace();
    let out = toolreg(dir.path()).write_stdin("").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
