//! Access policies from the command line: `toolreg policy check` explains a
//! file, `toolreg serve --policy` enforces it (over stdio, on the local user).

use std::io::Write;
use std::process::Command;

use serde_json::{Value, json};

use crate::support as common;

const POLICY: &str = r#"
# Readers look; writers also write files (a person approves), never edit.
[roles.reader]
allow = ["read_*", "list_*", "search_*"]
max_safety = "safe"
calls_per_minute = 120

[roles.writer]
allow = ["*_file", "list_*"]
deny = ["edit_*"]
max_safety = "dangerous"
approve = ["write_file"]

[roles.default]
allow = ["list_files"]
max_safety = "safe"

[subjects]
carol = ["writer"]
"#;

fn toolreg(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir)
        .env("TOOLREG_STATE_DIR", dir.join("state"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn policy_check_explains_every_tool_for_a_principal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    let out = toolreg(dir.path(), &["--no-shell", "policy", "check", "policy.toml", "--scope", "reader"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("someone with scopes [reader] holds the roles reader:"), "{text}");
    assert!(text.contains("+ read_file: granted: role `reader` allows `read_*`"), "{text}");
    assert!(text.contains("Calls a minute: 120; calls at once: no limit."), "{text}");
    assert!(text.contains("- write_file: refused: role `reader` does not allow it"), "{text}");

    let out = toolreg(dir.path(), &["--no-shell", "policy", "check", "policy.toml", "--subject", "carol", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["roles"], json!(["writer"]));
    let verdict = |tool: &str| report["tools"].as_array().unwrap().iter().find(|t| t["tool"] == tool).unwrap().clone();
    assert_eq!(verdict("write_file")["approval"], json!(true));
    assert_eq!(verdict("edit_file")["reason"], "role `writer` denies `edit_*`");
    assert_eq!(verdict("read_file")["granted"], json!(true));

    // No role: the default one.
    let out = toolreg(dir.path(), &["--no-shell", "policy", "check", "policy.toml", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["roles"], json!(["default"]));
    let granted: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["granted"] == json!(true))
        .map(|t| t["tool"].as_str().unwrap())
        .collect();
    assert_eq!(granted, ["list_files"]);

    for (text, expected) in [
        ("[roles.a]\nalow = [\"*\"]\n", "unknown field `alow`"),
        ("[subjects]\nbob = [\"root\"]\n", "`root`, which is not defined"),
        ("[roles.a]\nallow = [\"read file\"]\n", "not a tool name pattern"),
        ("[roles.a]\nmax_safety = \"reckless\"\n", "reckless"),
        ("not toml at all [", "bad.toml: TOML parse error at line 1"),
    ] {
        std::fs::write(dir.path().join("bad.toml"), text).unwrap();
        let out = toolreg(dir.path(), &["--no-shell", "policy", "check", "bad.toml"]);
        assert_eq!(out.status.code(), Some(1), "{text}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{text}: {stderr}");
        let out = toolreg(dir.path(), &["--no-shell", "serve", "--policy", "bad.toml"]);
        assert_eq!(out.status.code(), Some(1), "serve refuses it too: {text}");
    }
}

#[test]
fn serve_with_a_policy_holds_the_local_user_to_the_default_role() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.toml"), POLICY).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "secret notes").unwrap();
    let (mut child, mut stdin, lines) =
        common::serve_stdio(dir.path(), &["serve", "--no-shell", "--policy", "policy.toml"], &[]);
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let next = |id: i64| loop {
        let line: Value = lines.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
        if line["id"] == json!(id) {
            break line;
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    next(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = next(2);
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"list_files"), "{names:?}");
    assert!(!names.contains(&"read_file") && !names.contains(&"write_file"), "{names:?}");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "notes.txt"}}}));
    let refused = next(3);
    let text = refused.to_string();
    assert!(!text.contains("secret notes"), "{text}");
    assert!(text.contains("unknown tool") || text.contains("you may not call"), "{text}");
    drop(stdin);
    let _ = child.wait();
}
