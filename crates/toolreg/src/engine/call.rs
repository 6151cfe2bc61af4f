//! One call through the engine, as a hand-written future.
//!
//! Every caller (a `block_on`, a batch worker) holds and moves this future,
//! so its size is paid on every call. Written as `async fn`s it was over a
//! kilobyte: an `async fn` keeps its arguments and each nested future's
//! arguments twice. As a state machine it holds each thing once, and the rare
//! approval step is boxed.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use futures_util::FutureExt;
use futures_util::future::Either;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::declaration::SafetyLevel;
use crate::engine::{Arguments, Bounded, Deadline, Prepared, Slot, Stop, ToolEngine, bounded, layer, stopped};
use crate::exec::{CallContext, ToolError, ToolOutput, ToolResult};
use crate::handler::ToolFuture;
use crate::policy::{Approval, ApprovalRequest, ArgumentsHash, AuditDecision, AuditEvent, Decision, error_kind};
use crate::registry::{Execution, panic_message};

/// What the audit records besides the outcome.
#[derive(Default)]
struct Trail {
    safety: Option<SafetyLevel>,
    decision: AuditDecision,
    hash: Option<ArgumentsHash>,
    /// What the approval step recorded; boxed, as most calls have none.
    asked: Option<Box<Asked>>,
}

/// What the audit records of an approval step.
#[derive(Default)]
struct Asked {
    decision: AuditDecision,
    approver: Option<String>,
    approved_hash: Option<ArgumentsHash>,
}

/// The approval step: the arguments to run with and the approval bound to
/// them, or why the call may not run; and what the audit records of it.
type Approving<'a> = Pin<Box<dyn Future<Output = (Result<(Value, Arc<Approval>), ToolError>, Asked)> + Send + 'a>>;

/// The tool running: its own [`Execution`] or, with layers or an approval to
/// check, the layer stack; bounded by cancellation and the call's deadline.
type Running<'a> = Bounded<'a, Either<Execution<'a>, StackCall<'a>>>;

pin_project_lite::pin_project! {
    /// A prepared call on its way through gate, approval, run and audit.
    pub(crate) struct EngineCall<'a> {
        engine: &'a ToolEngine,
        id: String,
        name: String,
        // Stop the call when this is cancelled (a single call; a batch
        // watches its token once for all its calls).
        watch: Option<&'a CancellationToken>,
        // The token the tool sees.
        token: Option<Arc<CancellationToken>>,
        started_at: Option<SystemTime>,
        trail: Trail,
        // The call's own token, when it can time out: cancelled on timeout.
        call_cancel: Option<CancellationToken>,
        #[pin]
        step: Step<'a>,
    }
}

pin_project_lite::pin_project! {
    #[project = StepProj]
    enum Step<'a> {
        Start { ready: Option<Result<(usize, Arguments), ToolError>> },
        Approving { slot: &'a Slot, approving: Approving<'a> },
        Running { slot: &'a Slot, #[pin] running: Running<'a> },
        Done,
    }
}

impl<'a> EngineCall<'a> {
    pub(crate) fn new(
        engine: &'a ToolEngine,
        prepared: Prepared,
        watch: Option<&'a CancellationToken>,
        token: Option<Arc<CancellationToken>>,
    ) -> Self {
        let Prepared { id, name, ready } = prepared;
        EngineCall {
            engine,
            id,
            name,
            watch,
            token,
            started_at: None,
            trail: Trail::default(),
            call_cancel: None,
            step: Step::Start { ready: Some(ready) },
        }
    }
}

impl EngineCall<'_> {
    /// End the call now, as stopped by its batch: the tool's future (or the
    /// approval being asked) is dropped, and the call is audited.
    pub(crate) fn stop(mut self: Pin<&mut Self>, stop: Stop) -> ToolResult {
        let this = self.as_mut().project();
        let tool = match this.step.project() {
            StepProj::Start { ready } => {
                // Not started: end it through the normal path, which audits it.
                *ready = Some(Err(stopped(this.name, stop)));
                let mut task = Context::from_waker(futures_util::task::noop_waker_ref());
                match self.poll(&mut task) {
                    Poll::Ready(result) => return result,
                    Poll::Pending => unreachable!("a call that failed before starting is ready at once"),
                }
            }
            StepProj::Approving { slot, .. } | StepProj::Running { slot, .. } => slot.entry.declaration().name.clone(),
            StepProj::Done => this.name.clone(),
        };
        let mut this = self.project();
        if let (Stop::Timeout(_), Some(token)) = (&stop, &*this.call_cancel) {
            token.cancel();
        }
        this.step.set(Step::Done);
        let (id, name) = (std::mem::take(this.id), std::mem::take(this.name));
        audit(this.engine, id, name, Err(stopped(&tool, stop)), *this.started_at, std::mem::take(this.trail))
    }
}

impl Future for EngineCall<'_> {
    type Output = ToolResult;

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<ToolResult> {
        let mut this = self.project();
        let engine: &ToolEngine = this.engine;
        let outcome = loop {
            match this.step.as_mut().project() {
                StepProj::Start { ready } => {
                    let inner = &engine.inner;
                    let auditing =
                        !inner.sinks.is_empty() || tracing::enabled!(target: "toolreg::audit", tracing::Level::INFO);
                    *this.started_at = auditing.then(SystemTime::now);
                    let (slot, args) = match ready.take() {
                        Some(Ok((index, args))) => match engine.slot(index) {
                            Some(slot) => (slot, args),
                            None => break Err(engine.inner.tools.registry().unknown_tool(this.name)),
                        },
                        Some(Err(error)) => break Err(error),
                        None => panic!("engine call polled after completion"),
                    };
                    if this.watch.is_some_and(CancellationToken::is_cancelled) {
                        break Err(stopped(&slot.entry.declaration().name, Stop::Cancelled));
                    }
                    this.trail.safety = Some(slot.entry.declaration().safety);
                    this.trail.hash = if auditing { args.hash() } else { None };
                    match gate(engine, slot, args, this.trail) {
                        Err(error) => break Err(error),
                        Ok(Gate::Run(args)) => {
                            match launch(engine, this.id, slot, args, None, *this.watch, this.token.as_ref()) {
                                Ok((running, call_cancel)) => {
                                    *this.call_cancel = call_cancel;
                                    this.step.set(Step::Running { slot, running });
                                }
                                Err(error) => break Err(error),
                            }
                        }
                        Ok(Gate::Ask(args)) => {
                            let id = this.id.clone();
                            let approving = Box::pin(approve(engine, id, slot, args, *this.watch));
                            this.step.set(Step::Approving { slot, approving });
                        }
                    }
                }
                StepProj::Approving { slot, approving } => {
                    let Poll::Ready((approved, trail)) = approving.as_mut().poll(task) else {
                        return Poll::Pending;
                    };
                    let slot: &Slot = slot;
                    this.trail.decision = trail.decision;
                    this.trail.asked = Some(Box::new(trail));
                    let launched = approved.and_then(|(args, grant)| {
                        let args = Arguments::Parsed(args);
                        launch(engine, this.id, slot, args, Some(grant), *this.watch, this.token.as_ref())
                    });
                    match launched {
                        Ok((running, call_cancel)) => {
                            *this.call_cancel = call_cancel;
                            this.step.set(Step::Running { slot, running });
                        }
                        Err(error) => break Err(error),
                    }
                }
                StepProj::Running { slot, running } => {
                    let Poll::Ready(result) = running.poll(task) else {
                        return Poll::Pending;
                    };
                    break result.unwrap_or_else(|stop| {
                        // Tell the tool (and anything it spawned) to stop; its future is dropped.
                        if let (Stop::Timeout(_), Some(token)) = (&stop, &*this.call_cancel) {
                            token.cancel();
                        }
                        Err(stopped(&slot.entry.declaration().name, stop))
                    });
                }
                StepProj::Done => panic!("engine call polled after completion"),
            }
        };
        this.step.set(Step::Done);
        let (id, name) = (std::mem::take(this.id), std::mem::take(this.name));
        Poll::Ready(audit(engine, id, name, outcome, *this.started_at, std::mem::take(this.trail)))
    }
}

/// Record a finished call and hand back its result.
fn audit(
    engine: &ToolEngine,
    id: String,
    name: String,
    outcome: Result<ToolOutput, ToolError>,
    started_at: Option<SystemTime>,
    trail: Trail,
) -> ToolResult {
    let Some(started_at) = started_at else {
        return ToolResult { id, name, outcome };
    };
    let outcome_kind = match &outcome {
        Ok(output) if output.is_error => "tool_error",
        Ok(_) => "ok",
        Err(error) => error_kind(error),
    };
    let duration = started_at.elapsed().unwrap_or_default();
    let result_bytes = match &outcome {
        Ok(output) => text_len(&output.value),
        Err(error) => error.model_text().len(),
    };
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
    for sink in &engine.inner.sinks {
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
    ToolResult { id: event.call_id, name: event.tool, outcome }
}

/// What the gate decided for a call with valid arguments.
enum Gate {
    /// Run it.
    Run(Arguments),
    /// Ask the approver first.
    Ask(Value),
}

/// Validate the arguments when something before the run looks at them
/// (approver, hooks), and say whether the call needs an approval.
fn gate(engine: &ToolEngine, slot: &Slot, args: Arguments, trail: &mut Trail) -> Result<Gate, ToolError> {
    let decl = slot.entry.declaration();
    let needs_approval = decl.safety >= engine.inner.approval_from;
    let args = if needs_approval || engine.inner.has_layers {
        let mut args = args.into_value(engine, &decl.name)?;
        slot.entry
            .check_arguments(&mut args)
            .map_err(|errors| ToolError::InvalidArguments { tool: decl.name.clone(), errors })?;
        if needs_approval {
            return Ok(Gate::Ask(args));
        }
        Arguments::Parsed(args)
    } else {
        args
    };
    trail.decision =
        if decl.safety == SafetyLevel::Safe { AuditDecision::NotRequired } else { AuditDecision::Recorded };
    Ok(Gate::Run(args))
}

/// Start the tool: through the layer stack (which re-checks an approval
/// against the final arguments) or, with no layers and no approval, the tool
/// itself. Returns the running call and its own cancellation token, if any.
fn launch<'a>(
    engine: &'a ToolEngine,
    id: &str,
    slot: &'a Slot,
    args: Arguments,
    grant: Option<Arc<Approval>>,
    watch: Option<&'a CancellationToken>,
    token: Option<&Arc<CancellationToken>>,
) -> Result<(Running<'a>, Option<CancellationToken>), ToolError> {
    let decl = slot.entry.declaration_arc();
    let tool = decl.name.as_str();
    let stacked = grant.is_some() || engine.inner.has_layers;
    let deadline = engine.inner.options.call_timeout.map(Deadline::after);
    // The call gets a token of its own when it can time out, so that a
    // timeout stops this call's work only.
    let call_cancel = deadline.map(|_| token.map_or_else(CancellationToken::new, |token| token.child_token()));
    let mut cx = CallContext::new(id).with_declaration(Arc::clone(decl)).with_approval(grant);
    if let Some(own) = &call_cancel {
        cx = cx.with_cancellation(own.clone());
    } else if let Some(shared) = token {
        cx = cx.with_shared_cancellation(Arc::clone(shared));
    }
    let running = if stacked {
        // Layers take a `Value` (the gate has parsed it already).
        let args = args.into_value(engine, tool)?;
        match std::panic::catch_unwind(AssertUnwindSafe(|| slot.stack.call(cx, args))) {
            Ok(future) => Either::Right(StackCall { tool, future }),
            Err(panic) => {
                return Err(ToolError::Panicked { tool: tool.to_owned(), message: panic_message(&*panic) });
            }
        }
    } else {
        // The entry validates the arguments and contains panics itself.
        match args {
            Arguments::Parsed(args) => Either::Left(slot.entry.call(cx, args)),
            Arguments::Text(text) => Either::Left(slot.entry.call_text(cx, text)),
        }
    };
    Ok((bounded(running, watch, deadline), call_cancel))
}

/// Ask the approver about a validated call. Returns the arguments to run
/// with (the approver may have edited them) and the approval bound to them.
async fn approve<'a>(
    engine: &'a ToolEngine,
    id: String,
    slot: &'a Slot,
    args: Value,
    watch: Option<&'a CancellationToken>,
) -> (Result<(Value, Arc<Approval>), ToolError>, Asked) {
    let mut trail = Asked::default();
    let result = ask(engine, &id, slot, args, watch, &mut trail).await;
    (result, trail)
}

async fn ask(
    engine: &ToolEngine,
    id: &str,
    slot: &Slot,
    args: Value,
    watch: Option<&CancellationToken>,
    trail: &mut Asked,
) -> Result<(Value, Arc<Approval>), ToolError> {
    let entry = &slot.entry;
    let decl = entry.declaration_arc();
    let tool = decl.name.as_str();
    let Some(approver) = &engine.inner.approver else {
        trail.decision = AuditDecision::NoApprover;
        return Err(ToolError::ApprovalRequired { tool: tool.to_owned() });
    };
    let approver_name = approver.name().into_owned();
    trail.approver = Some(approver_name.clone());
    let request = ApprovalRequest::new(Arc::clone(decl), Some(id), args);
    let mut bound = request.arguments_hash();
    let asked = AssertUnwindSafe(async { approver.decide(request.clone()).await }).catch_unwind();
    let decision = match bounded(asked, watch, None).await {
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
    let mut args = request.into_arguments();
    if let Some(edited) = approval.edited_arguments() {
        trail.decision = AuditDecision::ApprovedEdited;
        args = edited.clone();
        entry.check_arguments(&mut args).map_err(|errors| ToolError::InvalidEdit { tool: tool.to_owned(), errors })?;
        bound = ArgumentsHash::of(&args);
    }
    trail.approved_hash = Some(bound);
    Ok((args, Arc::new(Approval::bind(tool, Some(id), bound, approver_name))))
}

/// A call running through a layer stack, its panics contained and its
/// failure named after the tool.
pub(crate) struct StackCall<'a> {
    tool: &'a str,
    future: ToolFuture,
}

impl Future for StackCall<'_> {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(mut self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut this.future).poll(task))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(value))) => Poll::Ready(Ok(ToolOutput::success(value))),
            Ok(Poll::Ready(Err(failure))) => Poll::Ready(Err(layer::failure_to_error(this.tool, failure))),
            Err(panic) => {
                Poll::Ready(Err(ToolError::Panicked { tool: this.tool.to_owned(), message: panic_message(&*panic) }))
            }
        }
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
