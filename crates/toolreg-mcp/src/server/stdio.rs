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
//! bound has to come from here, in three parts:
//! - at most [`StdioOptions::max_in_flight`] requests are being worked on;
//!   those read past that wait, not started, for a place — up to as many
//!   again — and past those the transport reads no more input until a place
//!   frees: the pipe then holds the client back, and every request is
//!   answered in its turn. Reading goes on while requests wait, so that a
//!   client can still cancel a call or answer the server;
//! - while the server waits for the client's answer (an elicitation), input
//!   is read whatever is waiting, since that answer may be next in the pipe;
//!   a request read then with every place and the queue taken is answered
//!   at once with a "server busy" error (-32000) rather than held;
//! - answers waiting to be written hold at most
//!   [`StdioOptions::max_output_bytes`]; past that, `send` waits, and the
//!   reader waits with it when it has something to answer.
//!
//! So the requests held at any time are at most twice `max_in_flight`, and
//! the answers held those of the requests in flight.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The JSON-RPC code of the answer to a request that can be neither started
/// nor queued while the server waits for the client (see the module docs).
pub const SERVER_BUSY: i64 = -32000;

/// Limits of the stdio transport.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The longest message read, in bytes (4 MiB); a longer line is answered
    /// with an error and skipped.
    pub max_message_bytes: usize,
    /// Requests worked on at once (256). As many more wait, not started, for
    /// a place; past those no more input is read until a place frees.
    /// Together with `max_output_bytes` this bounds the memory the server
    /// holds for one client.
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

/// The requests being worked on, and the server's own requests waiting for
/// the client's answer; shared with the futures [`Transport::send`] returns.
#[derive(Default)]
struct Flight {
    state: Mutex<FlightState>,
    /// Woken when a place frees or the server starts waiting for the client.
    changed: Notify,
}

#[derive(Default)]
struct FlightState {
    /// The ids of requests started and not yet answered (or cancelled).
    working: HashSet<RequestId>,
    /// The ids of the server's requests the client has not answered.
    asking: HashSet<RequestId>,
}

impl Flight {
    fn lock(&self) -> std::sync::MutexGuard<'_, FlightState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take a place for `id`, if one is free (an id already working has one).
    fn start(&self, id: &RequestId, max: usize) -> bool {
        let mut state = self.lock();
        if state.working.len() >= max && !state.working.contains(id) {
            return false;
        }
        state.working.insert(id.clone());
        true
    }

    /// Free `id`'s place (answered, or cancelled: rmcp writes no answer then).
    fn finish(&self, id: &RequestId) {
        if self.lock().working.remove(id) {
            self.changed.notify_one();
        }
    }

    fn has_place(&self, max: usize) -> bool {
        self.lock().working.len() < max
    }

    fn waiting_for_client(&self) -> bool {
        !self.lock().asking.is_empty()
    }
}

/// The transport: a bounded line reader and a batching writer task.
pub(crate) struct LineTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    flight: Arc<Flight>,
    max_in_flight: usize,
    /// Requests read while every place was taken, in the order read; at most
    /// `max_in_flight` of them.
    queued: VecDeque<RxJsonRpcMessage<RoleServer>>,
    /// The input has ended (or failed): nothing more will be read.
    ended: bool,
    /// Cancelled when the input ends, to end what waits on the client.
    input_closed: CancellationToken,
    out: Option<Output>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(
        read: R,
        write: W,
        options: StdioOptions,
        input_closed: CancellationToken,
    ) -> Self {
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
            flight: Arc::default(),
            max_in_flight: options.max_in_flight.max(1),
            queued: VecDeque::new(),
            ended: false,
            input_closed,
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

    /// The first queued request, when a place has freed for it.
    fn next_queued(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let Some(JsonRpcMessage::Request(request)) = self.queued.front() else { return None };
        if !self.flight.start(&request.id, self.max_in_flight) {
            return None;
        }
        self.queued.pop_front()
    }

    /// Whether to read no more input for now: every place and the queue
    /// are taken, and the server waits for nothing from the client.
    fn paused(&self) -> bool {
        self.queued.len() >= self.max_in_flight
            && !self.flight.has_place(self.max_in_flight)
            && !self.flight.waiting_for_client()
    }

    /// Start `message`, queue it, or say why neither is possible (the
    /// answer to send instead). What is not a request passes at once.
    fn admit(&mut self, message: RxJsonRpcMessage<RoleServer>) -> Result<Option<RxJsonRpcMessage<RoleServer>>, Value> {
        match &message {
            JsonRpcMessage::Request(request) => {
                if self.queued.is_empty() && self.flight.start(&request.id, self.max_in_flight) {
                    return Ok(Some(message));
                }
                if self.queued.len() < self.max_in_flight {
                    self.queued.push_back(message);
                    return Ok(None);
                }
                let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
                let max = self.max_in_flight;
                Err(error(
                    id,
                    SERVER_BUSY,
                    format!(
                        "server busy: {max} requests are in flight and {max} more wait, the limit, while the \
                         server waits for your answer; send this one again when one is answered"
                    ),
                ))
            }
            JsonRpcMessage::Notification(notification) => {
                if let rmcp::model::ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.flight.finish(id);
                    // A request cancelled before it started is never started.
                    self.queued.retain(|queued| !matches!(queued, JsonRpcMessage::Request(r) if &r.id == id));
                }
                Ok(Some(message))
            }
            JsonRpcMessage::Response(response) => {
                self.flight.lock().asking.remove(&response.id);
                Ok(Some(message))
            }
            JsonRpcMessage::Error(answer) => {
                if let Some(id) = &answer.id {
                    self.flight.lock().asking.remove(id);
                }
                Ok(Some(message))
            }
        }
    }

    /// The input has ended: what waits on the client ends too.
    fn end_input(&mut self) {
        self.ended = true;
        self.input_closed.cancel();
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
            JsonRpcMessage::Request(request) => {
                // The server now waits for the client: the reader reads on.
                self.flight.lock().asking.insert(request.id.clone());
                self.flight.changed.notify_one();
                None
            }
            JsonRpcMessage::Notification(_) => None,
        };
        let flight = Arc::clone(&self.flight);
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
                flight.finish(&id);
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancel-safe (rmcp drops this future whenever it has something to
        // send): every wait is on a notification or on `read_line`, and what
        // was read is kept in `self` before the next wait.
        loop {
            if let Some(request) = self.next_queued() {
                return Some(request);
            }
            if self.ended || self.paused() {
                if self.ended && self.queued.is_empty() {
                    return None;
                }
                // A change since the checks above left a permit: no wake-up is lost.
                self.flight.changed.notified().await;
                continue;
            }
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => {
                    self.end_input();
                    continue;
                }
                Err(error) => {
                    tracing::error!(%error, "reading the MCP input failed");
                    self.end_input();
                    continue;
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
                    match self.admit(message) {
                        Ok(Some(message)) => return Some(message),
                        Ok(None) => {}
                        Err(busy) => self.answer(busy).await,
                    }
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
        self.input_closed.cancel();
        drop(self.out.take());
        match self.writer.take() {
            Some(writer) => writer.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}
