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
//! and then an [`AuditEvent`](crate::policy::AuditEvent) to every
//! [`AuditSink`] and a `tracing` event in a `tool_call` span.
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
//! assert_eq!(results[0].output().text(), "deleted /tmp/a");
//! assert!(results[1].output().text().contains("denied"));
//! assert_eq!(audit.events().len(), 2);
//! # Ok::<(), toolreg::RegistryError>(())
//! # }).unwrap(); }
//! ```

mod batch;
mod budget;
mod call;
mod layer;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tracing::Instrument;

use crate::declaration::SafetyLevel;
use crate::exec::{CallContext, ToolArguments, ToolCall, ToolError, ToolExecutor, ToolResult};
use crate::handler::{CallFailure, ErasedTool, ToolFuture};
use crate::policy::{Approver, ArgumentsHash, AuditSink, Selection, ToolSet};
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
                // Nothing reads the arguments before the tool does: no approver,
                // no hook, no exclusive key to find the batch lane by.
                let takes_text = !needs_approval && self.layers.is_empty() && decl.exclusive_key.is_none();
                (Arc::<str>::from(decl.name.as_str()), Slot { entry: entry.clone(), stack, takes_text })
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
                return ToolFuture::ready(Err(CallFailure::Error(error)));
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
                return ToolFuture::ready(Err(CallFailure::Error(error)));
            }
        }
        let entry = Arc::clone(&self.entry);
        ToolFuture::new(
            async move { entry.call(cx, args).await.map(|output| output.value).map_err(CallFailure::Error) },
        )
    }
}

/// A selected tool and the stack built for it.
pub(crate) struct Slot {
    entry: ToolEntry,
    stack: Arc<dyn ErasedTool>,
    /// Whether a call may keep its argument text until the tool reads it.
    takes_text: bool,
}

struct Inner {
    tools: ToolSet,
    stacks: IndexMap<Arc<str>, Slot, foldhash::fast::RandomState>,
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
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
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
}

/// Run `future` unless the token is cancelled or the deadline passes first.
fn bounded<'a, F: Future>(
    future: F,
    cancel: Option<&'a CancellationToken>,
    deadline: Option<Deadline>,
) -> Bounded<'a, F> {
    Bounded {
        future,
        // Boxed too: only a single call run with its own token has one.
        cancelled: cancel.map(|token| Box::pin(token.cancelled())),
        // Boxed: a timer is large, and most calls have none.
        timer: deadline.map(|d| (Box::pin(tokio::time::sleep_until(d.at.into())), d.limit)),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`bounded`]: a hand-written `select!` that checks the
    /// call first, then cancellation, then the timer, and holds the call's
    /// future only once (an `async fn` would keep a second copy of it).
    struct Bounded<'a, F> {
        #[pin]
        future: F,
        cancelled: Option<Pin<Box<WaitForCancellationFuture<'a>>>>,
        timer: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
    }
}

impl<F: Future> Future for Bounded<'_, F> {
    type Output = Result<F::Output, Stop>;

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.future.poll(task) {
            return Poll::Ready(Ok(output));
        }
        if let Some(cancelled) = this.cancelled
            && cancelled.as_mut().poll(task).is_ready()
        {
            return Poll::Ready(Err(Stop::Cancelled));
        }
        if let Some((timer, limit)) = this.timer
            && timer.as_mut().poll(task).is_ready()
        {
            return Poll::Ready(Err(Stop::Timeout(*limit)));
        }
        Poll::Pending
    }
}

/// A call with its tool looked up and its arguments parsed, or checked and
/// kept as text for a tool that reads them itself.
pub(crate) struct Prepared {
    id: String,
    name: String,
    /// The index of the tool's slot and the arguments, or why there are none.
    ready: Result<(usize, Arguments), ToolError>,
}

/// A call's arguments on their way to the tool.
pub(crate) enum Arguments {
    /// Parsed: given so, or needed before the run (approval, hooks, lanes).
    Parsed(Value),
    /// Text within the registry's limits, for a tool that parses it itself:
    /// typed tools deserialise it without building a [`Value`].
    Text(String),
}

impl Arguments {
    /// The hash of the canonical arguments; `None` for text that is not
    /// JSON (the call fails on it anyway).
    fn hash(&self) -> Option<ArgumentsHash> {
        match self {
            Arguments::Parsed(value) => Some(ArgumentsHash::of(value)),
            Arguments::Text(text) if text.trim().is_empty() => Some(ArgumentsHash::of(&crate::validate::empty_args())),
            Arguments::Text(text) => ArgumentsHash::of_json(text).ok(),
        }
    }

    /// The arguments as a [`Value`], parsing text now.
    fn into_value(self, engine: &ToolEngine, tool: &str) -> Result<Value, ToolError> {
        match self {
            Arguments::Parsed(value) => Ok(value),
            Arguments::Text(text) => engine.inner.tools.registry().parse_arguments(tool, &text),
        }
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
        let token = Arc::new(cancel);
        self.run(prepared, Some(&token), Some(Arc::clone(&token))).await
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

    /// Look the tool up and check the arguments: parsed, or kept as text
    /// when nothing before the tool reads them.
    pub(crate) fn prepare(&self, call: ToolCall) -> Prepared {
        let ToolCall { id, name, arguments } = call;
        let registry = self.inner.tools.registry();
        let ready = match self.inner.stacks.get_full(name.as_str()) {
            Some((index, _, slot)) => match arguments {
                ToolArguments::Json(value) => Ok((index, Arguments::Parsed(value))),
                ToolArguments::Raw(text) if slot.takes_text => {
                    registry.check_argument_text(&name, &text).map(|()| (index, Arguments::Text(text)))
                }
                ToolArguments::Raw(text) => {
                    registry.parse_arguments(&name, &text).map(|value| (index, Arguments::Parsed(value)))
                }
            },
            // Not selected: tell an unknown name from a tool that was not offered.
            None => Err(match self.inner.tools.lookup(&name) {
                Err(error) => error,
                Ok(_) => registry.unknown_tool(&name),
            }),
        };
        Prepared { id, name, ready }
    }

    /// Run a prepared call through the whole stack and record it, all in a
    /// `tool_call` span; the audit event is emitted in it.
    ///
    /// `watch` stops the call when cancelled; `token` is what the tool sees.
    pub(crate) fn run<'a>(
        &'a self,
        prepared: Prepared,
        watch: Option<&'a CancellationToken>,
        token: Option<Arc<CancellationToken>>,
    ) -> tracing::instrument::Instrumented<call::EngineCall<'a>> {
        let span = tracing::info_span!("tool_call", tool = %prepared.name, call_id = %prepared.id);
        call::EngineCall::new(self, prepared, watch, token).instrument(span)
    }

    /// The selected tool at this index of the stack table.
    pub(crate) fn slot(&self, index: usize) -> Option<&Slot> {
        self.inner.stacks.get_index(index).map(|(_, slot)| slot)
    }
}

fn stopped(tool: &str, stop: Stop) -> ToolError {
    match stop {
        Stop::Cancelled => ToolError::Cancelled { tool: tool.to_owned() },
        Stop::Timeout(limit) => ToolError::Timeout { tool: tool.to_owned(), limit },
    }
}

impl ToolExecutor for ToolEngine {
    /// Run one call through the whole stack, with the per-call timeout.
    /// The tool is looked up and the arguments parsed when this is called;
    /// everything else happens when the future is polled.
    fn execute_call(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        self.run(self.prepare(call), None, None)
    }
}
