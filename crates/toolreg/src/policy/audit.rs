//! The audit trail: an [`AuditEvent`] for every call, sent to an
//! [`AuditSink`] and recorded as a `tracing` event.

use std::borrow::Cow;
use std::fmt;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::declaration::SafetyLevel;
use crate::policy::ArgumentsHash;

/// What the approval gate decided for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditDecision {
    /// The call stopped before the gate (unknown tool, not offered, bad arguments).
    #[default]
    NotReached,
    /// A safe tool: no approval needed.
    NotRequired,
    /// A cautious tool: ran without approval and was recorded.
    Recorded,
    /// An approver approved the call as it was.
    Approved,
    /// An approver approved the call with edited arguments.
    ApprovedEdited,
    /// An approver denied the call.
    Denied,
    /// The approver asked for a decision that comes later (a client's next
    /// round, a suspended run's host): the call did not run this time.
    Pending,
    /// The call needed approval and there was no approver (fail closed).
    NoApprover,
    /// The approver returned an approval for another call.
    Mismatch,
    /// The approver failed (panicked) before it decided: the call was
    /// refused (fail closed).
    ApprovalFailed,
}

impl AuditDecision {
    /// The snake-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditDecision::NotReached => "not_reached",
            AuditDecision::NotRequired => "not_required",
            AuditDecision::Recorded => "recorded",
            AuditDecision::Approved => "approved",
            AuditDecision::ApprovedEdited => "approved_edited",
            AuditDecision::Denied => "denied",
            AuditDecision::Pending => "pending",
            AuditDecision::NoApprover => "no_approver",
            AuditDecision::Mismatch => "mismatch",
            AuditDecision::ApprovalFailed => "approval_failed",
        }
    }
}

impl fmt::Display for AuditDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call, as the audit trail records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditEvent {
    /// The tool called (as the model named it).
    pub tool: String,
    /// The provider's call id.
    pub call_id: String,
    /// The tool's safety level, when the tool exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<SafetyLevel>,
    /// Hash of the canonical arguments as the model sent them; absent when
    /// they did not parse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<ArgumentsHash>,
    /// For an approved call, the hash of the validated arguments the approval
    /// was bound to: exactly what the tool was allowed to run with (defaults
    /// filled in, or the approver's edit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_hash: Option<ArgumentsHash>,
    /// What the approval gate decided.
    pub decision: AuditDecision,
    /// The approver that decided, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// When the call started, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// How long the call took, from lookup to result, in microseconds.
    pub duration_us: u64,
    /// `"ok"`, or the
    /// [`ToolError`](crate::ToolError) kind (see [`ToolError::kind`](crate::ToolError::kind)).
    pub outcome: Cow<'static, str>,
    /// Size of the result the model reads, in bytes: its text, or its
    /// content blocks' bytes plus the structured value's text.
    pub result_bytes: usize,
}

impl AuditEvent {
    /// The event for a call that has just finished.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        tool: String,
        call_id: String,
        safety: Option<SafetyLevel>,
        arguments_hash: Option<ArgumentsHash>,
        approved_hash: Option<ArgumentsHash>,
        decision: AuditDecision,
        approver: Option<String>,
        started_at: SystemTime,
        duration: Duration,
        outcome: &'static str,
        result_bytes: usize,
    ) -> Self {
        AuditEvent {
            tool,
            call_id,
            safety,
            arguments_hash,
            approved_hash,
            decision,
            approver,
            started_at_ms: started_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
            duration_us: duration.as_micros().min(u64::MAX as u128) as u64,
            outcome: Cow::Borrowed(outcome),
            result_bytes,
        }
    }
}

/// Where audit events go, independent of any `tracing` subscriber.
///
/// `record` is called once per call, on the task that ran it, after the
/// result is known: keep it quick (buffer, or hand off to a channel). A sink
/// that panics loses that record (an error is logged through `tracing`); the
/// call's result and the other sinks are not affected.
pub trait AuditSink: Send + Sync + 'static {
    /// Record one event.
    fn record(&self, event: &AuditEvent);
}

impl<S: AuditSink + ?Sized> AuditSink for std::sync::Arc<S> {
    fn record(&self, event: &AuditEvent) {
        (**self).record(event);
    }
}

/// Writes each event as one line of JSON to any [`Write`] (a file, standard
/// error, a buffer).
///
/// ```
/// use toolreg::policy::JsonLinesSink;
/// let sink = JsonLinesSink::new(std::io::stderr());
/// # let _ = sink;
/// ```
pub struct JsonLinesSink<W> {
    out: Mutex<W>,
}

impl<W> fmt::Debug for JsonLinesSink<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesSink").finish_non_exhaustive()
    }
}

impl<W: Write + Send + 'static> JsonLinesSink<W> {
    /// Write events to `out`.
    pub fn new(out: W) -> Self {
        JsonLinesSink { out: Mutex::new(out) }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<W: Write + Send + 'static> AuditSink for JsonLinesSink<W> {
    fn record(&self, event: &AuditEvent) {
        // Room for a typical event (about 300 bytes) at once: growing from
        // `to_vec`'s 128 bytes cost two reallocations per call.
        let mut line = Vec::with_capacity(512);
        if serde_json::to_writer(&mut line, event).is_err() {
            return;
        }
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(error) = out.write_all(&line).and_then(|()| out.flush()) {
            tracing::warn!(%error, "audit sink could not write an event");
        }
    }
}

/// Keeps events in memory (tests, or a UI showing recent calls).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<AuditEvent>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events recorded so far, oldest first.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Remove and return the events recorded so far.
    pub fn take(&self) -> Vec<AuditEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

impl AuditSink for MemorySink {
    fn record(&self, event: &AuditEvent) {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(event.clone());
    }
}
