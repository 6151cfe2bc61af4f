//! `toolreg serve --deferred-past N`: a short list over stdio, the rest
//! found with `search_tools` (the `--config` servers' case is in
//! scripts/mcp_python_client.py, with the official SDK's client).

use crate::support as common;

use std::io::Write;
use std::process::Command as StdCommand;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

#[test]
fn serve_deferred_past_lists_the_first_tools_and_loads_the_rest_on_search() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("toolreg");
    // The built-ins in the order they are served.
    let all = StdCommand::new(&bin).current_dir(dir.path()).args(["tools", "--json", "--no-shell"]).output().unwrap();
    let all: Value = serde_json::from_slice(&all.stdout).unwrap();
    let all: Vec<String> = all.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert!(all.len() > 3, "{all:?}");

    let (mut child, mut stdin, lines) =
        common::serve_stdio(dir.path(), &["serve", "--no-shell", "--deferred-past", "2"], &[]);
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut seen = Vec::new();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    answer(&lines, &mut seen, 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let names = |list: &Value| -> Vec<String> {
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
    };

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let short = [all[0].clone(), all[1].clone(), "search_tools".to_owned(), "call_tool".to_owned()];
    assert_eq!(names(&answer(&lines, &mut seen, 2)), short);

    // The third tool, called before a search: refused, told to search.
    let third = all[2].clone();
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": third, "arguments": {}}}));
    let refused = answer(&lines, &mut seen, 3);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(refused["result"]["content"][0]["text"].as_str().unwrap().contains("search_tools"), "{refused}");

    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": third, "limit": 1}}}));
    let found = answer(&lines, &mut seen, 4);
    assert_eq!(found["result"]["structuredContent"]["tools"][0]["name"], third.as_str(), "{found}");
    assert!(seen.iter().any(|m| m["method"] == "notifications/tools/list_changed"), "{seen:?}");
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}));
    assert_eq!(names(&answer(&lines, &mut seen, 5)), [&short[..], &[third]].concat());
    drop(stdin);
    let _ = child.wait();
}

/// With a search model, `search_tools` answers by keywords until the tool
/// vectors are computed in the background, then by keywords and meaning,
/// and says which; the vectors are kept, owner-only, in the state
/// directory for the next start.
#[test]
fn serve_with_a_search_model_searches_by_meaning_once_its_vectors_are_ready() {
    let Some(model) = common::search_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();
    let model = model.to_str().unwrap();
    let (mut child, mut stdin, lines) = common::serve_stdio(
        dir.path(),
        &["serve", "--no-shell", "--deferred-past", "1", "--search-model", model],
        &[("TOOLREG_STATE_DIR", state_dir)],
    );
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut seen = Vec::new();
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    answer(&lines, &mut seen, 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut search = None;
    for id in 2..200 {
        // No word of this request is a word of the file tools.
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "search_tools", "arguments": {"query": "what is inside that document", "limit": 3}}}));
        let found = answer(&lines, &mut seen, id);
        let answered = found["result"]["structuredContent"]["search"].as_str().unwrap().to_owned();
        if answered == "hybrid" {
            search = Some(found);
            break;
        }
        assert_eq!(answered, "keyword", "{found}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let found = search.expect("the vectors were ready within 20 s");
    let names: Vec<&str> = found["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read_file"), "{found}");
    drop(stdin);
    let _ = child.wait();

    let vectors = state.path().join("search-vectors.bin");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&vectors).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // The next start has every vector at once, and says so.
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("TOOLREG_STATE_DIR", state_dir)
        .args(["serve", "--no-shell", "--search-model", model])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("toolreg: tool search: hybrid, keywords and all-MiniLM-L6-v2-"), "{stderr}");
    assert!(!stderr.contains("to compute in the background"), "{stderr}");
}

#[test]
fn a_search_model_that_is_not_one_stops_the_start_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("TOOLREG_STATE_DIR", dir.path().join("state"))
        .args(["tools", "--search-model", "no-such-model"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot load the search model") && stderr.contains("no-such-model/config.json"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// The answer to request `id`; what comes before it goes to `seen`.
fn answer(lines: &mpsc::Receiver<Value>, seen: &mut Vec<Value>, id: i64) -> Value {
    loop {
        let message = lines.recv_timeout(Duration::from_secs(20)).expect("no answer in time");
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
        seen.push(message);
    }
}

/// The `mcpServers` file may name the model (`searchModel`, relative to the
/// file); `--search-model` wins over it.
#[test]
fn the_config_files_search_model_is_taken_from_beside_the_file_and_the_flag_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    let config = dir.path().join("conf/servers.json");
    std::fs::write(&config, r#"{"mcpServers": {}, "searchModel": "models/minilm"}"#).unwrap();
    let run = |extra: &[&str]| {
        StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
            .current_dir(dir.path())
            .env("TOOLREG_STATE_DIR", dir.path().join("state"))
            .env_remove("TOOLREG_SEARCH_MODEL")
            .args(["--config", config.to_str().unwrap(), "tools"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("conf/models/minilm/config.json"), "{stderr}");

    let out = run(&["--search-model", "elsewhere"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("elsewhere/config.json") && !stderr.contains("minilm"), "{stderr}");

    std::fs::write(&config, r#"{"mcpServers": {}, "searchModel": ""}"#).unwrap();
    let stderr = String::from_utf8_lossy(&run(&[]).stderr).into_owned();
    assert!(stderr.contains("`searchModel` is empty"), "{stderr}");
}

/// With a real model named only by the configuration, `serve` searches by
/// meaning and says so.
#[test]
fn serve_uses_the_search_model_the_config_file_names() {
    let Some(model) = common::search_model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {}, "searchModel": model}).to_string()).unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("TOOLREG_STATE_DIR", dir.path().join("state"))
        .env_remove("TOOLREG_SEARCH_MODEL")
        .args(["--config", config.to_str().unwrap(), "serve", "--no-shell"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("toolreg: tool search: hybrid, keywords and all-MiniLM-L6-v2-"), "{stderr}");
}
