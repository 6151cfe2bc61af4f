//! Which tools the model may or must call: one [`ToolChoice`], rendered in
//! each provider's own spelling (`tool_choice`, `toolConfig`, `toolChoice`)
//! by that provider's format ([`WireFormat::tool_choice`](super::WireFormat::tool_choice)).
//!
//! ```
//! use toolreg::provider::{CallMapping, ToolChoice, Provider};
//! use serde_json::json;
//!
//! let only = ToolChoice::Tool("get_weather".into());
//! let mapping = CallMapping::default();
//! assert_eq!(
//!     only.render(Provider::OpenAiChat, &mapping)?,
//!     json!({"type": "function", "function": {"name": "get_weather"}})
//! );
//! assert_eq!(only.render(Provider::Anthropic, &mapping)?, json!({"type": "tool", "name": "get_weather"}));
//! assert_eq!(
//!     only.render(Provider::Gemini, &mapping)?,
//!     json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
//! );
//! # Ok::<(), toolreg::provider::ProviderError>(())
//! ```
//!
//! A choice a provider has no way to say is
//! [`ProviderError::UnsupportedChoice`]: Gemini's `VALIDATED` mode elsewhere,
//! for one.
//!
//! ```
//! use toolreg::provider::{CallMapping, Provider, ProviderError, ToolChoice};
//!
//! let validated = ToolChoice::Validated;
//! // Elsewhere that is strict mode, set per tool: no choice says it.
//! assert!(matches!(validated.render(Provider::OpenAiChat, &CallMapping::default()), Err(ProviderError::UnsupportedChoice { .. })));
//! ```

use serde_json::Value;

use super::{CallMapping, Provider, ProviderError};

/// Which tools the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (every provider's default).
    #[default]
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model decides, as with [`Auto`](ToolChoice::Auto), and a call it
    /// makes is held to the tool's schema by constrained decoding: Gemini's
    /// `VALIDATED` mode. The other providers constrain calls per tool
    /// (strict mode, [`FormatOptions::strict`](super::FormatOptions::strict)),
    /// not by a choice: for them this is
    /// [`ProviderError::UnsupportedChoice`].
    Validated,
    /// The model must call this tool (its real name).
    Tool(String),
    /// The model may call only these tools; `required` says whether it must
    /// call one of them.
    Allowed {
        /// Real names of the tools allowed.
        tools: Vec<String>,
        /// Whether a call is required.
        required: bool,
    },
}

impl ToolChoice {
    /// The provider's value for this choice: what its format's
    /// [`tool_choice`](super::WireFormat::tool_choice) writes.
    pub fn render(&self, provider: Provider, mapping: &CallMapping) -> Result<Value, ProviderError> {
        provider.wire_format().tool_choice(self, mapping)
    }
}

/// A tool's name in a choice, spelled as `mapping` sent it.
pub(crate) fn spelled(mapping: &CallMapping, name: &str) -> Value {
    Value::String(mapping.provider_name(name).to_owned())
}

/// `provider` has no way to say `what`.
pub(crate) fn unsupported(provider: Provider, what: &str) -> ProviderError {
    ProviderError::UnsupportedChoice { provider, reason: format!("{provider} has no {what}") }
}

/// [`ToolChoice::Validated`] for a provider without Gemini's `VALIDATED`.
pub(crate) fn unsupported_validated(provider: Provider) -> ProviderError {
    unsupported(
        provider,
        "validated mode (Gemini's VALIDATED); where it has strict mode, set that per tool \
         (FormatOptions::strict) and choose Auto",
    )
}
