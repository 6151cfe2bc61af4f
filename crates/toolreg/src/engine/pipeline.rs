//! The one call pipeline: lookup → selection → argument limits →
//! validation → approval → hooks → run → audit, for a bare registry and a
//! configured engine alike.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::SystemTime;

use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::run::{Arguments, panicked, run_direct};
use super::stages::{ApprovalRecord, Asked};
use super::{BatchOptions, Stack, Stacks, Stop};
use crate::args;
use crate::declaration::SafetyLevel;
use crate::exec::{CallContext, Extensions, ToolArguments, ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult};
use crate::policy::{ArgumentsHash, AuditDecision, AuditEvent, AuditSink, ToolSet};
use crate::registry::{FunctionRegistry, ToolEntry};

/// What an engine adds to the bare pipeline. [`BARE`] is a registry's:
/// nothing.
pub(crate) struct Stages {
    /// The offered tools; `None`: every registered tool.
    pub(crate) tools: Option<ToolSet>,
    /// Each offered tool with its stack; empty for a bare registry.
    pub(crate) stacks: Stacks,
    pub(crate) sinks: Vec<Arc<dyn AuditSink>>,
    pub(crate) options: BatchOptions,
    pub(crate) approver_name: Option<String>,
}

/// An offered tool and the stages built for it.
pub(crate) struct Slot {
    pub(crate) entry: ToolEntry,
    /// Approval, timeout and hooks around the run; `None` when the tool has none.
    pub(crate) stack: Option<Stack>,
    pub(crate) needs_approval: bool,
    /// Whether a synchronous tool runs on the blocking pool (a timeout applies).
    pub(crate) offload: bool,
}

/// How a caller controls one call.
#[derive(Default)]
pub(crate) struct Control<'a> {
    /// Stop the call when this is cancelled (a single call; a batch
    /// watches its token once for all its calls).
    pub(crate) watch: Option<&'a CancellationToken>,
    /// The token the tool sees.
    pub(crate) token: Option<Arc<CancellationToken>>,
    /// Set by a batch before it drops a call it stopped, so that the call
    /// is still recorded.
    pub(crate) stopped: Option<&'a OnceLock<Stop>>,
    /// Typed values the caller passes down to every stage and the tool.
    pub(crate) extensions: Option<&'a Extensions>,
}

/// Run one call through the pipeline and record it. An engine's calls run
/// in a `tool_call` span; the audit event is emitted in it.
pub(crate) fn run<'a>(
    stages: &'a Stages,
    registry: &'a FunctionRegistry,
    call: ToolCall,
    control: Control<'a>,
) -> impl Future<Output = ToolResult> + Send + 'a {
    let span = tracing::info_span!("tool_call", tool = %call.name, call_id = %call.id);
    let ToolCall { id, name, arguments } = call;
    let arguments = match arguments {
        ToolArguments::Json(value) => Arguments::Value(value),
        ToolArguments::Raw(text) => Arguments::Text(Cow::Owned(text)),
    };
    let mut cx = CallContext::new(id.as_str());
    if let Some(extensions) = control.extensions {
        *cx.extensions_mut() = extensions.clone();
    }
    let record = Record::new(stages, id, name, control.stopped);
    recorded(stages, registry, record, arguments, cx, control).instrument(span)
}

async fn recorded(
    stages: &Stages,
    registry: &FunctionRegistry,
    mut record: Record<'_>,
    arguments: Arguments<'_>,
    cx: CallContext,
    control: Control<'_>,
) -> ToolResult {
    let outcome = {
        let Record { name, trail, .. } = &mut record;
        let found = lookup(stages, registry, name);
        // Pinned once and polled in place on both paths: moving the call into
        // a `select!` would give this future a second slot the size of the
        // whole call, paid by every call of a batch.
        let mut call = std::pin::pin!(guarded(name, found, arguments, cx, &control, trail));
        match control.watch {
            None => call.await,
            Some(watch) if watch.is_cancelled() => Err(ToolError::Cancelled),
            Some(watch) => {
                let mut cancelled = std::pin::pin!(watch.cancelled());
                std::future::poll_fn(|task| {
                    if let Poll::Ready(outcome) = call.as_mut().poll(task) {
                        return Poll::Ready(outcome);
                    }
                    cancelled.as_mut().poll(task).map(|()| Err(ToolError::Cancelled))
                })
                .await
            }
        }
    };
    record.finish(outcome)
}

/// The stages of one call inside its one panic boundary. A combinator, not
/// an `async fn`, so that the call's future does not hold the arguments
/// once more (a batch holds one such future per call).
fn guarded<'a>(
    name: &'a str,
    found: Found<'a>,
    arguments: Arguments<'a>,
    cx: CallContext,
    control: &'a Control<'a>,
    trail: &'a mut Trail,
) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a {
    AssertUnwindSafe(stage_by_stage(found, arguments, cx, control, trail))
        .catch_unwind()
        .map(move |outcome| outcome.unwrap_or_else(|panic| Err(panicked(name, &*panic))))
}

async fn stage_by_stage(
    found: Found<'_>,
    arguments: Arguments<'_>,
    mut cx: CallContext,
    control: &Control<'_>,
    trail: &mut Trail,
) -> Result<ToolOutput, ToolError> {
    // Lookup and selection (done by the caller, which holds the name).
    let (registry, entry, slot) = found?;
    let decl = entry.declaration_arc();
    trail.safety = Some(decl.safety);
    // Argument limits, in whatever form the arguments came; parsed now when
    // a stage before the tool reads them.
    let limits = registry.limits();
    let arguments = match arguments {
        Arguments::Value(value) => match limits.check_value(&value) {
            Ok(()) => Arguments::Value(value),
            Err(error) => {
                args::dispose(value);
                return Err(error);
            }
        },
        Arguments::Text(text) => {
            limits.check_text(&text)?;
            let stacked = slot.is_some_and(|s| s.stack.is_some());
            if stacked || !entry.is_serde_checked() {
                Arguments::Value(args::parse(&text)?)
            } else {
                Arguments::Text(text)
            }
        }
    };
    let needs_approval = slot.is_some_and(|s| s.needs_approval);
    if trail.started_at.is_some() && !needs_approval {
        // With an approval stage, the approval request's hash is recorded.
        trail.hash = arguments.hash();
    }
    if slot.is_some() {
        // Hooks and tools of an engine see what they run; a bare registry
        // call skips the reference count.
        cx = cx.with_declaration(Arc::clone(decl));
    }
    if let Some(token) = &control.token {
        cx = cx.with_shared_cancellation(Arc::clone(token));
    }
    let value = match slot.and_then(|s| s.stack.as_ref().map(|stack| (s, stack))) {
        Some((slot, stack)) => {
            let mut value = arguments.into_value()?;
            entry.check_arguments(&mut value)?; // validated once, for every stage
            let record = slot.needs_approval.then(|| Arc::new(ApprovalRecord::default()));
            if let Some(record) = &record {
                cx.extensions_mut().insert_arc(Arc::clone(record));
            } else {
                trail.decide(decl.safety);
            }
            // What the approval stage recorded reaches the trail even when
            // the call unwinds (an approver that panicked).
            let taking = TakeAsked { trail: &mut *trail, record };
            let outcome = stack.call(cx, value).await;
            drop(taking);
            outcome?
        }
        None => {
            trail.decide(decl.safety);
            run_direct(entry, cx, arguments, slot.is_some_and(|s| s.offload)).await?
        }
    };
    Ok(ToolOutput::new(value))
}

/// Moves what the approval stage recorded into the trail when dropped,
/// whether the call finished or unwound.
struct TakeAsked<'t> {
    trail: &'t mut Trail,
    record: Option<Arc<ApprovalRecord>>,
}

impl Drop for TakeAsked<'_> {
    fn drop(&mut self) {
        if let Some(asked) = self.record.take().and_then(|r| r.take()) {
            self.trail.asked(asked);
        }
    }
}

/// The registry, the tool and, in an engine, its slot; or why there is none.
type Found<'a> = Result<(&'a FunctionRegistry, &'a ToolEntry, Option<&'a Slot>), ToolError>;

/// The lookup and selection stages.
fn lookup<'a>(stages: &'a Stages, registry: &'a FunctionRegistry, name: &str) -> Found<'a> {
    match &stages.tools {
        None => registry.get(name).map(|entry| (registry, entry, None)).ok_or_else(|| registry.unknown_tool()),
        Some(tools) => match stages.stacks.get(name) {
            Some(slot) => Ok((registry, &slot.entry, Some(slot))),
            None => Err(tools.lookup(name).err().unwrap_or_else(|| registry.unknown_tool())),
        },
    }
}

/// What the audit records besides the outcome.
#[derive(Default)]
pub(crate) struct Trail {
    /// When the call started; `None` when nothing records the call.
    started_at: Option<SystemTime>,
    safety: Option<SafetyLevel>,
    decision: AuditDecision,
    hash: Option<ArgumentsHash>,
    /// What the approval stage recorded; boxed, as most calls have none.
    asked: Option<Box<Asked>>,
}

impl Trail {
    fn decide(&mut self, safety: SafetyLevel) {
        self.decision = if safety == SafetyLevel::Safe { AuditDecision::NotRequired } else { AuditDecision::Recorded };
    }

    fn asked(&mut self, asked: Asked) {
        self.decision = asked.decision;
        if self.hash.is_none() {
            self.hash = asked.request_hash;
        }
        self.asked = Some(Box::new(asked));
    }
}

/// A call being recorded: finished with its outcome, or, when a batch drops
/// it unfinished, recorded as stopped.
pub(crate) struct Record<'a> {
    stages: &'a Stages,
    id: String,
    name: String,
    trail: Trail,
    stopped: Option<&'a OnceLock<Stop>>,
    done: bool,
}

impl<'a> Record<'a> {
    pub(crate) fn new(stages: &'a Stages, id: String, name: String, stopped: Option<&'a OnceLock<Stop>>) -> Self {
        let auditing = stages.tools.is_some()
            && (!stages.sinks.is_empty() || tracing::enabled!(target: "toolreg::audit", tracing::Level::INFO));
        let trail = Trail { started_at: auditing.then(SystemTime::now), ..Trail::default() };
        Record { stages, id, name, trail, stopped, done: false }
    }

    /// Record the call and hand back its result.
    pub(crate) fn finish(mut self, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        self.done = true;
        let id = std::mem::take(&mut self.id);
        let name = std::mem::take(&mut self.name);
        let Some(started_at) = self.trail.started_at else {
            return ToolResult { id, name, outcome };
        };
        let trail = std::mem::take(&mut self.trail);
        let (id, name) = audit(self.stages, id, name, &outcome, started_at, trail);
        ToolResult { id, name, outcome }
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let (Some(stop), Some(started_at)) = (self.stopped.and_then(OnceLock::get), self.trail.started_at) {
            let trail = std::mem::take(&mut self.trail);
            let (id, name) = (std::mem::take(&mut self.id), std::mem::take(&mut self.name));
            audit(self.stages, id, name, &Err(stop.error()), started_at, trail);
        }
    }
}

/// Emit the audit event of a finished call; gives the id and name back.
fn audit(
    stages: &Stages,
    id: String,
    name: String,
    outcome: &Result<ToolOutput, ToolError>,
    started_at: SystemTime,
    trail: Trail,
) -> (String, String) {
    let (outcome_kind, result_bytes) = match outcome {
        Ok(output) => ("ok", text_len(&output.value)),
        Err(error) => (error.kind(), error.model_text(&name).len()),
    };
    let duration = started_at.elapsed().unwrap_or_default();
    let asked = trail.asked.map(|asked| *asked).unwrap_or_default();
    // The event takes the call's id and name, and gives them back for the result.
    let event = AuditEvent::new(
        name,
        id,
        trail.safety,
        trail.hash,
        asked.approved_hash,
        trail.decision,
        asked.approver,
        started_at,
        duration,
        outcome_kind,
        result_bytes,
    );
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
    for sink in &stages.sinks {
        // A failing sink loses its own record, not the call's result or the
        // other sinks' records.
        if std::panic::catch_unwind(AssertUnwindSafe(|| sink.record(&event))).is_err() {
            tracing::error!(
                target: "toolreg::audit",
                tool = %event.tool,
                call_id = %event.call_id,
                "an audit sink panicked while recording this call"
            );
        }
    }
    (event.call_id, event.tool)
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

/// A registry's pipeline: nothing configured.
static BARE: Stages = Stages {
    tools: None,
    stacks: Stacks::with_hasher(foldhash::fast::FixedState::with_seed(0)),
    sinks: Vec::new(),
    options: BatchOptions { max_concurrency: 64, call_timeout: None, batch_timeout: None, parallel_writes: false },
    approver_name: None,
};

/// Running tools straight from a registry: the pipeline with nothing
/// configured — no selection, no approval stage, no hooks, no audit. See
/// [`crate::engine`] for what an engine adds.
impl FunctionRegistry {
    /// Run a tool by name on parsed arguments.
    pub fn execute(&self, name: &str, args: Value) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + '_ {
        self.execute_with(name, args, CallContext::default())
    }

    /// Run a tool by name on parsed arguments, with a call context.
    pub fn execute_with(
        &self,
        name: &str,
        args: Value,
        cx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + '_ {
        self.bare(name, Arguments::Value(args), cx)
    }

    /// Run a tool by name on argument text, as models emit it. The text is
    /// checked against the [`ArgumentLimits`](crate::ArgumentLimits) before
    /// it is parsed; empty text means no arguments.
    pub fn execute_json<'a>(
        &'a self,
        name: &str,
        args: &'a str,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a {
        self.execute_json_with(name, args, CallContext::default())
    }

    /// [`execute_json`](Self::execute_json) with a call context.
    pub fn execute_json_with<'a>(
        &'a self,
        name: &str,
        args: &'a str,
        cx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a {
        self.bare(name, Arguments::Text(Cow::Borrowed(args)), cx)
    }

    fn bare<'a>(
        &'a self,
        name: &str,
        arguments: Arguments<'a>,
        cx: CallContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a {
        // Looked up now, so that the future does not borrow `name`.
        let found = lookup(&BARE, self, name);
        async move {
            let name = match &found {
                Ok((_, entry, _)) => entry.declaration().name.as_str(),
                Err(_) => "",
            };
            guarded(name, found, arguments, cx, &Control::default(), &mut Trail::default()).await
        }
    }
}

impl ToolExecutor for FunctionRegistry {
    fn execute_call(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send {
        run(&BARE, self, call, Control::default())
    }
}
