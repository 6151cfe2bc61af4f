//! Panic containment, one boundary per stage of a call that runs code of its
//! own: the approver, each layer, the tool.
//!
//! Each stage starts and polls its work inside a boundary that knows which
//! stage it is, so a panic is caught where it started and becomes that
//! stage's error: [`ToolError::ApprovalFailed`] for the approver (the call
//! refused, fail closed), [`ToolError::HookFailed`] for a layer,
//! [`ToolError::Panicked`] for the tool. A panic in the tool is the tool's
//! failure like any other: the layers above it see it come back from
//! [`Next::run`](super::Next::run). The call's own outer boundary
//! ([`Guarded`]) catches the rest, as the tool's.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio_util::sync::WaitForCancellationFuture;

use crate::declaration::ToolDeclaration;
use crate::exec::ToolError;
use crate::handler::ToolFuture;

/// The stage a boundary contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Site {
    /// The approver (or the tool's approval preview), with the approver's name.
    Approval(Arc<str>),
    /// A hook or layer, with its name.
    Hook(Arc<str>),
    /// The tool itself.
    Tool,
}

/// Run `f`, a synchronous step of `site`; a panic is that site's error.
pub(crate) fn catch<T>(site: &Site, tool: &ToolDeclaration, f: impl FnOnce() -> T) -> Result<T, ToolError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| panicked(&tool.name, Some(site), &*panic))
}

/// Start a stage's work with `start` and poll it, both inside `site`'s
/// boundary. A result known at once needs no boundary around its polls.
pub(crate) fn start(site: Site, tool: &Arc<ToolDeclaration>, start: impl FnOnce() -> ToolFuture) -> ToolFuture {
    match catch(&site, tool, start) {
        Ok(started) if started.is_ready() => started,
        Ok(started) => ToolFuture::new(Contained::new(site, Arc::clone(tool), started)),
        Err(error) => ToolFuture::ready(Err(error)),
    }
}

pin_project_lite::pin_project! {
    /// A stage's future, each poll of which runs inside the stage's boundary.
    pub(crate) struct Contained<F> {
        site: Site,
        tool: Arc<ToolDeclaration>,
        #[pin]
        inner: F,
    }
}

impl<F> Contained<F> {
    pub(crate) fn new(site: Site, tool: Arc<ToolDeclaration>, inner: F) -> Self {
        Contained { site, tool, inner }
    }
}

impl<T, F: Future<Output = Result<T, ToolError>>> Future for Contained<F> {
    type Output = Result<T, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let inner = this.inner;
        catch_unwind(AssertUnwindSafe(|| inner.poll(cx)))
            .unwrap_or_else(|panic| Poll::Ready(Err(panicked(&this.tool.name, Some(this.site), &*panic))))
    }
}

/// The call's outer boundary: polls the call's steps in place (they are
/// pinned where they were built, never moved) inside the call's span,
/// catches a panic the stages' own boundaries did not (its payload comes
/// back as the error, for [`panicked`] once the steps are gone), and ends
/// the call with [`ToolError::Cancelled`] when its caller's token is
/// cancelled while the steps wait (a token cancelled before the call
/// starts is the caller's to check).
pub(crate) struct Guarded<'a, F> {
    steps: Pin<&'a mut F>,
    span: &'a tracing::Span,
    /// Boxed: only a call given a token has it, and it would make every
    /// call's future larger.
    cancelled: Option<Pin<Box<WaitForCancellationFuture<'a>>>>,
}

impl<'a, F> Guarded<'a, F> {
    pub(crate) fn new(
        steps: Pin<&'a mut F>,
        span: &'a tracing::Span,
        watch: Option<&'a tokio_util::sync::CancellationToken>,
    ) -> Self {
        Guarded { steps, span, cancelled: watch.map(|watch| Box::pin(watch.cancelled())) }
    }
}

/// A panic's payload.
pub(crate) type Panic = Box<dyn std::any::Any + Send>;

impl<T, F: Future<Output = Result<T, ToolError>>> Future for Guarded<'_, F> {
    type Output = Result<Result<T, ToolError>, Panic>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let _in_span = this.span.enter();
        let steps = this.steps.as_mut();
        match catch_unwind(AssertUnwindSafe(|| steps.poll(cx))) {
            Ok(Poll::Ready(outcome)) => return Poll::Ready(Ok(outcome)),
            Err(panic) => return Poll::Ready(Err(panic)),
            Ok(Poll::Pending) => {}
        }
        match &mut this.cancelled {
            Some(cancelled) => cancelled.as_mut().poll(cx).map(|()| Ok(Err(ToolError::Cancelled))),
            None => Poll::Pending,
        }
    }
}

/// The error for a panic that started at `site`, logged: the approval
/// failed (the call is refused, fail closed), a hook failed, or the tool
/// panicked.
pub(crate) fn panicked(tool: &str, site: Option<&Site>, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    };
    match site {
        Some(Site::Approval(approver)) => {
            tracing::error!(tool = %tool, %approver, %message, "an approver panicked; the call was refused");
            ToolError::ApprovalFailed { approver: approver.to_string(), message }
        }
        Some(Site::Hook(hook)) => {
            tracing::error!(tool = %tool, %hook, %message, "a hook panicked");
            ToolError::HookFailed { hook: hook.to_string(), message: format!("the hook panicked: {message}") }
        }
        Some(Site::Tool) | None => {
            tracing::error!(tool = %tool, %message, "a tool call panicked");
            ToolError::Panicked { message }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ToolOutput;

    fn tool() -> Arc<ToolDeclaration> {
        Arc::new(ToolDeclaration::builder("t").description("a tool").build())
    }

    #[test]
    fn a_panic_is_the_error_of_the_stage_it_started_in() {
        let hook = Site::Hook(Arc::from("h"));
        let tool = tool();
        // The tool's boundary, inside the hook's, catches the tool's panic.
        let outcome = catch(&hook, &tool, || catch::<()>(&Site::Tool, &tool, || panic!("in the tool")));
        assert_eq!(outcome, Ok(Err(ToolError::Panicked { message: "in the tool".into() })));
        let outcome = catch::<()>(&hook, &tool, || panic!("in the hook"));
        match outcome {
            Err(ToolError::HookFailed { hook, message }) => {
                assert_eq!((hook.as_str(), message.as_str()), ("h", "the hook panicked: in the hook"));
            }
            other => panic!("expected HookFailed, got {other:?}"),
        }
        let approval = Site::Approval(Arc::from("a"));
        let started: ToolFuture = start(approval, &tool, || panic!("in the approver"));
        let outcome = futures_util::FutureExt::now_or_never(started).unwrap();
        assert!(matches!(outcome, Err(ToolError::ApprovalFailed { .. })), "{outcome:?}");
        let fine = start(Site::Tool, &tool, || ToolFuture::ready(Ok(ToolOutput::from(serde_json::json!(1)))));
        assert!(futures_util::FutureExt::now_or_never(fine).unwrap().is_ok());
    }
}
