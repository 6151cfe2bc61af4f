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
use crate::principal::Principal;

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
    /// Who the call ran for, when its host said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<Principal>,
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

/// How an event is made and where it goes besides the sinks: every field
/// of [`AuditEvent`] is named once more here, on the call's span and in its
/// log event, and nowhere else.
impl AuditEvent {
    /// The event of a call starting at `started_at`, to be filled in as the
    /// call proceeds.
    pub(crate) fn start(tool: String, call_id: String, started_at: Option<SystemTime>) -> Self {
        AuditEvent {
            tool,
            call_id,
            safety: None,
            arguments_hash: None,
            approved_hash: None,
            decision: AuditDecision::NotReached,
            approver: None,
            principal: None,
            started_at_ms: started_at
                .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64),
            duration_us: 0,
            outcome: Cow::Borrowed(""),
            result_bytes: 0,
        }
    }

    /// A call that runs without an approval: recorded, unless its tool is
    /// safe.
    pub(crate) fn runs_unapproved(&mut self, arguments_hash: Option<ArgumentsHash>) {
        self.decision = match self.safety {
            Some(SafetyLevel::Safe) => AuditDecision::NotRequired,
            _ => AuditDecision::Recorded,
        };
        self.arguments_hash = arguments_hash;
    }

    /// Close the event of a call that has ended.
    pub(crate) fn end(&mut self, duration: Duration, outcome: &'static str, result_bytes: usize) {
        self.duration_us = duration.as_micros().min(u64::MAX as u128) as u64;
        self.outcome = Cow::Borrowed(outcome);
        self.result_bytes = result_bytes;
    }

    /// The span a call runs in, named and shaped as OpenTelemetry's GenAI
    /// `execute_tool` span (the `otel.*` fields are read by
    /// `tracing-opentelemetry`), with toolreg's own `toolreg.*` fields: what
    /// the event says, so an exporter needs the span alone. Fields known
    /// only at the end are `Empty` until [`record_on`](Self::record_on);
    /// nothing is formatted unless a subscriber takes the span. The
    /// arguments' hash, never their content, goes on the span. Its target
    /// is the engine's: the MCP client finds the enclosing call by it.
    pub(crate) fn span(tool: &str, call_id: &str) -> tracing::Span {
        tracing::info_span!(
            target: "toolreg::engine",
            "tool_call",
            otel.name = format_args!("execute_tool {tool}"),
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.type = "function",
            gen_ai.tool.name = %tool,
            gen_ai.tool.call.id = %call_id,
            toolreg.tool.safety = tracing::field::Empty,
            toolreg.arguments.hash = tracing::field::Empty,
            toolreg.approval.decision = tracing::field::Empty,
            toolreg.approval.approver = tracing::field::Empty,
            toolreg.approval.arguments.hash = tracing::field::Empty,
            toolreg.principal = tracing::field::Empty,
            toolreg.outcome = tracing::field::Empty,
            error.type = tracing::field::Empty,
        )
    }

    /// The fields of [`span`](Self::span) known only at the end.
    pub(crate) fn record_on(&self, span: &tracing::Span) {
        if span.is_disabled() {
            return;
        }
        if let Some(safety) = self.safety {
            span.record("toolreg.tool.safety", safety.as_str());
        }
        if let Some(hash) = &self.arguments_hash {
            span.record("toolreg.arguments.hash", tracing::field::display(hash));
        }
        span.record("toolreg.approval.decision", self.decision.as_str());
        if let Some(approver) = &self.approver {
            span.record("toolreg.approval.approver", approver.as_str());
        }
        if let Some(hash) = &self.approved_hash {
            span.record("toolreg.approval.arguments.hash", tracing::field::display(hash));
        }
        if let Some(principal) = &self.principal {
            span.record("toolreg.principal", tracing::field::display(principal));
        }
        span.record("toolreg.outcome", &*self.outcome);
        if self.outcome != "ok" {
            span.record("error.type", &*self.outcome);
            span.record("otel.status_code", "error");
        }
    }

    /// The event as a `tracing` event (target `toolreg::audit`), for a log
    /// subscriber; absent values are empty.
    pub(crate) fn log(&self) {
        let hash = |hash: Option<ArgumentsHash>| hash.map(|h| h.to_string()).unwrap_or_default();
        tracing::info!(
            target: "toolreg::audit",
            tool = %self.tool,
            call_id = %self.call_id,
            safety = self.safety.map_or("", SafetyLevel::as_str),
            decision = %self.decision,
            approver = self.approver.as_deref().unwrap_or(""),
            principal = %self.principal.as_ref().map(ToString::to_string).unwrap_or_default(),
            arguments_hash = %hash(self.arguments_hash),
            approved_hash = %hash(self.approved_hash),
            duration_us = self.duration_us,
            outcome = %self.outcome,
            result_bytes = self.result_bytes,
            "tool call"
        );
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
