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
//!
//! Memory is bounded for a client that sends faster than it reads, or never
//! reads at all. rmcp runs every request in a task of its own and hands each
//! answer to [`Transport::send`] without waiting for the one before, so the
//! bound has to come from here, in two parts:
//! - at most [`StdioOptions::max_in_flight`] requests are being worked on;
//!   one past that is answered at once with a "server busy" error (-32000)
//!   instead of being started. Pausing the reader instead would deadlock a
//!   server whose calls wait for the client's answer to an elicitation;
//! - answers waiting to be written hold at most
//!   [`StdioOptions::max_output_bytes`]; past that, `send` waits, and the
//!   reader waits with it when it has something to answer.
//!
//! So the answers held at any time are those of the requests in flight, and
//! no more than that.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

/// The JSON-RPC code of the answer to a request past the in-flight limit.
pub const SERVER_BUSY: i64 = -32000;

/// Limits of the stdio transport.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The longest message read, in bytes (4 MiB); a longer line is answered
    /// with an error and skipped.
    pub max_message_bytes: usize,
    /// Requests worked on at once (256); one more is answered with a
    /// [`SERVER_BUSY`] error and not started. Together with
    /// `max_output_bytes` this bounds the answers the server holds.
    pub max_in_flight: usize,
    /// Bytes of answers waiting to be written (8 MiB); past that, answers
    /// wait to be queued until the client reads. One answer larger than this
    /// is written alone.
    pub max_output_bytes: usize,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions { max_message_bytes: 4 * 1024 * 1024, max_in_flight: 256, max_output_bytes: 8 * 1024 * 1024 }
    }
}

impl StdioOptions {
    /// Set the longest message read.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes.max(1);
        self
    }

    /// Set how many requests are worked on at once.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = requests.max(1);
        self
    }

    /// Set how many bytes of answers may wait to be written.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes.clamp(1, Semaphore::MAX_PERMITS);
        self
    }
}

/// One message for the writer, holding its share of the output budget
/// until it is written.
type Queued = (Vec<u8>, OwnedSemaphorePermit);

/// The output queue: a channel whose capacity is counted in bytes.
#[derive(Clone)]
struct Output {
    tx: mpsc::UnboundedSender<Queued>,
    budget: Arc<Semaphore>,
    max: usize,
}

impl Output {
    async fn send(&self, bytes: Vec<u8>) -> io::Result<()> {
        let closed = || io::Error::new(io::ErrorKind::BrokenPipe, "the output is closed");
        // A message larger than the whole budget takes all of it: it waits
        // for the queue to empty and is then written alone.
        let cost = u32::try_from(bytes.len().clamp(1, self.max)).unwrap_or(u32::MAX);
        let permit = Arc::clone(&self.budget).acquire_many_owned(cost).await.map_err(|_| closed())?;
        self.tx.send((bytes, permit)).map_err(|_| closed())
    }
}

/// The transport: a bounded line reader and a batching writer task.
pub(crate) struct LineTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    /// The ids of requests read and not yet answered (or cancelled).
    in_flight: Arc<Mutex<HashSet<RequestId>>>,
    max_in_flight: usize,
    out: Option<Output>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(read: R, write: W, options: StdioOptions) -> Self {
        // Bounded in bytes: a client that stops reading slows the server
        // down instead of making it hold every answer in memory.
        let (tx, queue) = mpsc::unbounded_channel();
        let max = options.max_output_bytes.clamp(1, Semaphore::MAX_PERMITS);
        let out = Output { tx, budget: Arc::new(Semaphore::new(max)), max };
        LineTransport {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            max: options.max_message_bytes,
            discarding: false,
            in_flight: Arc::default(),
            max_in_flight: options.max_in_flight.max(1),
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

    /// Count a request in, or answer why it is not started. A cancellation
    /// frees its request's place: rmcp writes no answer for it.
    fn admit(&self, message: &RxJsonRpcMessage<RoleServer>) -> Option<Value> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        match message {
            JsonRpcMessage::Request(request) => {
                if in_flight.len() >= self.max_in_flight && !in_flight.contains(&request.id) {
                    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
                    let max = self.max_in_flight;
                    return Some(error(
                        id,
                        SERVER_BUSY,
                        format!(
                            "server busy: {max} requests are in flight, the limit; send this one again when one is answered"
                        ),
                    ));
                }
                in_flight.insert(request.id.clone());
            }
            JsonRpcMessage::Notification(notification) => {
                if let rmcp::model::ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    in_flight.remove(id);
                }
            }
            _ => {}
        }
        None
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

/// Write every queued message; batch what is ready into one flush. A
/// message's share of the output budget is released once it is written.
async fn write_all<W: AsyncWrite + Unpin>(write: W, mut queue: mpsc::UnboundedReceiver<Queued>) -> io::Result<()> {
    let mut write = tokio::io::BufWriter::with_capacity(64 * 1024, write);
    while let Some((first, _permit)) = queue.recv().await {
        write.write_all(&first).await?;
        drop(first);
        while let Ok((next, _permit)) = queue.try_recv() {
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
        // A request stays in flight until its answer is queued: rmcp hands
        // answers over without waiting, so one waiting here still holds memory.
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        let in_flight = Arc::clone(&self.in_flight);
        let out = self.out.clone();
        let bytes = serde_json::to_vec(&item);
        drop(item);
        async move {
            let sent = async {
                let out = out.ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "the transport is closed"))?;
                let mut bytes = bytes.map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
                bytes.push(b'\n');
                out.send(bytes).await
            }
            .await;
            if let Some(id) = answered {
                in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            }
            sent
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
                    if let Some(busy) = self.admit(&message) {
                        self.answer(busy).await;
                        continue;
                    }
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
