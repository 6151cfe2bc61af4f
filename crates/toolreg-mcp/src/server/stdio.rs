//! The stdio transport: newline-delimited JSON-RPC on a reader and a writer.
//!
//! rmcp's own stream transport drops a line it cannot parse and an
//! oversized line without a word. This one answers each, as JSON-RPC asks:
//! text that is not JSON gets a parse error (-32700), JSON that is not a
//! message an invalid-request error (-32600), a line over the size limit an
//! invalid-request error that names the limit — and goes on serving. It
//! also writes through one task that batches whatever responses are ready
//! into one write and one flush, which is what keeps many requests in
//! flight cheap.

use std::future::Future;
use std::io;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Answers waiting to be written before the server stops reading more.
const OUTPUT_QUEUE: usize = 1024;

/// Limits of the stdio transport.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The longest message read, in bytes; a longer line is answered with an
    /// error and skipped.
    pub max_message_bytes: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions { max_message_bytes: 4 * 1024 * 1024 }
    }
}

impl StdioOptions {
    /// Set the longest message read.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1);
        self
    }
}

/// The transport: a bounded line reader and a batching writer task.
pub(crate) struct LineTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    out: Option<mpsc::Sender<Vec<u8>>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(read: R, write: W, options: StdioOptions) -> Self {
        // Bounded: a client that stops reading slows the server down instead
        // of making it hold every answer in memory.
        let (out, queue) = mpsc::channel(OUTPUT_QUEUE);
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            max: options.max_message_bytes,
            discarding: false,
            out: Some(out),
            writer: Some(tokio::spawn(write_all(write, queue))),
        }
    }

    /// Answer a line that was not a message. The future holds only the
    /// sender, so `receive` stays `Send` whatever the reader is.
    fn answer(&self, message: Value) -> impl Future<Output = ()> + Send + 'static {
        let out = self.out.clone();
        async move {
            if let Some(out) = out {
                let mut bytes = message.to_string().into_bytes();
                bytes.push(b'\n');
                let _ = out.send(bytes).await;
            }
        }
    }

    /// Read one line into `self.line`, never holding more than `max` bytes.
    /// `Ok(true)`: a line; `Ok(false)`: end of input; an oversized line is
    /// answered here and skipped. Cancel-safe: a partly read line stays in
    /// `self.line` (the caller clears it once it has used it).
    async fn read_line(&mut self) -> io::Result<bool> {
        loop {
            let buffer = self.read.fill_buf().await?;
            if buffer.is_empty() {
                // End of input: a last line without a newline still counts.
                return Ok(!self.line.is_empty() && !self.discarding);
            }
            let (chunk, found) = match memchr(buffer) {
                Some(at) => (&buffer[..at], true),
                None => (buffer, false),
            };
            let used = chunk.len() + usize::from(found);
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max {
                    self.discarding = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.read.consume(used);
            if found {
                if self.discarding {
                    self.discarding = false;
                    let max = self.max;
                    self.answer(error(Value::Null, -32600, format!("message too large: the limit is {max} bytes")))
                        .await;
                    continue;
                }
                return Ok(true);
            }
        }
    }
}

fn memchr(buffer: &[u8]) -> Option<usize> {
    buffer.iter().position(|&b| b == b'\n')
}

fn error(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Write every queued message; batch what is ready into one flush.
async fn write_all<W: AsyncWrite + Unpin>(write: W, mut queue: mpsc::Receiver<Vec<u8>>) -> io::Result<()> {
    let mut write = tokio::io::BufWriter::with_capacity(64 * 1024, write);
    while let Some(first) = queue.recv().await {
        write.write_all(&first).await?;
        while let Ok(next) = queue.try_recv() {
            write.write_all(&next).await?;
        }
        write.flush().await?;
    }
    write.flush().await?;
    write.shutdown().await.or(Ok(()))
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for LineTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let out = self.out.clone();
        let bytes = serde_json::to_vec(&item);
        async move {
            let out = out.ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "the transport is closed"))?;
            let mut bytes = bytes.map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
            bytes.push(b'\n');
            out.send(bytes).await.map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed"))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    tracing::error!(%error, "reading the MCP input failed");
                    return None;
                }
            }
            let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
            let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                self.line.clear();
                continue;
            }
            let parsed = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line);
            match parsed {
                Ok(message) => {
                    self.line.clear();
                    return Some(message);
                }
                Err(parse) => {
                    let reply = match serde_json::from_slice::<Value>(line) {
                        Err(_) => Some(error(Value::Null, -32700, format!("parse error: {parse}"))),
                        // A notification gets no answer, even a malformed one.
                        Ok(value) if value.get("id").is_none() && value.get("method").is_some() => None,
                        Ok(value) => {
                            let id = match value.get("id") {
                                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                                _ => Value::Null,
                            };
                            Some(error(id, -32600, format!("invalid request: {parse}")))
                        }
                    };
                    self.line.clear();
                    if let Some(reply) = reply {
                        tracing::debug!(error = %parse, "unreadable MCP message answered");
                        self.answer(reply).await;
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        drop(self.out.take());
        match self.writer.take() {
            Some(writer) => writer.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}
