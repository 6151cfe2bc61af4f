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
//!    of the tool ([`tool::run`], the one way to it), within the per-call
//!    time limit ([`timeout`](super::timeout));
//! 6. **audit**: the call's [`AuditEvent`], filled in as the steps go, to
//!    its `tool_call` span, the log and every sink ([`record`](super::record)).
//!
//! Each stage that runs code of its own — the approver, each layer, the
//! tool — runs inside a panic boundary of its own ([`contain`](super::contain)),
//! so a panic is that stage's error. The only state passed between the
//! steps travels in [`Chain`], owned by the call: no side channel in the
//! call's extensions.

use std::future::Future;
use std::sync::{Arc, LazyLock, OnceLock};

use futures_util::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::contain::{self, Contained, Guarded, Site};
use super::layer::{Chain, HookArguments, HookCall, Layer, Next};
use super::record::Record;
use super::tool::{self, Arguments};
use super::{BatchOptions, Stop, timeout};
use crate::args;
use crate::declaration::{SafetyLevel, ToolDeclaration};
use crate::exec::{CallContext, CallOptions, Extensions, ToolArguments, ToolCall, ToolError, ToolOutput, ToolResult};
use crate::policy::{
    Access, AccessPolicy, ApprovalRequest, Approver, ArgumentsHash, AuditDecision, AuditEvent, AuditSink, Decision,
    Quotas,
};
use crate::principal::Principal;
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
    /// Who may call what, when the engine has a policy.
    pub(crate) access: Option<&'a AccessPolicy>,
    /// The principals' counters under the policy's quotas.
    pub(crate) quotas: &'a Quotas,
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
            access: None,
            quotas: &NO_QUOTAS,
        }
    }
}

/// The layers of a pipeline that has none (a registry's), shared.
static NO_LAYERS: LazyLock<Arc<[Layer]>> = LazyLock::new(|| Arc::from([]));

/// A registry's options: the defaults (no timeout).
static REGISTRY_OPTIONS: BatchOptions = BatchOptions::DEFAULT;

/// A registry's quotas: none counted (it has no policy).
static NO_QUOTAS: LazyLock<Quotas> = LazyLock::new(Quotas::default);

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
    /// Who the call runs for.
    pub(crate) principal: Option<&'a Arc<Principal>>,
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
            principal: options.principal.as_ref(),
        }
    }
}

/// Run one call through the pipeline and record it.
pub(crate) fn run<'a>(
    p: Pipeline<'a>,
    call: ToolCall,
    control: Control<'a>,
) -> impl Future<Output = ToolResult> + Send + 'a {
    let span = AuditEvent::span(&call.name, &call.id);
    let ToolCall { id, name, arguments } = call;
    let mut record = Record::new(p.sinks, id, name, control.stopped, !span.is_disabled());
    record.event.principal = control.principal.map(|principal| Principal::clone(principal));
    async move {
        let outcome = if control.watch.is_some_and(CancellationToken::is_cancelled) {
            Ok(Err(ToolError::Cancelled))
        } else {
            let recording = record.recording();
            // Pinned where it is built and polled in place: every move of
            // the steps' state was a copy on each call (measured: about a
            // fifth of a registry call went to copying futures).
            let mut steps = std::pin::pin!(steps(p, &mut record.event, recording, arguments, &control));
            Guarded::new(steps.as_mut(), &span, control.watch).await
        };
        let outcome = outcome.unwrap_or_else(|panic| Err(contain::panicked(&record.event.tool, None, &*panic)));
        let outcome = outcome.and_then(|output| within_content_limit(p.options, output));
        // 6. Audit.
        record.finish(&span, outcome)
    }
}

/// Steps 1 to 5 of a call (named and identified in its audit `event`),
/// each filling in the `event`
/// (`recording`: whether anything reads it, so the arguments are hashed).
async fn steps(
    p: Pipeline<'_>,
    event: &mut AuditEvent,
    recording: bool,
    arguments: ToolArguments,
    control: &Control<'_>,
) -> Result<ToolOutput, ToolError> {
    // 1. Lookup, selection and the principal's access.
    let entry = lookup(&p, &event.tool, control.principal)?;
    let decl = entry.declaration_arc();
    event.safety = Some(decl.safety);
    let principal = control.principal.map(|p| &**p);
    let (granted_with_approval, _admitted) = match p.access {
        None => (false, None),
        Some(policy) => match policy.decide(principal, decl) {
            Access::Refused { reason } => return Err(ToolError::Forbidden { reason }),
            Access::Granted { approval, .. } => {
                // Held to the end of the call: a place among its calls at once.
                let who = principal.map(Principal::identity).unwrap_or_default();
                let admitted = p.quotas.admit(&who, policy.quota_of(principal)).map_err(|refusal| {
                    ToolError::QuotaExceeded { reason: refusal.reason, retry_after: refusal.retry_after }
                })?;
                (approval, admitted)
            }
        },
    };
    // 2. Argument limits, in whatever form the arguments came.
    let arguments = check_limits(&p, arguments)?;
    let mut cx = context(&event.call_id, decl, control);
    let offload = p.options.has_timeout();
    let needs_approval = granted_with_approval || p.approval.needed_for(decl);
    if !needs_approval && p.layers.is_empty() {
        // Nothing stands between the arguments and the tool, which checks them as it starts.
        event.runs_unapproved(recording.then(|| hash(&arguments)).flatten());
        let arguments = Arguments::AsCalled(arguments);
        return timeout::within(p.options.call_timeout, cx, |cx| tool::run(entry, cx, arguments, offload)).await;
    }
    // 3. Validation, once for every later step.
    let mut args = into_value(arguments)?;
    entry.check_arguments(&mut args)?;
    // 4. Approval.
    let approved = match p.approval {
        // Boxed: an approval is rare beside the calls that need none, and
        // its state would make every call's future larger.
        Approval::From { approver, .. } if needs_approval => {
            Some(Box::pin(approve(entry, approver.as_deref(), &mut cx, &mut args, event)).await?)
        }
        _ => {
            event.runs_unapproved(recording.then(|| ArgumentsHash::of(&args)));
            None
        }
    };
    // 5. Hooks and run.
    let chain = Arc::new(Chain { layers: Arc::clone(p.layers), entry: entry.clone(), approved, offload });
    let arguments = HookArguments { value: args, changed: false };
    // The first layer's name (or none: approval without layers).
    let hook = chain.layers.first().map_or_else(|| Arc::from(""), |layer| Arc::clone(&layer.name));
    let call = |cx| Next { chain, index: 0 }.run(HookCall { cx, arguments, hook });
    timeout::within(p.options.call_timeout, cx, call).await
}

/// Step 1: the offered tool with this name, or the error the model reads
/// (naming only tools the principal may call).
fn lookup<'p>(p: &Pipeline<'p>, name: &str, principal: Option<&Arc<Principal>>) -> Result<&'p ToolEntry, ToolError> {
    const SHOWN: usize = 20;
    if let Some(entry) = p.offered.get(name) {
        return Ok(entry);
    }
    let visible = |entry: &&ToolEntry| {
        p.access.is_none_or(|policy| policy.decide(principal.map(|p| &**p), entry.declaration()).is_granted())
    };
    let available = p.offered.list().filter(visible).take(SHOWN).map(|entry| entry.name().to_owned()).collect();
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

/// The context the hooks, the approver and the tool see.
fn context(id: &str, decl: &Arc<ToolDeclaration>, control: &Control<'_>) -> CallContext {
    // A call from your own code (`FunctionRegistry::execute`) has no id.
    let cx = if id.is_empty() { CallContext::default() } else { CallContext::new(id) };
    let mut cx = cx.with_declaration(Arc::clone(decl));
    if let Some(extensions) = control.extensions {
        *cx.extensions_mut() = extensions.clone();
    }
    if let Some(token) = &control.token {
        cx = cx.with_shared_cancellation(Arc::clone(token));
    }
    if let Some(principal) = control.principal {
        cx = cx.with_principal(Arc::clone(principal));
    }
    cx
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
/// is the one the run is bound to. The approver (and the tool's approval
/// preview) runs inside the approval's panic boundary: an approver that
/// panics refuses the call ([`ToolError::ApprovalFailed`]).
async fn approve(
    entry: &ToolEntry,
    approver: Option<&dyn Approver>,
    cx: &mut CallContext,
    args: &mut Value,
    event: &mut AuditEvent,
) -> Result<ArgumentsHash, ToolError> {
    let Some(approver) = approver else {
        event.decision = AuditDecision::NoApprover;
        return Err(ToolError::ApprovalRequired);
    };
    let approver_name = approver.name().into_owned();
    event.approver = Some(approver_name.clone());
    let request = request(entry, cx, args);
    event.arguments_hash = Some(request.arguments_hash());
    let site = Site::Approval(Arc::from(approver_name.as_str()));
    let decision = decide(site, entry, approver, &request).await;
    let approval = read(decision, &request, approver_name, event)?;
    let mut bound = request.arguments_hash();
    *args = request.into_arguments();
    if let Some(edited) = approval.edited_arguments() {
        event.decision = AuditDecision::ApprovedEdited;
        *args = edited.clone();
        entry.check_arguments(args).map_err(|error| match error {
            ToolError::InvalidArguments { errors } => ToolError::InvalidEdit { errors },
            other => other,
        })?;
        bound = ArgumentsHash::of(args);
    }
    event.approved_hash = Some(bound);
    Ok(bound)
}

/// The approval in an approver's answer, or why the call does not run;
/// the decision is recorded either way.
fn read(
    decision: Result<Decision, ToolError>,
    request: &ApprovalRequest,
    approver: String,
    event: &mut AuditEvent,
) -> Result<crate::policy::Approval, ToolError> {
    let (recorded, outcome) = match decision {
        Err(error) => (AuditDecision::ApprovalFailed, Err(error)),
        Ok(Decision::Deny { reason }) => (AuditDecision::Denied, Err(ToolError::Denied { reason, approver })),
        Ok(Decision::Pending { reason }) => (AuditDecision::Pending, Err(ToolError::Pending { reason, approver })),
        Ok(Decision::Approve(approval)) if !approval.is_for(request) => {
            let detail = "the approver answered with an approval given for another call".to_owned();
            (AuditDecision::Mismatch, Err(ToolError::ApprovalMismatch { detail }))
        }
        Ok(Decision::Approve(approval)) => (AuditDecision::Approved, Ok(approval)),
    };
    event.decision = recorded;
    outcome
}

/// What the approver is asked: the call, its arguments (taken), the
/// tool's preview of them, and the caller's extensions.
fn request(entry: &ToolEntry, cx: &CallContext, args: &mut Value) -> ApprovalRequest {
    let mut request = ApprovalRequest::new(Arc::clone(entry.declaration_arc()), cx.call_id(), std::mem::take(args));
    if !cx.extensions().is_empty() {
        request = request.with_extensions(cx.extensions().clone());
    }
    if let Some(principal) = cx.principal() {
        request = request.with_principal(Arc::clone(principal));
    }
    request
}

/// The approver's decision on `request`, the tool's preview added first,
/// both inside the approval's panic boundary.
async fn decide(
    site: Site,
    entry: &ToolEntry,
    approver: &dyn Approver,
    request: &ApprovalRequest,
) -> Result<Decision, ToolError> {
    let tool = entry.declaration_arc();
    let preview = contain::catch(&site, tool, || entry.approval_preview(request.arguments()))?;
    let request = match preview {
        Some(preview) => request.clone().with_preview(preview),
        None => request.clone(),
    };
    let deciding = contain::catch(&site, tool, || approver.decide(request))?;
    Contained::new(site, Arc::clone(tool), deciding.map(Ok)).await
}

/// Blocks are bounded in total, as text is by `OutputBudget`.
fn within_content_limit(options: &BatchOptions, output: ToolOutput) -> Result<ToolOutput, ToolError> {
    let size = output.content_size();
    if size > options.max_content_bytes {
        return Err(ToolError::ResultTooLarge { size, limit: options.max_content_bytes });
    }
    Ok(output)
}
