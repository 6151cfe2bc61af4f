//! A remote tool that answers with a task (the MCP tasks extension): the
//! call follows it, polling to its end within the call's timeout and
//! cancellation, answers the questions it asks on the way (`input_required`,
//! put to whoever answers the server's own requests, unless the caller said
//! it cannot be asked them: [`NoTaskQuestions`]), and takes its outcome as
//! the call's answer.
//!
//! A server on the 2025-11-25 revision does not declare the extension: it
//! runs a tool as a task only when the call asks for one ("task
//! augmentation", `params.task`), and refuses a plain call of a tool whose
//! listing says `execution.taskSupport: "required"` (`-32601 … requires task
//! augmentation`). Such a tool is called with `params.task`; its task is
//! polled with `tasks/get` until it ends or waits for input, its result is
//! taken with `tasks/result` (during which the server asks its questions,
//! answered as its other requests are), and a call cancelled or timed out
//! cancels it with `tasks/cancel`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, CustomRequest, CustomResult, InputRequests, InputResponses,
    ServerResult, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{Value, json};
use toolreg::{CallContext, TaskSupport, ToolError};

use super::RemoteServer;

/// Put in a call's extensions by a caller that cannot be asked the
/// questions of a remote task. The client marks it once the call runs as a
/// task (whoever picks who answers the server's questions then passes this
/// caller by), and a question of that task (`input_required`) cancels it,
/// the call failing because of `reason`.
#[derive(Debug)]
pub(crate) struct NoTaskQuestions {
    reason: String,
    in_task: AtomicBool,
}

impl NoTaskQuestions {
    /// `reason` completes "the task asked a question (input_required), which …".
    pub(crate) fn new(reason: impl Into<String>) -> NoTaskQuestions {
        NoTaskQuestions { reason: reason.into(), in_task: AtomicBool::new(false) }
    }

    /// Whether the call runs as a remote task now.
    pub(crate) fn in_task(&self) -> bool {
        self.in_task.load(Ordering::SeqCst)
    }
}

/// The call runs as a remote task from now on: mark its caller, if it said
/// it cannot be asked a task's questions.
fn entering_task(cx: &CallContext) {
    if let Some(mark) = cx.extensions().get::<NoTaskQuestions>() {
        mark.in_task.store(true, Ordering::SeqCst);
    }
}

impl RemoteServer {
    /// When the server answered with a task (the tasks extension), poll it
    /// to its end and make its outcome the answer; any other answer as it is.
    /// Bounded by the call's timeout and its cancellation, either of which
    /// cancels the remote task.
    pub(super) async fn follow_task(
        &self,
        peer: &Peer<RoleClient>,
        cx: &CallContext,
        answer: Result<ServerResult, rmcp::ServiceError>,
    ) -> Result<Result<ServerResult, rmcp::ServiceError>, ToolError> {
        let Ok(ServerResult::CreateTaskResult(created)) = answer else { return Ok(answer) };
        entering_task(cx);
        let id = created.task.task_id;
        let timeout = self.inner.config.call_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let suggested = |ms: Option<u64>| Duration::from_millis(ms.unwrap_or(500)).clamp(MIN_POLL, MAX_POLL);
        let mut delay = suggested(created.task.poll_interval_ms);
        let mut polls = 0u32;
        let mut last_message = None;
        // Keys of the task's questions answered so far (unique over its life).
        let mut answered = HashSet::new();
        // Cancel the remote task (best effort, bounded: the call is over).
        let stop = || {
            let params = rmcp::model::CancelTaskParams::new(id.clone());
            async move {
                let _ = tokio::time::timeout(MAX_POLL, peer.cancel_task(params)).await;
            }
        };
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    stop().await;
                    return Err(ToolError::Timeout { limit: timeout });
                }
                () = cx.cancelled() => {
                    stop().await;
                    return Err(ToolError::Cancelled);
                }
                () = tokio::time::sleep(delay) => {}
            }
            let got = tokio::select! {
                got = peer.get_task(rmcp::model::GetTaskParams::new(id.clone())) => got,
                () = tokio::time::sleep_until(deadline) => continue,
                () = cx.cancelled() => continue,
            };
            let task = match got {
                Ok(got) => got.task,
                Err(error) => {
                    return Err(ToolError::failed(format!(
                        "MCP server `{}`: polling task `{id}` failed: {error}",
                        self.inner.name
                    )));
                }
            };
            polls += 1;
            if task.task.status_message.is_some() && task.task.status_message != last_message {
                last_message = task.task.status_message.clone();
                cx.report_progress(f64::from(polls), None, last_message.as_deref());
            }
            match task.payload {
                TaskPayload::Completed { result } => {
                    // Read as a plain answer would be (a result with a block
                    // rmcp does not know is read block by block).
                    let result = Value::Object(result);
                    return Ok(Ok(match serde_json::from_value::<CallToolResult>(result.clone()) {
                        Ok(result) => ServerResult::CallToolResult(result),
                        Err(_) => ServerResult::CustomResult(CustomResult(result)),
                    }));
                }
                TaskPayload::Failed { error } => {
                    let error = serde_json::from_value::<rmcp::ErrorData>(Value::Object(error)).unwrap_or_else(|e| {
                        rmcp::ErrorData::internal_error(format!("the task failed (unreadable error: {e})"), None)
                    });
                    return Ok(Err(rmcp::ServiceError::McpError(error)));
                }
                TaskPayload::Cancelled => {
                    return Err(ToolError::failed(format!(
                        "MCP server `{}`: the task running the call was cancelled by the server",
                        self.inner.name
                    )));
                }
                TaskPayload::InputRequired { input_requests } => {
                    // The caller cannot be asked this task's questions.
                    if let Some(mark) = cx.extensions().get::<NoTaskQuestions>() {
                        stop().await;
                        return Err(ToolError::failed(format!(
                            "MCP server `{}`: the task asked a question (input_required), which {}; the task was \
                             cancelled",
                            self.inner.name, mark.reason
                        )));
                    }
                    match self.answer_questions(peer, cx, &id, input_requests, &mut answered, deadline).await {
                        // Answered: look again soon.
                        Ok(true) => {
                            delay = MIN_POLL;
                            continue;
                        }
                        Ok(false) => {}
                        Err(error) => {
                            stop().await;
                            return Err(error);
                        }
                    }
                }
                _ => {}
            }
            // Back off, never polling faster than the server asks.
            delay = (delay * 3 / 2).max(suggested(task.task.poll_interval_ms)).min(MAX_POLL);
        }
    }
    /// Answer the questions of remote task `id` not answered before, as the
    /// server's own requests are answered, and send the answers with
    /// `tasks/update`. Whether any were sent; an error ends the call (its
    /// caller cancels the task).
    async fn answer_questions(
        &self,
        peer: &Peer<RoleClient>,
        cx: &CallContext,
        id: &str,
        questions: InputRequests,
        answered: &mut HashSet<String>,
        deadline: tokio::time::Instant,
    ) -> Result<bool, ToolError> {
        let timed_out = ToolError::Timeout { limit: self.inner.config.call_timeout };
        let mut responses = InputResponses::new();
        // A question answered before and still listed: the server has not
        // caught up with the answer yet.
        for (key, request) in questions.into_iter().filter(|(key, _)| !answered.contains(key)) {
            let answer = tokio::select! {
                answer = super::answer::answer(&self.inner, request) => answer,
                () = tokio::time::sleep_until(deadline) => return Err(timed_out),
                () = cx.cancelled() => return Err(ToolError::Cancelled),
            };
            let answer = answer.map_err(|error| {
                ToolError::failed(format!(
                    "MCP server `{}`: the task's question could not be answered ({}); the task was cancelled",
                    self.inner.name, error.message
                ))
            })?;
            responses.insert(key, answer);
        }
        if responses.is_empty() {
            return Ok(false);
        }
        answered.extend(responses.keys().cloned());
        let update = peer.update_task(UpdateTaskParams::new(id, responses));
        match tokio::time::timeout_at(deadline, update).await {
            Ok(Ok(())) => Ok(true),
            Ok(Err(error)) => Err(ToolError::failed(format!(
                "MCP server `{}`: answering task `{id}` failed: {error}",
                self.inner.name
            ))),
            Err(_) => Err(timed_out),
        }
    }
}

impl RemoteServer {
    /// Whether `remote` must be called with task augmentation: its listing
    /// says it runs only as a task, and its server does not speak the tasks
    /// extension (so it will not answer a plain call with a task).
    pub(super) fn needs_augmentation(&self, peer: &Peer<RoleClient>, remote: &str) -> bool {
        let support =
            self.inner.task_support.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(remote).copied();
        support == Some(TaskSupport::Required)
            && !peer.peer_info().is_some_and(|info| info.capabilities.supports_tasks())
    }

    /// Call a tool as a task of the 2025-11-25 revision (see the module
    /// docs): create it, poll it, take its result; bounded by the call's
    /// timeout and cancellation, either of which cancels the remote task.
    pub(super) async fn call_augmented(
        &self,
        peer: &Peer<RoleClient>,
        cx: &CallContext,
        params: CallToolRequestParams,
    ) -> Result<Result<ServerResult, rmcp::ServiceError>, ToolError> {
        entering_task(cx);
        let timeout = self.inner.config.call_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut params =
            serde_json::to_value(&params).map_err(|e| ToolError::failed(format!("the call cannot be written: {e}")))?;
        params["task"] = json!({"ttl": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)});
        let created = match self.raw_request(peer, cx, "tools/call", params, deadline).await? {
            Ok(created) => created,
            Err(error) => return Ok(Err(error)),
        };
        let created_json = serde_json::to_value(&created).unwrap_or_default();
        let Some(id) = created_json.pointer("/task/taskId").and_then(Value::as_str).map(str::to_owned) else {
            // Answered at once, without a task: that is the answer.
            return Ok(Ok(created));
        };
        let suggested = |task: &Value| {
            Duration::from_millis(task.get("pollInterval").and_then(Value::as_u64).unwrap_or(500))
                .clamp(MIN_POLL, MAX_POLL)
        };
        let mut delay = suggested(&created_json["task"]);
        let mut polls = 0u32;
        let mut last_message: Option<String> = None;
        let stop = || {
            let params = json!({"taskId": id});
            async move {
                let request = ClientRequest::CustomRequest(CustomRequest::new("tasks/cancel", Some(params)));
                let _ = tokio::time::timeout(MAX_POLL, peer.send_request(request)).await;
            }
        };
        let fail = |what: String| ToolError::failed(format!("MCP server `{}`: {what}", self.inner.name));
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    stop().await;
                    return Err(ToolError::Timeout { limit: timeout });
                }
                () = cx.cancelled() => {
                    stop().await;
                    return Err(ToolError::Cancelled);
                }
                () = tokio::time::sleep(delay) => {}
            }
            let got = match self.raw_request(peer, cx, "tasks/get", json!({"taskId": id}), deadline).await {
                Ok(Ok(got)) => serde_json::to_value(&got).unwrap_or_default(),
                Ok(Err(error)) => return Err(fail(format!("polling task `{id}` failed: {error}"))),
                Err(error) => {
                    stop().await;
                    return Err(error);
                }
            };
            polls += 1;
            let message = got.get("statusMessage").and_then(Value::as_str).map(str::to_owned);
            if message.is_some() && message != last_message {
                last_message = message;
                cx.report_progress(f64::from(polls), None, last_message.as_deref());
            }
            match got.get("status").and_then(Value::as_str) {
                // Its result (or its questions, asked while `tasks/result` waits).
                Some("completed" | "failed" | "input_required") => break,
                Some("cancelled") => {
                    return Err(fail("the task running the call was cancelled by the server".to_owned()));
                }
                Some("working") => {}
                other => return Err(fail(format!("task `{id}` has an unknown status {other:?}"))),
            }
            delay = (delay * 3 / 2).max(suggested(&got)).min(MAX_POLL);
        }
        match self.raw_request(peer, cx, "tasks/result", json!({"taskId": id}), deadline).await {
            Ok(answer) => Ok(answer),
            Err(error) => {
                stop().await;
                Err(error)
            }
        }
    }

    /// One request by method name (rmcp knows no 2025-11-25 task methods),
    /// within `deadline` and the call's cancellation (`Err`: the call is
    /// over; the caller cancels the task).
    async fn raw_request(
        &self,
        peer: &Peer<RoleClient>,
        cx: &CallContext,
        method: &str,
        params: Value,
        deadline: tokio::time::Instant,
    ) -> Result<Result<ServerResult, rmcp::ServiceError>, ToolError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(deadline.saturating_duration_since(tokio::time::Instant::now()).max(MIN_POLL));
        let handle = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(error) => return Ok(Err(error)),
        };
        tokio::select! {
            answer = handle.await_response() => match answer {
                Err(rmcp::ServiceError::Timeout { .. }) => {
                    Err(ToolError::Timeout { limit: self.inner.config.call_timeout })
                }
                answer => Ok(answer),
            },
            () = cx.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

/// The shortest wait between polls of a remote task.
const MIN_POLL: Duration = Duration::from_millis(20);

/// The longest wait between polls of a remote task.
const MAX_POLL: Duration = Duration::from_secs(5);
