//! [`AgentEvent`]: what happens during a run, step by step, for a user
//! interface.

use std::sync::Arc;
use std::time::Duration;

use toolreg::ToolCall;

use super::{PendingApproval, PostProcessError};
use crate::model::{ToolResultMessage, Usage};

/// What happens during a run, step by step, for a user interface.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model request is sent.
    ModelRequest {
        /// The step (from 1).
        step: usize,
        /// The sub-agent depth (0 for the top level).
        depth: usize,
    },
    /// A piece of streamed text.
    TextDelta(String),
    /// The model answered.
    ModelResponse {
        /// The step.
        step: usize,
        /// Tokens this request used.
        usage: Usage,
        /// Tokens the run has used so far.
        total: Usage,
    },
    /// The model asked for a tool.
    ToolCall(ToolCall),
    /// A tool answered.
    ToolResult(ToolResultMessage),
    /// A call waits for an approval from outside; the run suspends.
    ApprovalNeeded(PendingApproval),
    /// A post-processing function refused the result; the model is told
    /// and the run goes on.
    ResultRefused(PostProcessError),
    /// A model request is retried.
    Retrying {
        /// The retry's number.
        attempt: u32,
        /// The wait before it.
        delay: Duration,
    },
}

pub(super) type OnAgentEvent = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
