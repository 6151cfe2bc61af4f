//! A remote tool that answers with a task (the MCP tasks extension): the
//! call follows it, polling to its end within the call's timeout and
//! cancellation, answers the questions it asks on the way (`input_required`,
//! put to whoever answers the server's own requests), and takes its outcome
//! as the call's answer.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CustomResult, InputRequests, InputResponses, ServerResult, TaskPayload, UpdateTaskParams,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use toolreg::{CallContext, ToolError};

use super::RemoteServer;
use crate::server::InputRound;

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
                // A 2026-07-28 client's rounds do not reach into a task.
                TaskPayload::InputRequired { .. } if cx.extensions().get::<InputRound>().is_some() => {
                    stop().await;
                    return Err(ToolError::failed(format!(
                        "MCP server `{}`: the task asked a question (input_required), which toolreg does not \
                         forward from a task to a client on the 2026-07-28 revision; the task was cancelled",
                        self.inner.name
                    )));
                }
                TaskPayload::InputRequired { input_requests } => {
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
                answer = super::forward::answer(&self.inner, request) => answer,
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

/// The shortest wait between polls of a remote task.
const MIN_POLL: Duration = Duration::from_millis(20);

/// The longest wait between polls of a remote task.
const MAX_POLL: Duration = Duration::from_secs(5);
