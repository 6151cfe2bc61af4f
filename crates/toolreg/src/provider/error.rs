//! The one error type of the wire formats, [`ProviderError`]: a tool a
//! provider cannot take, a choice it cannot say, a response that is not
//! its own.

use super::{LoweringError, Provider};

/// Why tools could not be rendered for a provider, or a response not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider cannot take this tool name (and renaming was not asked for).
    #[error("{provider} cannot take the tool name `{tool}`: {reason} (names must match {rule})")]
    InvalidName {
        /// The provider.
        provider: Provider,
        /// The tool's name.
        tool: String,
        /// The provider's rule, as a pattern.
        rule: &'static str,
        /// Which part of the rule the name breaks.
        reason: String,
    },
    /// Two tools would reach the provider under the same name.
    #[error("{provider}: tools `{first}` and `{second}` would both be sent as `{spelled}`")]
    NameCollision {
        /// The provider.
        provider: Provider,
        /// The first tool.
        first: String,
        /// The second tool.
        second: String,
        /// The name both would have.
        spelled: String,
    },
    /// The tool's schema cannot be lowered to what the provider accepts.
    #[error("{provider} cannot take the input schema of `{tool}`: {reason}")]
    UnsupportedSchema {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// What the provider cannot take.
        reason: LoweringError,
    },
    /// More tools (or strict tools) than the provider accepts in one request.
    #[error("{provider} accepts at most {limit} {what} per request, got {count}")]
    TooMany {
        /// The provider.
        provider: Provider,
        /// What was counted (`"tools"`, `"strict tools"`).
        what: &'static str,
        /// How many there were.
        count: usize,
        /// The provider's limit.
        limit: usize,
    },
    /// One of the tool's example arguments
    /// ([`input_examples`](crate::ToolDeclaration::input_examples)) does not
    /// fit its input schema. Checked when a declaration that was never
    /// registered is rendered (registering checks it once, up front).
    #[error("{provider}: example {index} of `{tool}` does not fit its input schema: {reason}")]
    InvalidExample {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// The example's position, from 0.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The provider has no way to say this [`ToolChoice`](super::ToolChoice).
    #[error("{reason}")]
    UnsupportedChoice {
        /// The provider.
        provider: Provider,
        /// What it cannot say.
        reason: String,
    },
    /// Two calls of one response carry the same id, so their results could
    /// not be told apart. The response is refused whole.
    #[error("{provider}: two tool calls in one response share the id `{id}`")]
    DuplicateCallId {
        /// The provider.
        provider: Provider,
        /// The id given twice.
        id: String,
    },
    /// The model called a tool the request did not declare (one left out
    /// as [`ToolStatus::Refused`](super::ToolStatus::Refused), or a name it made up). The response is
    /// refused whole: the tool was never offered, so it never runs.
    #[error("{provider}: the model called `{tool}`, which the request did not declare")]
    UndeclaredTool {
        /// The provider.
        provider: Provider,
        /// The name as the model wrote it.
        tool: String,
    },
    /// The JSON is not a response (or message) of this provider.
    #[error("not a {provider} response: {reason}")]
    InvalidResponse {
        /// The provider.
        provider: Provider,
        /// What was expected and not found.
        reason: String,
    },
}
