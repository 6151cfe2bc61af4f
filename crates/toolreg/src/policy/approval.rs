//! The approval gate: [`Approver`], [`ApprovalRequest`], [`Decision`] and
//! [`Approval`].
//!
//! An approval is bound to the exact call it was given for: the tool, the
//! call id and the hash of the canonical arguments. Only an
//! [`ApprovalRequest`] can mint one, so an approver cannot approve a call it
//! was not shown, and an approval returned for another request (a replayed
//! decision) is refused with [`ToolError::ApprovalMismatch`](crate::ToolError::ApprovalMismatch).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::declaration::ToolDeclaration;
use crate::exec::Extensions;
use crate::policy::ArgumentsHash;
use crate::principal::Principal;

/// What the caller showed before the call an approver is asked about: the
/// output a code-mode program printed before it made the call.
///
/// A program's calls carry it in their [`Extensions`], so that whoever
/// approves sees what the program said it was doing beside the call
/// itself: `request.extensions().get::<PrintedBefore>()`. It is context for
/// the person deciding, never part of what is approved (that stays the
/// tool, the call id and the arguments hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedBefore(Arc<str>);

impl PrintedBefore {
    /// The printed text, as the program printed it (a line per `console.log`).
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        PrintedBefore(text.into())
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.0
    }
}

/// A call waiting for a decision: the tool, the call id and the arguments,
/// already validated against the input schema (defaults filled in).
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    declaration: Arc<ToolDeclaration>,
    call_id: Option<Arc<str>>,
    arguments: Value,
    hash: ArgumentsHash,
    extensions: Extensions,
    principal: Option<Arc<Principal>>,
    preview: Option<String>,
}

impl ApprovalRequest {
    /// A request for running `declaration`'s tool with these (validated) arguments.
    ///
    /// The policy engine builds these; approvers receive them. Building one by
    /// hand is useful for testing an approver.
    pub fn new(declaration: Arc<ToolDeclaration>, call_id: Option<&str>, arguments: Value) -> Self {
        let hash = ArgumentsHash::of(&arguments);
        ApprovalRequest {
            declaration,
            call_id: call_id.map(Arc::from),
            arguments,
            hash,
            extensions: Extensions::default(),
            principal: None,
            preview: None,
        }
    }

    /// The same request, carrying the call's typed values (the approval
    /// stage passes the call context's, so an approver can reach what the
    /// host put there: an MCP server's client connection, say).
    pub fn with_extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// The same request, made for `principal` (the approval stage passes
    /// the call's): an approver can refuse a principal, or show who asks.
    pub fn with_principal(mut self, principal: Arc<Principal>) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Who the call would run for, when its host said.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }

    /// The same request, with what the call would do in words (a diff, a
    /// command line), for the approver to show.
    pub fn with_preview(mut self, preview: impl Into<String>) -> Self {
        self.preview = Some(preview.into());
        self
    }

    /// What the call would do, when its tool gives a preview
    /// ([`ToolRegistration::with_approval_preview`](crate::ToolRegistration::with_approval_preview)).
    pub fn preview(&self) -> Option<&str> {
        self.preview.as_deref()
    }

    /// What the program making this call printed before it, when a
    /// code-mode program makes it ([`PrintedBefore`]): shown to the person
    /// deciding, beside the arguments.
    pub fn printed_before(&self) -> Option<&str> {
        self.extensions.get::<PrintedBefore>().map(PrintedBefore::text).filter(|text| !text.is_empty())
    }

    /// The call's typed values ([`CallContext::extensions`](crate::CallContext::extensions)).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.declaration.name
    }

    /// The tool's declaration (safety level, categories, description).
    pub fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    /// The provider's id of the call.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The validated arguments, taken out of the request.
    pub fn into_arguments(self) -> Value {
        self.arguments
    }

    /// The hash of the canonical arguments this request is about.
    pub fn arguments_hash(&self) -> ArgumentsHash {
        self.hash
    }

    /// Approve exactly this call.
    pub fn approve(&self) -> Decision {
        Decision::Approve(self.mint(None))
    }

    /// Approve this call with other arguments; they are validated against the
    /// tool's schema again before the tool runs.
    pub fn approve_with(&self, arguments: Value) -> Decision {
        Decision::Approve(self.mint(Some(arguments)))
    }

    /// Refuse this call; `reason` reaches the model.
    pub fn deny(&self, reason: impl Into<String>) -> Decision {
        Decision::Deny { reason: reason.into() }
    }

    /// Do not run this call now: the decision has been asked for and comes
    /// later (see [`Decision::Pending`]).
    pub fn pending(&self, reason: impl Into<String>) -> Decision {
        Decision::Pending { reason: reason.into() }
    }

    fn mint(&self, edited: Option<Value>) -> Approval {
        Approval { tool: Arc::from(self.tool()), call_id: self.call_id.clone(), request_hash: self.hash, edited }
    }
}

/// A grant to run one call: issued by [`ApprovalRequest::approve`] or
/// [`ApprovalRequest::approve_with`] and valid for that request only.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    tool: Arc<str>,
    call_id: Option<Arc<str>>,
    /// The hash of the request's arguments (the call this approval was given for).
    request_hash: ArgumentsHash,
    /// Arguments the approver substituted, before validation.
    edited: Option<Value>,
}

impl Approval {
    /// The tool this approval is for.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The call id this approval is for.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The hash of the arguments of the request that was approved. For an
    /// approval with edited arguments the run is bound to the hash of the
    /// edited arguments instead, once they are validated.
    pub fn request_hash(&self) -> ArgumentsHash {
        self.request_hash
    }

    /// The arguments the approver substituted, if any.
    pub fn edited_arguments(&self) -> Option<&Value> {
        self.edited.as_ref()
    }

    /// Whether this approval was issued for exactly this request.
    pub fn is_for(&self, request: &ApprovalRequest) -> bool {
        *self.tool == *request.tool() && self.call_id == request.call_id && self.request_hash == request.hash
    }
}

/// An approver's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Run the call (with the approval's edited arguments, if it has some).
    Approve(Approval),
    /// Do not run it; the reason reaches the model.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Not decided yet: the question has gone out (to a client's next
    /// round, to the host of a suspended run) and this call does not run
    /// now. It fails as a denial does, with this reason; the audit trail
    /// records it as [`AuditDecision::Pending`](crate::policy::AuditDecision::Pending),
    /// not as a denial.
    Pending {
        /// What the call waits for.
        reason: String,
    },
}

impl Decision {
    /// A denial with this reason (for approvers that refuse without looking).
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny { reason: reason.into() }
    }
}

/// Decides whether a call that needs approval may run.
///
/// Called with a request for each such call; returns
/// [`request.approve()`](ApprovalRequest::approve),
/// [`request.approve_with(args)`](ApprovalRequest::approve_with) or
/// [`request.deny(reason)`](ApprovalRequest::deny). Shipped:
/// [`TerminalApprover`](crate::policy::TerminalApprover) (asks a person) and
/// [`PolicyApprover`](crate::policy::PolicyApprover) (rules); write your own
/// with [`approver_fn`].
pub trait Approver: Send + Sync + 'static {
    /// Decide on one call.
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision>;

    /// A short name, recorded in audit events.
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("approver")
    }
}

impl<A: Approver + ?Sized> Approver for Arc<A> {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        (**self).decide(request)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

impl<A: Approver + ?Sized> Approver for Box<A> {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        (**self).decide(request)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

/// An [`Approver`] made from an async closure; see [`approver_fn`].
pub struct ApproverFn<F> {
    name: Cow<'static, str>,
    f: F,
}

impl<F> fmt::Debug for ApproverFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApproverFn").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Make an [`Approver`] from a closure taking the request and returning a
/// future of the [`Decision`].
///
/// ```
/// use toolreg::policy::{approver_fn, Decision};
///
/// let approver = approver_fn("tmp-only", |request| async move {
///     match request.arguments()["path"].as_str() {
///         Some(path) if path.starts_with("/tmp/") => request.approve(),
///         _ => request.deny("only files under /tmp may be deleted"),
///     }
/// });
/// # let _ = approver;
/// ```
pub fn approver_fn<F, Fut>(name: impl Into<Cow<'static, str>>, f: F) -> ApproverFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    ApproverFn { name: name.into(), f }
}

impl<F, Fut> Approver for ApproverFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        Box::pin((self.f)(request))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
}

/// An [`Approver`] that approves every call as asked, without looking: the
/// operator's explicit "run dangerous tools without asking" (`--yes`,
/// `--allow-dangerous`). Each approval is still bound to its call id, tool
/// and arguments, and the audit records it under this approver's name.
///
/// ```
/// use toolreg::engine::ToolEngine;
/// use toolreg::policy::ApproveAll;
///
/// let engine = ToolEngine::builder(&toolreg::FunctionRegistry::new()).approver(ApproveAll::new("--yes")).build();
/// # let _ = engine;
/// ```
#[derive(Debug, Clone)]
pub struct ApproveAll {
    name: Cow<'static, str>,
}

impl ApproveAll {
    /// Approve everything, recorded under `name` (say, the flag that asked for it).
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        ApproveAll { name: name.into() }
    }
}

impl Approver for ApproveAll {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        Box::pin(std::future::ready(request.approve()))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
}
