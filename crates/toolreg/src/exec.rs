//! Calls in, results out: [`ToolCall`], [`ToolOutput`], [`ToolError`],
//! [`ToolResult`] and the [`ToolExecutor`] trait.

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::declaration::ToolDeclaration;
use crate::validate::{ArgumentError, render_errors};

/// The arguments of a tool call as they arrived.
///
/// Providers that send arguments as a JSON *string* (OpenAI, Mistral) may
/// send one that does not parse; keeping it [`Raw`](ToolArguments::Raw) lets
/// execution answer with [`ToolError::MalformedArguments`] instead of failing
/// the whole turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolArguments {
    /// JSON text not yet parsed (possibly invalid). Listed first so that a
    /// JSON string deserialises as text to parse, as OpenAI means it.
    Raw(String),
    /// Already-parsed JSON.
    Json(Value),
}

impl From<Value> for ToolArguments {
    fn from(value: Value) -> Self {
        ToolArguments::Json(value)
    }
}

impl From<String> for ToolArguments {
    fn from(text: String) -> Self {
        ToolArguments::Raw(text)
    }
}

impl From<&str> for ToolArguments {
    fn from(text: &str) -> Self {
        ToolArguments::Raw(text.to_owned())
    }
}

impl fmt::Display for ToolArguments {
    /// The JSON text of the arguments, as received.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolArguments::Raw(text) => f.write_str(text),
            ToolArguments::Json(value) => write!(f, "{value}"),
        }
    }
}

/// One tool call as a model emitted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; the result carries it back.
    pub id: String,
    /// The tool the model asked for.
    pub name: String,
    /// The arguments, parsed or not.
    pub arguments: ToolArguments,
}

impl ToolCall {
    /// A call with the given id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<ToolArguments>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }
}

/// What a tool returned on success.
///
/// The JSON value is kept as is (for structured results such as MCP's
/// `structuredContent`); the text a model reads is derived from it on demand,
/// so a result is serialised once, when it is rendered. A failure is never a
/// `ToolOutput`: it is a [`ToolError`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result.
    pub value: Value,
}

impl ToolOutput {
    /// A result with this value.
    pub fn new(value: Value) -> Self {
        ToolOutput { value }
    }

    /// The text a model sees: a JSON string as its contents, anything else as compact JSON.
    pub fn text(&self) -> Cow<'_, str> {
        value_text(&self.value)
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput { value }
    }
}

impl fmt::Display for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

fn value_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// Why a call produced no result: the one failure type, from the tool (or the
/// stage that stopped the call) up to the [`ToolResult`].
///
/// It does not repeat the tool's name: the [`ToolResult`] carries it, and
/// [`ToolError::model_text`] puts it into the text the model reads. None of
/// these failures changes the registry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool")]
    UnknownTool {
        /// Registered tool names, to help the model pick (at most a handful).
        available: Vec<String>,
    },
    /// The tool exists but was not offered to this agent (it is outside the
    /// selection the call went through).
    #[error("the tool is not available here")]
    NotOffered {
        /// Tools that are offered, to help the model pick (at most a handful).
        available: Vec<String>,
    },
    /// The arguments are not valid JSON.
    #[error("the arguments are not valid JSON: {message}")]
    MalformedArguments {
        /// The parser's message, with line and column.
        message: String,
    },
    /// The arguments are JSON but do not fit the tool's input schema.
    #[error("invalid arguments:\n{}", render_errors(errors))]
    InvalidArguments {
        /// Every problem found, each with its JSON path.
        errors: Vec<ArgumentError>,
    },
    /// The arguments are larger than the configured limit.
    #[error("the arguments are {size} bytes, more than the limit of {limit}")]
    ArgumentsTooLarge {
        /// Size of the arguments as compact JSON text, in bytes (for parsed
        /// arguments, counted up to the first byte past the limit).
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The arguments nest deeper than the configured limit.
    #[error("the arguments nest deeper than {limit} levels")]
    ArgumentsTooDeep {
        /// The depth limit.
        limit: usize,
    },
    /// Another call of the same model turn has this call's id; only the first
    /// of them runs, so that one approval can never run a tool twice.
    #[error("another call in this turn has the same id `{id}`; only the first one was run")]
    DuplicateCallId {
        /// The repeated id.
        id: String,
    },
    /// The tool ran and returned its own error; the message reaches the model verbatim.
    #[error("{message}")]
    Failed {
        /// The tool's error, as its `Display` wrote it.
        message: String,
    },
    /// The tool panicked; the panic was contained. (A panic in a hook is
    /// [`HookFailed`](Self::HookFailed), in the approver
    /// [`ApprovalFailed`](Self::ApprovalFailed).)
    #[error("the tool panicked: {message}")]
    Panicked {
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The tool's result could not be turned into JSON.
    #[error("the result could not be serialised: {message}")]
    ResultSerialization {
        /// What went wrong.
        message: String,
    },
    /// The call did not finish in time and was stopped.
    #[error("the call did not finish within {} and was stopped", format_duration(*limit))]
    Timeout {
        /// The time limit that was reached (per call or per batch).
        limit: Duration,
    },
    /// The caller cancelled the call before it finished.
    #[error("the call was cancelled")]
    Cancelled,
    /// The approver refused the call; the reason reaches the model.
    #[error("the call was denied: {reason}")]
    Denied {
        /// Why, in the approver's words.
        reason: String,
        /// Which approver decided.
        approver: String,
    },
    /// The call needs approval and no approver is configured (fail closed).
    #[error("the tool needs approval and no approver is available, so it was not run")]
    ApprovalRequired,
    /// The approver failed (it panicked) before it decided, so the call was
    /// refused and the tool never ran (fail closed).
    #[error("approver `{approver}` failed, so the call was refused and not run: {message}")]
    ApprovalFailed {
        /// Which approver failed.
        approver: String,
        /// What went wrong (the panic's message), for the host; the model
        /// reads only that the approval failed.
        message: String,
    },
    /// The approval given does not cover this call: it was issued for another
    /// call or other arguments (a replayed decision), it was already used, or
    /// the arguments changed after it was given.
    #[error("the approval does not match this call: {detail}")]
    ApprovalMismatch {
        /// What did not match.
        detail: String,
    },
    /// The approver substituted arguments that do not fit the tool's input schema.
    #[error("the arguments the approver substituted are invalid:\n{}", render_errors(errors))]
    InvalidEdit {
        /// Every problem found, each with its JSON path.
        errors: Vec<ArgumentError>,
    },
    /// A hook refused the call, or failed (panicked) while it ran.
    #[error("hook `{hook}` refused the call: {message}")]
    HookFailed {
        /// The hook's name.
        hook: String,
        /// What went wrong, for the model.
        message: String,
    },
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 { format!("{}s", d.as_secs()) } else { format!("{}ms", d.as_millis()) }
}

impl ToolError {
    /// The text the model reads for this failure of a call to `tool`: precise
    /// enough to correct a call, never exposing more than the tool's own
    /// message. This is the only place model-facing error text is written.
    pub fn model_text(&self, tool: &str) -> String {
        match self {
            ToolError::Failed { message } => message.clone(),
            ToolError::UnknownTool { available } => with_available(format!("Error: unknown tool `{tool}`."), available),
            ToolError::NotOffered { available } => {
                with_available(format!("Error: tool `{tool}` is not available here."), available)
            }
            ToolError::InvalidArguments { errors } => {
                format!("Error: invalid arguments for `{tool}`. Fix these and call again:\n{}", render_errors(errors))
            }
            ToolError::Denied { reason, .. } => {
                format!("Error: the call to `{tool}` was denied and did not run. Reason: {reason}")
            }
            ToolError::ApprovalFailed { .. } => {
                format!("Error: the call to `{tool}` was refused and did not run: its approval could not be obtained.")
            }
            other => format!("Error: `{tool}`: {other}"),
        }
    }

    /// Whether the model can reasonably try again with a corrected call.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            ToolError::UnknownTool { .. }
                | ToolError::MalformedArguments { .. }
                | ToolError::InvalidArguments { .. }
                | ToolError::ArgumentsTooLarge { .. }
                | ToolError::ArgumentsTooDeep { .. }
                | ToolError::NotOffered { .. }
                | ToolError::Timeout { .. }
        )
    }

    /// A short, stable name for the kind of failure (`"unknown_tool"`,
    /// `"invalid_arguments"`, ...), as audit records and logs write it.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::NotOffered { .. } => "not_offered",
            ToolError::MalformedArguments { .. } => "malformed_arguments",
            ToolError::InvalidArguments { .. } => "invalid_arguments",
            ToolError::ArgumentsTooLarge { .. } => "arguments_too_large",
            ToolError::ArgumentsTooDeep { .. } => "arguments_too_deep",
            ToolError::DuplicateCallId { .. } => "duplicate_call_id",
            ToolError::Failed { .. } => "failed",
            ToolError::Panicked { .. } => "panicked",
            ToolError::ResultSerialization { .. } => "result_serialization",
            ToolError::Timeout { .. } => "timeout",
            ToolError::Cancelled => "cancelled",
            ToolError::Denied { .. } => "denied",
            ToolError::ApprovalRequired => "approval_required",
            ToolError::ApprovalFailed { .. } => "approval_failed",
            ToolError::ApprovalMismatch { .. } => "approval_mismatch",
            ToolError::InvalidEdit { .. } => "invalid_edit",
            ToolError::HookFailed { .. } => "hook_failed",
        }
    }

    /// A tool's own error: the message reaches the model verbatim.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed { message: message.into() }
    }
}

fn with_available(mut text: String, available: &[String]) -> String {
    if !available.is_empty() {
        text.push_str(" Available tools: ");
        text.push_str(&available.join(", "));
        text.push('.');
    }
    text
}

/// The answer to one [`ToolCall`]: the call's id and name, and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub id: String,
    /// The tool that was called.
    pub name: String,
    /// The output, or why there is none.
    pub outcome: Result<ToolOutput, ToolError>,
}

impl ToolResult {
    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }

    /// The text the model reads: the output's text, or the error's
    /// [model text](ToolError::model_text).
    pub fn text(&self) -> Cow<'_, str> {
        match &self.outcome {
            Ok(output) => output.text(),
            Err(error) => Cow::Owned(error.model_text(&self.name)),
        }
    }

    /// The value of a successful call.
    pub fn value(&self) -> Option<&Value> {
        self.outcome.as_ref().ok().map(|output| &output.value)
    }

    /// Why the call failed, if it did.
    pub fn error(&self) -> Option<&ToolError> {
        self.outcome.as_ref().err()
    }

    /// The plain string form: `Ok(text)` or `Err(model text)`.
    pub fn into_result(self) -> Result<String, String> {
        match self.outcome {
            Ok(ToolOutput { value: Value::String(s) }) => Ok(s),
            Ok(output) => Ok(output.value.to_string()),
            Err(error) => Err(error.model_text(&self.name)),
        }
    }
}

/// Typed values that travel with a call down the stack, in the manner of
/// `http::Extensions`: a layer puts something in for the layers below it (the
/// approval stage its grant, an agent loop its run's state) without the core
/// having to know the type. Cloning shares the values.
#[derive(Clone, Default)]
pub struct Extensions {
    // A short list: a call carries a handful of values at most, so a linear
    // search beats hashing, and an empty list costs no allocation.
    values: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
}

impl Extensions {
    /// Put `value` in, replacing any value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Put a shared value in, replacing any value of the same type.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        let id = TypeId::of::<T>();
        match self.values.iter_mut().find(|(t, _)| *t == id) {
            Some(slot) => slot.1 = value,
            None => self.values.push((id, value)),
        }
    }

    /// The value of type `T`, if one was put in.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.values.iter().find(|(t, _)| *t == id).and_then(|(_, v)| v.as_ref().downcast_ref::<T>())
    }

    /// The shared value of type `T`, if one was put in.
    pub fn get_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let id = TypeId::of::<T>();
        self.values.iter().find(|(t, _)| *t == id).and_then(|(_, v)| Arc::clone(v).downcast::<T>().ok())
    }

    /// Take the value of type `T` out.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<Arc<T>> {
        let id = TypeId::of::<T>();
        let at = self.values.iter().position(|(t, _)| *t == id)?;
        self.values.swap_remove(at).1.downcast::<T>().ok()
    }

    /// Whether no value was put in.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.values.len()).finish()
    }
}

/// What a running tool (and each stage around it) can see of its call: the
/// call id, a cancellation token, the tool's declaration and typed
/// [`Extensions`].
///
/// A `#[tool]` function takes it with a `#[context] cx: CallContext`
/// parameter; hooks get
/// it in their [`HookCall`](crate::engine::HookCall).
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    call_id: Option<Arc<str>>,
    /// Shared, so that the calls of a batch hold one token between them
    /// (cloning a `CancellationToken` takes a lock).
    cancellation: Option<Arc<CancellationToken>>,
    declaration: Option<Arc<ToolDeclaration>>,
    extensions: Extensions,
}

impl CallContext {
    /// A context for the call with this id.
    pub fn new(call_id: impl Into<Arc<str>>) -> Self {
        CallContext { call_id: Some(call_id.into()), ..CallContext::default() }
    }

    /// Attach a cancellation token.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(Arc::new(token));
        self
    }

    /// Attach a token shared with other calls.
    pub(crate) fn with_shared_cancellation(mut self, token: Arc<CancellationToken>) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// The provider's id for this call, when there is one.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Whether the caller has asked the call to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.as_deref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes when the call is cancelled; never, if it cannot be.
    pub async fn cancelled(&self) {
        match &self.cancellation {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The cancellation token, if the caller supplied one.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancellation.as_deref()
    }

    /// Attach the declaration of the tool being called (the pipeline does
    /// this, so hooks and tools can see what they are running).
    pub fn with_declaration(mut self, declaration: Arc<ToolDeclaration>) -> Self {
        self.declaration = Some(declaration);
        self
    }

    /// The declaration of the tool being called, when it was attached.
    pub fn declaration(&self) -> Option<&ToolDeclaration> {
        self.declaration.as_deref()
    }

    /// The name of the tool being called, when its declaration was attached.
    pub fn tool_name(&self) -> Option<&str> {
        self.declaration.as_deref().map(|d| d.name.as_str())
    }

    /// The typed values passed down with this call.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The typed values, to add to them.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// Add a typed value (builder style).
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Tell the caller how far the call has got: `progress` of `total`
    /// (when known), with an optional message. It reaches whoever put a
    /// [`ProgressReporter`] in the call's extensions (an MCP server sends it
    /// to the client as `notifications/progress`); without one it does nothing.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(reporter) = self.extensions.get::<ProgressReporter>() {
            (reporter.report)(Progress { progress, total, message: message.map(str::to_owned) });
        }
    }
}

/// One progress report of a running call (see [`CallContext::report_progress`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the call has got; grows with every report.
    pub progress: f64,
    /// The value `progress` reaches at the end, when known.
    pub total: Option<f64>,
    /// What is happening, in words.
    pub message: Option<String>,
}

/// Where a call's [`Progress`] goes: put one in the call's
/// [`Extensions`] to receive the reports of [`CallContext::report_progress`].
#[derive(Clone)]
pub struct ProgressReporter {
    report: Arc<dyn Fn(Progress) + Send + Sync>,
}

impl ProgressReporter {
    /// A reporter that hands every report to `report`.
    pub fn new(report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressReporter { report: Arc::new(report) }
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressReporter")
    }
}

/// Anything that can answer a model's tool calls.
///
/// [`FunctionRegistry`](crate::FunctionRegistry) and
/// [`ToolEngine`](crate::engine::ToolEngine) implement it; remote servers can too.
pub trait ToolExecutor: Send + Sync {
    /// Run one call; the result carries the call's id whatever happens.
    fn execute_call(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_text_and_seed_string_form() {
        assert_eq!(ToolOutput::new(json!("hi")).text(), "hi");
        assert_eq!(ToolOutput::new(json!({"x": 1})).text(), r#"{"x":1}"#);
        let ok = ToolResult { id: "1".into(), name: "t".into(), outcome: Ok(ToolOutput::new(json!(3))) };
        assert_eq!(ok.into_result(), Ok("3".to_owned()));
        let err = ToolResult { id: "1".into(), name: "t".into(), outcome: Err(ToolError::failed("nope")) };
        assert!(err.is_error());
        assert_eq!(err.into_result(), Err("nope".to_owned()));
    }

    #[test]
    fn tool_errors_reach_the_model_verbatim() {
        let e = ToolError::failed("disk full");
        assert_eq!(e.model_text("t"), "disk full");
        assert!(!e.retryable());
        let e = ToolError::UnknownTool { available: vec!["a".into(), "b".into()] };
        assert_eq!(e.model_text("x"), "Error: unknown tool `x`. Available tools: a, b.");
        assert!(e.retryable());
        assert_eq!(ToolError::Cancelled.model_text("t"), "Error: `t`: the call was cancelled");
    }

    #[test]
    fn extensions_are_typed_slots() {
        let mut ext = Extensions::default();
        assert!(ext.get::<u32>().is_none());
        ext.insert(7u32);
        ext.insert("x");
        ext.insert(8u32);
        assert_eq!(ext.get::<u32>(), Some(&8));
        assert_eq!(ext.get::<&str>(), Some(&"x"));
        assert_eq!(ext.remove::<u32>().as_deref(), Some(&8));
        assert!(ext.get::<u32>().is_none());
    }

    #[test]
    fn arguments_deserialize_from_string_or_json() {
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": "{\"a\":1}"})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Raw("{\"a\":1}".into()));
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": {"a": 1}})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Json(json!({"a": 1})));
    }
}
