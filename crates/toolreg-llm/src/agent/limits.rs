//! How far a run may go ([`AgentLimits`], set by the host) and what it may
//! still spend ([`Budget`], what a sub-agent is given).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How far a run may go: an agent's limits (a code-mode sandbox has its own,
/// `toolreg_code::Limits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentLimits {
    /// Model requests (default 10).
    pub max_steps: usize,
    /// Tokens, prompt and answer together, over the whole run.
    pub max_tokens: Option<u64>,
    /// Wall time for the whole run.
    pub max_time: Option<Duration>,
    /// Nesting of sub-agents (default 5).
    pub max_depth: usize,
}

impl Default for AgentLimits {
    fn default() -> Self {
        AgentLimits { max_steps: 10, max_tokens: None, max_time: None, max_depth: 5 }
    }
}

impl AgentLimits {
    /// Set the step limit.
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Set the token limit.
    pub fn max_tokens(mut self, tokens: u64) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Set the wall-time limit.
    pub fn max_time(mut self, time: Duration) -> Self {
        self.max_time = Some(time);
        self
    }

    /// Set the sub-agent depth limit.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }
}

/// What a run may still spend; a sub-agent gets at most this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Model requests left.
    pub steps: usize,
    /// Tokens left.
    pub tokens: Option<u64>,
    /// When the run must end.
    pub deadline: Option<Instant>,
}
