//! Where in a call a panic started: the approver, a hook, or the tool.
//!
//! A call has one panic boundary (in the pipeline), which catches a panic
//! from whichever stage it started in. To say which, each stage that runs
//! code of its own — the approver, each layer, the tool — runs it under a
//! [`Site`] mark; a mark dropped while its thread unwinds records its site,
//! unless a mark nested inside it (dropped first) already has. The boundary
//! then takes the innermost site of the panic it caught. A mark dropped
//! without a panic clears the record, so a panic that user code caught by
//! itself leaves nothing behind for a later call.
//!
//! The record is thread-local: a panic unwinds the thread it happened on,
//! and the boundary that catches it polls the call's future on that same
//! thread.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::exec::ToolError;
use crate::handler::ToolFuture;

/// The stage a panic started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Site {
    /// The approver (or the tool's approval preview), with the approver's name.
    Approval(Arc<str>),
    /// A hook or layer, with its name.
    Hook(Arc<str>),
    /// The tool itself.
    Tool,
}

thread_local! {
    static PANIC_SITE: RefCell<Option<Site>> = const { RefCell::new(None) };
}

/// The site of the panic this thread is unwinding from (or just caught),
/// taken; `None` when no mark saw it.
pub(crate) fn take() -> Option<Site> {
    PANIC_SITE.try_with(|cell| cell.borrow_mut().take()).ok().flatten()
}

/// Marks the code that runs while it lives as `site`: a guard, so that the
/// code it marks is called straight from where the mark is made.
pub(crate) struct Mark<'a>(pub(crate) &'a Site);

impl Drop for Mark<'_> {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        let _ = PANIC_SITE.try_with(|cell| {
            let mut recorded = cell.borrow_mut();
            if !panicking {
                *recorded = None;
            } else if recorded.is_none() {
                *recorded = Some(self.0.clone());
            }
        });
    }
}

/// Run `f` under `site`.
pub(crate) fn run<R>(site: &Site, f: impl FnOnce() -> R) -> R {
    let _mark = Mark(site);
    f()
}

pin_project_lite::pin_project! {
    /// A future each poll of which runs under a site.
    pub(crate) struct AtSite<F> {
        site: Site,
        #[pin]
        inner: F,
    }
}

impl<F> AtSite<F> {
    pub(crate) fn new(site: Site, inner: F) -> Self {
        AtSite { site, inner }
    }
}

impl<F: Future> Future for AtSite<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _mark = Mark(this.site);
        this.inner.poll(cx)
    }
}

/// Poll a started call under `site`, unless its result is already known.
pub(crate) fn poll_at(site: Site, started: ToolFuture) -> ToolFuture {
    if started.is_ready() {
        return started;
    }
    ToolFuture::new(AtSite::new(site, started))
}

/// The error for a panic that started at `site`: the approval failed (the
/// call is refused, fail closed), a hook failed, or the tool panicked.
pub(crate) fn error(site: Option<Site>, message: String) -> ToolError {
    match site {
        Some(Site::Approval(approver)) => ToolError::ApprovalFailed { approver: approver.to_string(), message },
        Some(Site::Hook(hook)) => {
            ToolError::HookFailed { hook: hook.to_string(), message: format!("the hook panicked: {message}") }
        }
        Some(Site::Tool) | None => ToolError::Panicked { message },
    }
}

/// The error for a panic caught at the call's panic boundary, logged: it
/// says where the panic started (see the [module docs](self)).
pub(crate) fn panicked(tool: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    panicked_at(tool, take(), payload)
}

/// The error for a panic that started at `site`, logged.
pub(crate) fn panicked_at(tool: &str, site: Option<Site>, payload: &(dyn std::any::Any + Send)) -> ToolError {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    };
    match &site {
        Some(Site::Approval(approver)) => {
            tracing::error!(tool = %tool, %approver, %message, "an approver panicked; the call was refused");
        }
        Some(Site::Hook(hook)) => tracing::error!(tool = %tool, %hook, %message, "a hook panicked"),
        Some(Site::Tool) | None => tracing::error!(tool = %tool, %message, "a tool call panicked"),
    }
    error(site, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    #[test]
    fn the_innermost_site_of_a_panic_is_recorded_and_a_clean_exit_clears_it() {
        let hook = Site::Hook(Arc::from("h"));
        let caught = catch_unwind(AssertUnwindSafe(|| run(&hook, || run(&Site::Tool, || panic!("in the tool")))));
        assert!(caught.is_err());
        assert_eq!(take(), Some(Site::Tool));
        let caught = catch_unwind(AssertUnwindSafe(|| run(&hook, || panic!("in the hook"))));
        assert!(caught.is_err());
        assert_eq!(take(), Some(hook.clone()));
        assert_eq!(take(), None, "taken once");
        // A panic caught inside a hook leaves nothing once the hook returns.
        run(&hook, || {
            let _ = catch_unwind(|| run(&Site::Tool, || panic!("caught by the hook")));
        });
        assert_eq!(take(), None);
    }
}
