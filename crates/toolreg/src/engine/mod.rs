//! The execution engine: every call through one stack, in this order:
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
//! and then an [`AuditEvent`] to every [`AuditSink`] and a `tracing` event in
//! a `tool_call` span. [`ToolEngine::execute_batch`] runs the calls of one
//! model turn together (see [`BatchOptions`]).
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
//! assert_eq!(results[0].output().text(), "deleted /tmp/a");
//! assert!(results[1].output().text().contains("denied"));
//! assert_eq!(audit.events().len(), 2);
//! # Ok::<(), toolreg::RegistryError>(())
//! # }).unwrap(); }
//! ```

mod batch;
mod budget;
mod layer;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::declaration::SafetyLevel;
use crate::exec::{CallContext, ToolArguments, ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult};
use crate::handler::{CallFailure, ErasedTool, ToolFuture};
use crate::policy::{
    Approval, ApprovalRequest, Approver, ArgumentsHash, AuditDecision, AuditEvent, AuditSink, Decision, Selection,
    ToolSet, error_kind,
};
use crate::registry::{FunctionRegistry, ToolEntry};

pub use budget::{OutputBudget, truncate_middle};
pub use layer::{HookCall, HookFn, Next, ToolLayer, hook_fn};

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
}

/// Builds a [`ToolEngine`]; see the [module docs](self).
#[must_use]
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
        let tools = ToolSet::new(self.registry, self.selection);
        let stacks = tools
            .entries()
            .map(|entry| {
                let decl = entry.declaration();
                let needs_approval = decl.safety >= self.approval_from;
                let runner = EntryRunner { entry: Arc::new(entry.clone()), needs_approval };
                let mut stack: Arc<dyn ErasedTool> = Arc::new(runner);
                for layer in self.layers.iter().rev() {
                    stack = layer.layer(stack);
                }
                (Arc::<str>::from(decl.name.as_str()), Arc::new(Slot { entry: entry.clone(), stack }))
            })
            .collect();
        ToolEngine {
            inner: Arc::new(Inner {
                tools,
                stacks,
                approver: self.approver,
                approval_from: self.approval_from,
                has_layers: !self.layers.is_empty(),
                sinks: self.sinks,
                options: self.options,
            }),
        }
    }
}

/// The innermost layer: re-checks the arguments (hooks may have rewritten
/// them), checks the approval against exactly these arguments, then runs the
/// tool with panics contained.
struct EntryRunner {
    entry: Arc<ToolEntry>,
    needs_approval: bool,
}

impl ErasedTool for EntryRunner {
    fn call(&self, cx: CallContext, mut args: Value) -> ToolFuture {
        if self.needs_approval {
            let tool = &self.entry.declaration().name;
            if let Err(errors) = self.entry.check_arguments(&mut args) {
                let error = ToolError::InvalidArguments { tool: tool.clone(), errors };
                return Box::pin(std::future::ready(Err(CallFailure::Error(error))));
            }
            let detail = match cx.approval() {
                None => Some("the call has no approval"),
                Some(grant) if grant.tool() != tool || grant.call_id() != cx.call_id() => {
                    Some("the approval was given for another call")
                }
                Some(grant) if grant.request_hash() != ArgumentsHash::of(&args) => {
                    Some("the arguments changed after they were approved")
                }
                Some(_) => None,
            };
            if let Some(detail) = detail {
                let error = ToolError::ApprovalMismatch { tool: tool.clone(), detail: detail.to_owned() };
                return Box::pin(std::future::ready(Err(CallFailure::Error(error))));
            }
        }
        let entry = Arc::clone(&self.entry);
        Box::pin(async move { entry.call(cx, args).await.map(|output| output.value).map_err(CallFailure::Error) })
    }
}

/// A selected tool and the stack built for it.
pub(crate) struct Slot {
    entry: ToolEntry,
    stack: Arc<dyn ErasedTool>,
}

struct Inner {
    tools: ToolSet,
    stacks: HashMap<Arc<str>, Arc<Slot>>,
    approver: Option<Arc<dyn Approver>>,
    approval_from: SafetyLevel,
    has_layers: bool,
    sinks: Vec<Arc<dyn AuditSink>>,
    options: BatchOptions,
}

/// Runs tool calls through selection, validation, approval, hooks and audit,
/// alone or in batches. Cheap to clone. See the [module docs](self).
#[derive(Clone)]
pub struct ToolEngine {
    inner: Arc<Inner>,
}

impl fmt::Debug for ToolEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEngine")
            .field("tools", &self.inner.tools)
            .field("approver", &self.inner.approver.as_ref().map(|a| a.name().into_owned()))
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

/// Why a call stopped before finishing.
enum Stop {
    Cancelled,
    Timeout(Duration),
}

/// A point in time after which a call is stopped, and the limit it stands for.
#[derive(Clone, Copy)]
pub(crate) struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    fn after(limit: Duration) -> Self {
        Deadline { at: Instant::now() + limit, limit }
    }

    fn earliest(a: Option<Deadline>, b: Option<Deadline>) -> Option<Deadline> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if a.at <= b.at { a } else { b }),
            (a, b) => a.or(b),
        }
    }
}

/// Run `future` unless the token is cancelled or the deadline passes first.
async fn bounded<F: Future>(
    future: F,
    cancel: Option<&CancellationToken>,
    deadline: Option<Deadline>,
) -> Result<F::Output, Stop> {
    if cancel.is_none() && deadline.is_none() {
        return Ok(future.await);
    }
    let cancelled = async {
        match cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    match deadline {
        None => tokio::select! {
            biased;
            output = future => Ok(output),
            () = cancelled => Err(Stop::Cancelled),
        },
        Some(d) => {
            // Boxed: a timer is large, and most calls have none.
            let timer = Box::pin(tokio::time::sleep_until(d.at.into()));
            tokio::select! {
                biased;
                output = future => Ok(output),
                () = cancelled => Err(Stop::Cancelled),
                () = timer => Err(Stop::Timeout(d.limit)),
            }
        }
    }
}

/// A call with its tool looked up and its arguments parsed.
pub(crate) struct Prepared {
    id: String,
    name: String,
    /// The tool's slot and the parsed arguments, or why there are none.
    ready: Result<(Arc<Slot>, Value), ToolError>,
}

/// What the audit records besides the outcome.
#[derive(Default)]
struct Trail {
    safety: Option<SafetyLevel>,
    decision: AuditDecision,
    approver: Option<String>,
    hash: Option<ArgumentsHash>,
    approved_hash: Option<ArgumentsHash>,
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

    /// The tools this engine offers: declare these to the model.
    pub fn tools(&self) -> &ToolSet {
        &self.inner.tools
    }

    /// Copies of the offered declarations, in registration order.
    pub fn get_declarations(&self) -> Vec<crate::ToolDeclaration> {
        self.inner.tools.get_declarations()
    }

    /// The limits in force.
    pub fn options(&self) -> BatchOptions {
        self.inner.options
    }

    /// Run one call, cancellable with `cancel` (also visible to the tool
    /// through its [`CallContext`]). Without a token ([`ToolExecutor::execute_call`]),
    /// a tool sees a token only when a per-call timeout applies.
    pub async fn execute_call_with(&self, call: ToolCall, cancel: CancellationToken) -> ToolResult {
        let prepared = self.prepare(call);
        self.run(prepared, Some(&cancel), None).await
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
    /// others go on.
    pub async fn execute_batch(&self, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        self.execute_batch_with(calls, CancellationToken::new()).await
    }

    /// [`execute_batch`](Self::execute_batch), cancellable with `cancel`:
    /// cancelling it answers every unfinished call with
    /// [`ToolError::Cancelled`] at once, and every tool sees it through
    /// [`CallContext::cancelled`].
    pub async fn execute_batch_with(&self, calls: Vec<ToolCall>, cancel: CancellationToken) -> Vec<ToolResult> {
        batch::run(self, calls, cancel).await
    }

    /// Look the tool up and parse the arguments.
    pub(crate) fn prepare(&self, call: ToolCall) -> Prepared {
        let ToolCall { id, name, arguments } = call;
        let ready = match self.inner.stacks.get(name.as_str()) {
            Some(slot) => match arguments {
                ToolArguments::Json(value) => Ok((Arc::clone(slot), value)),
                ToolArguments::Raw(text) => {
                    self.inner.tools.registry().parse_arguments(&name, &text).map(|value| (Arc::clone(slot), value))
                }
            },
            // Not selected: tell an unknown name from a tool that was not offered.
            None => Err(match self.inner.tools.lookup(&name) {
                Err(error) => error,
                Ok(_) => self.inner.tools.registry().unknown_tool(&name),
            }),
        };
        Prepared { id, name, ready }
    }

    /// Run a prepared call through the whole stack and record it.
    /// Everything from the gate on runs in a `tool_call` span, and the audit
    /// event is emitted in it.
    pub(crate) async fn run(
        &self,
        prepared: Prepared,
        cancel: Option<&CancellationToken>,
        batch: Option<Deadline>,
    ) -> ToolResult {
        let Prepared { id, name, ready } = prepared;
        let span = tracing::info_span!("tool_call", tool = %name, call_id = %id);
        let inner = &self.inner;
        let auditing = !inner.sinks.is_empty() || tracing::enabled!(target: "toolreg::audit", tracing::Level::INFO);
        let started_at = auditing.then(SystemTime::now);
        let (outcome, trail) = match ready {
            Err(error) => (Err(error), Trail::default()),
            // Boxed, with the trail inside, so that the large pipeline future
            // is neither held nor moved by every caller that awaits this one.
            Ok((slot, args)) => {
                let gated = async {
                    let mut trail = Trail {
                        safety: Some(slot.entry.declaration().safety),
                        hash: auditing.then(|| ArgumentsHash::of(&args)),
                        ..Trail::default()
                    };
                    let outcome = self.gate_and_run(&id, &slot, args, cancel, batch, &mut trail).await;
                    (outcome, trail)
                };
                Box::pin(gated.instrument(span.clone())).await
            }
        };
        let outcome_kind = match &outcome {
            Ok(output) if output.is_error => "tool_error",
            Ok(_) => "ok",
            Err(error) => error_kind(error),
        };
        if let Some(started_at) = started_at {
            let duration = started_at.elapsed().unwrap_or_default();
            let result_bytes = match &outcome {
                Ok(output) => text_len(&output.value),
                Err(error) => error.model_text().len(),
            };
            let event = AuditEvent::new(
                &name,
                &id,
                trail.safety,
                trail.hash,
                trail.approved_hash,
                trail.decision,
                trail.approver,
                started_at,
                duration,
                outcome_kind,
                result_bytes,
            );
            let _in_span = span.enter();
            tracing::info!(
                target: "toolreg::audit",
                tool = %event.tool,
                call_id = %event.call_id,
                decision = %event.decision,
                approver = event.approver.as_deref().unwrap_or(""),
                arguments_hash = %event.arguments_hash.map(|h| h.to_string()).unwrap_or_default(),
                approved_hash = %event.approved_hash.map(|h| h.to_string()).unwrap_or_default(),
                duration_us = event.duration_us,
                outcome = %event.outcome,
                result_bytes = event.result_bytes,
                "tool call"
            );
            for sink in &inner.sinks {
                sink.record(&event);
            }
        }
        ToolResult { id, name, outcome }
    }

    /// Validation, approval, then the layer stack.
    async fn gate_and_run(
        &self,
        id: &str,
        slot: &Slot,
        mut args: Value,
        cancel: Option<&CancellationToken>,
        batch: Option<Deadline>,
        trail: &mut Trail,
    ) -> Result<ToolOutput, ToolError> {
        let inner = &self.inner;
        let entry = &slot.entry;
        let decl = entry.declaration_arc();
        let tool = decl.name.as_str();
        let needs_approval = decl.safety >= inner.approval_from;
        // Validate here when something before the run looks at the arguments
        // (approver, hooks); otherwise the run validates them.
        if needs_approval || inner.has_layers {
            entry
                .check_arguments(&mut args)
                .map_err(|errors| ToolError::InvalidArguments { tool: tool.to_owned(), errors })?;
        }
        let mut grant = None;
        if needs_approval {
            let mut bound = ArgumentsHash::of(&args);
            let Some(approver) = &inner.approver else {
                trail.decision = AuditDecision::NoApprover;
                return Err(ToolError::ApprovalRequired { tool: tool.to_owned() });
            };
            let approver_name = approver.name().into_owned();
            trail.approver = Some(approver_name.clone());
            let request = ApprovalRequest::new(Arc::clone(decl), Some(id), args.clone());
            let asked = AssertUnwindSafe(async { approver.decide(request.clone()).await }).catch_unwind();
            let decision = match bounded(asked, cancel, batch).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(_panic)) => Decision::deny("the approver failed"),
                Err(stop) => return Err(stopped(tool, stop)),
            };
            let approval = match decision {
                Decision::Deny { reason } => {
                    trail.decision = AuditDecision::Denied;
                    return Err(ToolError::Denied { tool: tool.to_owned(), reason, approver: approver_name });
                }
                Decision::Approve(approval) => approval,
            };
            if !approval.is_for(&request) {
                trail.decision = AuditDecision::Mismatch;
                let detail = "the approver answered with an approval given for another call".to_owned();
                return Err(ToolError::ApprovalMismatch { tool: tool.to_owned(), detail });
            }
            trail.decision = AuditDecision::Approved;
            if let Some(edited) = approval.edited_arguments() {
                trail.decision = AuditDecision::ApprovedEdited;
                args = edited.clone();
                entry
                    .check_arguments(&mut args)
                    .map_err(|errors| ToolError::InvalidEdit { tool: tool.to_owned(), errors })?;
                bound = ArgumentsHash::of(&args);
            }
            trail.approved_hash = Some(bound);
            grant = Some(Arc::new(Approval::bind(tool, Some(id), bound, approver_name)));
        } else {
            trail.decision =
                if decl.safety == SafetyLevel::Safe { AuditDecision::NotRequired } else { AuditDecision::Recorded };
        }

        let deadline = Deadline::earliest(inner.options.call_timeout.map(Deadline::after), batch);
        // The call gets a token of its own when it can time out, so that a
        // timeout stops this call's work only.
        let call_cancel = deadline.map(|_| cancel.map_or_else(CancellationToken::new, CancellationToken::child_token));
        let mut cx = CallContext::new(id).with_declaration(Arc::clone(decl)).with_approval(grant);
        if let Some(token) = call_cancel.clone().or_else(|| cancel.cloned()) {
            cx = cx.with_cancellation(token);
        }
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| slot.stack.call(cx, args)));
        let result = match started {
            Ok(future) => bounded(AssertUnwindSafe(future).catch_unwind(), cancel, deadline).await,
            Err(panic) => Ok(Err(panic)),
        };
        match result {
            Ok(Ok(Ok(value))) => Ok(ToolOutput::success(value)),
            Ok(Ok(Err(failure))) => Err(layer::failure_to_error(tool, failure)),
            Ok(Err(panic)) => {
                Err(ToolError::Panicked { tool: tool.to_owned(), message: crate::registry::panic_message(&*panic) })
            }
            Err(stop) => {
                // Tell the tool (and anything it spawned) to stop; its future is dropped.
                if let (Stop::Timeout(_), Some(token)) = (&stop, &call_cancel) {
                    token.cancel();
                }
                Err(stopped(tool, stop))
            }
        }
    }
}

fn stopped(tool: &str, stop: Stop) -> ToolError {
    match stop {
        Stop::Cancelled => ToolError::Cancelled { tool: tool.to_owned() },
        Stop::Timeout(limit) => ToolError::Timeout { tool: tool.to_owned(), limit },
    }
}

/// Length in bytes of the text a model reads for this value.
fn text_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    match value {
        Value::String(s) => s.len(),
        other => {
            let mut counter = Counter(0);
            let _ = serde_json::to_writer(&mut counter, other);
            counter.0
        }
    }
}

impl ToolExecutor for ToolEngine {
    /// Run one call through the whole stack, with the per-call timeout.
    async fn execute_call(&self, call: ToolCall) -> ToolResult {
        let prepared = self.prepare(call);
        self.run(prepared, None, None).await
    }
}
