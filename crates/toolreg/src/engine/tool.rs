//! The last step of every call: starting the tool. A call reaches its tool
//! here and nowhere else, from the pipeline when nothing stands between
//! them, or from [`Next::run`](super::Next::run) past the last layer.

use std::sync::Arc;

use serde_json::Value;

use super::contain::{self, Site};
use crate::args;
use crate::exec::{CallContext, ToolArguments, ToolError};
use crate::handler::ToolFuture;
use crate::registry::ToolEntry;

/// The arguments a tool starts with.
pub(crate) enum Arguments {
    /// As the call carried them, not yet validated: a typed tool
    /// deserialises straight from them (serde is its check), anything else
    /// is validated first.
    AsCalled(ToolArguments),
    /// Validated already (by the pipeline, again after a layer changed them).
    Checked(Value),
}

/// Start the tool inside its panic boundary. A synchronous tool runs on the
/// blocking pool when `offload` is set, so that a deadline can answer while
/// it blocks.
pub(crate) fn run(entry: &ToolEntry, cx: CallContext, arguments: Arguments, offload: bool) -> ToolFuture {
    if offload && entry.tool().runs_inline() {
        return offloaded(entry, cx, arguments);
    }
    contain::start(Site::Tool, entry.declaration_arc(), || start(entry, cx, arguments))
}

/// Run a synchronous tool on the blocking pool.
fn offloaded(entry: &ToolEntry, cx: CallContext, arguments: Arguments) -> ToolFuture {
    let entry = entry.clone();
    ToolFuture::new(async move {
        let decl = Arc::clone(entry.declaration_arc());
        let started = tokio::task::spawn_blocking(move || start(&entry, cx, arguments).into_ready()).await;
        match started {
            Ok(Ok(result)) => result,
            Ok(Err(future)) => contain::Contained::new(Site::Tool, decl, future).await,
            Err(error) => Err(match error.try_into_panic() {
                // Joined from the blocking pool, where only the tool ran.
                Ok(panic) => contain::panicked(&decl.name, Some(&Site::Tool), &*panic),
                Err(_) => ToolError::Cancelled,
            }),
        }
    })
}

/// Start the tool with its arguments.
fn start(entry: &ToolEntry, cx: CallContext, arguments: Arguments) -> ToolFuture {
    match arguments {
        Arguments::Checked(value) => entry.tool().call(cx, value),
        Arguments::AsCalled(arguments) => start_unchecked(entry, cx, arguments),
    }
}

/// Start the tool on arguments not yet validated: deserialised straight
/// from them when serde is the check, else validated against the schema
/// first.
fn start_unchecked(entry: &ToolEntry, cx: CallContext, arguments: ToolArguments) -> ToolFuture {
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
