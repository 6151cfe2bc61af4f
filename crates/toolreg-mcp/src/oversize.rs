//! A relay for a child server's output that answers oversized messages.
//!
//! rmcp's stdio transport drops a line over its 16 MiB limit with a log
//! line, so the request it answered waits until its timeout and the user is
//! told "timed out" about a server that did answer — too much. This relay
//! sits between the child's stdout and rmcp: lines within the limit pass
//! unchanged; an oversized line is replaced by a JSON-RPC error for the
//! same request, so the call fails at once with a message that says why.
//!
//! Only the first and last bytes of an oversized line are kept (to find its
//! id), so its size never reaches memory. The copy through one more pipe
//! costs a memcpy per message, nothing a user would notice next to a
//! process round trip.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, DuplexStream};

/// rmcp's own limit for one line from a child process.
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Bytes kept from each end of an oversized line to find its id.
const EDGE: usize = 256;

/// The JSON-RPC code of the error put in place of an oversized answer.
pub(crate) const TOO_LARGE: i64 = -32603;

/// Relay `read` line by line into the returned stream, replacing lines over
/// `max` bytes by an error for their request (or dropping them when they
/// carry no id). The relay ends when `read` does.
pub(crate) fn relay(read: impl AsyncRead + Send + Unpin + 'static, max: usize) -> DuplexStream {
    let (mut into, out) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut read = BufReader::with_capacity(64 * 1024, read);
        let mut line = Vec::new();
        let mut tail = VecDeque::with_capacity(EDGE);
        let mut total = 0usize;
        while let Ok(buffer) = read.fill_buf().await {
            if buffer.is_empty() {
                break;
            }
            let newline = buffer.iter().position(|&b| b == b'\n');
            let chunk = &buffer[..newline.map_or(buffer.len(), |at| at + 1)];
            let used = chunk.len();
            total += used;
            if total <= max {
                line.extend_from_slice(chunk);
            } else {
                if line.len() > EDGE {
                    line.truncate(EDGE);
                }
                let mut start = chunk.len().saturating_sub(EDGE);
                if newline.is_some() {
                    start = start.min(chunk.len() - 1);
                }
                for &b in &chunk[start..] {
                    if tail.len() == EDGE {
                        tail.pop_front();
                    }
                    tail.push_back(b);
                }
            }
            read.consume(used);
            if newline.is_none() {
                continue;
            }
            let written = if total <= max {
                into.write_all(&line).await
            } else {
                let tail: Vec<u8> = tail.drain(..).collect();
                let tail = tail.strip_suffix(b"\n").unwrap_or(&tail);
                let tail = tail.strip_suffix(b"\r").unwrap_or(tail);
                match answered_id(&line, tail) {
                    Some(id) => {
                        tracing::warn!(bytes = total, %id, "an MCP server's message is over the line limit");
                        let mut error = too_large(id, total, max).to_string().into_bytes();
                        error.push(b'\n');
                        into.write_all(&error).await
                    }
                    None => {
                        tracing::warn!(bytes = total, "an MCP server's message over the line limit was dropped");
                        Ok(())
                    }
                }
            };
            if written.is_err() {
                break;
            }
            line.clear();
            total = 0;
        }
    });
    out
}

fn too_large(id: Value, bytes: usize, max: usize) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": TOO_LARGE, "message": format!(
        "the server's answer is too large: {} MiB or more, over the {} MiB a message may have",
        bytes >> 20, max >> 20
    )}})
}

/// The top-level id of a message seen only by its first and last bytes:
/// right after `"jsonrpc"` at the start (rmcp, the Python SDK) or as the
/// last member (the TypeScript SDK writes `{"result": …, "jsonrpc": "2.0",
/// "id": 7}`). An `"id"` nested in the result is never taken.
fn answered_id(head: &[u8], tail: &[u8]) -> Option<Value> {
    // At the start: `{"jsonrpc":"2.0","id":…` or `{"id":…`, before any
    // `result` or `error` member.
    if let Some(at) = find(head, b"\"id\"") {
        let before = &head[..at];
        if find(before, b"\"result\"").is_none()
            && find(before, b"\"error\"").is_none()
            && let Some((id, _)) = value_after_colon(&head[at + 4..])
        {
            return Some(id);
        }
    }
    // At the end: `,"id":…}` and nothing after but the closing brace.
    let at = rfind(tail, b"\"id\"")?;
    let (id, rest) = value_after_colon(&tail[at + 4..])?;
    let rest = String::from_utf8_lossy(rest);
    (rest.trim() == "}").then_some(id)
}

/// A number or string after optional whitespace and a colon, and what follows it.
fn value_after_colon(bytes: &[u8]) -> Option<(Value, &[u8])> {
    let trimmed = bytes.trim_ascii_start().strip_prefix(b":")?.trim_ascii_start();
    let mut values = serde_json::Deserializer::from_slice(trimmed).into_iter::<Value>();
    let id = values.next()?.ok()?;
    let used = values.byte_offset();
    matches!(id, Value::Number(_) | Value::String(_)).then(|| (id, &trimmed[used..]))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn the_id_is_found_at_either_end_and_never_inside_the_result() {
        let rmcp_style = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx"#;
        assert_eq!(answered_id(rmcp_style, b"xx\"}]}}"), Some(json!(7)));
        let ts_style_tail = br#"xxxx"}]},"jsonrpc":"2.0","id":"req-9"}"#;
        assert_eq!(
            answered_id(br#"{"result":{"content":[{"type":"text","text":"xx"#, ts_style_tail),
            Some(json!("req-9"))
        );
        // An "id" inside the result, at either end, is not the message's.
        assert_eq!(answered_id(br#"{"result":{"id":3,"x":"xx"#, br#"xx","id":4}}"#), None);
    }

    #[tokio::test]
    async fn an_oversized_answer_becomes_an_error_for_its_request_and_the_rest_pass() {
        let (mut server, child_stdout) = tokio::io::duplex(1 << 16);
        let mut out = relay(child_stdout, 1000);
        tokio::spawn(async move {
            server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
            let big = format!("{{\"result\":{{\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":2}}\n", "x".repeat(100_000));
            server.write_all(big.as_bytes()).await.unwrap();
            server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n").await.unwrap();
        });
        let mut text = String::new();
        out.read_to_string(&mut text).await.unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[1]["id"], 2);
        assert_eq!(lines[1]["error"]["code"], TOO_LARGE);
        assert!(lines[1]["error"]["message"].as_str().unwrap().contains("too large"), "{}", lines[1]);
        assert_eq!(lines[2]["id"], 3);
    }
}
