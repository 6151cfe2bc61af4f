//! A command server's process as the client reads it: its standard output
//! through the oversize relay and a scanner for task-only tools, the child
//! it owns, and the environment it starts with.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde_json::Value;

use super::{INHERITED_ENV, MAX_LIST_BYTES};

/// A child server's standard output, as rmcp reads it, with an eye on the
/// `tools/list` answers going by: rmcp's `Tool` drops `execution`, so the
/// tools that run only as MCP tasks are picked out of the raw lines here.
/// It owns the child, which is killed when rmcp drops the transport.
pub(super) struct ChildOut {
    /// The child's stdout, through the relay that answers oversized lines.
    stdout: tokio::io::DuplexStream,
    child: Option<tokio::process::Child>,
    scanner: TaskScanner,
}

impl ChildOut {
    pub(super) fn new(
        stdout: tokio::io::DuplexStream,
        child: tokio::process::Child,
        task_only: Arc<Mutex<HashSet<String>>>,
    ) -> Self {
        ChildOut { stdout, child: Some(child), scanner: TaskScanner::new(task_only) }
    }
}

/// Picks the tools that require tasks out of newline-delimited JSON-RPC
/// messages, fed in whatever pieces they arrive.
struct TaskScanner {
    /// The line read so far, up to [`MAX_LIST_BYTES`]; a longer line is
    /// not a tool list toolreg would accept, and is not kept.
    line: Vec<u8>,
    overflow: bool,
    task_only: Arc<Mutex<HashSet<String>>>,
}

impl TaskScanner {
    fn new(task_only: Arc<Mutex<HashSet<String>>>) -> Self {
        TaskScanner { line: Vec::new(), overflow: false, task_only }
    }

    fn scan(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            if !self.overflow {
                if self.line.len() + chunk.len() > MAX_LIST_BYTES {
                    self.overflow = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            if chunk.ends_with(b"\n") {
                if !self.overflow && contains(&self.line, b"\"taskSupport\"") {
                    self.note_task_only();
                }
                self.overflow = false;
                // Keep a small buffer for the next line, not a large one.
                if self.line.capacity() > 64 * 1024 {
                    self.line = Vec::new();
                }
                self.line.clear();
            }
        }
    }

    /// Record the tools of a `tools/list` page that require tasks.
    fn note_task_only(&self) {
        let Ok(message) = serde_json::from_slice::<Value>(&self.line) else { return };
        let Some(tools) = message.pointer("/result/tools").and_then(Value::as_array) else { return };
        let mut task_only = self.task_only.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in tools {
            let required = tool.pointer("/execution/taskSupport").and_then(Value::as_str) == Some("required");
            if let (true, Some(name)) = (required, tool.get("name").and_then(Value::as_str)) {
                task_only.insert(name.to_owned());
            }
        }
    }
}

impl tokio::io::AsyncRead for ChildOut {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stdout).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            this.scanner.scan(&buf.filled()[before..]);
        }
        polled
    }
}

impl Drop for ChildOut {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        // Kill and wait, so no zombie is left; without a runtime, the
        // child's own kill-on-drop still kills it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = child.kill().await;
            });
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// The part of toolreg's environment a command server inherits.
pub(super) fn inherited_env() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(key, value)| {
        let key = key.into_string().ok()?;
        let wanted = INHERITED_ENV.contains(&key.as_str()) || (cfg!(not(windows)) && key.starts_with("LC_"));
        Some((key, value.into_string().ok()?)).filter(|_| wanted)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_only_tools_are_found_in_lines_split_anywhere() {
        let found = Arc::new(Mutex::new(HashSet::new()));
        let mut scanner = TaskScanner::new(Arc::clone(&found));
        let page = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "plain", "inputSchema": {"type": "object"}},
            {"name": "maybe", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
            {"name": "only", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
        ]}});
        let text = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n{page}\n");
        // One byte at a time: every line boundary falls inside some piece.
        for byte in text.as_bytes() {
            scanner.scan(std::slice::from_ref(byte));
        }
        assert_eq!(*found.lock().unwrap(), HashSet::from(["only".to_owned()]));

        // A line past the bound is not kept, and the next line is read whole.
        let mut scanner = TaskScanner::new(Arc::clone(&found));
        found.lock().unwrap().clear();
        scanner.scan(&vec![b' '; MAX_LIST_BYTES + 1]);
        assert!(scanner.line.is_empty() && scanner.overflow);
        scanner.scan(b"\n");
        scanner.scan(format!("{page}\n").as_bytes());
        assert_eq!(*found.lock().unwrap(), HashSet::from(["only".to_owned()]));
    }
}
