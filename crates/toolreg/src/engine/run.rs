//! The run stage: a tool started on its arguments with nothing around it,
//! its panics named after it.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::site::{self, Site};
use crate::args;
use crate::exec::{CallContext, ToolError};
use crate::handler::ToolFuture;
use crate::policy::ArgumentsHash;
use crate::registry::ToolEntry;

/// A call's arguments on their way to the tool: text that passed the
/// limits, kept for a typed tool to deserialise without building a
/// [`Value`], or parsed.
pub(crate) enum Arguments<'a> {
    Text(Cow<'a, str>),
    Value(Value),
}

impl Arguments<'_> {
    /// The hash of the canonical arguments; `None` for text that is not JSON
    /// (the call fails on it anyway).
    pub(crate) fn hash(&self) -> Option<ArgumentsHash> {
        match self {
            Arguments::Value(value) => Some(ArgumentsHash::of(value)),
            Arguments::Text(text) if text.trim().is_empty() => Some(ArgumentsHash::of(&args::empty())),
            Arguments::Text(text) => ArgumentsHash::of_json(text).ok(),
        }
    }

    pub(crate) fn into_value(self) -> Result<Value, ToolError> {
        match self {
            Arguments::Value(value) => Ok(value),
            Arguments::Text(text) => args::parse(&text),
        }
    }

    fn into_owned(self) -> Arguments<'static> {
        match self {
            Arguments::Text(text) => Arguments::Text(Cow::Owned(text.into_owned())),
            Arguments::Value(value) => Arguments::Value(value),
        }
    }
}

/// Run a tool with nothing around it: typed tools deserialise straight from
/// the text or value, anything else is validated first. A synchronous tool
/// runs on the blocking pool when `offload` is set, so that a deadline can
/// answer while it blocks.
///
/// A plain function returning the tool's future rather than an `async fn`:
/// the caller's future then holds only that small future, not this
/// function's state as well (a batch holds one per call).
pub(crate) fn run_direct(entry: &ToolEntry, cx: CallContext, arguments: Arguments<'_>, offload: bool) -> ToolFuture {
    if !(offload && entry.tool().runs_inline()) {
        return start(entry, cx, arguments);
    }
    let entry = entry.clone();
    let arguments = arguments.into_owned();
    ToolFuture::new(async move {
        let decl = Arc::clone(entry.declaration_arc());
        let started = tokio::task::spawn_blocking(move || start(&entry, cx, arguments).into_ready()).await;
        match started {
            Ok(Ok(result)) => result,
            Ok(Err(future)) => future.await,
            Err(error) => Err(match error.try_into_panic() {
                // Joined from the blocking pool, where only the tool ran.
                Ok(panic) => panicked_at(&decl.name, Some(Site::Tool), &*panic),
                Err(_) => ToolError::Cancelled,
            }),
        }
    })
}

/// Start the tool: deserialised straight from its arguments when serde is
/// the check, else validated against the schema first.
fn start(entry: &ToolEntry, cx: CallContext, arguments: Arguments<'_>) -> ToolFuture {
    let tool = entry.tool();
    let (cx, value) = match arguments {
        // Only an object goes straight to serde: serde would also take an array for a struct.
        Arguments::Text(text) if text.trim_start().starts_with('{') => match tool.call_text(cx, &text) {
            Ok(future) => return future,
            Err(cx) => (cx, args::parse(&text)),
        },
        Arguments::Text(text) => (cx, args::parse(&text)),
        Arguments::Value(value) if entry.is_serde_checked() && value.is_object() => match tool.call_value(cx, &value) {
            Ok(future) => return future,
            Err(cx) => (cx, Ok(value)),
        },
        Arguments::Value(value) => (cx, Ok(value)),
    };
    let mut value = match value {
        Ok(value) => value,
        Err(error) => return ToolFuture::ready(Err(error)),
    };
    match entry.check_arguments(&mut value) {
        Ok(()) => tool.call(cx, value),
        Err(error) => ToolFuture::ready(Err(error)),
    }
}

/// The error for a panic caught at the call's panic boundary, logged: it
/// says where the panic started (see [`site`](super::site)).
pub(crate) fn panicked(tool: &str, payload: &(dyn std::any::Any + Send)) -> ToolError {
    panicked_at(tool, site::take(), payload)
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
    site::error(site, message)
}
