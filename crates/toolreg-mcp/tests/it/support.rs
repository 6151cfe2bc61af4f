//! What the MCP tests share: a client that speaks raw JSON-RPC lines, to
//! see exactly what a server sends.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use toolreg_mcp::server::{McpServer, StdioOptions};

/// How long a test waits for an answer before it fails.
pub const HANG: Duration = Duration::from_secs(20);

/// An HTTP client for the tests' own requests.
pub fn http_client() -> reqwest::Client {
    install_tls();
    reqwest::Client::new()
}

/// reqwest is built without a TLS provider of its own (as toolreg builds
/// it), so the process needs one before any client is made — the tests'
/// own and rmcp's client transports alike, whichever test runs first.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client speaking raw JSON lines to a server on an in-memory pipe.
pub struct Raw {
    write: tokio::io::WriteHalf<DuplexStream>,
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    /// Messages read while waiting for something else.
    pub other: Vec<Value>,
}

impl Raw {
    pub fn start(server: McpServer, options: StdioOptions) -> Raw {
        let (client, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        tokio::spawn(async move {
            let _ = server.serve_stream(server_read, server_write, options).await;
        });
        let (read, write) = tokio::io::split(client);
        Raw { write, lines: BufReader::new(read).lines(), other: Vec::new() }
    }

    pub async fn send_line(&mut self, line: &str) {
        self.write.write_all(line.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    pub async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(HANG, self.lines.next_line()).await.expect("no answer in time").unwrap();
        serde_json::from_str(&line.expect("the server closed the stream")).unwrap()
    }

    /// The answer to request `id`, keeping everything else read meanwhile.
    pub async fn answer(&mut self, id: Value) -> Value {
        if let Some(at) = self.other.iter().position(|m| m.get("id") == Some(&id) && m.get("method").is_none()) {
            return self.other.remove(at);
        }
        loop {
            let message = self.next().await;
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return message;
            }
            self.other.push(message);
        }
    }

    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}}))
            .await;
        let answer = self.answer(json!(0)).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        answer
    }

    pub async fn call(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
            .await;
        self.answer(json!(id)).await
    }
}
