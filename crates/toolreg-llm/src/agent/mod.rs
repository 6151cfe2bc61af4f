//! The agent loop: declarations → model → tool calls → the engine → results
//! → model, until the model answers without calls, a finishing tool is
//! called (`final_answer`, `return_result`), or a limit is hit.
//!
//! - Every limit (steps, tokens, wall time) and a cancellation is a typed
//!   [`AgentError`] that carries the transcript so far.
//! - A malformed tool call is answered with an error result the model can
//!   correct; it never ends the run.
//! - Tool calls go through a [`ToolEngine`] built from the agent's parts
//!   (selection, approver, audit, limits), with the run's state in every
//!   call's context, which is how [`functions`] (sub-agents, `call_llm`)
//!   reach the model and the budget.
//! - When a run needs something from outside — a dangerous call's approval
//!   with no live approver, a tool the host runs itself — it stops with
//!   [`Outcome::Suspended`]: a [`Suspended`] value that serialises with the
//!   whole conversation and the pending calls, and resumes later, in any
//!   process, with [`Agent::resume`]. A recorded approval binds exactly as a
//!   live one does: same call id, same tool, same arguments hash. A
//!   suspension resumes once: its id and the ids of the calls it approves
//!   are recorded as consumed (in memory, and in the context-store
//!   namespace of [`AgentBuilder::resume_claims`] when there is one, so
//!   across processes), and a second resume is
//!   [`AgentError::AlreadyResumed`]. To suspend on
//!   `ask_user` when no one is at a terminal, mark it external
//!   ([`AgentBuilder::external`]) and resume with the user's answer.
//!
//! ```
//! use toolreg::FunctionRegistry;
//! use toolreg_llm::agent::{Agent, Outcome};
//! use toolreg_llm::scripted::ScriptedClient;
//!
//! /// Add two numbers.
//! #[toolreg::tool(safety = "safe")]
//! fn add(a: f64, b: f64) -> f64 {
//!     a + b
//! }
//!
//! # fn main() {
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let mut registry = FunctionRegistry::new();
//! registry.register(add_tool::registration()).unwrap();
//! let model = ScriptedClient::new()
//!     .then_call("c1", "add", serde_json::json!({"a": 2, "b": 40}))
//!     .then_text("42");
//! let agent = Agent::builder(model, "scripted", &registry).build();
//! match agent.run("What is 2 + 40?").await.unwrap() {
//!     Outcome::Finished(done) => assert_eq!(done.answer, "42"),
//!     Outcome::Suspended(_) => unreachable!(),
//! }
//! # });
//! # }
//! ```

pub mod functions;
mod suspend;

pub use suspend::{PendingApproval, Resolution, Suspended};
use suspend::{Suspending, suspension_id};

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::engine::BatchOptions;
use toolreg::exec::value_text;
use toolreg::policy::{Approver, AuditSink, Selection};
use toolreg::{
    Extensions, Finish, FunctionRegistry, RegistryError, ToolCall, ToolDeclaration, ToolEngine, ToolRegistration,
};
use toolreg_builtins::store::Namespace;
use tracing::Instrument;

use crate::model::{LlmClient, LlmError, Message, ModelRequest, ModelResponse, StreamEvent, ToolResultMessage, Usage};

/// How far a run may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Limits {
    /// Model requests (default 10).
    pub max_steps: usize,
    /// Tokens, prompt and answer together, over the whole run.
    pub max_tokens: Option<u64>,
    /// Wall time for the whole run.
    pub max_time: Option<Duration>,
    /// Nesting of sub-agents (default 5).
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_steps: 10, max_tokens: None, max_time: None, max_depth: 5 }
    }
}

impl Limits {
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
    /// A model request is retried.
    Retrying {
        /// The retry's number.
        attempt: u32,
        /// The wait before it.
        delay: Duration,
    },
}

type OnAgentEvent = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// A finished run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Finished {
    /// The answer: the model's last text, or what a finishing tool returned.
    pub answer: String,
    /// The whole conversation.
    pub transcript: Vec<Message>,
    /// Tokens used.
    pub usage: Usage,
    /// Model requests made.
    pub steps: usize,
}

/// How a run ended, when it did not fail.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Outcome {
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
            AgentError::DepthLimit { .. } | AgentError::Resume(_) | AgentError::AlreadyResumed { .. } => None,
        }
    }
}

/// Builds an [`Agent`].
#[must_use]
pub struct AgentBuilder {
    client: Arc<dyn LlmClient>,
    model: String,
    registry: FunctionRegistry,
    system: Option<String>,
    selection: Selection,
    approver: Option<Arc<dyn Approver>>,
    audit: Vec<Arc<dyn AuditSink>>,
    options: BatchOptions,
    limits: Limits,
    external: HashSet<String>,
    max_tokens_per_request: Option<u32>,
    on_event: Option<OnAgentEvent>,
    claims: Option<Namespace>,
}

impl AgentBuilder {
    /// Record resumed suspensions in this context-store namespace, so each
    /// resumes once across processes and restarts. Without one, each
    /// resumes once per [`Agent`] (and its clones), in memory. Give it a
    /// namespace of its own, which tools do not write.
    pub fn resume_claims(mut self, namespace: Namespace) -> Self {
        self.claims = Some(namespace);
        self
    }

    /// The system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Add a function for this agent only, over the shared registry it was
    /// built from (which does not change: the agent holds its own view,
    /// sharing every tool with it).
    pub fn register(mut self, registration: ToolRegistration) -> Result<Self, RegistryError> {
        self.registry.register(registration)?;
        Ok(self)
    }

    /// Which of the registry's tools the model is offered (default: all).
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// Who approves dangerous calls while the run is live. Without one, a
    /// dangerous call suspends the run.
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Record every call here.
    pub fn audit(mut self, sink: impl AuditSink) -> Self {
        self.audit.push(Arc::new(sink));
        self
    }

    /// Timeouts and concurrency of the tool calls.
    pub fn options(mut self, options: BatchOptions) -> Self {
        self.options = options;
        self
    }

    /// How far a run may go.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Tools the host runs itself: their calls suspend the run.
    pub fn external<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.external.extend(names.into_iter().map(Into::into));
        self
    }

    /// Cap each answer's tokens.
    pub fn max_tokens_per_request(mut self, tokens: u32) -> Self {
        self.max_tokens_per_request = Some(tokens);
        self
    }

    /// Receive an [`AgentEvent`] for everything that happens.
    pub fn on_event(mut self, on_event: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(on_event));
        self
    }

    /// The agent.
    pub fn build(self) -> Agent {
        Agent {
            inner: Arc::new(Inner {
                client: self.client,
                model: self.model,
                registry: self.registry,
                system: self.system,
                selection: self.selection,
                approver: self.approver,
                audit: self.audit,
                options: self.options,
                limits: self.limits,
                external: self.external,
                max_tokens_per_request: self.max_tokens_per_request,
                on_event: self.on_event,
                depth: 0,
                claims: self.claims,
                consumed: Mutex::default(),
            }),
        }
    }
}

/// A model, a system prompt, tools with their policy, and limits. Cloning
/// shares it.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    client: Arc<dyn LlmClient>,
    model: String,
    registry: FunctionRegistry,
    system: Option<String>,
    selection: Selection,
    approver: Option<Arc<dyn Approver>>,
    audit: Vec<Arc<dyn AuditSink>>,
    options: BatchOptions,
    limits: Limits,
    external: HashSet<String>,
    max_tokens_per_request: Option<u32>,
    on_event: Option<OnAgentEvent>,
    depth: usize,
    /// Where resumed suspensions are recorded across processes.
    claims: Option<Namespace>,
    /// The suspension and call ids this agent has resumed.
    consumed: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("client", &self.inner.client.name())
            .field("model", &self.inner.model)
            .field("limits", &self.inner.limits)
            .field("depth", &self.inner.depth)
            .finish_non_exhaustive()
    }
}

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

impl RunState {
    /// Count a sub-agent's tokens against this run.
    pub fn charge(&self, usage: Usage) {
        *self.spent_by_children.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    }
}

impl Agent {
    /// Start building an agent on `client` and `model` with the tools of `registry`.
    pub fn builder(
        client: impl LlmClient + 'static,
        model: impl Into<String>,
        registry: &FunctionRegistry,
    ) -> AgentBuilder {
        Self::builder_shared(Arc::new(client), model, registry)
    }

    /// [`builder`](Self::builder) with a shared client.
    pub fn builder_shared(
        client: Arc<dyn LlmClient>,
        model: impl Into<String>,
        registry: &FunctionRegistry,
    ) -> AgentBuilder {
        AgentBuilder {
            client,
            model: model.into(),
            registry: registry.clone(),
            system: None,
            selection: Selection::all(),
            approver: None,
            audit: Vec::new(),
            options: BatchOptions::default(),
            limits: Limits::default(),
            external: HashSet::new(),
            max_tokens_per_request: None,
            on_event: None,
            claims: None,
        }
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.inner.client
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// How deep this agent is nested (0: top level).
    pub fn depth(&self) -> usize {
        self.inner.depth
    }

    /// A sub-agent: this agent's model, approver and audit, a selection that
    /// never includes user-scope tools (and only `tools` when given), one
    /// level deeper, within `budget`.
    pub fn sub_agent(&self, tools: Option<&[String]>, budget: Budget) -> Result<Agent, AgentError> {
        let depth = self.inner.depth + 1;
        if depth > self.inner.limits.max_depth {
            return Err(AgentError::DepthLimit { limit: self.inner.limits.max_depth });
        }
        let mut selection = Selection::sub_agent();
        if let Some(tools) = tools {
            selection = selection.allow(tools.iter().cloned());
        }
        let now = Instant::now();
        let limits = Limits {
            max_steps: budget.steps.min(self.inner.limits.max_steps),
            max_tokens: budget.tokens,
            max_time: budget.deadline.map(|d| d.saturating_duration_since(now)),
            max_depth: self.inner.limits.max_depth,
        };
        let inner = &self.inner;
        Ok(Agent {
            inner: Arc::new(Inner {
                client: Arc::clone(&inner.client),
                model: inner.model.clone(),
                registry: inner.registry.clone(),
                system: Some(
                    "You are a sub-agent working on one task for another agent. When you have the result, call \
                     `return_result` with it."
                        .to_owned(),
                ),
                selection,
                approver: inner.approver.clone(),
                audit: inner.audit.clone(),
                options: inner.options,
                limits,
                external: HashSet::new(),
                max_tokens_per_request: inner.max_tokens_per_request,
                on_event: inner.on_event.clone(),
                depth,
                claims: None,
                consumed: Mutex::default(),
            }),
        })
    }

    /// Run a task to the end.
    pub async fn run(&self, task: impl Into<String>) -> Result<Outcome, AgentError> {
        self.run_with(vec![Message::user(task)], CancellationToken::new()).await
    }

    /// Run from a conversation, cancellable: cancelling stops the model
    /// request and every running tool, sub-agents included.
    pub async fn run_with(&self, messages: Vec<Message>, cancel: CancellationToken) -> Result<Outcome, AgentError> {
        let state = LoopState { messages, usage: Usage::default(), steps: 0, started: Instant::now() };
        self.drive(state, cancel).instrument(tracing::info_span!("agent_run", depth = self.inner.depth)).await
    }

    fn emit(&self, event: &AgentEvent) {
        if let Some(on_event) = &self.inner.on_event {
            on_event(event);
        }
    }

    /// The engine for one run: the agent's policy, with `approver` deciding.
    fn engine(&self, approver: Arc<dyn Approver>) -> ToolEngine {
        let inner = &self.inner;
        let mut builder = ToolEngine::builder(&inner.registry)
            .selection(inner.selection.clone())
            .approver(approver)
            .options(inner.options);
        for sink in &inner.audit {
            builder = builder.audit(Arc::clone(sink));
        }
        builder.build()
    }

    fn run_state(&self, cancel: &CancellationToken, state: &LoopState) -> RunState {
        let limits = &self.inner.limits;
        RunState {
            agent: self.clone(),
            cancel: cancel.clone(),
            remaining: Budget {
                steps: limits.max_steps.saturating_sub(state.steps),
                tokens: limits.max_tokens.map(|t| t.saturating_sub(state.usage.total())),
                deadline: limits.max_time.map(|t| state.started + t),
            },
            finish: Finish::new(),
            spent_by_children: Arc::default(),
        }
    }

    fn finished(&self, state: LoopState, answer: String) -> Finished {
        Finished { answer, transcript: state.messages, usage: state.usage, steps: state.steps }
    }

    async fn drive(&self, mut state: LoopState, cancel: CancellationToken) -> Result<Outcome, AgentError> {
        let inner = &self.inner;
        let limits = inner.limits;
        let suspender = Arc::new(Suspending { live: inner.approver.clone(), pending: Mutex::default() });
        let engine = self.engine(Arc::clone(&suspender) as Arc<dyn Approver>);
        let tools: Vec<Arc<ToolDeclaration>> = engine.get_declarations();
        let mut request = ModelRequest::new(inner.model.clone(), std::mem::take(&mut state.messages)).tools(tools);
        request.system = inner.system.clone();
        request.max_tokens = inner.max_tokens_per_request;
        let on_stream = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => self.emit(&AgentEvent::TextDelta(text)),
            StreamEvent::Retrying { attempt, delay } => self.emit(&AgentEvent::Retrying { attempt, delay }),
            _ => {}
        };
        loop {
            state.messages = std::mem::take(&mut request.messages);
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled { transcript: state.messages });
            }
            if state.steps >= limits.max_steps {
                return Err(AgentError::StepLimit { limit: limits.max_steps, transcript: state.messages });
            }
            if let Some(limit) = limits.max_tokens
                && state.usage.total() >= limit
            {
                return Err(AgentError::TokenLimit { limit, used: state.usage.total(), transcript: state.messages });
            }
            let left = match limits.max_time {
                None => None,
                Some(limit) => match limit.checked_sub(state.started.elapsed()) {
                    Some(left) => Some(left),
                    None => return Err(AgentError::TimeLimit { limit, transcript: state.messages }),
                },
            };
            request.messages = std::mem::take(&mut state.messages);
            state.steps += 1;
            let step = state.steps;
            self.emit(&AgentEvent::ModelRequest { step, depth: inner.depth });
            let answer = {
                let call =
                    inner.client.complete(&request, &on_stream).instrument(tracing::info_span!("model_request", step));
                let timeout = async {
                    match left {
                        Some(left) => tokio::time::sleep(left).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    answer = call => Ok(answer),
                    () = cancel.cancelled() => Err(Stop::Cancelled),
                    () = timeout => Err(Stop::Time),
                }
            };
            let response: ModelResponse = match answer {
                Ok(Ok(response)) => response,
                Ok(Err(error)) => return Err(AgentError::Model { error, transcript: request.messages }),
                Err(Stop::Cancelled) => return Err(AgentError::Cancelled { transcript: request.messages }),
                Err(Stop::Time) => {
                    let limit = limits.max_time.unwrap_or_default();
                    return Err(AgentError::TimeLimit { limit, transcript: request.messages });
                }
            };
            state.usage += response.usage;
            self.emit(&AgentEvent::ModelResponse { step, usage: response.usage, total: state.usage });
            request.messages.push(response.to_message());
            if response.tool_calls.is_empty() && response.refused.is_empty() {
                state.messages = request.messages;
                return Ok(Outcome::Finished(self.finished(state, response.text)));
            }
            for call in &response.tool_calls {
                self.emit(&AgentEvent::ToolCall(call.clone()));
            }
            // Calls of tools the request did not declare never run: the
            // model reads why, and which tools it has.
            let mut done = Vec::with_capacity(response.sent_calls.len().max(response.tool_calls.len()));
            for result in &response.refused {
                let message = ToolResultMessage::from(result);
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.push(message);
            }
            // Tools the host runs itself wait; the rest run now.
            let (external, local): (Vec<ToolCall>, Vec<ToolCall>) =
                response.tool_calls.iter().cloned().partition(|c| inner.external.contains(&c.name));
            state.messages = std::mem::take(&mut request.messages);
            let run = self.run_state(&cancel, &state);
            let results = engine
                .execute_batch_in(local, cancel.child_token(), extensions(&run))
                .instrument(tracing::info_span!("tool_calls", step))
                .await;
            state.usage += std::mem::take(&mut *run.spent_by_children.lock().unwrap_or_else(PoisonError::into_inner));
            let waiting: Vec<PendingApproval> =
                std::mem::take(&mut *suspender.pending.lock().unwrap_or_else(PoisonError::into_inner));
            for result in &results {
                if waiting.iter().any(|p| p.call_id == result.id) {
                    continue;
                }
                let message = ToolResultMessage::from(result);
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.push(message);
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled { transcript: state.messages });
            }
            if !waiting.is_empty() || !external.is_empty() {
                for pending in &waiting {
                    self.emit(&AgentEvent::ApprovalNeeded(pending.clone()));
                }
                return Ok(Outcome::Suspended(Suspended {
                    id: suspension_id(),
                    transcript: state.messages,
                    calls: response.tool_calls,
                    done,
                    approvals: waiting,
                    external,
                    usage: state.usage,
                    steps: state.steps,
                }));
            }
            state.messages.push(Message::Tool { results: done });
            if let Some(value) = run.finish.get() {
                return Ok(Outcome::Finished(self.finished(state, value_text(value).into_owned())));
            }
            request.messages = std::mem::take(&mut state.messages);
        }
    }
}

enum Stop {
    Cancelled,
    Time,
}

struct LoopState {
    messages: Vec<Message>,
    usage: Usage,
    steps: usize,
    started: Instant,
}

fn extensions(run: &RunState) -> Extensions {
    let mut extensions = Extensions::default();
    extensions.insert(run.finish.clone());
    extensions.insert(run.clone());
    extensions
}
