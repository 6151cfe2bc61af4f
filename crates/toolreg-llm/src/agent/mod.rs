//! The agent loop: declarations → model → tool calls → the engine → results
//! → model, until the model answers without calls, a finishing tool is
//! called (`final_answer`, `return_result`), or a limit is hit.
//!
//! - Every limit (steps, tokens, wall time) and a cancellation is a typed
//!   [`AgentError`] that carries the transcript so far.
//! - A malformed tool call is answered with an error result the model can
//!   correct; it never ends the run.
//! - The agent is built on an [`EngineBuilder`](toolreg::engine::EngineBuilder):
//!   selection, approver, layers and hooks (an
//!   [`OutputBudget`](toolreg::engine::OutputBudget) too), audit and batch
//!   limits configure an agent's tool calls exactly as they configure any
//!   [`ToolEngine`]. The run's state is in every call's context, which is
//!   how [`functions`] (sub-agents, `call_llm`) reach the model and the
//!   budget. Sub-agents use the same engine, offered the same tools but the
//!   user's.
//! - A tool ends the run with a value through the call context's
//!   [`Finish`](toolreg::Finish) slot ([`CallContext::finish`](toolreg::CallContext::finish)):
//!   `return_result`, the built-in `final_answer`, or a tool of yours. The
//!   first finish wins.
//! - When a run needs something from outside — a dangerous call's approval
//!   deferred by [`SuspendForApproval`] (the engine's approver, alone or as
//!   a policy's fallback), a tool the host runs itself — it stops with
//!   [`RunOutcome::Suspended`]: a [`Suspended`] value that serialises with the
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
//! use toolreg::engine::{OutputBudget, ToolEngine};
//! use toolreg::FunctionRegistry;
//! use toolreg_llm::agent::{Agent, RunOutcome};
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
//! let engine = ToolEngine::builder(&registry).layer(OutputBudget::new(4_000));
//! let agent = Agent::builder(model, "scripted", engine).build();
//! match agent.run("What is 2 + 40?").await.unwrap() {
//!     RunOutcome::Finished(done) => assert_eq!(done.answer, "42"),
//!     RunOutcome::Suspended(_) => unreachable!(),
//! }
//! # });
//! # }
//! ```
//!
//! On an engine with a policy, a budget and an audit sink, a dangerous call
//! the policy leaves to [`SuspendForApproval`] suspends the run:
//!
//! ```
//! use std::sync::Arc;
//! use toolreg::engine::{OutputBudget, ToolEngine};
//! use toolreg::policy::{MemorySink, PolicyApprover};
//! use toolreg::{FunctionRegistry, tool};
//! use toolreg_llm::agent::{Agent, RunOutcome, SuspendForApproval};
//! use toolreg_llm::scripted::ScriptedClient;
//!
//! /// Drop a table.
//! #[tool(safety = "dangerous")]
//! fn drop_table(name: String) -> String {
//!     format!("dropped {name}")
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut registry = FunctionRegistry::new();
//! registry.register(drop_table_tool::registration())?;
//! let audit = Arc::new(MemorySink::new());
//! let engine = ToolEngine::builder(&registry)
//!     .approver(PolicyApprover::new().otherwise(SuspendForApproval))
//!     .layer(OutputBudget::new(4_000))
//!     .audit(audit.clone());
//! let model = ScriptedClient::new().then_call("c1", "drop_table", serde_json::json!({"name": "tmp"}));
//! let agent = Agent::builder(model, "scripted", engine).build();
//! let RunOutcome::Suspended(suspended) = agent.run("Clean up.").await? else { unreachable!() };
//! assert_eq!(suspended.approvals[0].tool, "drop_table"); // waits for the host
//! assert_eq!(audit.events().len(), 1);
//! # Ok(())
//! # }
//! ```

mod approval;
mod builder;
mod catalog;
mod conversation;
mod event;
pub mod functions;
mod limits;
mod outcome;
mod post;
mod resume;
mod run;
mod state;
mod stored;
mod suspend;

pub use approval::{PendingApproval, Resolution, SuspendForApproval};
pub use builder::AgentBuilder;
pub use catalog::{Deferral, SEARCH_TOOLS};
pub use event::AgentEvent;
pub use limits::{AgentLimits, Budget};
pub use outcome::{AgentError, Finished, RunOutcome};
pub use post::{POST_PROCESS_ARGUMENT, PostProcessError};
pub use state::RunState;
pub use stored::SuspendedRuns;
pub use suspend::Suspended;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use toolreg::policy::Selection;
use toolreg::{CallOptions, CancellationToken, Extensions, Principal, Scope, ToolEngine};
use toolreg_store::Namespace;

use crate::model::LlmClient;
use event::OnAgentEvent;

/// A model, a system prompt, an engine for its tools, and limits. Cloning
/// shares it.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

struct Inner {
    client: Arc<dyn LlmClient>,
    model: String,
    /// Every tool call of the agent goes through the current engine
    /// (replaced by [`Agent::set_tools`]).
    engines: RwLock<Arc<Engines>>,
    system: Option<String>,
    /// Functions the result goes through before it is returned.
    post_process: Vec<String>,
    limits: AgentLimits,
    external: HashSet<String>,
    max_tokens_per_request: Option<u32>,
    on_event: Option<OnAgentEvent>,
    depth: usize,
    /// Where resumed suspensions are recorded across processes.
    claims: Option<Namespace>,
    /// The suspension and call ids this agent has resumed.
    consumed: Mutex<HashSet<String>>,
    /// The tools loaded only when the model searches for them.
    deferral: Deferral,
    /// Tools the provider's code execution may call.
    code_execution: Option<toolreg::provider::CodeExecution>,
    /// Who the agent runs for: every tool call it makes runs for them.
    principal: Option<Arc<Principal>>,
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

impl Agent {
    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.inner.client
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The limits.
    pub fn limits(&self) -> AgentLimits {
        self.inner.limits
    }

    /// Who the agent runs for ([`AgentBuilder::principal`]).
    pub fn principal(&self) -> Option<&Arc<Principal>> {
        self.inner.principal.as_ref()
    }

    /// The options of a tool call the agent makes: under `cancel`, with
    /// `extensions`, for the agent's principal.
    pub(crate) fn call_options(&self, cancel: CancellationToken, extensions: Extensions) -> CallOptions {
        let mut options = CallOptions::new().cancel(cancel).extensions(extensions);
        options.principal = self.inner.principal.clone();
        options
    }

    /// How deep this agent is nested (0: top level).
    pub fn depth(&self) -> usize {
        self.inner.depth
    }

    /// The engine every tool call of this agent goes through now: the one
    /// its builder was given, built once, or the last
    /// [`set_tools`](Self::set_tools) made.
    pub fn engine(&self) -> ToolEngine {
        self.current().engine.clone()
    }

    /// Offer `registry`'s tools from the next model request on, in runs
    /// under way too, with the same engine set-up (approver, layers, audit,
    /// selection, limits): what a host does when an imported MCP server's
    /// tools change. It must hold the agent functions the builder's did
    /// ([`AgentTools`](functions::AgentTools)). Tools a run loaded that are
    /// gone are no longer offered; calls in flight finish on the engine they
    /// started on.
    pub fn set_tools(&self, registry: &toolreg::FunctionRegistry) {
        let mut engines = self.inner.engines.write().unwrap_or_else(PoisonError::into_inner);
        let engine = engines.engine.to_builder().registry(registry).build();
        *engines = Arc::new(Engines::new(engine, engines.generation + 1));
    }

    /// Tell the host's event handler, if there is one.
    pub(super) fn emit(&self, event: &AgentEvent) {
        if let Some(on_event) = &self.inner.on_event {
            on_event(event);
        }
    }

    /// The engines now.
    pub(super) fn current(&self) -> Arc<Engines> {
        Arc::clone(&self.inner.engines.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The tools this agent loads only when its model searches for them.
    pub fn deferral(&self) -> &Deferral {
        &self.inner.deferral
    }

    /// A sub-agent: this agent's model and engine (approver, layers, audit,
    /// limits), offered what this agent is offered minus the user-scope
    /// tools (and only `tools` when given), one level deeper, within
    /// `budget`.
    pub fn sub_agent(&self, tools: Option<&[String]>, budget: Budget) -> Result<Agent, AgentError> {
        let inner = &self.inner;
        let depth = inner.depth + 1;
        if depth > inner.limits.max_depth {
            return Err(AgentError::DepthLimit { limit: inner.limits.max_depth });
        }
        let current = self.current();
        let engine = match tools {
            None => current.sub.get_or_init(|| sub_engine(&current.engine, None)).clone(),
            Some(tools) => sub_engine(&current.engine, Some(tools)),
        };
        let now = Instant::now();
        let limits = AgentLimits {
            max_steps: budget.steps.min(inner.limits.max_steps),
            max_tokens: budget.tokens,
            max_time: budget.deadline.map(|d| d.saturating_duration_since(now)),
            max_depth: inner.limits.max_depth,
        };
        Ok(Agent {
            inner: Arc::new(Inner {
                client: Arc::clone(&inner.client),
                model: inner.model.clone(),
                engines: RwLock::new(Arc::new(Engines::new(engine, 0))),
                system: Some(
                    "You are a sub-agent working on one task for another agent. When you have the result, call \
                     `return_result` with it."
                        .to_owned(),
                ),
                // A sub-agent's result goes back to its parent's model as is.
                post_process: Vec::new(),
                limits,
                external: HashSet::new(),
                max_tokens_per_request: inner.max_tokens_per_request,
                on_event: inner.on_event.clone(),
                depth,
                claims: None,
                consumed: Mutex::default(),
                // A sub-agent's catalog is deferred as its parent's.
                deferral: inner.deferral.clone(),
                code_execution: inner.code_execution.clone(),
                // A sub-agent works for whom its parent works for.
                principal: inner.principal.clone(),
            }),
        })
    }
}

/// An agent's engine, and its sub-agents' engine (offered no tool list)
/// built from it on first use.
pub(super) struct Engines {
    pub(super) engine: ToolEngine,
    sub: OnceLock<ToolEngine>,
    /// Counts the replacements, so a run under way sees one.
    pub(super) generation: u64,
}

impl Engines {
    pub(super) fn new(engine: ToolEngine, generation: u64) -> Self {
        Engines { engine, sub: OnceLock::new(), generation }
    }
}

/// A sub-agent's engine: the parent's, offering the parent's tools but the
/// user's (only the top-level agent talks to the user), and only `tools`
/// when given: the parent's offered tools, narrowed by name (so the
/// parent's selection stays in force).
fn sub_engine(parent: &ToolEngine, tools: Option<&[String]>) -> ToolEngine {
    let offered = parent.offered();
    let names: Vec<String> = offered
        .list()
        .map(|tool| tool.declaration())
        .filter(|d| d.scope != Scope::User && tools.is_none_or(|t| t.contains(&d.name)))
        .map(|d| d.name.clone())
        .collect();
    parent.to_builder().selection(Selection::all().allow(names)).build()
}
