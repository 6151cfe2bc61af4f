//! Which tools the model may or must call: one [`ToolChoice`], rendered in
//! each provider's own spelling (`tool_choice`, `toolConfig`, `toolChoice`).
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
//! Gemini's `toolConfig.functionCallingConfig` has four modes, and
//! `allowedFunctionNames` only with `ANY` or `VALIDATED` (as its API
//! reference says). Each choice maps to one of them:
//!
//! | choice | Gemini |
//! |---|---|
//! | [`Auto`](ToolChoice::Auto) | `{"mode":"AUTO"}` |
//! | [`Required`](ToolChoice::Required) | `{"mode":"ANY"}` |
//! | [`None`](ToolChoice::None) | `{"mode":"NONE"}` |
//! | [`Validated`](ToolChoice::Validated) | `{"mode":"VALIDATED"}` |
//! | [`Tool(name)`](ToolChoice::Tool) | `{"mode":"ANY","allowedFunctionNames":[name]}` |
//! | [`Allowed { required: true, .. }`](ToolChoice::Allowed) | `{"mode":"ANY","allowedFunctionNames":[..]}` |
//! | [`Allowed { required: false, .. }`](ToolChoice::Allowed) | `{"mode":"VALIDATED","allowedFunctionNames":[..]}` |
//!
//! ```
//! use toolreg::provider::{CallMapping, Provider, ProviderError, ToolChoice};
//! use serde_json::json;
//!
//! // Text or a call, and a call sticks to its tool's schema.
//! let validated = ToolChoice::Validated;
//! let mapping = CallMapping::default();
//! assert_eq!(validated.render(Provider::Gemini, &mapping)?, json!({"functionCallingConfig": {"mode": "VALIDATED"}}));
//! // Elsewhere that is strict mode, set per tool: no choice says it.
//! assert!(matches!(validated.render(Provider::OpenAiChat, &mapping), Err(ProviderError::UnsupportedChoice { .. })));
//! # Ok::<(), ProviderError>(())
//! ```

use serde_json::{Value, json};

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
    /// The provider's value for this choice: OpenAI's and Mistral's
    /// `tool_choice`, Anthropic's `tool_choice`, Gemini's `toolConfig`,
    /// Bedrock's `toolConfig.toolChoice`. Names are spelled as `mapping`
    /// sent them. A choice the provider has no way to say is an error.
    pub fn render(&self, provider: Provider, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let unsupported = |what: &str| {
            Err(ProviderError::UnsupportedChoice { provider, reason: format!("{provider} has no {what}") })
        };
        let validated = || {
            unsupported(
                "validated mode (Gemini's VALIDATED); where it has strict mode, set that per tool \
                 (FormatOptions::strict) and choose Auto",
            )
        };
        let name = |n: &String| Value::String(mapping.provider_name(n).to_owned());
        let names = |ns: &[String]| Value::Array(ns.iter().map(name).collect());
        let mode = |required: bool| if required { "required" } else { "auto" };
        Ok(match provider {
            Provider::OpenAiChat | Provider::Ollama => match self {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(n) => json!({"type": "function", "function": {"name": name(n)}}),
                ToolChoice::Validated => return validated(),
                ToolChoice::Allowed { tools, required } => json!({
                    "type": "allowed_tools",
                    "allowed_tools": {
                        "mode": mode(*required),
                        "tools": tools.iter().map(|n| json!({"type": "function", "function": {"name": name(n)}})).collect::<Vec<_>>()
                    }
                }),
            },
            Provider::OpenAiResponses => match self {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(n) => json!({"type": "function", "name": name(n)}),
                ToolChoice::Validated => return validated(),
                ToolChoice::Allowed { tools, required } => json!({
                    "type": "allowed_tools",
                    "mode": mode(*required),
                    "tools": tools.iter().map(|n| json!({"type": "function", "name": name(n)})).collect::<Vec<_>>()
                }),
            },
            Provider::Mistral => match self {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("any"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(n) => json!({"type": "function", "function": {"name": name(n)}}),
                ToolChoice::Validated => return validated(),
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Anthropic => match self {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Tool(n) => json!({"type": "tool", "name": name(n)}),
                ToolChoice::Validated => return validated(),
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Gemini => {
                let config = match self {
                    ToolChoice::Auto => json!({"mode": "AUTO"}),
                    ToolChoice::Required => json!({"mode": "ANY"}),
                    ToolChoice::None => json!({"mode": "NONE"}),
                    ToolChoice::Validated => json!({"mode": "VALIDATED"}),
                    ToolChoice::Tool(n) => json!({"mode": "ANY", "allowedFunctionNames": [name(n)]}),
                    ToolChoice::Allowed { tools, required } => json!({
                        "mode": if *required { "ANY" } else { "VALIDATED" },
                        "allowedFunctionNames": names(tools)
                    }),
                };
                json!({"functionCallingConfig": config})
            }
            Provider::Bedrock => match self {
                ToolChoice::Auto => json!({"auto": {}}),
                ToolChoice::Required => json!({"any": {}}),
                ToolChoice::Tool(n) => json!({"tool": {"name": name(n)}}),
                ToolChoice::Validated => return validated(),
                ToolChoice::None => return unsupported("way to forbid tool calls but to leave out `toolConfig`"),
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Mcp => return unsupported("tool choice: the client decides"),
        })
    }
}
