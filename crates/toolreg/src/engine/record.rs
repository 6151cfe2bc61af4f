//! Step 6 of the pipeline: the audit record of a call, built as the call
//! proceeds and emitted once, when it finishes, or, when a batch drops it
//! unfinished, as stopped. What the event holds, and how it shows on the
//! call's span and in the log, is [`AuditEvent`]'s.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::Stop;
use crate::exec::{ToolError, ToolOutput, ToolResult};
use crate::policy::{AuditEvent, AuditSink};

/// A call being recorded: its [`AuditEvent`], filled in as the call
/// proceeds, and emitted once when the call finishes, or, when a batch
/// drops it unfinished, as stopped.
pub(crate) struct Record<'a> {
    /// Where the record goes.
    sinks: &'a [Arc<dyn AuditSink>],
    /// What the audit says of the call, filled in by the steps. Its
    /// `call_id` and `tool` are the call's, handed back with the result.
    pub(crate) event: AuditEvent,
    /// When the call started; `None` when nothing records the call.
    started_at: Option<SystemTime>,
    stopped: Option<&'a OnceLock<Stop>>,
    done: bool,
}

impl<'a> Record<'a> {
    /// Start recording a call; it is recorded when a sink, a `tracing`
    /// subscriber of the audit event, or the call's span listens (`traced`:
    /// the span carries the arguments' hash).
    pub(crate) fn new(
        sinks: &'a [Arc<dyn AuditSink>],
        id: String,
        name: String,
        stopped: Option<&'a OnceLock<Stop>>,
        traced: bool,
    ) -> Self {
        let recording =
            traced || !sinks.is_empty() || tracing::enabled!(target: "toolreg::audit", tracing::Level::INFO);
        let started_at = recording.then(SystemTime::now);
        Record { sinks, event: AuditEvent::start(name, id, started_at), started_at, stopped, done: false }
    }

    /// Whether anything reads the record: only then are the arguments hashed.
    pub(crate) fn recording(&self) -> bool {
        self.started_at.is_some()
    }

    /// Record the call (on its span, in the log, to every sink) and hand
    /// back its result. Borrowed, not consumed: the record lives in the
    /// call's future, and moving it out to finish it was a copy of the
    /// whole record on every call.
    pub(crate) fn finish(&mut self, span: &tracing::Span, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        self.done = true;
        if let Some(started_at) = self.started_at {
            end(&mut self.event, &outcome, started_at);
            self.event.record_on(span);
            // The log event belongs to the call's span too.
            let _in_span = span.enter();
            emit(self.sinks, &self.event);
        }
        let (id, name) = (std::mem::take(&mut self.event.call_id), std::mem::take(&mut self.event.tool));
        ToolResult { id, name, outcome }
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let (Some(stop), Some(started_at)) = (self.stopped.and_then(OnceLock::get), self.started_at) {
            end(&mut self.event, &Err(stop.error()), started_at);
            emit(self.sinks, &self.event);
        }
    }
}

/// Close the event with the call's outcome: its kind, the size of what the
/// model reads, how long the call took.
fn end(event: &mut AuditEvent, outcome: &Result<ToolOutput, ToolError>, started_at: SystemTime) {
    let (kind, result_bytes) = match outcome {
        Ok(output) if output.content.is_empty() => ("ok", text_len(&output.value)),
        // Blocks: their bytes, and the structured value's text beside them.
        Ok(output) => ("ok", output.content_size() + output.structured().map_or(0, text_len)),
        Err(error) => (error.kind(), error.model_text(&event.tool).len()),
    };
    event.end(started_at.elapsed().unwrap_or(Duration::ZERO), kind, result_bytes);
}

/// Step 6: the event to the log and to every sink.
fn emit(sinks: &[Arc<dyn AuditSink>], event: &AuditEvent) {
    event.log();
    for sink in sinks {
        // A failing sink loses its own record, not the call's result or the
        // other sinks' records.
        if std::panic::catch_unwind(AssertUnwindSafe(|| sink.record(event))).is_err() {
            tracing::error!(
                target: "toolreg::audit",
                tool = %event.tool,
                call_id = %event.call_id,
                "an audit sink panicked while recording this call"
            );
        }
    }
}

/// Length in bytes of the text a model reads for this value.
fn text_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        other => crate::args::json_len(other),
    }
}
