//! A remote tool that answers with a task (the MCP tasks extension): the
//! call follows it, polling to its end within the call's timeout and
//! cancellation, and takes its outcome as the call's answer.

use std::time::Duration;

use rmcp::model::{CallToolResult, CustomResult, ServerResult, TaskPayload};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;
use toolreg::{CallContext, ToolError};

use super::RemoteServer;

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
                TaskPayload::InputRequired { .. } => {
                    stop().await;
                    return Err(ToolError::failed(format!(
                        "MCP server `{}`: the task asked its client a question (input_required), which toolreg \
                         does not forward for remote tasks; the task was cancelled",
                        self.inner.name
                    )));
                }
                _ => {}
            }
            // Back off, never polling faster than the server asks.
            delay = (delay * 3 / 2).max(suggested(task.task.poll_interval_ms)).min(MAX_POLL);
        }
    }
}

/// The shortest wait between polls of a remote task.
const MIN_POLL: Duration = Duration::from_millis(20);

/// The longest wait between polls of a remote task.
const MAX_POLL: Duration = Duration::from_secs(5);
