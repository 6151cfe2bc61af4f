//! The call pipeline, read top to bottom. Every call — through a
//! [`FunctionRegistry`] (nothing configured) or a
//! [`ToolEngine`](super::ToolEngine) — runs [`run`]:
//!
//! 1. **lookup** and **selection**: the tool, or [`ToolError::UnknownTool`] /
//!    [`ToolError::NotOffered`];
//! 2. **argument limits**, on the text or value as it came;
//! 3. **validation** against the input schema (defaults filled), once;
//! 4. **approval**, for tools at or above the engine's approval level: the
//!    approver's decision, bound to this call id and these arguments;
//! 5. **hooks** ([`Next::run`] walks the layers in order) and the **run**
//!    of the tool, under the per-call timeout;
//! 6. **audit**: the [`AuditEvent`](crate::policy::AuditEvent) to every
//!    sink, in a `tool_call` span (written in [`record`](super::record)).
//!
//! The `tool_call` span follows OpenTelemetry's GenAI conventions for an
//! `execute_tool` span (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
//! `error.type`), with toolreg's own `toolreg.tool.safety`,
//! `toolreg.arguments.hash`, `toolreg.approval.decision`,
//! `toolreg.approval.approver`, `toolreg.approval.arguments.hash` (what an
//! approval is bound to) and `toolreg.outcome`: what the audit event says,
//! so an exporter needs the span alone.
//!
//! A call has one panic boundary (in [`run`]); the [`site`](super::site)
//! marks say whether a panic started in the approver, a hook or the tool.
//! The only state passed between the steps travels in [`Chain`], owned by
//! the call: no side channel in the call's extensions.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, LazyLock, OnceLock};
use std::task::Poll;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::layer::{Chain, HookArguments, HookCall, Layer, Next};
use super::record::{Record, Trail};
use super::site::{self, Site, panicked, panicked_at};
use super::{BatchOptions, Stop};
use crate::args;
use crate::declaration::{SafetyLevel, ToolDeclaration};
use crate::exec::{CallContext, CallOptions, Extensions, ToolArguments, ToolCall, ToolError, ToolResult};
use crate::handler::ToolFuture;
use crate::policy::{ApprovalRequest, Approver, ArgumentsHash, AuditDecision, AuditSink, Decision};
use crate::registry::{FunctionRegistry, ToolEntry};

/// Everything a call runs against: borrowed from an engine (where it was
/// fixed when the engine was built) or from a registry (nothing
/// configured), so that starting a call copies and counts nothing.
#[derive(Clone, Copy)]
pub(crate) struct Pipeline<'a> {
    /// Every registered tool (an engine's snapshot of its registry).
    pub(crate) registered: &'a FunctionRegistry,
    /// The tools a model may call: all of `registered` for a registry, the
    /// selection's for an engine.
    pub(crate) offered: &'a FunctionRegistry,
    pub(crate) approval: &'a Approval,
    pub(crate) layers: &'a Arc<[Layer]>,
    pub(crate) sinks: &'a [Arc<dyn AuditSink>],
    pub(crate) options: &'a BatchOptions,
}

impl<'a> Pipeline<'a> {
    /// A registry's pipeline: every tool offered, no approval, no layers, no audit.
    pub(crate) fn of_registry(registry: &'a FunctionRegistry) -> Self {
        Pipeline {
            registered: registry,
            offered: registry,
            approval: &NO_APPROVAL,
            layers: &NO_LAYERS,
            sinks: &[],
            options: &REGISTRY_OPTIONS,
        }
    }
}

/// The layers of a pipeline that has none (a registry's), shared.
static NO_LAYERS: LazyLock<Arc<[Layer]>> = LazyLock::new(|| Arc::from([]));

/// A registry's options: the defaults (no timeout).
static REGISTRY_OPTIONS: BatchOptions = BatchOptions::DEFAULT;

/// A registry's approval: none.
static NO_APPROVAL: Approval = Approval::None;

/// Which calls need an approver's decision.
pub(crate) enum Approval {
    /// None: a registry runs what your own code asks it to.
    None,
    /// Tools at `level` or above; without an approver they are refused.
    From { level: SafetyLevel, approver: Option<Arc<dyn Approver>> },
}

impl Approval {
    fn needed_for(&self, decl: &ToolDeclaration) -> bool {
        matches!(self, Approval::From { level, .. } if decl.safety >= *level)
    }
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
    /// Typed values the caller passes down to the hooks, approver and tool.
    pub(crate) extensions: Option<&'a Extensions>,
}

impl<'a> Control<'a> {
    /// A single call's control from its options; `token` is the options'
    /// token, shared with the tool.
    pub(crate) fn of(options: &'a CallOptions, token: Option<&'a Arc<CancellationToken>>) -> Self {
        Control {
            watch: token.map(|token| &**token),
            token: token.cloned(),
            stopped: None,
            extensions: Some(&options.extensions).filter(|e| !e.is_empty()),
        }
    }
}

/// Run one call through the pipeline and record it.
pub(crate) fn run<'a>(
    p: Pipeline<'a>,
    call: ToolCall,
    control: Control<'a>,
) -> impl Future<Output = ToolResult> + Send + 'a {
    // Named and shaped as OpenTelemetry's GenAI `execute_tool` span (the
    // `otel.*` fields are read by `tracing-opentelemetry`); the fields
    // recorded at the end are `Empty` until then. Nothing here is formatted
    // unless a subscriber takes the span. The arguments' hash, never their
    // content, goes on the span.
    let span = tracing::info_span!(
        "tool_call",
        otel.name = format_args!("execute_tool {}", call.name),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.type = "function",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        toolreg.tool.safety = tracing::field::Empty,
        toolreg.arguments.hash = tracing::field::Empty,
        toolreg.approval.decision = tracing::field::Empty,
        toolreg.approval.approver = tracing::field::Empty,
        toolreg.approval.arguments.hash = tracing::field::Empty,
        toolreg.outcome = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    let ToolCall { id, name, arguments } = call;
    let mut record = Record::new(p.sinks, id, name, control.stopped, !span.is_disabled());
    async move {
        let Record { id, name, trail, .. } = &mut record;
        let outcome = {
            // Pinned where it is built, and polled under `catch_unwind` by
            // hand rather than through wrapper futures: every move of the
            // steps' state was a copy on each call (measured: about a fifth
            // of a registry call went to copying futures).
            let mut steps = std::pin::pin!(async {
                // 1. Lookup and selection.
                let entry = lookup(&p, name)?;
                let decl = entry.declaration_arc();
                trail.safety = Some(decl.safety);
                // 2. Argument limits, in whatever form the arguments came.
                let arguments = check_limits(&p, arguments)?;
                // A call from your own code (`FunctionRegistry::execute`) has no id.
                let cx = if id.is_empty() { CallContext::default() } else { CallContext::new(id.as_str()) };
                let mut cx = cx.with_declaration(Arc::clone(decl));
                if let Some(extensions) = control.extensions {
                    *cx.extensions_mut() = extensions.clone();
                }
                if let Some(token) = &control.token {
                    cx = cx.with_shared_cancellation(Arc::clone(token));
                }
                let offload = p.options.has_timeout();
                let needs_approval = p.approval.needed_for(decl);
                if !needs_approval && p.layers.is_empty() {
                    // Nothing stands between the arguments and the tool: a typed
                    // tool deserialises straight from the text (serde is its
                    // validation), anything else is validated in `run_tool`.
                    trail.decide(decl.safety, trail.recording().then(|| hash(&arguments)).flatten());
                    let (cx, deadline) = deadline(&p, cx);
                    return within(deadline, run_tool(entry, cx, arguments, offload)).await;
                }
                // 3. Validation, once for every later step.
                let mut args = into_value(arguments)?;
                entry.check_arguments(&mut args)?;
                // 4. Approval.
                let approved = match p.approval {
                    // Boxed: an approval is rare beside the calls that need
                    // none, and its state would make every call's future larger.
                    Approval::From { approver, .. } if needs_approval => {
                        Some(Box::pin(approve(entry, approver.as_deref(), &mut cx, &mut args, trail)).await?)
                    }
                    _ => {
                        trail.decide(decl.safety, trail.recording().then(|| ArgumentsHash::of(&args)));
                        None
                    }
                };
                // 5. Hooks and run.
                let chain = Arc::new(Chain { layers: Arc::clone(p.layers), entry: entry.clone(), approved, offload });
                let arguments = HookArguments { value: args, changed: false };
                // The first layer's name (or none: approval without layers).
                let hook = chain.layers.first().map_or_else(|| Arc::from(""), |layer| Arc::clone(&layer.name));
                let (cx, deadline) = deadline(&p, cx);
                within(deadline, Next { chain, index: 0 }.run(HookCall { cx, arguments, hook })).await
            });
            // Polled in the call's span (entered for each poll, as
            // `Instrumented` would, without another wrapper to copy).
            match control.watch {
                Some(watch) if watch.is_cancelled() => Err(ToolError::Cancelled),
                watch => {
                    // Boxed: only a call given a token has it, and it would
                    // make every call's future larger.
                    let mut cancelled = watch.map(|watch| Box::pin(watch.cancelled()));
                    std::future::poll_fn(|task| {
                        let _in_span = span.enter();
                        // The one panic boundary: where a panic started is in the site marks.
                        match std::panic::catch_unwind(AssertUnwindSafe(|| steps.as_mut().poll(task))) {
                            Ok(Poll::Ready(outcome)) => return Poll::Ready(outcome),
                            Err(panic) => return Poll::Ready(Err(panicked(name, &*panic))),
                            Ok(Poll::Pending) => {}
                        }
                        match &mut cancelled {
                            Some(cancelled) => cancelled.as_mut().poll(task).map(|()| Err(ToolError::Cancelled)),
                            None => Poll::Pending,
                        }
                    })
                    .await
                }
            }
        };
        // The audit event belongs to the call's span too (for a log
        // subscriber; the span's own fields carry the same for export).
        let _in_span = span.enter();
        if let Err(ToolError::ApprovalFailed { .. }) = &outcome {
            trail.decision = AuditDecision::ApprovalFailed;
        }
        // Blocks are bounded in total, as text is by `OutputBudget`.
        let mut outcome = outcome;
        if let Ok(output) = &outcome
            && output.content_size() > p.options.max_content_bytes
        {
            outcome =
                Err(ToolError::ResultTooLarge { size: output.content_size(), limit: p.options.max_content_bytes });
        }
        record_span_fields(&span, trail, &outcome);
        // 6. Audit.
        record.finish(outcome)
    }
}

/// The `tool_call` span's fields known only at the end: safety, the
/// arguments' hash, the approval decision and approver, the outcome.
fn record_span_fields(span: &tracing::Span, trail: &Trail, outcome: &Result<crate::exec::ToolOutput, ToolError>) {
    if span.is_disabled() {
        return;
    }
    if let Some(safety) = trail.safety {
        span.record("toolreg.tool.safety", safety.as_str());
    }
    if let Some(hash) = &trail.hash {
        span.record("toolreg.arguments.hash", tracing::field::display(hash));
    }
    span.record("toolreg.approval.decision", tracing::field::display(&trail.decision));
    if let Some(approver) = &trail.approver {
        span.record("toolreg.approval.approver", approver.as_str());
    }
    if let Some(hash) = &trail.approved_hash {
        span.record("toolreg.approval.arguments.hash", tracing::field::display(hash));
    }
    match outcome {
        Ok(_) => span.record("toolreg.outcome", "ok"),
        Err(error) => {
            span.record("toolreg.outcome", error.kind());
            span.record("error.type", error.kind());
            span.record("otel.status_code", "error")
        }
    };
}

impl Next {
    /// Run the inner layers and the tool; the result (or error) comes back
    /// for the layer to pass on, transform or replace.
    ///
    /// Past the last layer, arguments a layer changed are validated again
    /// (and, under an approval, must still hash to what was approved); a
    /// layer that only read them costs nothing more.
    pub fn run(self, call: HookCall) -> ToolFuture {
        let Next { chain, index } = self;
        if let Some(layer) = chain.layers.get(index) {
            let site = Site::Hook(Arc::clone(&layer.name));
            let call = HookCall { hook: Arc::clone(&layer.name), ..call };
            let layer = Arc::clone(&layer.layer);
            let next = Next { chain, index: index + 1 };
            // Started and polled under the layer's site, so that its panic
            // is reported as the hook's.
            let mark = site::Mark(&site);
            let started = layer.call(call, next);
            drop(mark);
            return site::poll_at(site, started);
        }
        let HookCall { cx, arguments: HookArguments { mut value, changed }, .. } = call;
        if changed {
            if let Err(error) = chain.entry.check_arguments(&mut value) {
                return ToolFuture::ready(Err(error));
            }
            if chain.approved.is_some_and(|approved| approved != ArgumentsHash::of(&value)) {
                let detail = "the arguments changed after they were approved".to_owned();
                return ToolFuture::ready(Err(ToolError::ApprovalMismatch { detail }));
            }
        }
        if chain.offload && chain.entry.tool().runs_inline() {
            return offloaded(&chain.entry, cx, ToolArguments::Json(value));
        }
        let mark = site::Mark(&Site::Tool);
        let started = chain.entry.tool().call(cx, value);
        drop(mark);
        site::poll_at(Site::Tool, started)
    }
}

/// Step 1: the offered tool with this name, or the error the model reads.
fn lookup<'p>(p: &Pipeline<'p>, name: &str) -> Result<&'p ToolEntry, ToolError> {
    const SHOWN: usize = 20;
    if let Some(entry) = p.offered.get(name) {
        return Ok(entry);
    }
    let available = p.offered.list().take(SHOWN).map(|entry| entry.name().to_owned()).collect();
    if p.registered.contains(name) {
        Err(ToolError::NotOffered { available })
    } else {
        Err(ToolError::UnknownTool { available })
    }
}

/// Step 2: the argument limits, before anything parses or walks the arguments.
fn check_limits(p: &Pipeline<'_>, arguments: ToolArguments) -> Result<ToolArguments, ToolError> {
    let limits = p.registered.limits();
    match arguments {
        ToolArguments::Raw(text) => limits.check_text(&text).map(|()| ToolArguments::Raw(text)),
        ToolArguments::Json(value) => match limits.check_value(&value) {
            Ok(()) => Ok(ToolArguments::Json(value)),
            Err(error) => {
                args::dispose(value);
                Err(error)
            }
        },
    }
}

fn into_value(arguments: ToolArguments) -> Result<Value, ToolError> {
    match arguments {
        ToolArguments::Json(value) => Ok(value),
        ToolArguments::Raw(text) => args::parse(&text),
    }
}

/// The hash of the canonical arguments; `None` for text that is not JSON
/// (the call fails on it anyway).
fn hash(arguments: &ToolArguments) -> Option<ArgumentsHash> {
    match arguments {
        ToolArguments::Json(value) => Some(ArgumentsHash::of(value)),
        ToolArguments::Raw(text) if text.trim().is_empty() => Some(ArgumentsHash::of(&args::empty())),
        ToolArguments::Raw(text) => ArgumentsHash::of_json(text).ok(),
    }
}

/// Step 4: ask the approver about exactly these arguments. On approval the
/// arguments are what it approved (its edit, validated again) and the hash
/// is the one the run is bound to. Runs under the approval's site: an
/// approver that panics refuses the call ([`ToolError::ApprovalFailed`]).
async fn approve(
    entry: &ToolEntry,
    approver: Option<&dyn Approver>,
    cx: &mut CallContext,
    args: &mut Value,
    trail: &mut Trail,
) -> Result<ArgumentsHash, ToolError> {
    let Some(approver) = approver else {
        trail.decision = AuditDecision::NoApprover;
        return Err(ToolError::ApprovalRequired);
    };
    let approver_name = approver.name().into_owned();
    trail.approver = Some(approver_name.clone());
    let site = Site::Approval(Arc::from(approver_name.as_str()));
    let preview = site::run(&site, || entry.approval_preview(args));
    let mut request = ApprovalRequest::new(Arc::clone(entry.declaration_arc()), cx.call_id(), std::mem::take(args));
    if let Some(preview) = preview {
        request = request.with_preview(preview);
    }
    if !cx.extensions().is_empty() {
        request = request.with_extensions(cx.extensions().clone());
    }
    let mut bound = request.arguments_hash();
    trail.hash = Some(bound);
    let deciding = site::run(&site, || approver.decide(request.clone()));
    let approval = match site::AtSite::new(site, deciding).await {
        Decision::Deny { reason } => {
            trail.decision = AuditDecision::Denied;
            return Err(ToolError::Denied { reason, approver: approver_name });
        }
        Decision::Pending { reason } => {
            trail.decision = AuditDecision::Pending;
            return Err(ToolError::Pending { reason, approver: approver_name });
        }
        Decision::Approve(approval) => approval,
    };
    if !approval.is_for(&request) {
        trail.decision = AuditDecision::Mismatch;
        let detail = "the approver answered with an approval given for another call".to_owned();
        return Err(ToolError::ApprovalMismatch { detail });
    }
    trail.decision = AuditDecision::Approved;
    *args = request.into_arguments();
    if let Some(edited) = approval.edited_arguments() {
        trail.decision = AuditDecision::ApprovedEdited;
        *args = edited.clone();
        entry.check_arguments(args).map_err(|error| match error {
            ToolError::InvalidArguments { errors } => ToolError::InvalidEdit { errors },
            other => other,
        })?;
        bound = ArgumentsHash::of(args);
    }
    trail.approved_hash = Some(bound);
    Ok(bound)
}

/// Step 5's time limit, for hooks and run together (approval excluded):
/// the call gets a token of its own, cancelled when the limit passes so
/// that work the tool started stops too.
fn deadline(p: &Pipeline<'_>, cx: CallContext) -> (CallContext, Option<(Duration, CancellationToken)>) {
    let Some(limit) = p.options.call_timeout else {
        return (cx, None);
    };
    let own = cx.cancellation().map_or_else(CancellationToken::new, CancellationToken::child_token);
    (cx.with_cancellation(own.clone()), Some((limit, own)))
}

/// A started call within its deadline, if it has one.
fn within(deadline: Option<(Duration, CancellationToken)>, running: ToolFuture) -> ToolFuture {
    let Some((limit, own)) = deadline else {
        return running;
    };
    ToolFuture::new(async move {
        match tokio::time::timeout(limit, running).await {
            Ok(outcome) => outcome,
            Err(_) => {
                own.cancel();
                Err(ToolError::Timeout { limit })
            }
        }
    })
}

/// Start a tool with nothing around it: a typed tool deserialises straight
/// from the text or value, anything else is validated first. A synchronous
/// tool runs on the blocking pool when `offload` is set, so that a deadline
/// can answer while it blocks.
fn run_tool(entry: &ToolEntry, cx: CallContext, arguments: ToolArguments, offload: bool) -> ToolFuture {
    if offload && entry.tool().runs_inline() {
        return offloaded(entry, cx, arguments);
    }
    let started = site::run(&Site::Tool, || start(entry, cx, arguments));
    site::poll_at(Site::Tool, started)
}

/// Run a synchronous tool on the blocking pool.
fn offloaded(entry: &ToolEntry, cx: CallContext, arguments: ToolArguments) -> ToolFuture {
    let entry = entry.clone();
    ToolFuture::new(async move {
        let name = entry.declaration().name.clone();
        let started = tokio::task::spawn_blocking(move || start(&entry, cx, arguments).into_ready()).await;
        match started {
            Ok(Ok(result)) => result,
            Ok(Err(future)) => future.await,
            Err(error) => Err(match error.try_into_panic() {
                // Joined from the blocking pool, where only the tool ran.
                Ok(panic) => panicked_at(&name, Some(Site::Tool), &*panic),
                Err(_) => ToolError::Cancelled,
            }),
        }
    })
}

/// Start the tool: deserialised straight from its arguments when serde is
/// the check, else validated against the schema first.
fn start(entry: &ToolEntry, cx: CallContext, arguments: ToolArguments) -> ToolFuture {
    let tool = entry.tool();
    // `refused`: serde has refused the arguments already.
    let (cx, value, refused) = match arguments {
        // Only an object goes straight to serde: serde would also take an array for a struct.
        ToolArguments::Raw(text) if entry.is_serde_checked() && text.trim_start().starts_with('{') => {
            match tool.call_text(cx, &text) {
                Ok(future) => return future,
                Err(cx) => (cx, args::parse(&text), true),
            }
        }
        ToolArguments::Raw(text) => (cx, args::parse(&text), false),
        ToolArguments::Json(value) if entry.is_serde_checked() && value.is_object() => {
            match tool.call_value(cx, &value) {
                Ok(future) => return future,
                Err(cx) => (cx, Ok(value), true),
            }
        }
        ToolArguments::Json(value) => (cx, Ok(value), false),
    };
    let mut value = match value {
        Ok(value) => value,
        Err(error) => return ToolFuture::ready(Err(error)),
    };
    let checked = if refused { entry.explain_refused(&mut value) } else { entry.check_arguments(&mut value) };
    match checked {
        Ok(()) => tool.call(cx, value),
        Err(error) => ToolFuture::ready(Err(error)),
    }
}
