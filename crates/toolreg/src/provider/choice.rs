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
        let name = |n: &String| Value::String(mapping.provider_name(n).to_owned());
        let names = |ns: &[String]| Value::Array(ns.iter().map(name).collect());
        let mode = |required: bool| if required { "required" } else { "auto" };
        Ok(match provider {
            Provider::OpenAiChat | Provider::Ollama => match self {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(n) => json!({"type": "function", "function": {"name": name(n)}}),
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
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Anthropic => match self {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Tool(n) => json!({"type": "tool", "name": name(n)}),
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Gemini => {
                let config = match self {
                    ToolChoice::Auto => json!({"mode": "AUTO"}),
                    ToolChoice::Required => json!({"mode": "ANY"}),
                    ToolChoice::None => json!({"mode": "NONE"}),
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
                ToolChoice::None => return unsupported("way to forbid tool calls but to leave out `toolConfig`"),
                ToolChoice::Allowed { .. } => return unsupported("list of allowed tools"),
            },
            Provider::Mcp => return unsupported("tool choice: the client decides"),
        })
    }
}
