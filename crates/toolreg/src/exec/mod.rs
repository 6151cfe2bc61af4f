//! Calls in, results out: [`ToolCall`] and its [`ToolArguments`], the
//! [`ToolOutput`] or [`ToolError`] a call ends in, the [`ToolResult`] that
//! carries either back under the call's id, and the [`ToolExecutor`] trait.
//!
//! What a running call can see of itself ([`CallContext`], its typed
//! [`Extensions`] and [`Progress`] reports) is in its own file: it travels
//! down the stack with the call, while everything here is the call's data.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::principal::Principal;
use crate::validate::{ArgumentError, render_errors};

mod content;
mod context;
mod output;

pub use content::{
    Annotations, Content, ContentError, EmbeddedResource, Media, ResourceContents, ResourceLink, Role, Text,
};
pub use context::{CallContext, Checkpoints, Extensions, Finish, Progress, ProgressReporter};
pub use output::{ToolOutput, value_text};

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
    /// The principal the call runs for may not call this tool (the
    /// engine's [`AccessPolicy`](crate::policy::AccessPolicy)).
    #[error("not allowed: {reason}")]
    Forbidden {
        /// The rule that refused.
        reason: String,
    },
    /// The principal is past one of its limits
    /// ([`Quota`](crate::policy::Quota)): the call did not run.
    #[error("over quota: {reason}")]
    QuotaExceeded {
        /// Which limit.
        reason: String,
        /// When a call would pass, when known.
        retry_after: Option<Duration>,
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
    /// The result's content blocks hold more bytes than the engine accepts
    /// ([`BatchOptions::max_content_bytes`](crate::BatchOptions::max_content_bytes)).
    #[error("the result's content is {size} bytes, more than the limit of {limit}")]
    ResultTooLarge {
        /// The blocks' size in bytes.
        size: usize,
        /// The limit.
        limit: usize,
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
    /// The approver has not decided yet: it asked someone outside (the host
    /// of a suspended run, an MCP client's user) and the answer comes later.
    /// The tool did not run; a caller that can wait (the agent loop, a
    /// program in code mode) stops here and runs the call again with the
    /// decision.
    #[error("the call waits for an approval and did not run: {reason}")]
    Pending {
        /// What it waits for, in the approver's words.
        reason: String,
        /// Which approver deferred it.
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
            ToolError::QuotaExceeded { reason, retry_after } => {
                let when = match retry_after {
                    Some(wait) => format!("try again in {} s", wait.as_secs().max(1)),
                    None => "try again when one of your calls has ended".to_owned(),
                };
                format!("Error: `{tool}` did not run: {reason}; {when}.")
            }
            ToolError::Forbidden { reason } => {
                format!("Error: you may not call `{tool}`, so it did not run ({reason}).")
            }
            ToolError::Pending { reason, .. } => {
                format!("The call to `{tool}` has not run yet: {reason}.")
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
                | ToolError::QuotaExceeded { .. }
        )
    }

    /// A short, stable name for the kind of failure (`"unknown_tool"`,
    /// `"invalid_arguments"`, ...), as audit records and logs write it.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::NotOffered { .. } => "not_offered",
            ToolError::Forbidden { .. } => "forbidden",
            ToolError::QuotaExceeded { .. } => "quota_exceeded",
            ToolError::MalformedArguments { .. } => "malformed_arguments",
            ToolError::InvalidArguments { .. } => "invalid_arguments",
            ToolError::ArgumentsTooLarge { .. } => "arguments_too_large",
            ToolError::ArgumentsTooDeep { .. } => "arguments_too_deep",
            ToolError::DuplicateCallId { .. } => "duplicate_call_id",
            ToolError::Failed { .. } => "failed",
            ToolError::Panicked { .. } => "panicked",
            ToolError::ResultSerialization { .. } => "result_serialization",
            ToolError::ResultTooLarge { .. } => "result_too_large",
            ToolError::Timeout { .. } => "timeout",
            ToolError::Cancelled => "cancelled",
            ToolError::Denied { .. } => "denied",
            ToolError::Pending { .. } => "pending",
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
            Ok(output) => Ok(output.text().into_owned()),
            Err(error) => Err(error.model_text(&self.name)),
        }
    }
}

/// How a caller controls one call or batch: a cancellation token and typed
/// values for every call's [`CallContext::extensions`].
///
/// ```
/// use toolreg::CallOptions;
/// use toolreg::CancellationToken;
///
/// let cancel = CancellationToken::new();
/// let options = CallOptions::new().cancel(cancel.clone()).extension(42_u32);
/// assert_eq!(options.extensions.get::<u32>(), Some(&42));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cancelling it answers the call (every unfinished call of a batch)
    /// with [`ToolError::Cancelled`] at once; tools see it through
    /// [`CallContext::cancelled`]. Without one, a tool sees a token only
    /// when a timeout applies.
    pub cancel: Option<CancellationToken>,
    /// What a host passes down to its hooks, approver and tools (an MCP
    /// server its client connection and progress reporter, an agent loop
    /// its run's state).
    pub extensions: Extensions,
    /// Who the call runs for: set by the host (never from the call's
    /// arguments); the approver, hooks and tool see it in
    /// [`CallContext::principal`], and the audit record names it.
    pub principal: Option<Arc<Principal>>,
}

impl CallOptions {
    /// No cancellation, no extensions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stop the call when `token` is cancelled.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Add a typed value to every call's extensions.
    pub fn extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Use these extensions.
    pub fn extensions(mut self, extensions: Extensions) -> Self {
        self.extensions = extensions;
        self
    }

    /// Run the call for `principal`.
    pub fn principal(mut self, principal: impl Into<Arc<Principal>>) -> Self {
        self.principal = Some(principal.into());
        self
    }
}

/// Anything that can answer a model's tool calls: object-safe, so a host can
/// hold a `&dyn ToolExecutor` or `Arc<dyn ToolExecutor>`.
///
/// [`FunctionRegistry`](crate::FunctionRegistry) (every tool, nothing
/// configured) and [`ToolEngine`](crate::engine::ToolEngine) (selection,
/// approval, hooks, audit) implement it; remote servers can too. Both run a
/// call through the same pipeline (see [`crate::engine`]).
///
/// ```
/// use std::sync::Arc;
/// use toolreg::{CallOptions, FunctionRegistry, ToolCall, ToolExecutor};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let executor: Arc<dyn ToolExecutor> = Arc::new(FunctionRegistry::new());
/// let result = executor.execute_call(ToolCall::new("c1", "missing", "{}"), CallOptions::default()).await;
/// assert!(result.is_error());
/// assert_eq!(result.id, "c1");
/// # });
/// ```
pub trait ToolExecutor: Send + Sync {
    /// Run one call under `options` (`CallOptions::default()`: no
    /// cancellation, no extensions); the result carries the call's id
    /// whatever happens.
    fn execute_call(&self, call: ToolCall, options: CallOptions) -> BoxFuture<'_, ToolResult>;
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
    fn arguments_deserialize_from_string_or_json() {
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": "{\"a\":1}"})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Raw("{\"a\":1}".into()));
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": {"a": 1}})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Json(json!({"a": 1})));
    }
}
