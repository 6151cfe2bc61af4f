//! Calls in, results out: [`ToolCall`], [`ToolOutput`], [`ToolError`],
//! [`ToolResult`] and the [`ToolExecutor`] trait.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::declaration::ToolDeclaration;
use crate::policy::Approval;
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

/// What a tool returned, as the model will see it.
///
/// The JSON value is kept as is (for structured results such as MCP's
/// `structuredContent`); the text a model reads is derived from it on demand,
/// so a result is serialised once, when it is rendered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result (or, for an error, the error text as a JSON string).
    pub value: Value,
    /// Whether this output reports a failure.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn success(value: Value) -> Self {
        ToolOutput { value, is_error: false }
    }

    /// A failed result whose text the model reads.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput { value: Value::String(text.into()), is_error: true }
    }

    /// The text a model sees: a JSON string as its contents, anything else as compact JSON.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.value {
            Value::String(s) => Cow::Borrowed(s),
            other => Cow::Owned(other.to_string()),
        }
    }

    /// The seed's string form: `Ok(text)` or `Err(text)`.
    pub fn into_result(self) -> Result<String, String> {
        let text = match self.value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        if self.is_error { Err(text) } else { Ok(text) }
    }
}

impl From<Result<String, String>> for ToolOutput {
    fn from(result: Result<String, String>) -> Self {
        match result {
            Ok(text) => ToolOutput::success(Value::String(text)),
            Err(text) => ToolOutput::error(text),
        }
    }
}

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        ToolOutput::error(error.model_text())
    }
}

/// Why a call produced no result. Every variant renders as a failed tool
/// result the model can read ([`ToolError::model_text`]); none of them
/// changes the registry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool `{name}`")]
    UnknownTool {
        /// The name that was called.
        name: String,
        /// Registered tool names, to help the model pick (at most a handful).
        available: Vec<String>,
    },
    /// The arguments are not valid JSON.
    #[error("arguments for `{tool}` are not valid JSON: {message}")]
    MalformedArguments {
        /// The tool called.
        tool: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// The arguments are JSON but do not fit the tool's input schema.
    #[error("invalid arguments for `{tool}`:\n{}", render_errors(errors))]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// Every problem found, each with its JSON path.
        errors: Vec<ArgumentError>,
    },
    /// The argument text is longer than the configured limit.
    #[error("arguments for `{tool}` are {size} bytes, more than the limit of {limit}")]
    ArgumentsTooLarge {
        /// The tool called.
        tool: String,
        /// Size of the argument text in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The arguments nest deeper than the configured limit.
    #[error("arguments for `{tool}` nest deeper than {limit} levels")]
    ArgumentsTooDeep {
        /// The tool called.
        tool: String,
        /// The depth limit.
        limit: usize,
    },
    /// The tool ran and returned its own error; the message reaches the model verbatim.
    #[error("{message}")]
    Failed {
        /// The tool called.
        tool: String,
        /// The tool's error, as its `Display` wrote it.
        message: String,
    },
    /// The tool panicked; the panic was contained.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool called.
        tool: String,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// The tool's result could not be serialised to JSON.
    #[error("the result of `{tool}` could not be serialised: {message}")]
    ResultSerialization {
        /// The tool called.
        tool: String,
        /// serde's message.
        message: String,
    },
    /// The tool exists but was not offered to this agent (it is outside the
    /// [`Selection`](crate::policy::Selection) the call went through).
    #[error("tool `{tool}` is not available here")]
    NotOffered {
        /// The tool called.
        tool: String,
        /// Tools that are offered, to help the model pick (at most a handful).
        available: Vec<String>,
    },
    /// The call did not finish in time and was stopped.
    #[error("`{tool}` did not finish within {} and was stopped", format_duration(*limit))]
    Timeout {
        /// The tool called.
        tool: String,
        /// The time limit that was reached (per call or per batch).
        limit: Duration,
    },
    /// The caller cancelled the call before it finished.
    #[error("the call to `{tool}` was cancelled")]
    Cancelled {
        /// The tool called.
        tool: String,
    },
    /// The approver refused the call; the reason reaches the model.
    #[error("the call to `{tool}` was denied: {reason}")]
    Denied {
        /// The tool called.
        tool: String,
        /// Why, in the approver's words.
        reason: String,
        /// Which approver decided.
        approver: String,
    },
    /// The call needs approval and no approver is configured (fail closed).
    #[error("`{tool}` needs approval and no approver is available, so it was not run")]
    ApprovalRequired {
        /// The tool called.
        tool: String,
    },
    /// The approval given does not cover this call: it was issued for another
    /// call or other arguments (a replayed decision), or the arguments changed
    /// after it was given.
    #[error("the approval for `{tool}` does not match this call: {detail}")]
    ApprovalMismatch {
        /// The tool called.
        tool: String,
        /// What did not match.
        detail: String,
    },
    /// The approver substituted arguments that do not fit the tool's input schema.
    #[error("the arguments the approver substituted for `{tool}` are invalid:\n{}", render_errors(errors))]
    InvalidEdit {
        /// The tool called.
        tool: String,
        /// Every problem found, each with its JSON path.
        errors: Vec<ArgumentError>,
    },
    /// A hook refused the call or failed while handling it.
    #[error("hook `{hook}` failed for `{tool}`: {message}")]
    HookFailed {
        /// The tool called.
        tool: String,
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
    /// The text the model reads for this failure: precise enough to correct
    /// a call, never exposing more than the tool's own message.
    pub fn model_text(&self) -> String {
        match self {
            ToolError::UnknownTool { name, available } if !available.is_empty() => {
                format!("Error: unknown tool `{name}`. Available tools: {}.", available.join(", "))
            }
            ToolError::Failed { message, .. } => message.clone(),
            ToolError::InvalidArguments { tool, errors } => {
                format!("Error: invalid arguments for `{tool}`. Fix these and call again:\n{}", render_errors(errors))
            }
            ToolError::NotOffered { tool, available } if !available.is_empty() => {
                format!("Error: tool `{tool}` is not available here. Available tools: {}.", available.join(", "))
            }
            ToolError::Denied { tool, reason, .. } => {
                format!("Error: the call to `{tool}` was denied and did not run. Reason: {reason}")
            }
            other => format!("Error: {other}"),
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

    /// The tool this error is about (the called name for an unknown tool).
    pub fn tool(&self) -> &str {
        match self {
            ToolError::UnknownTool { name, .. } => name,
            ToolError::MalformedArguments { tool, .. }
            | ToolError::InvalidArguments { tool, .. }
            | ToolError::ArgumentsTooLarge { tool, .. }
            | ToolError::ArgumentsTooDeep { tool, .. }
            | ToolError::Failed { tool, .. }
            | ToolError::Panicked { tool, .. }
            | ToolError::ResultSerialization { tool, .. }
            | ToolError::NotOffered { tool, .. }
            | ToolError::Timeout { tool, .. }
            | ToolError::Cancelled { tool }
            | ToolError::Denied { tool, .. }
            | ToolError::ApprovalRequired { tool }
            | ToolError::ApprovalMismatch { tool, .. }
            | ToolError::InvalidEdit { tool, .. }
            | ToolError::HookFailed { tool, .. } => tool,
        }
    }
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
        match &self.outcome {
            Ok(output) => output.is_error,
            Err(_) => true,
        }
    }

    /// The output the model sees, errors included.
    pub fn output(&self) -> ToolOutput {
        match &self.outcome {
            Ok(output) => output.clone(),
            Err(error) => ToolOutput::error(error.model_text()),
        }
    }

    /// The output the model sees, consuming the result.
    pub fn into_output(self) -> ToolOutput {
        match self.outcome {
            Ok(output) => output,
            Err(error) => error.into(),
        }
    }
}

/// What a running tool can see of its call: the call id and a cancellation
/// token.
///
/// A tool takes it by declaring a first parameter of type `CallContext`
/// under `#[tool]`.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    call_id: Option<Arc<str>>,
    /// Shared, so that the calls of a batch hold one token between them
    /// (cloning a `CancellationToken` takes a lock).
    cancellation: Option<Arc<CancellationToken>>,
    declaration: Option<Arc<ToolDeclaration>>,
    /// The approval this call runs under, set by the policy engine only.
    approval: Option<Arc<Approval>>,
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

    /// Attach the declaration of the tool being called (the policy engine
    /// does this, so hooks and tools can see what they are running).
    pub fn with_declaration(mut self, declaration: Arc<ToolDeclaration>) -> Self {
        self.declaration = Some(declaration);
        self
    }

    /// The declaration of the tool being called, when the caller attached it.
    pub fn declaration(&self) -> Option<&ToolDeclaration> {
        self.declaration.as_deref()
    }

    /// The name of the tool being called, when the caller attached its declaration.
    pub fn tool_name(&self) -> Option<&str> {
        self.declaration.as_deref().map(|d| d.name.as_str())
    }

    pub(crate) fn with_approval(mut self, approval: Option<Arc<Approval>>) -> Self {
        self.approval = approval;
        self
    }

    pub(crate) fn approval(&self) -> Option<&Approval> {
        self.approval.as_deref()
    }
}

/// Anything that can answer a model's tool calls (seed 002).
///
/// [`crate::FunctionRegistry`] implements it; policy layers and remote
/// servers can too.
pub trait ToolExecutor: Send + Sync {
    /// Run one call; the result carries the call's id whatever happens.
    fn execute_call(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send;
}

impl fmt::Display for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_text_and_seed_string_form() {
        assert_eq!(ToolOutput::success(json!("hi")).text(), "hi");
        assert_eq!(ToolOutput::success(json!({"x": 1})).text(), r#"{"x":1}"#);
        assert_eq!(ToolOutput::success(json!(3)).into_result(), Ok("3".to_owned()));
        assert_eq!(ToolOutput::error("nope").into_result(), Err("nope".to_owned()));
        for seed in [Ok("a".to_owned()), Err("b".to_owned())] {
            assert_eq!(ToolOutput::from(seed.clone()).into_result(), seed);
        }
    }

    #[test]
    fn tool_errors_reach_the_model_verbatim() {
        let e = ToolError::Failed { tool: "t".into(), message: "disk full".into() };
        assert_eq!(e.model_text(), "disk full");
        assert!(!e.retryable());
        let e = ToolError::UnknownTool { name: "x".into(), available: vec!["a".into(), "b".into()] };
        assert_eq!(e.model_text(), "Error: unknown tool `x`. Available tools: a, b.");
        assert!(e.retryable());
    }

    #[test]
    fn arguments_deserialize_from_string_or_json() {
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": "{\"a\":1}"})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Raw("{\"a\":1}".into()));
        let call: ToolCall = serde_json::from_value(json!({"id": "1", "name": "t", "arguments": {"a": 1}})).unwrap();
        assert_eq!(call.arguments, ToolArguments::Json(json!({"a": 1})));
    }
}
