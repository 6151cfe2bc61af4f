//! Step 6 of the pipeline: the audit record of a call, emitted when it
//! finishes, or, when a batch drops it unfinished, as stopped.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::Stop;
use crate::declaration::SafetyLevel;
use crate::exec::{ToolError, ToolOutput, ToolResult};
use crate::policy::{ArgumentsHash, AuditDecision, AuditEvent, AuditSink};

/// What the audit records besides the outcome.
#[derive(Default)]
pub(crate) struct Trail {
    /// When the call started; `None` when nothing records the call.
    pub(crate) started_at: Option<SystemTime>,
    pub(crate) safety: Option<SafetyLevel>,
    pub(crate) decision: AuditDecision,
    pub(crate) approver: Option<String>,
    /// The hash of the arguments as called (as shown to the approver).
    pub(crate) hash: Option<ArgumentsHash>,
    /// The hash the run is bound to (of the approver's edit, if edited).
    pub(crate) approved_hash: Option<ArgumentsHash>,
}

impl Trail {
    pub(crate) fn recording(&self) -> bool {
        self.started_at.is_some()
    }

    /// The decision for a call that needs no approval.
    pub(crate) fn decide(&mut self, safety: SafetyLevel, hash: Option<ArgumentsHash>) {
        self.decision = if safety == SafetyLevel::Safe { AuditDecision::NotRequired } else { AuditDecision::Recorded };
        self.hash = hash;
    }
}

/// A call being recorded: finished with its outcome, or, when a batch drops
/// it unfinished, recorded as stopped.
pub(crate) struct Record<'a> {
    /// Where the record goes.
    sinks: &'a [Arc<dyn AuditSink>],
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) trail: Trail,
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
        let trail = Trail { started_at: recording.then(SystemTime::now), ..Trail::default() };
        Record { sinks, id, name, trail, stopped, done: false }
    }

    /// Record the call and hand back its result. Borrowed, not consumed:
    /// the record lives in the call's future, and moving it out to finish
    /// it was a copy of the whole record on every call.
    pub(crate) fn finish(&mut self, outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        self.done = true;
        let id = std::mem::take(&mut self.id);
        let name = std::mem::take(&mut self.name);
        let Some(started_at) = self.trail.started_at else {
            return ToolResult { id, name, outcome };
        };
        let trail = std::mem::take(&mut self.trail);
        let (id, name) = audit(self.sinks, id, name, &outcome, started_at, trail);
        ToolResult { id, name, outcome }
    }
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let (Some(stop), Some(started_at)) = (self.stopped.and_then(OnceLock::get), self.trail.started_at) {
            let trail = std::mem::take(&mut self.trail);
            let (id, name) = (std::mem::take(&mut self.id), std::mem::take(&mut self.name));
            audit(self.sinks, id, name, &Err(stop.error()), started_at, trail);
        }
    }
}

/// Step 6: emit the audit event of a finished call; gives the id and name back.
fn audit(
    sinks: &[Arc<dyn AuditSink>],
    id: String,
    name: String,
    outcome: &Result<ToolOutput, ToolError>,
    started_at: SystemTime,
    trail: Trail,
) -> (String, String) {
    let (outcome_kind, result_bytes) = match outcome {
        Ok(output) if output.content.is_empty() => ("ok", text_len(&output.value)),
        // Blocks: their bytes, and the structured value's text beside them.
        Ok(output) => ("ok", output.content_size() + output.structured().map_or(0, text_len)),
        Err(error) => (error.kind(), error.model_text(&name).len()),
    };
    let duration = started_at.elapsed().unwrap_or(Duration::ZERO);
    // The event takes the call's id and name, and gives them back for the result.
    let event = AuditEvent::new(
        name,
        id,
        trail.safety,
        trail.hash,
        trail.approved_hash,
        trail.decision,
        trail.approver,
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
    for sink in sinks {
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
    (event.call_id, event.tool)
}

/// Length in bytes of the text a model reads for this value.
fn text_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        other => crate::args::json_len(other),
    }
}
