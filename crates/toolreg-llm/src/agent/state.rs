//! What a run carries from step to step: [`RunState`], the part every tool
//! call of the run finds in its context, and the loop's own state — its
//! [`Conversation`] and what it has spent — which a suspension saves and a
//! resume restores.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::engine::OfferedTools;
use toolreg::exec::value_text;
use toolreg::{Extensions, Finish};

use super::conversation::Conversation;
use super::suspend::{Waiting, suspension_id};
use super::{Agent, Budget, Finished, Suspended};
use crate::model::Usage;

/// The run's state, in every tool call's context: what agent functions
/// (sub-agents, `call_llm`, `return_result`) work with.
#[derive(Clone)]
pub struct RunState {
    /// The agent running.
    pub agent: Agent,
    /// Cancelled when the run is: sub-agents watch it.
    pub cancel: CancellationToken,
    /// What the run may still spend.
    pub remaining: Budget,
    /// Where a finishing tool (`return_result`, `final_answer`, or one of
    /// yours, through [`CallContext::finish`](toolreg::CallContext::finish))
    /// puts the run's result; also in every call's extensions on its own.
    pub finish: Finish,
    /// Tokens sub-agents of this step spent: counted against the run.
    pub spent_by_children: Arc<Mutex<Usage>>,
    /// The deferred tools loaded so far, in the order they were loaded
    /// (`search_tools` adds to it; see [`Deferral`](super::Deferral)).
    pub loaded: Arc<Mutex<Vec<String>>>,
}

impl RunState {
    /// Count a sub-agent's tokens against this run.
    pub fn charge(&self, usage: Usage) {
        *self.spent_by_children.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    }

    /// What every call the model makes in the run carries in its context:
    /// the run's state and its [`Finish`] slot. (Where an approval defers to
    /// is added by the batch's `ApprovalRound`.)
    pub(super) fn extensions(&self) -> Extensions {
        let mut extensions = self.nested_extensions();
        extensions.insert(self.finish.clone());
        extensions
    }

    /// What a call the agent makes itself carries (a merge or
    /// post-processing function): the run's state, so agent functions work,
    /// but no [`Finish`] slot (it cannot end the run) and nowhere to defer
    /// an approval to (nothing outside can approve it later).
    pub(super) fn nested_extensions(&self) -> Extensions {
        let mut extensions = Extensions::default();
        extensions.insert(self.clone());
        extensions
    }
}

/// The loop's state: the conversation, and what the run has spent.
pub(super) struct LoopState {
    pub(super) conversation: Conversation,
    /// Tokens used, sub-agents' included.
    pub(super) usage: Usage,
    /// Model requests made.
    pub(super) steps: usize,
    /// When this run (or this resumption of it) started: the wall-time
    /// limit counts from here.
    pub(super) started: Instant,
}

impl LoopState {
    /// A run starting now at `conversation`, having spent `usage` in `steps`.
    pub(super) fn new(conversation: Conversation, usage: Usage, steps: usize) -> Self {
        LoopState { conversation, usage, steps, started: Instant::now() }
    }

    /// The state the step's tool calls see: what the run may still spend,
    /// an empty finish slot, and the tools loaded so far.
    pub(super) fn run_state(&self, agent: &Agent, cancel: &CancellationToken) -> RunState {
        let limits = &agent.inner.limits;
        RunState {
            agent: agent.clone(),
            cancel: cancel.clone(),
            remaining: Budget {
                steps: limits.max_steps.saturating_sub(self.steps),
                tokens: limits.max_tokens.map(|t| t.saturating_sub(self.usage.total())),
                deadline: limits.max_time.map(|t| self.started + t),
            },
            finish: Finish::new(),
            spent_by_children: Arc::default(),
            loaded: Arc::new(Mutex::new(self.conversation.loaded().to_vec())),
        }
    }

    /// Take in what the step's tool calls left in `run`: the tokens their
    /// sub-agents spent, and the deferred tools their searches loaded (of
    /// `tools`, the registry they ran against).
    pub(super) fn absorb(&mut self, agent: &Agent, run: &RunState, tools: &OfferedTools) {
        let spent = std::mem::take(&mut *run.spent_by_children.lock().unwrap_or_else(PoisonError::into_inner));
        self.usage += spent;
        let loaded = run.loaded.lock().unwrap_or_else(PoisonError::into_inner).clone();
        self.conversation.load(agent, loaded, tools);
    }

    /// The run, finished with `value` (after post-processing).
    pub(super) fn finished(self, value: Value) -> Finished {
        let answer = value_text(&value).into_owned();
        let (transcript, _) = self.conversation.into_parts();
        Finished { answer, value, transcript, usage: self.usage, steps: self.steps }
    }

    /// The run, stopped to wait for what `waiting` names, under a new id.
    pub(super) fn suspended(self, waiting: Waiting) -> Suspended {
        let (transcript, loaded) = self.conversation.into_parts();
        Suspended {
            id: suspension_id(),
            transcript,
            calls: waiting.calls,
            done: waiting.done,
            approvals: waiting.held.approvals,
            external: waiting.external,
            usage: self.usage,
            steps: self.steps,
            loaded,
            checkpoints: waiting.held.checkpoints,
        }
    }
}
