//! `toolreg serve --http … --issuer … --audience …`: the binary as an OAuth
//! resource server (tokens themselves are checked in toolreg-mcp's tests).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The status line and headers of a request without a token.
fn ask(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

#[test]
fn serve_with_an_issuer_answers_401_pointing_at_its_resource_metadata() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let audience = format!("http://{addr}/mcp");
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("TOOLREG_STATE_DIR", dir.path().join("state"))
        .env_remove("TOOLREG_MCP_TOKEN")
        .args(["serve", "--no-shell", "--http", &addr, "--issuer", "https://login.example.com"])
        .args(["--audience", &audience, "--required-scope", "tools"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("serving") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server stopped: {said}");
        said.push_str(&line);
    }
    assert!(said.contains("clients need access tokens from https://login.example.com for"), "{said}");

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let post = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = ask(&addr, &post);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert!(answer.contains(&format!("www-authenticate: Bearer resource_metadata=\"{metadata_url}\"")), "{answer}");
    let get =
        format!("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let metadata = ask(&addr, &get);
    let json = &metadata[metadata.find("\r\n\r\n").unwrap() + 4..];
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"resource": audience, "authorization_servers": ["https://login.example.com"],
            "bearer_methods_supported": ["header"], "scopes_supported": ["tools"]})
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_shared_token_and_an_issuer_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .env("TOOLREG_STATE_DIR", dir.path().join("state"))
        .env("TOOLREG_MCP_TOKEN", "s3cret")
        .args(["serve", "--no-shell", "--http", "127.0.0.1:0", "--issuer", "https://as.example"])
        .args(["--audience", "http://127.0.0.1/mcp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TOOLREG_MCP_TOKEN and --issuer are two ways"), "{stderr}");
    let out = Command::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir.path())
        .args(["serve", "--issuer", "https://as.example"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "--issuer needs --http and --audience");
}
