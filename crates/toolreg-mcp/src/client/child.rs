//! A command server's process as the client reads it: its standard output
//! through the oversize relay and a scanner for task-only tools, the child
//! it owns and ends, and the environment it starts with.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;
use toolreg::TaskSupport;

use super::{INHERITED_ENV, MAX_LIST_BYTES};

/// A child server's standard output, as rmcp reads it, with an eye on the
/// `tools/list` answers going by: rmcp's `Tool` drops `execution`, so each
/// tool's task support (the tasks extension) is picked out of the raw lines
/// here, for the gateway to serve it on.
/// It owns the child, which is ended ([`shut_down`]) when rmcp drops the
/// transport.
pub(super) struct ChildOut {
    /// The child's stdout, through the relay that answers oversized lines.
    stdout: tokio::io::DuplexStream,
    child: Option<tokio::process::Child>,
    scanner: TaskScanner,
    /// Told once the child has exited.
    exited: Option<tokio::sync::oneshot::Sender<()>>,
}

impl ChildOut {
    /// The reader, and what hears that the child has exited once it ends.
    pub(super) fn new(
        stdout: tokio::io::DuplexStream,
        child: tokio::process::Child,
        task_support: Arc<Mutex<HashMap<String, TaskSupport>>>,
    ) -> (Self, tokio::sync::oneshot::Receiver<()>) {
        let (exited, heard) = tokio::sync::oneshot::channel();
        let out =
            ChildOut { stdout, child: Some(child), scanner: TaskScanner::new(task_support), exited: Some(exited) };
        (out, heard)
    }
}

/// How long a child server has to exit on its own once its input is closed,
/// and then again after SIGTERM, before it is killed.
pub(super) const EXIT_GRACE: Duration = Duration::from_secs(2);

/// End a child server as the MCP stdio transport asks: its input is closed
/// (with the transport that held it), it gets [`EXIT_GRACE`] to exit, then
/// SIGTERM and [`EXIT_GRACE`] again, then SIGKILL; and it is reaped. A server
/// that flushes or saves something on the way out gets to.
async fn shut_down(mut child: tokio::process::Child) {
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
        return;
    }
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        use nix::sys::signal::{Signal, kill};
        let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}

/// Picks the tools' task support out of newline-delimited JSON-RPC
/// messages, fed in whatever pieces they arrive.
struct TaskScanner {
    /// The line read so far, up to [`MAX_LIST_BYTES`]; a longer line is
    /// not a tool list toolreg would accept, and is not kept.
    line: Vec<u8>,
    overflow: bool,
    task_support: Arc<Mutex<HashMap<String, TaskSupport>>>,
}

impl TaskScanner {
    fn new(task_support: Arc<Mutex<HashMap<String, TaskSupport>>>) -> Self {
        TaskScanner { line: Vec::new(), overflow: false, task_support }
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
                    self.note_task_support();
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

    /// Record the task support of the tools of a `tools/list` page.
    fn note_task_support(&self) {
        let Ok(message) = serde_json::from_slice::<Value>(&self.line) else { return };
        let Some(tools) = message.pointer("/result/tools").and_then(Value::as_array) else { return };
        let mut found = self.task_support.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in tools {
            let support = match tool.pointer("/execution/taskSupport").and_then(Value::as_str) {
                Some("required") => TaskSupport::Required,
                Some("optional") => TaskSupport::Optional,
                Some("forbidden") => TaskSupport::Forbidden,
                _ => continue,
            };
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                found.insert(name.to_owned(), support);
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
        let Some(child) = self.child.take() else { return };
        let exited = self.exited.take();
        // Without a runtime, the child's own kill-on-drop kills it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                shut_down(child).await;
                if let Some(exited) = exited {
                    let _ = exited.send(());
                }
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
        let found = Arc::new(Mutex::new(HashMap::new()));
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
        let both =
            HashMap::from([("only".to_owned(), TaskSupport::Required), ("maybe".to_owned(), TaskSupport::Optional)]);
        assert_eq!(*found.lock().unwrap(), both);

        // A line past the bound is not kept, and the next line is read whole.
        let mut scanner = TaskScanner::new(Arc::clone(&found));
        found.lock().unwrap().clear();
        scanner.scan(&vec![b' '; MAX_LIST_BYTES + 1]);
        assert!(scanner.line.is_empty() && scanner.overflow);
        scanner.scan(b"\n");
        scanner.scan(format!("{page}\n").as_bytes());
        assert_eq!(*found.lock().unwrap(), both);
    }
}
