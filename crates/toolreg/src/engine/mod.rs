//! The call pipeline: every call — through a [`FunctionRegistry`] or a
//! configured [`ToolEngine`] — runs the same steps, written in order in one
//! module (`engine/pipeline.rs`):
//!
//! 1. **lookup** and **selection** — an unknown name is
//!    [`ToolError::UnknownTool`], a tool outside the engine's [`Selection`]
//!    [`ToolError::NotOffered`];
//! 2. **argument limits**, on the text or value as it came;
//! 3. **validation** against the input schema, defaults filled;
//! 4. **approval** — safe tools run, cautious tools run and are recorded,
//!    dangerous tools need an [`Approver`]'s decision bound to exactly this
//!    call (no approver: refused);
//! 5. **hooks** and **run** — the [`ToolLayer`]s, first added outermost
//!    ([`Next::run`] walks them), then the tool, under the per-call timeout;
//! 6. **audit** — an [`AuditEvent`](crate::policy::AuditEvent) to every
//!    [`AuditSink`] and a `tracing` event in a `tool_call` span.
//!
//! A registry is the pipeline with nothing configured: every tool offered,
//! no approval (approval is a policy, and a registry has none: it runs what
//! your own code asks it to), no hooks, no audit sinks. Calls from a model
//! should go through a [`ToolEngine`], which refuses
//! [`Dangerous`](crate::SafetyLevel::Dangerous) tools unless an [`Approver`]
//! approves each call.
//!
//! The front doors, and when to use each: [`FunctionRegistry::execute`]
//! runs a tool from your own code; [`ToolExecutor::execute_call`] runs one
//! call a model made, on a registry or an engine; [`ToolEngine::execute_batch`]
//! runs the calls of one model turn together (see [`BatchOptions`]). Both
//! take a [`CallOptions`] for cancellation and extensions
//! (`CallOptions::default()` for none).
//!
//! Arguments are checked against the limits once, validated once (again
//! only when a layer or an approver's edit changed them: a layer's mutable
//! use of [`HookCall::arguments`] is the signal), hashed once. The approver,
//! each layer and the tool each run inside a panic boundary of their own, so
//! a panic is the error of the stage it started in: in the tool,
//! [`ToolError::Panicked`] (which the layers above see come back, as any
//! failure of the tool); in a hook or layer, [`ToolError::HookFailed`]
//! (named after it, see [`ToolLayer::name`]); in the approver,
//! [`ToolError::ApprovalFailed`], the call refused (fail closed) and the
//! tool never run.
//!
//! Every failure is a [`ToolResult`] carrying the call's id, never a panic or
//! a lost call. The engine needs a Tokio runtime with timers enabled.
//!
//! ```
//! use toolreg::engine::{OutputBudget, ToolEngine};
//! use toolreg::policy::{MemorySink, PolicyApprover, Selection};
//! use toolreg::{tool, CallOptions, FunctionRegistry, ToolCall};
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
//! let calls = vec![
//!     ToolCall::new("c1", "delete_file", r#"{"path": "/tmp/a"}"#),
//!     ToolCall::new("c2", "delete_file", r#"{"path": "/etc/passwd"}"#),
//! ];
//! let results = engine.execute_batch(calls, CallOptions::default()).await;
//! assert_eq!(results[0].text(), "deleted /tmp/a");
//! assert!(results[1].text().contains("denied"));
//! assert_eq!(audit.events().len(), 2);
//! # Ok::<(), toolreg::RegistryError>(())
//! # }).unwrap(); }
//! ```

mod batch;
mod budget;
mod contain;
#[cfg(feature = "search")]
mod deferral;
mod layer;
mod offered;
mod pipeline;
mod record;
#[cfg(test)]
mod tests;
mod timeout;
mod tool;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::declaration::SafetyLevel;
use crate::exec::{CallOptions, ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult};
use crate::policy::{AccessPolicy, Approver, AuditSink, Quotas, Selection};
use crate::registry::{FunctionRegistry, RegistryError, ToolRegistration};
use layer::Layer;
use pipeline::{Approval, Control, Pipeline};

pub use budget::{OutputBudget, Overflow, truncate_middle};
#[cfg(feature = "search")]
pub use deferral::Deferral;
pub use layer::{HookArguments, HookCall, HookFn, Next, ToolLayer, hook_fn};
pub use offered::OfferedTools;

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
    /// Most bytes a result's content blocks may hold together (images,
    /// files, text blocks; default 16 MiB). A result past it is
    /// [`ToolError::ResultTooLarge`]. A plain JSON value is not counted
    /// here: [`OutputBudget`] bounds text.
    pub max_content_bytes: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl BatchOptions {
    /// The defaults: 64 calls at once, no timeouts, writes one at a time,
    /// 16 MiB of content blocks per result.
    pub const DEFAULT: BatchOptions = BatchOptions {
        max_concurrency: 64,
        call_timeout: None,
        batch_timeout: None,
        parallel_writes: false,
        max_content_bytes: 16 << 20,
    };

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

    /// Set the limit on a result's content blocks, in bytes.
    pub fn max_content_bytes(mut self, limit: usize) -> Self {
        self.max_content_bytes = limit;
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
    access: Option<Arc<AccessPolicy>>,
    /// Each principal's counters under the policy's quotas: shared by every
    /// engine built again from this one, so a rebuild resets nothing.
    quotas: Quotas,
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
    /// Build over a snapshot of `registry` instead (everything else kept):
    /// a host whose tools changed (an MCP server's `list_changed`) builds
    /// the same engine again over the new set with
    /// `engine.to_builder().registry(&new)`.
    pub fn registry(mut self, registry: &FunctionRegistry) -> Self {
        self.registry = registry.clone();
        self
    }

    /// Register one more tool in the builder's registry snapshot, checked
    /// as [`FunctionRegistry::register`] checks it: how a host adds a tool
    /// of its own to an engine it was handed
    /// (`engine.to_builder().register(tool)?.build()`), its calls then
    /// going through that engine's selection, approver, hooks and audit.
    pub fn register(mut self, registration: ToolRegistration) -> Result<Self, RegistryError> {
        self.registry.register(registration)?;
        Ok(self)
    }

    /// Offer only the tools this selection admits (default: all).
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// Let each principal call only what `policy` grants it
    /// ([`CallOptions::principal`](crate::CallOptions::principal); a call
    /// without one holds the policy's `default` role): checked before
    /// anything else runs, a refusal answered
    /// [`ToolError::Forbidden`] with the rule;
    /// a call its role lists under `approve` needs the approver whatever
    /// the tool's safety; a principal past its role's quota (calls a
    /// minute, calls at once) is answered
    /// [`ToolError::QuotaExceeded`] and
    /// the others keep working.
    pub fn access(mut self, policy: AccessPolicy) -> Self {
        self.access = Some(Arc::new(policy));
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

    /// Build the engine: select the offered tools and name the layers, once.
    pub fn build(self) -> ToolEngine {
        // Kept so that the engine can be rebuilt with one thing changed
        // (see `ToolEngine::to_builder`); every field is cheap to clone.
        let config = Arc::new(self.clone());
        let offered = OfferedTools { registry: self.selection.apply(&self.registry) };
        let layers = self
            .layers
            .iter()
            .map(|layer| Layer { name: Arc::from(layer.name().as_ref()), layer: Arc::clone(layer) })
            .collect();
        let state = EngineState {
            registered: self.registry,
            offered,
            approval: Approval::From { level: self.approval_from, approver: self.approver },
            layers,
            sinks: self.sinks,
            options: self.options,
            access: self.access,
            quotas: self.quotas,
        };
        ToolEngine { state: Arc::new(state), config }
    }
}

/// Runs tool calls through selection, validation, approval, hooks and audit,
/// alone or in batches. Cheap to clone. See the [module docs](self).
///
/// Its front doors: [`ToolExecutor::execute_call`] for one call and
/// [`execute_batch`](Self::execute_batch) for the calls of one model turn,
/// each with [`CallOptions`] (a cancellation token and extensions).
#[derive(Clone)]
pub struct ToolEngine {
    state: Arc<EngineState>,
    /// What it was built from.
    config: Arc<EngineBuilder>,
}

impl fmt::Debug for ToolEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEngine")
            .field("tools", &self.state.offered.registry)
            .field("options", &self.state.options)
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
            access: None,
            quotas: Quotas::default(),
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

    /// The tools this engine offers (its entries shared with the registry
    /// it was built from): declare these to the model. Every other tool is
    /// refused. Read-only: the offered tools run only through the engine.
    pub fn offered(&self) -> &OfferedTools {
        &self.state.offered
    }

    /// The limits in force.
    pub fn options(&self) -> BatchOptions {
        self.state.options
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
    ///
    /// Under `options` (`CallOptions::default()`: none): cancelling its
    /// token answers every unfinished call with [`ToolError::Cancelled`] at
    /// once (every tool sees it through
    /// [`CallContext::cancelled`](crate::CallContext::cancelled)), and its
    /// extensions reach every call's
    /// [`CallContext::extensions`](crate::CallContext::extensions).
    pub async fn execute_batch(&self, calls: Vec<ToolCall>, options: CallOptions) -> Vec<ToolResult> {
        let CallOptions { cancel, extensions, principal } = options;
        batch::run(self, calls, cancel.unwrap_or_default(), extensions, principal).await
    }
}

impl ToolExecutor for ToolEngine {
    /// Run one call through the whole pipeline, with the per-call timeout,
    /// cancellable with the options' token (also visible to the tool
    /// through its [`CallContext`](crate::CallContext)), with the options'
    /// extensions. Without a token, a tool sees one only when a per-call
    /// timeout applies.
    fn execute_call(&self, call: ToolCall, options: CallOptions) -> BoxFuture<'_, ToolResult> {
        Box::pin(async move {
            let token = options.cancel.clone().map(Arc::new);
            let control = Control::of(&options, token.as_ref());
            pipeline::run(self.pipeline(), call, control).await
        })
    }
}

/// What an engine fixed when it was built; each call borrows it as its
/// [`Pipeline`].
struct EngineState {
    registered: FunctionRegistry,
    offered: OfferedTools,
    approval: Approval,
    layers: Arc<[Layer]>,
    sinks: Vec<Arc<dyn AuditSink>>,
    options: BatchOptions,
    access: Option<Arc<AccessPolicy>>,
    quotas: Quotas,
}

impl ToolEngine {
    fn pipeline(&self) -> Pipeline<'_> {
        let state = &*self.state;
        Pipeline {
            registered: &state.registered,
            offered: &state.offered.registry,
            approval: &state.approval,
            layers: &state.layers,
            sinks: &state.sinks,
            options: &state.options,
            access: state.access.as_deref(),
            quotas: &state.quotas,
        }
    }

    /// The access policy calls are checked against, when one was set
    /// ([`EngineBuilder::access`]): a host shows each principal what it
    /// grants.
    pub fn access(&self) -> Option<&AccessPolicy> {
        self.state.access.as_deref()
    }
}

/// A registry runs its calls through the same pipeline as an engine, with
/// nothing configured: every tool offered, no approval (a registry runs what
/// your own code asks it to), no hooks, no audit sinks. Calls from a model
/// should go through a [`ToolEngine`].
impl FunctionRegistry {
    /// Run a tool by name on parsed arguments: a convenience for your own
    /// code. A model's calls (with ids, argument text, cancellation)
    /// go through [`ToolExecutor::execute_call`].
    pub async fn execute(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        pipeline::run(Pipeline::of_registry(self), ToolCall::new("", name, args), Control::default()).await.outcome
    }
}

impl ToolExecutor for FunctionRegistry {
    fn execute_call(&self, call: ToolCall, options: CallOptions) -> BoxFuture<'_, ToolResult> {
        Box::pin(async move {
            let token = options.cancel.clone().map(Arc::new);
            let control = Control::of(&options, token.as_ref());
            pipeline::run(Pipeline::of_registry(self), call, control).await
        })
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
