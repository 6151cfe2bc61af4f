//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a
//! long-running tool answers `tools/call` at once with a task the client
//! polls, instead of holding the request open for minutes.
//!
//! A tool runs as a task when its declaration says it may
//! ([`ToolDeclaration::task_support`](toolreg::ToolDeclaration::task_support):
//! `Optional` or `Required`), the server was given [`TaskOptions`]
//! ([`ServerOptions::tasks`](super::ServerOptions::tasks)), and the request
//! declared the extension (at `initialize`, or in the request's own
//! `_meta`). A `Required` tool called by a client without the extension is
//! refused with `-32021` (Missing Required Client Capability); an `Optional`
//! one runs as an ordinary call.
//!
//! Task state lives in the context store ([`TaskOptions::namespace`], SQLite
//! or PostgreSQL), so a task started through one `--http --stateless`
//! replica is polled and cancelled through any other that shares the store.
//! Per task, under `task/<id>`:
//!
//! - `task/<id>`: written once when the task is created (tool, times, TTL);
//! - `task/<id>/beat`: the runner's heartbeat with the tool's latest
//!   progress message, looked at every [`TaskOptions::heartbeat`] and
//!   rewritten when the message changed or a quarter of the lease has
//!   passed (the store keeps every version, so not at every tick);
//! - `task/<id>/end`: the outcome, written with the store's atomic `create`,
//!   so exactly one of the runner (completed, failed), `tasks/cancel`
//!   (cancelled) and a poller that finds the runner gone (failed) decides it,
//!   whichever comes first, on whatever replica;
//! - `task/<id>/ask` and `task/<id>/answers`: the questions of a task waiting
//!   for its client (`input_required`) and the answers `tasks/update` brought.
//!
//! A runner that dies with its process stops beating. A `tasks/get` that
//! finds no outcome and a heartbeat older than [`TaskOptions::lease`] ends
//! the task as failed, saying the server running it stopped: a lease, rather
//! than an owner registry, because it needs nothing but the store and works
//! for any number of replicas that come and go. It compares wall clocks of
//! different hosts, so the lease must exceed their skew (the default, 30 s,
//! does for hosts kept in time by NTP). A task whose heartbeat names this
//! very process but which no longer runs here is failed at once.
//!
//! Cancellation: `tasks/cancel` writes the outcome `cancelled` and cancels
//! the call's token when the task runs on this process; a runner elsewhere
//! sees the outcome at its next heartbeat and cancels its own call, which
//! the tool sees through [`CallContext::cancelled`](toolreg::CallContext::cancelled).
//!
//! A tool that asks its client a question ([`InputRound::ask`], as a
//! 2026-07-28 tool does) parks the task in `input_required` with the
//! questions as `inputRequests`; once `tasks/update` has brought an answer
//! to every one, the tool runs again with them (the same round-by-round
//! model as a Multi Round-Trip Request).
//!
//! Ownership: every task belongs to the session that created it (its
//! `TaskOwner`, kept in the task's record so that any replica can check
//! it): the connection for stdio and any other byte stream, the MCP session
//! (`Mcp-Session-Id`) for streamable HTTP with sessions. To every other
//! session the task does not exist: `tasks/get`, `tasks/cancel` and
//! `tasks/update` answer exactly as for an id never handed out, so an id
//! seen elsewhere (it is also the call id in the audit trail) tells nothing
//! and reaches nothing. A request with no session (stateless HTTP, and the
//! 2026-07-28 revision over HTTP, which has no sessions) makes tasks owned by
//! no session, which only such requests see; there the task id (128 random
//! bits, given only to its creator) is the only key — unless the server
//! knows who is asking: over HTTP with access tokens
//! ([`OAuth`](super::OAuth)), a task belongs to its principal as well as to
//! its session (or to no session), so another principal neither sees it nor
//! reaches it with the id, sessions or not.
//!
//! A session's tasks end with it: when a connection closes, or an HTTP
//! session is deleted or expires, the tasks it started on this process are
//! cancelled and their slots freed.
//!
//! Bounds: at most [`TaskOptions::max_live`] tasks run on one process, and
//! at most [`TaskOptions::max_per_session`] of them for one session (and for
//! one principal, over all its sessions, when the server knows principals), so that
//! one client cannot take every slot (more are refused); a result over
//! [`TaskOptions::max_result_bytes`] ends the task as failed (`-32603`, as
//! an oversized answer of a child server is); task ids are 32 lowercase hex
//! characters (128 random bits), and anything else is refused before the
//! store is asked; a task is forgotten after its TTL
//! ([`TaskOptions::ttl`]): when next asked for, or, once it has ended, by
//! the sweep each new task makes over the next few dozen keys (so ended
//! tasks nobody polls again do not pile up). A task forgotten while it
//! still runs (the specification lets a receiver drop a task after its TTL
//! whatever its status) is cancelled: at once on this process, at the next
//! heartbeat on another replica; what its runner writes afterwards is
//! removed by the runner or by the sweep. The store's namespace quotas
//! bound the rest.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ClientCapabilities, CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, InputRequests,
    InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolreg::{
    CallOptions, Checkpoints, Extensions, Principal, ProgressReporter, ToolCall, ToolEngine, ToolError, ToolExecutor,
};
use toolreg_store::{StoreError, now_ms};

use super::result::to_call_tool_result;
use crate::protocol::InputRound;

mod id;
mod options;
mod runner;

pub use id::{TASK_ID_LEN, is_task_id};
use id::{check_id, random_hex};
pub use options::TaskOptions;

/// The record written when a task is created.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    tool: String,
    created_at: String,
    created_ms: i64,
    ttl_ms: u64,
    /// Who may see the task (a record written before tasks had owners is
    /// owned by no session).
    #[serde(default)]
    owner: TaskOwner,
}

/// Who a task belongs to: the session that created it. Compared whole, so
/// that a principal (who is asking, beyond the session) can join it later
/// and narrow every check at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskOwner {
    /// The session: `stream:<random>` for a connection, `http:<SHA-256 of
    /// the Mcp-Session-Id>` for an HTTP session (the id itself is a
    /// credential and is not stored); `None` for a request with no session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    /// Who started it, when the server knows ([`Principal::identity`]):
    /// another principal in the same session (or with no session) does not
    /// see it either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    principal: Option<String>,
}

impl TaskOwner {
    /// The owner for requests without a session.
    pub(super) fn none() -> TaskOwner {
        TaskOwner { session: None, principal: None }
    }

    /// The owner for the requests of one connection (stdio, any stream).
    fn stream() -> TaskOwner {
        TaskOwner { session: Some(format!("stream:{}", random_hex(16))), principal: None }
    }

    /// The owner for the requests of one HTTP session.
    fn http_session(id: &str) -> TaskOwner {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("mcp-session-id:{id}").as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        TaskOwner { session: Some(format!("http:{hex}")), principal: None }
    }

    /// Whether this owner is a session (which ends, and has a share of the slots).
    fn is_session(&self) -> bool {
        self.session.is_some()
    }
}

/// One connection's part in the tasks: who its requests are (a stream's
/// owner, made when it opened), and the owners its requests started tasks
/// for, whose tasks are cancelled when the connection goes (a closed
/// stream, a deleted or expired HTTP session: rmcp drops the connection's
/// server then).
pub(super) struct Connection {
    /// The owner of a stream's requests.
    stream: TaskOwner,
    tasks: Option<std::sync::Weak<Tasks>>,
    started: Mutex<Vec<TaskOwner>>,
}

impl Connection {
    pub(super) fn new(tasks: Option<&Arc<Tasks>>) -> Connection {
        Connection { stream: TaskOwner::stream(), tasks: tasks.map(Arc::downgrade), started: Mutex::default() }
    }

    /// The owner of a request on this connection: over HTTP, its session
    /// (none: no session) and the principal its token names; else the
    /// connection itself.
    fn owner(&self, context: &rmcp::service::RequestContext<rmcp::RoleServer>) -> TaskOwner {
        let Some(parts) = context.extensions.get::<http::request::Parts>() else { return self.stream.clone() };
        let mut owner = match parts.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            Some(id) if !id.is_empty() => TaskOwner::http_session(id),
            _ => TaskOwner::none(),
        };
        owner.principal = parts.extensions.get::<Arc<Principal>>().map(|principal| principal.identity());
        owner
    }

    /// The owner of a request on this connection, remembered as one whose
    /// tasks end with the connection.
    pub(in crate::server) fn owner_of(&self, context: &rmcp::service::RequestContext<rmcp::RoleServer>) -> TaskOwner {
        let owner = self.owner(context);
        if owner.is_session() {
            let mut started = self.started.lock().unwrap_or_else(PoisonError::into_inner);
            // One owner per connection in practice (its stream, or its HTTP
            // session); the bound keeps a client that varies its header
            // from growing the list.
            if !started.contains(&owner) && started.len() < 16 {
                started.push(owner.clone());
            }
        }
        owner
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let Some(tasks) = self.tasks.as_ref().and_then(std::sync::Weak::upgrade) else { return };
        for owner in self.started.get_mut().unwrap_or_else(PoisonError::into_inner).drain(..) {
            tasks.end_session(&owner);
        }
    }
}

/// A runner's heartbeat.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Beat {
    at: String,
    at_ms: i64,
    /// The process running the task.
    owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

/// A task's outcome (written once).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct End {
    status: TaskStatus,
    at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<JsonObject>,
}

/// The questions a task waits on, round by round.
#[derive(Serialize, Deserialize)]
struct Ask {
    round: u64,
    requests: InputRequests,
}

/// The answers `tasks/update` brought for one round.
#[derive(Serialize, Deserialize)]
struct Answers {
    round: u64,
    responses: InputResponses,
}

/// A task running on this process.
struct Live {
    /// Whose task it is (its slot counts against that session's share).
    owner: TaskOwner,
    cancel: CancellationToken,
    /// The tool's latest progress, as a status message.
    message: Arc<Mutex<Option<String>>>,
    /// Woken by a `tasks/update` on this process.
    answered: Arc<Notify>,
}

/// The tasks of one server (every connection shares them).
pub(super) struct Tasks {
    options: TaskOptions,
    /// This process, as heartbeats name it.
    process: String,
    live: Mutex<HashMap<String, Live>>,
    /// Where the next sweep for expired tasks goes on in the store's keys.
    sweep_from: Mutex<Option<String>>,
}

/// Keys looked at per sweep (one sweep per task created).
const SWEEP_KEYS: u64 = 64;

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn key(id: &str, part: &str) -> String {
    if part.is_empty() { format!("task/{id}") } else { format!("task/{id}/{part}") }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A store failure as the client sees it: an internal error that says what.
fn store_error(what: &str, error: &StoreError) -> ErrorData {
    ErrorData::internal_error(format!("the task store failed while {what}: {error}"), None)
}

fn read<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|error| ErrorData::internal_error(format!("the stored {what} is unreadable: {error}"), None))
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task `{id}` (it never existed here, or its TTL ran out)"), None)
}

/// The JSON-RPC error a failed task carries.
fn rpc_error(code: i32, message: String) -> JsonObject {
    object(json!({"code": code, "message": message}))
}

/// What a task runs: the call (its id will be the task's) and what its
/// context carries.
pub(super) struct Started {
    pub(super) engine: ToolEngine,
    pub(super) tool: String,
    pub(super) arguments: Value,
    pub(super) extensions: Extensions,
    /// Who it runs for.
    pub(super) principal: Option<Arc<Principal>>,
    pub(super) capabilities: Option<ClientCapabilities>,
    /// The session starting it, which alone will see it.
    pub(super) owner: TaskOwner,
}

impl Tasks {
    pub(super) fn new(options: TaskOptions) -> Tasks {
        Tasks { options, process: random_hex(8), live: Mutex::new(HashMap::new()), sweep_from: Mutex::new(None) }
    }

    fn base(&self, id: &str, created: &Created, updated: String, status: TaskStatus) -> Task {
        let mut task = Task::new(id, status, created.created_at.clone(), updated)
            .with_poll_interval_ms(millis(self.options.poll_interval).max(1));
        task.ttl_ms = Some(created.ttl_ms.max(1));
        task
    }

    /// Create a task for `started` and run it; the answer to `tools/call`.
    /// The task is in the store (a `tasks/get` anywhere finds it) before
    /// this returns.
    pub(super) async fn start(self: &Arc<Self>, started: Started) -> Result<CreateTaskResult, ErrorData> {
        let ns = &self.options.namespace;
        let id = random_hex(TASK_ID_LEN / 2);
        let cancel = CancellationToken::new();
        let message = Arc::new(Mutex::new(None));
        let answered = Arc::new(Notify::new());
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if live.len() >= self.options.max_live {
                return Err(ErrorData::invalid_request(
                    format!("too many tasks running ({}); try again when one has finished", self.options.max_live),
                    None,
                ));
            }
            let share = self.options.max_per_session.min(self.options.max_live);
            // A principal's share counts its tasks in every session, so that
            // opening sessions does not buy more.
            let whose =
                if started.owner.is_session() && live.values().filter(|l| l.owner == started.owner).count() >= share {
                    Some("session")
                } else if started.owner.principal.is_some()
                    && live.values().filter(|l| l.owner.principal == started.owner.principal).count() >= share
                {
                    Some("principal")
                } else {
                    None
                };
            if let Some(whose) = whose {
                return Err(ErrorData::invalid_request(
                    format!(
                        "too many tasks running for this {whose} ({share}, its share of this server's {}); \
                         try again when one has finished",
                        self.options.max_live
                    ),
                    None,
                ));
            }
            live.insert(
                id.clone(),
                Live {
                    owner: started.owner.clone(),
                    cancel: cancel.clone(),
                    message: Arc::clone(&message),
                    answered: Arc::clone(&answered),
                },
            );
        }
        let at = rmcp::task_manager::current_timestamp();
        let created = Created {
            tool: started.tool.clone(),
            created_at: at.clone(),
            created_ms: now_ms(),
            ttl_ms: millis(self.options.ttl),
            owner: started.owner.clone(),
        };
        let written = async {
            ns.create(&key(&id, ""), &json!(created)).await?;
            ns.set(&key(&id, "beat"), &json!(self.beat(None))).await
        }
        .await;
        if let Err(error) = written {
            self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            return Err(store_error("creating the task", &error));
        }
        let tasks = Arc::clone(self);
        let task_id = id.clone();
        // Ended tasks nobody asks for again are removed a few at a time, each
        // creation sweeping on from where the last one stopped.
        let sweeper = Arc::clone(self);
        tokio::spawn(async move { sweeper.sweep().await });
        tokio::spawn(async move {
            tasks.run(&task_id, started, cancel, message, answered).await;
            tasks.live.lock().unwrap_or_else(PoisonError::into_inner).remove(&task_id);
        });
        let task = self.base(&id, &created, at, TaskStatus::Working);
        Ok(CreateTaskResult::new(task))
    }

    /// `tasks/get`, for `owner`.
    pub(super) async fn get(&self, owner: &TaskOwner, id: &str) -> Result<GetTaskResult, ErrorData> {
        let created = self.owned(owner, id).await?;
        if now_ms().saturating_sub(created.created_ms) > i64::try_from(created.ttl_ms).unwrap_or(i64::MAX) {
            self.forget(id).await;
            return Err(unknown(id));
        }
        if let Some(end) = self.end(id).await? {
            return Ok(self.detailed(id, &created, end));
        }
        let beat: Option<Beat> = match self.options.namespace.get(&key(id, "beat")).await {
            Ok(stored) => Some(read(stored.value, "heartbeat")?),
            Err(StoreError::NotFound { .. }) => None,
            Err(error) => return Err(store_error("reading the heartbeat", &error)),
        };
        let here = self.live.lock().unwrap_or_else(PoisonError::into_inner).get(id).map(|l| Arc::clone(&l.message));
        if here.is_none()
            && let Some(why) = self.why_gone(beat.as_ref())
        {
            return self.fail_gone(id, &created, why).await;
        }
        let message = match &here {
            Some(message) => message.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            None => beat.as_ref().and_then(|b| b.message.clone()),
        };
        let updated = beat.map(|b| b.at).unwrap_or_else(|| created.created_at.clone());
        let mut task = self.base(id, &created, updated, TaskStatus::Working);
        task.status_message = message;
        let payload = match self.unanswered(id).await {
            Some(pending) => TaskPayload::InputRequired { input_requests: pending },
            None => TaskPayload::Working,
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// Forget an expired task, running or not: a runner here stops now, one
    /// on another replica at its next heartbeat; what it writes after this
    /// is removed by it or by the sweep.
    async fn forget(&self, id: &str) {
        if let Some(live) = self.live.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            live.cancel.cancel();
        }
        for part in ["", "beat", "end", "ask", "answers"] {
            let _ = self.options.namespace.delete(&key(id, part)).await;
        }
    }

    /// Why a task that runs on no runner here is lost, judging by its last
    /// heartbeat; `None` while another replica's runner is alive.
    fn why_gone(&self, beat: Option<&Beat>) -> Option<String> {
        let lease = millis(self.options.lease);
        match beat {
            Some(beat) if beat.owner == self.process => {
                Some("the task no longer runs on the server that started it".to_owned())
            }
            Some(beat) if now_ms().saturating_sub(beat.at_ms) > i64::try_from(lease).unwrap_or(i64::MAX) => {
                Some(format!(
                    "the server running this task stopped (no heartbeat since {}, over the {lease} ms lease); its \
                     result is lost",
                    beat.at
                ))
            }
            Some(_) => None,
            None => Some("the server running this task stopped before its first heartbeat".to_owned()),
        }
    }

    /// End a lost task as failed, saying why (unless another reader ended it first).
    async fn fail_gone(&self, id: &str, created: &Created, why: String) -> Result<GetTaskResult, ErrorData> {
        let failed = self.ended(TaskStatus::Failed, None, Some(rpc_error(-32603, why)));
        match self.options.namespace.create(&key(id, "end"), &json!(failed)).await {
            Ok(_) => Ok(self.detailed(id, created, failed)),
            Err(StoreError::Exists { .. }) => match self.end(id).await? {
                Some(end) => Ok(self.detailed(id, created, end)),
                None => Err(unknown(id)),
            },
            Err(error) => Err(store_error("ending the task", &error)),
        }
    }

    /// A task waiting on its client: the questions still unanswered.
    async fn unanswered(&self, id: &str) -> Option<InputRequests> {
        let ns = &self.options.namespace;
        let ask = serde_json::from_value::<Ask>(ns.get(&key(id, "ask")).await.ok()?.value).ok()?;
        let answered: InputResponses = match ns.get(&key(id, "answers")).await {
            Ok(stored) => serde_json::from_value::<Answers>(stored.value)
                .ok()
                .filter(|a| a.round == ask.round)
                .map(|a| a.responses)
                .unwrap_or_default(),
            Err(_) => InputResponses::new(),
        };
        let pending: InputRequests = ask.requests.into_iter().filter(|(k, _)| !answered.contains_key(k)).collect();
        (!pending.is_empty()).then_some(pending)
    }

    async fn end(&self, id: &str) -> Result<Option<End>, ErrorData> {
        match self.options.namespace.get(&key(id, "end")).await {
            Ok(stored) => Ok(Some(read(stored.value, "task outcome")?)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(error) => Err(store_error("reading the task outcome", &error)),
        }
    }

    fn detailed(&self, id: &str, created: &Created, end: End) -> GetTaskResult {
        let mut task = self.base(id, created, end.at, end.status);
        task.status_message = end.message;
        let payload = match end.status {
            TaskStatus::Completed => TaskPayload::Completed { result: end.result.unwrap_or_default() },
            TaskStatus::Failed => TaskPayload::Failed {
                error: end.error.unwrap_or_else(|| rpc_error(-32603, "the task failed".to_owned())),
            },
            _ => TaskPayload::Cancelled,
        };
        GetTaskResult::new(DetailedTask::new(task, payload))
    }

    /// The record of task `id` when `owner` may see it; an id that is
    /// malformed, names no task, or names another session's task is refused
    /// (the last two alike: to another session the task does not exist).
    async fn owned(&self, owner: &TaskOwner, id: &str) -> Result<Created, ErrorData> {
        check_id(id)?;
        let created: Created = match self.options.namespace.get(&key(id, "")).await {
            Ok(stored) => read(stored.value, "task")?,
            Err(StoreError::NotFound { .. }) => return Err(unknown(id)),
            Err(error) => return Err(store_error("reading the task", &error)),
        };
        if created.owner != *owner {
            return Err(unknown(id));
        }
        Ok(created)
    }

    /// Cancel the tasks `owner` runs on this process: its session ended.
    /// Each runner writes its outcome (cancelled) and frees its slot; the
    /// call sees its cancellation as a cancelled `tasks/cancel` would make it.
    pub(super) fn end_session(&self, owner: &TaskOwner) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let mut ended = 0usize;
        for task in live.values().filter(|task| task.owner == *owner) {
            task.cancel.cancel();
            ended += 1;
        }
        if ended > 0 {
            tracing::debug!(tasks = ended, "the session ended: its tasks are cancelled");
        }
    }

    /// `tasks/cancel`, for `owner`: idempotent on a task that already ended.
    pub(super) async fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<(), ErrorData> {
        self.owned(owner, id).await?;
        let ns = &self.options.namespace;
        let mut cancelled = self.ended(TaskStatus::Cancelled, None, None);
        cancelled.message = Some("cancelled by the client".to_owned());
        match ns.create(&key(id, "end"), &json!(cancelled)).await {
            Ok(_) | Err(StoreError::Exists { .. }) => {}
            Err(error) => return Err(store_error("cancelling the task", &error)),
        }
        if let Some(live) = self.live.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            live.cancel.cancel();
        }
        Ok(())
    }

    /// `tasks/update`, for `owner`: answers to the questions a task waits
    /// on. Answers to keys it did not ask (or no longer asks) are ignored,
    /// as the extension says.
    pub(super) async fn update(&self, owner: &TaskOwner, id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        self.owned(owner, id).await?;
        let ns = &self.options.namespace;
        let Ok(stored) = ns.get(&key(id, "ask")).await else { return Ok(()) };
        let Ok(ask) = serde_json::from_value::<Ask>(stored.value) else { return Ok(()) };
        let mut answers = match ns.get(&key(id, "answers")).await {
            Ok(stored) => serde_json::from_value::<Answers>(stored.value)
                .ok()
                .filter(|a| a.round == ask.round)
                .unwrap_or(Answers { round: ask.round, responses: InputResponses::new() }),
            Err(_) => Answers { round: ask.round, responses: InputResponses::new() },
        };
        let before = answers.responses.len();
        for (k, v) in responses {
            if ask.requests.contains_key(&k) {
                answers.responses.insert(k, v);
            }
        }
        if answers.responses.len() == before {
            return Ok(());
        }
        ns.set(&key(id, "answers"), &json!(answers)).await.map_err(|e| store_error("keeping the answers", &e))?;
        if let Some(live) = self.live.lock().unwrap_or_else(PoisonError::into_inner).get(id) {
            live.answered.notify_one();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_are_32_lowercase_hex() {
        let id = random_hex(TASK_ID_LEN / 2);
        assert!(is_task_id(&id), "{id}");
        assert!(!is_task_id(&id.to_uppercase()));
        assert!(!is_task_id(""));
        assert!(!is_task_id("../../etc/passwd"));
        assert!(!is_task_id(&"a".repeat(33)));
        assert_ne!(random_hex(16), random_hex(16));
    }
}
