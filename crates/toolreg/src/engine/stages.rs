//! The stages an engine builds around each tool, once, when it is built:
//! approval (outermost), the per-call timeout, the hooks, and the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::run::{Arguments, run_direct};
use super::site::{self, AtSite, Marked, Site};
use super::{ArgumentsChanged, BatchOptions, Stack, ToolLayer};
use crate::exec::{CallContext, ToolError};
use crate::handler::{ErasedTool, ToolFuture};
use crate::policy::{ApprovalRequest, Approver, ArgumentsHash, AuditDecision, Decision};
use crate::registry::ToolEntry;

/// Build one tool's stack.
pub(crate) fn build(
    entry: &ToolEntry,
    needs_approval: bool,
    approver: Option<&Arc<dyn Approver>>,
    layers: &[Arc<dyn ToolLayer>],
    options: &BatchOptions,
) -> Stack {
    let run = RunStage { entry: entry.clone(), check_grant: needs_approval, offload: options.has_timeout() };
    let mut stack: Stack = Arc::new(run);
    for layer in layers.iter().rev() {
        // Each layer runs under its own site, so that a panic in it is
        // reported as the layer's, not the tool's.
        let site = Site::Hook(Arc::from(layer.name()));
        stack = Arc::new(Marked { site, inner: layer.layer(stack) });
    }
    if let Some(limit) = options.call_timeout {
        stack = Arc::new(TimeoutStage { inner: stack, limit });
    }
    if needs_approval {
        let hooked = !layers.is_empty();
        let name = approver.map_or(Arc::from(""), |a| Arc::from(a.name()));
        stack = Arc::new(ApprovalStage {
            inner: stack,
            approver: approver.cloned(),
            site: Site::Approval(name),
            entry: entry.clone(),
            hooked,
        });
    }
    stack
}

/// What the approval stage did, for the audit record.
#[derive(Debug, Default)]
pub(crate) struct Asked {
    pub(crate) decision: AuditDecision,
    pub(crate) approver: Option<String>,
    /// The hash of the arguments the approver was shown.
    pub(crate) request_hash: Option<ArgumentsHash>,
    /// The hash the run is bound to (of the edited arguments, if edited).
    pub(crate) approved_hash: Option<ArgumentsHash>,
}

/// The slot in which the approval stage leaves its [`Asked`] for the pipeline.
#[derive(Debug, Default)]
pub(crate) struct ApprovalRecord(Mutex<Option<Asked>>);

impl ApprovalRecord {
    fn set(&self, asked: Asked) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(asked);
    }

    pub(crate) fn take(&self) -> Option<Asked> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}

/// The approval a call runs under, passed down on the [`CallContext`]:
/// bound to the tool, the call id and the final arguments' hash, and good
/// for one run.
#[derive(Debug)]
struct Grant {
    tool: Arc<str>,
    call_id: Option<Arc<str>>,
    hash: ArgumentsHash,
    /// The approved arguments, kept when hooks could change them.
    approved: Option<Value>,
    used: AtomicBool,
}

/// Asks the approver; on approval, passes the call down with its grant.
struct ApprovalStage {
    inner: Stack,
    approver: Option<Arc<dyn Approver>>,
    /// Where a panic of the approver (or of the preview it is shown) is
    /// reported: the call is refused, never run.
    site: Site,
    entry: ToolEntry,
    /// Whether hooks sit between approval and run: the grant then keeps the
    /// approved arguments, so the run can tell whether a hook changed them.
    hooked: bool,
}

impl ErasedTool for ApprovalStage {
    fn call(&self, mut cx: CallContext, args: Value) -> ToolFuture {
        let (inner, approver, entry) = (Arc::clone(&self.inner), self.approver.clone(), self.entry.clone());
        let (hooked, site) = (self.hooked, self.site.clone());
        ToolFuture::new(async move {
            // Should the approver panic, the audit still records who failed.
            let unwinding =
                RecordIfUnwinding { record: cx.extensions().get_arc::<ApprovalRecord>(), site: site.clone() };
            let mut asked = Asked::default();
            let approving = approve(&entry, approver.as_deref(), &mut cx, args, &mut asked, hooked);
            let approved = AtSite::new(site, approving).await;
            // Past the approver: a panic further in is not the approval's.
            drop(unwinding);
            if let Some(record) = cx.extensions().get::<ApprovalRecord>() {
                record.set(asked);
            }
            inner.call(cx, approved?).await
        })
    }
}

/// Records [`AuditDecision::ApprovalFailed`] when dropped by a panic.
struct RecordIfUnwinding {
    record: Option<Arc<ApprovalRecord>>,
    site: Site,
}

impl Drop for RecordIfUnwinding {
    fn drop(&mut self) {
        if let (true, Some(record), Site::Approval(approver)) = (std::thread::panicking(), &self.record, &self.site) {
            let approver = Some(approver.to_string());
            record.set(Asked { decision: AuditDecision::ApprovalFailed, approver, ..Asked::default() });
        }
    }
}

async fn approve(
    entry: &ToolEntry,
    approver: Option<&dyn Approver>,
    cx: &mut CallContext,
    args: Value,
    asked: &mut Asked,
    keep_arguments: bool,
) -> Result<Value, ToolError> {
    let decl = entry.declaration_arc();
    let Some(approver) = approver else {
        asked.decision = AuditDecision::NoApprover;
        return Err(ToolError::ApprovalRequired);
    };
    let approver_name = approver.name().into_owned();
    asked.approver = Some(approver_name.clone());
    let preview = entry.approval_preview(&args);
    let mut request = ApprovalRequest::new(Arc::clone(decl), cx.call_id(), args);
    if let Some(preview) = preview {
        request = request.with_preview(preview);
    }
    if !cx.extensions().is_empty() {
        request = request.with_extensions(cx.extensions().clone());
    }
    let mut bound = request.arguments_hash();
    asked.request_hash = Some(bound);
    let approval = match approver.decide(request.clone()).await {
        Decision::Deny { reason } => {
            asked.decision = AuditDecision::Denied;
            return Err(ToolError::Denied { reason, approver: approver_name });
        }
        Decision::Approve(approval) => approval,
    };
    if !approval.is_for(&request) {
        asked.decision = AuditDecision::Mismatch;
        let detail = "the approver answered with an approval given for another call".to_owned();
        return Err(ToolError::ApprovalMismatch { detail });
    }
    asked.decision = AuditDecision::Approved;
    let mut args = request.into_arguments();
    if let Some(edited) = approval.edited_arguments() {
        asked.decision = AuditDecision::ApprovedEdited;
        args = edited.clone();
        entry.check_arguments(&mut args).map_err(|error| match error {
            ToolError::InvalidArguments { errors } => ToolError::InvalidEdit { errors },
            other => other,
        })?;
        bound = ArgumentsHash::of(&args);
    }
    asked.approved_hash = Some(bound);
    let grant = Grant {
        tool: Arc::from(decl.name.as_str()),
        call_id: cx.call_id().map(Arc::from),
        hash: bound,
        approved: keep_arguments.then(|| args.clone()),
        used: AtomicBool::new(false),
    };
    cx.extensions_mut().insert(grant);
    Ok(args)
}

/// Stops the hooks and the tool when the per-call time limit passes; the
/// tool's token is cancelled so that work it started stops too.
struct TimeoutStage {
    inner: Stack,
    limit: Duration,
}

impl ErasedTool for TimeoutStage {
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        let own = cx.cancellation().map_or_else(CancellationToken::new, CancellationToken::child_token);
        let future = self.inner.call(cx.with_cancellation(own.clone()), args);
        let limit = self.limit;
        ToolFuture::new(async move {
            match tokio::time::timeout(limit, future).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    own.cancel();
                    Err(ToolError::Timeout { limit })
                }
            }
        })
    }
}

/// The innermost stage: validates what the hooks changed, checks the
/// approval against exactly these arguments, and runs the tool.
struct RunStage {
    entry: ToolEntry,
    check_grant: bool,
    offload: bool,
}

impl RunStage {
    fn admit(&self, cx: &CallContext, args: &mut Value) -> Result<(), ToolError> {
        let grant = cx.extensions().get::<Grant>();
        // Validated again only when a layer says it changed the arguments
        // (the explicit mark a hook's mutable use of them sets). Under an
        // approval, the arguments are also compared with the approved ones:
        // a layer that changed them without saying so must not run a
        // dangerous tool on arguments nobody approved.
        let marked = cx.extensions().get::<ArgumentsChanged>().is_some();
        let changed = marked || grant.and_then(|g| g.approved.as_ref()).is_some_and(|approved| approved != args);
        if changed {
            self.entry.check_arguments(args)?;
        }
        if !self.check_grant {
            return Ok(());
        }
        let tool = self.entry.declaration().name.as_str();
        let detail = match grant {
            None => Some("the call has no approval"),
            Some(grant) if &*grant.tool != tool || grant.call_id.as_deref() != cx.call_id() => {
                Some("the approval was given for another call")
            }
            Some(grant) if grant.used.swap(true, Ordering::AcqRel) => Some("the approval was already used"),
            Some(grant) if changed && grant.hash != ArgumentsHash::of(args) => {
                Some("the arguments changed after they were approved")
            }
            Some(_) => None,
        };
        match detail {
            Some(detail) => Err(ToolError::ApprovalMismatch { detail: detail.to_owned() }),
            None => Ok(()),
        }
    }
}

impl ErasedTool for RunStage {
    fn call(&self, cx: CallContext, mut args: Value) -> ToolFuture {
        if let Err(error) = self.admit(&cx, &mut args) {
            return ToolFuture::ready(Err(error));
        }
        if self.offload && self.entry.tool().runs_inline() {
            return run_direct(&self.entry, cx, Arguments::Value(args), true);
        }
        // Validated already: straight to the tool, under its own site.
        site::mark(&Site::Tool, || self.entry.tool().call(cx, args))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::engine::{OutputBudget, ToolEngine, hook_fn};
    use crate::exec::{ToolCall, ToolExecutor};
    use crate::policy::{ApprovalRequest, approver_fn};
    use crate::validate::VALIDATIONS;
    use crate::{FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration};

    fn registry() -> FunctionRegistry {
        let mut registry = FunctionRegistry::new();
        for (name, safety) in [("look", SafetyLevel::Safe), ("rm", SafetyLevel::Dangerous)] {
            let decl = ToolDeclaration::builder(name)
                .description("test tool")
                .param("path", ParamType::String, "a path")
                .safety(safety)
                .build();
            registry.register_sync_tool(name, |args: Value| Ok::<_, String>(args), decl).unwrap();
        }
        registry
    }

    /// Run one call on a current-thread runtime and count the validations it made.
    fn validations(engine: &ToolEngine, tool: &str, args: Value) -> (usize, crate::ToolResult) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        VALIDATIONS.with(|n| n.set(0));
        let result = runtime.block_on(engine.execute_call(ToolCall::new("c1", tool, args)));
        (VALIDATIONS.with(std::cell::Cell::get), result)
    }

    #[test]
    fn a_layer_that_leaves_the_arguments_alone_costs_no_second_validation() {
        let engine = ToolEngine::builder(&registry()).layer(OutputBudget::new(1_000)).build();
        let (count, result) = validations(&engine, "look", json!({"path": "a"}));
        assert!(!result.is_error(), "{result:?}");
        assert_eq!(count, 1);
        // A hook that only reads the arguments does not mark them either.
        let engine = ToolEngine::builder(&registry())
            .layer(hook_fn(|call, next| async move {
                assert_eq!(call.arguments["path"], "a");
                next.run(call).await
            }))
            .build();
        assert_eq!(validations(&engine, "look", json!({"path": "a"})).0, 1);
    }

    #[test]
    fn a_hook_that_edits_the_arguments_has_them_validated_again() {
        let engine = ToolEngine::builder(&registry())
            .layer(hook_fn(|mut call, next| async move {
                call.arguments["path"] = json!(call.arguments["path"].as_str() == Some("bad"));
                next.run(call).await
            }))
            .build();
        let (count, result) = validations(&engine, "look", json!({"path": "a"}));
        assert_eq!(count, 2);
        // The edit broke the schema (a boolean path): the second validation caught it.
        assert!(matches!(result.outcome, Err(crate::ToolError::InvalidArguments { .. })), "{result:?}");
    }

    #[test]
    fn an_approvers_edit_is_validated_again() {
        let approver = approver_fn("editor", |request: ApprovalRequest| async move {
            request.approve_with(json!({"path": "/tmp/safe"}))
        });
        let engine = ToolEngine::builder(&registry()).approver(approver).layer(OutputBudget::new(1_000)).build();
        let (count, result) = validations(&engine, "rm", json!({"path": "/etc"}));
        assert_eq!(result.value(), Some(&json!({"path": "/tmp/safe"})));
        assert_eq!(count, 2);
        // Approved as asked: validated once, hooks or not.
        let approver = approver_fn("yes", |request: ApprovalRequest| async move { request.approve() });
        let engine = ToolEngine::builder(&registry()).approver(approver).layer(OutputBudget::new(1_000)).build();
        assert_eq!(validations(&engine, "rm", json!({"path": "/etc"})).0, 1);
    }

    /// A hand-written layer that swaps the arguments without the mark.
    struct Swap;

    impl crate::engine::ToolLayer for Swap {
        fn layer(&self, inner: std::sync::Arc<dyn crate::ErasedTool>) -> std::sync::Arc<dyn crate::ErasedTool> {
            struct Swapped(std::sync::Arc<dyn crate::ErasedTool>);
            impl crate::ErasedTool for Swapped {
                fn call(&self, cx: crate::CallContext, _: Value) -> crate::ToolFuture {
                    self.0.call(cx, json!({"path": "/etc/passwd"}))
                }
            }
            std::sync::Arc::new(Swapped(inner))
        }
    }

    #[test]
    fn an_unmarked_change_under_an_approval_is_still_refused() {
        let approver = approver_fn("yes", |request: ApprovalRequest| async move { request.approve() });
        let engine = ToolEngine::builder(&registry()).approver(approver).layer(Swap).build();
        let (_, result) = validations(&engine, "rm", json!({"path": "/tmp/a"}));
        match &result.outcome {
            Err(crate::ToolError::ApprovalMismatch { detail }) => assert!(detail.contains("changed after"), "{detail}"),
            other => panic!("expected ApprovalMismatch, got {other:?}"),
        }
    }
}
