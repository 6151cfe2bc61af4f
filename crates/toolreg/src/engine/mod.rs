//! The call pipeline: every call — through a bare [`FunctionRegistry`] or a
//! configured [`ToolEngine`] — goes through the same stages, in this order:
//!
//! 1. **lookup** — an unknown name is [`ToolError::UnknownTool`];
//! 2. **selection** — a tool outside the engine's [`Selection`] is
//!    [`ToolError::NotOffered`];
//! 3. **argument validation** — against the input schema, defaults filled;
//! 4. **approval** — safe tools run, cautious tools run and are recorded,
//!    dangerous tools need an [`Approver`]'s decision bound to exactly this
//!    call (no approver: refused);
//! 5. **before hooks**, 6. **run**, 7. **after hooks** — the [`ToolLayer`]s,
//!    first added outermost, around the tool itself;
//!
//! and then an [`AuditEvent`](crate::policy::AuditEvent) to every
//! [`AuditSink`] and a `tracing` event in a `tool_call` span.
//!
//! A bare registry is the pipeline with nothing configured: every tool
//! offered, no approval stage (approval is a policy, and a registry has
//! none: it runs what your own code asks it to), no hooks, no audit. Calls
//! from a model should go through a [`ToolEngine`], whose approval stage
//! refuses [`Dangerous`](crate::SafetyLevel::Dangerous) tools unless an
//! [`Approver`] approves each call.
//!
//! Arguments are checked against the limits once, validated once (again only
//! if a hook or an approver's edit changed them: a hook that writes
//! [`HookCall::arguments`] marks them changed, see [`ArgumentsChanged`]),
//! hashed once (again only if changed), and a call has one panic boundary, whose result says where the
//! panic started: in the tool, [`ToolError::Panicked`]; in a hook or layer,
//! [`ToolError::HookFailed`] (named after it, see [`ToolLayer::name`]); in
//! the approver, [`ToolError::ApprovalFailed`], the call refused (fail
//! closed) and the tool never run.
//! [`ToolEngine::execute_batch`] runs the calls of one model turn together
//! (see [`BatchOptions`]).
//!
//! Every failure is a [`ToolResult`] carrying the call's id, never a panic or
//! a lost call. The engine needs a Tokio runtime with timers enabled.
//!
//! ```
//! use toolreg::engine::{OutputBudget, ToolEngine};
//! use toolreg::policy::{MemorySink, PolicyApprover, Selection};
//! use toolreg::{tool, FunctionRegistry, ToolCall};
//! use std::sync::Arc;
//!
//! /// Delete a file.
//! #[tool(safety = "dangerous", exclusive = "path")]
//! fn delete_file(path: String) -> String {
//!     format!("deleted {path}")
//! }
//!
//! # fn main() { tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut registry = FunctionRegistry::new();
//! registry.register(delete_file_tool::registration())?;
//!
//! let audit = Arc::new(MemorySink::new());
//! let engine = ToolEngine::builder(&registry)
//!     .selection(Selection::sub_agent())
//!     .approver(PolicyApprover::new().approve_if("delete_file", |args| {
//!         args["path"].as_str().is_some_and(|p| p.starts_with("/tmp/"))
//!     }))
//!     .layer(OutputBudget::new(4_000))
//!     .audit(audit.clone())
//!     .build();
//!
//! let results = engine
//!     .execute_batch(vec![
//!         ToolCall::new("c1", "delete_file", r#"{"path": "/tmp/a"}"#),
//!         ToolCall::new("c2", "delete_file", r#"{"path": "/etc/passwd"}"#),
//!     ])
//!     .await;
//! assert_eq!(results[0].text(), "deleted /tmp/a");
//! assert!(results[1].text().contains("denied"));
//! assert_eq!(audit.events().len(), 2);
//! # Ok::<(), toolreg::RegistryError>(())
//! # }).unwrap(); }
//! ```

mod batch;
mod budget;
mod layer;
mod pipeline;
mod run;
mod site;
mod stages;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use tokio_util::sync::CancellationToken;

use crate::declaration::SafetyLevel;
use crate::exec::{Extensions, ToolCall, ToolError, ToolExecutor, ToolResult};
use crate::handler::ErasedTool;
use crate::policy::{Approver, AuditSink, Selection, ToolSet};
use crate::registry::FunctionRegistry;

pub use budget::{OutputBudget, Overflow, truncate_middle};
pub use layer::{ArgumentsChanged, HookArguments, HookCall, HookFn, Next, ToolLayer, hook_fn};

/// Limits for running calls, alone or in a batch.
///
/// ```
/// use std::time::Duration;
/// use toolreg::engine::BatchOptions;
///
/// let options = BatchOptions::default()
///     .max_concurrency(8)
///     .call_timeout(Duration::from_secs(30))
///     .batch_timeout(Duration::from_secs(120));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchOptions {
    /// Most calls of a batch running at once (default 64; at least 1).
    pub max_concurrency: usize,
    /// Longest a call may run, hooks included, approval excluded (default: none).
    pub call_timeout: Option<Duration>,
    /// Longest a whole batch may take, approvals included (default: none).
    pub batch_timeout: Option<Duration>,
    /// Whether tools that change something (not `Safe`) and declare no
    /// exclusive key may run in parallel. Default `false`: they run one at a
    /// time, in call order, since nothing says they cannot conflict.
    pub parallel_writes: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions { max_concurrency: 64, call_timeout: None, batch_timeout: None, parallel_writes: false }
    }
}

impl BatchOptions {
    /// Set the concurrency limit (0 is taken as 1).
    pub fn max_concurrency(mut self, limit: usize) -> Self {
        self.max_concurrency = limit.max(1);
        self
    }

    /// Set the per-call timeout.
    pub fn call_timeout(mut self, limit: Duration) -> Self {
        self.call_timeout = Some(limit);
        self
    }

    /// Set the per-batch timeout.
    pub fn batch_timeout(mut self, limit: Duration) -> Self {
        self.batch_timeout = Some(limit);
        self
    }

    /// Let non-read-only tools without an exclusive key run in parallel.
    pub fn parallel_writes(mut self, allow: bool) -> Self {
        self.parallel_writes = allow;
        self
    }

    /// Whether any timeout applies: synchronous tools then run on the
    /// blocking pool, so that a tool blocking its thread cannot hold the
    /// caller past the deadline.
    fn has_timeout(&self) -> bool {
        self.call_timeout.is_some() || self.batch_timeout.is_some()
    }
}

/// Builds a [`ToolEngine`]; see the [module docs](self).
#[must_use]
#[derive(Clone)]
pub struct EngineBuilder {
    registry: FunctionRegistry,
    selection: Selection,
    approver: Option<Arc<dyn Approver>>,
    approval_from: SafetyLevel,
    layers: Vec<Arc<dyn ToolLayer>>,
    sinks: Vec<Arc<dyn AuditSink>>,
    options: BatchOptions,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("selection", &self.selection)
            .field("layers", &self.layers.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl EngineBuilder {
    /// Offer only the tools this selection admits (default: all).
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// Who approves calls that need approval (default: nobody, so they are refused).
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Require approval for tools at this safety level or above (default
    /// [`SafetyLevel::Dangerous`]).
    pub fn require_approval_from(mut self, level: SafetyLevel) -> Self {
        self.approval_from = level;
        self
    }

    /// Add a layer (hook); the layer added first sees the call first and the
    /// result last.
    pub fn layer(mut self, layer: impl ToolLayer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Send audit events to this sink too.
    pub fn audit(mut self, sink: impl AuditSink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Set the limits for calls and batches.
    pub fn options(mut self, options: BatchOptions) -> Self {
        self.options = options;
        self
    }

    /// Build the engine: select the tools and build each one's stack once.
    pub fn build(self) -> ToolEngine {
        // Kept so that the engine can be rebuilt with one thing changed
        // (see `ToolEngine::to_builder`); every field is cheap to clone.
        let config = Arc::new(self.clone());
        let tools = ToolSet::new(self.registry, self.selection);
        let offload = self.options.has_timeout();
        let approver = self.approver;
        let stacks = tools
            .entries()
            .map(|entry| {
                let decl = entry.declaration();
                let needs_approval = decl.safety >= self.approval_from;
                let stack = (needs_approval || !self.layers.is_empty() || self.options.call_timeout.is_some())
                    .then(|| stages::build(entry, needs_approval, approver.as_ref(), &self.layers, &self.options));
                let slot = pipeline::Slot { entry: entry.clone(), stack, needs_approval, offload };
                (Arc::<str>::from(decl.name.as_str()), slot)
            })
            .collect();
        ToolEngine {
            config,
            inner: Arc::new(pipeline::Stages {
                tools: Some(tools),
                stacks,
                sinks: self.sinks,
                options: self.options,
                approver_name: approver.as_ref().map(|a| a.name().into_owned()),
            }),
        }
    }
}

/// Runs tool calls through selection, validation, approval, hooks and audit,
/// alone or in batches. Cheap to clone. See the [module docs](self).
#[derive(Clone)]
pub struct ToolEngine {
    inner: Arc<pipeline::Stages>,
    /// What it was built from.
    config: Arc<EngineBuilder>,
}

impl fmt::Debug for ToolEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEngine")
            .field("tools", &self.inner.tools)
            .field("approver", &self.inner.approver_name)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl ToolEngine {
    /// Start building an engine over a snapshot of `registry`.
    pub fn builder(registry: &FunctionRegistry) -> EngineBuilder {
        EngineBuilder {
            registry: registry.clone(),
            selection: Selection::all(),
            approver: None,
            approval_from: SafetyLevel::Dangerous,
            layers: Vec::new(),
            sinks: Vec::new(),
            options: BatchOptions::default(),
        }
    }

    /// A builder holding everything this engine was built from (its
    /// registry snapshot, selection, approver, layers, audit sinks and
    /// limits): change one thing and build again. A host that must impose
    /// its own policy on an engine it was handed uses it, as an MCP server
    /// told to allow dangerous tools replaces the approver.
    ///
    /// ```
    /// use toolreg::engine::ToolEngine;
    /// use toolreg::policy::ApproveAll;
    ///
    /// let engine = ToolEngine::builder(&toolreg::FunctionRegistry::new()).build();
    /// let trusting = engine.to_builder().approver(ApproveAll::new("operator")).build();
    /// # let _ = trusting;
    /// ```
    pub fn to_builder(&self) -> EngineBuilder {
        EngineBuilder::clone(&self.config)
    }

    /// The tools this engine offers: declare these to the model.
    pub fn tools(&self) -> &ToolSet {
        self.inner.tools.as_ref().unwrap_or_else(|| unreachable!("an engine always has a selection"))
    }

    /// The offered declarations, in registration order, shared (no copies).
    pub fn get_declarations(&self) -> Vec<Arc<crate::ToolDeclaration>> {
        self.tools().get_declarations()
    }

    /// The limits in force.
    pub fn options(&self) -> BatchOptions {
        self.inner.options
    }

    /// Run one call, cancellable with `cancel` (also visible to the tool
    /// through its [`CallContext`](crate::CallContext)). Without a token
    /// ([`ToolExecutor::execute_call`]), a tool sees a token only when a
    /// per-call timeout applies.
    pub async fn execute_call_with(&self, call: ToolCall, cancel: CancellationToken) -> ToolResult {
        let token = Arc::new(cancel);
        let control = pipeline::Control { watch: Some(&token), token: Some(Arc::clone(&token)), ..Default::default() };
        pipeline::run(&self.inner, self.registry(), call, control).await
    }

    /// [`execute_call_with`](Self::execute_call_with), with typed values
    /// for the call's [`CallContext::extensions`](crate::CallContext::extensions):
    /// what a host passes down to its hooks, approver and tools (an MCP
    /// server its client connection and progress reporter, an agent loop its
    /// run's state).
    pub async fn execute_call_in(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        extensions: &Extensions,
    ) -> ToolResult {
        let token = Arc::new(cancel);
        let control = pipeline::Control {
            watch: Some(&token),
            token: Some(Arc::clone(&token)),
            extensions: Some(extensions),
            ..Default::default()
        };
        pipeline::run(&self.inner, self.registry(), call, control).await
    }

    /// Run the calls of one model turn together; results come back in the
    /// order of the calls, each with its call's id.
    ///
    /// Read-only (`Safe`) tools run in parallel, up to
    /// [`BatchOptions::max_concurrency`]. Calls that share an exclusive key
    /// (the value of the argument their declaration names) run one at a
    /// time, in call order; other tools that change something run one at a
    /// time unless [`BatchOptions::parallel_writes`] is set. Each call has its
    /// own timeout; the batch has one too; a timed-out or cancelled call
    /// answers with [`ToolError::Timeout`] or [`ToolError::Cancelled`] and the
    /// others go on. A call whose id repeats an earlier call's id in the same
    /// batch is not run: it answers [`ToolError::DuplicateCallId`].
    pub async fn execute_batch(&self, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        self.execute_batch_with(calls, CancellationToken::new()).await
    }

    /// [`execute_batch`](Self::execute_batch), cancellable with `cancel`:
    /// cancelling it answers every unfinished call with
    /// [`ToolError::Cancelled`] at once, and every tool sees it through
    /// [`CallContext::cancelled`](crate::CallContext::cancelled).
    pub async fn execute_batch_with(&self, calls: Vec<ToolCall>, cancel: CancellationToken) -> Vec<ToolResult> {
        batch::run(self, calls, cancel, None).await
    }

    /// [`execute_batch_with`](Self::execute_batch_with), with typed values
    /// for every call's [`CallContext::extensions`](crate::CallContext::extensions)
    /// (see [`execute_call_in`](Self::execute_call_in)).
    pub async fn execute_batch_in(
        &self,
        calls: Vec<ToolCall>,
        cancel: CancellationToken,
        extensions: Extensions,
    ) -> Vec<ToolResult> {
        batch::run(self, calls, cancel, Some(extensions)).await
    }

    fn registry(&self) -> &FunctionRegistry {
        self.tools().registry()
    }
}

impl ToolExecutor for ToolEngine {
    /// Run one call through the whole pipeline, with the per-call timeout.
    fn execute_call(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        pipeline::run(&self.inner, self.registry(), call, pipeline::Control::default())
    }
}

/// Why a call stopped before finishing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    Cancelled,
    Timeout(Duration),
}

impl Stop {
    fn error(self) -> ToolError {
        match self {
            Stop::Cancelled => ToolError::Cancelled,
            Stop::Timeout(limit) => ToolError::Timeout { limit },
        }
    }
}

/// The stack of stages built for one offered tool (approval, timeout,
/// hooks, run), when it has any.
type Stack = Arc<dyn ErasedTool>;

/// Stacks by tool name, in registration order.
type Stacks = IndexMap<Arc<str>, pipeline::Slot, foldhash::fast::FixedState>;
