//! How a run ends: [`RunOutcome`] (finished, or suspended to wait for the
//! outside) or an [`AgentError`], each with the conversation so far.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Suspended;
use crate::model::{LlmError, Message, Usage};

/// A finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Finished {
    /// The answer: the model's last text, or what a finishing tool returned,
    /// after post-processing, as text.
    pub answer: String,
    /// The same result as JSON: a finishing tool's value or the model's
    /// text (a string), after post-processing.
    #[serde(default)]
    pub value: serde_json::Value,
    /// The whole conversation.
    pub transcript: Vec<Message>,
    /// Tokens used.
    pub usage: Usage,
    /// Model requests made.
    pub steps: usize,
}

/// How a run ended, when it did not fail. (Not `toolreg::Outcome`, what a
/// tool function returns.)
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum RunOutcome {
    /// The model finished.
    Finished(Finished),
    /// The run waits for decisions or answers from outside.
    Suspended(Suspended),
}

/// Why a run stopped without an answer. Each carries the transcript so far.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The step limit was reached.
    #[error("the agent reached its limit of {limit} model requests")]
    StepLimit {
        /// The limit.
        limit: usize,
        /// The conversation so far.
        transcript: Vec<Message>,
    },
    /// The token limit was reached.
    #[error("the agent used {used} tokens, over its limit of {limit}")]
    TokenLimit {
        /// The limit.
        limit: u64,
        /// Tokens used.
        used: u64,
        /// The conversation so far.
        transcript: Vec<Message>,
    },
    /// The wall-time limit was reached.
    #[error("the agent ran out of time ({limit:?})")]
    TimeLimit {
        /// The limit.
        limit: Duration,
        /// The conversation so far.
        transcript: Vec<Message>,
    },
    /// The run was cancelled.
    #[error("the agent run was cancelled")]
    Cancelled {
        /// The conversation so far.
        transcript: Vec<Message>,
    },
    /// The model request failed (after the client's retries).
    #[error("the model request failed: {error}")]
    Model {
        /// Why.
        error: LlmError,
        /// The conversation so far.
        transcript: Vec<Message>,
    },
    /// A sub-agent would nest deeper than allowed.
    #[error("sub-agents may nest {limit} deep")]
    DepthLimit {
        /// The limit.
        limit: usize,
    },
    /// A suspended run was resumed without what it waits for.
    #[error("cannot resume: {0}")]
    Resume(String),
    /// A post-processing function is not offered by the agent's engine
    /// (unknown, or outside its selection): the run does not start, since
    /// only the host can fix it.
    #[error("the post-processing function `{function}` is not offered by the agent's engine")]
    PostProcessNotOffered {
        /// The function.
        function: String,
    },
    /// This suspension (or a call it approves) was already resumed: a
    /// suspension is resumable once, so an approved call never runs twice.
    #[error("the suspended run was already resumed ({what}); a suspension resumes once")]
    AlreadyResumed {
        /// The suspension id or call id already consumed.
        what: String,
    },
}

impl AgentError {
    /// The conversation up to the failure, when there is one.
    pub fn transcript(&self) -> Option<&[Message]> {
        match self {
            AgentError::StepLimit { transcript, .. }
            | AgentError::TokenLimit { transcript, .. }
            | AgentError::TimeLimit { transcript, .. }
            | AgentError::Cancelled { transcript }
            | AgentError::Model { transcript, .. } => Some(transcript),
            AgentError::DepthLimit { .. }
            | AgentError::PostProcessNotOffered { .. }
            | AgentError::Resume(_)
            | AgentError::AlreadyResumed { .. } => None,
        }
    }
}
