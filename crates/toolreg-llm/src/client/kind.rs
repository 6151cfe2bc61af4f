//! Which provider a client speaks, and where each reads its settings from
//! the environment, following each provider's official SDK.

use super::{AnthropicClient, ClientConfig, GeminiClient, OpenAiChatClient, OpenAiResponsesClient};
use crate::model::LlmError;

/// Which client [`from_env`] builds, and each provider's environment.
///
/// Base URLs follow each provider's official SDK, so a value that works
/// there works here:
///
/// | provider | base URL variable | default | key variable |
/// |---|---|---|---|
/// | OpenAI (Chat, Responses) | `OPENAI_BASE_URL`, with the version | `https://api.openai.com/v1` | `OPENAI_API_KEY` |
/// | Anthropic | `ANTHROPIC_BASE_URL`, the host root | `https://api.anthropic.com` | `ANTHROPIC_API_KEY` |
/// | Gemini | `GOOGLE_GEMINI_BASE_URL` (or `GEMINI_BASE_URL`), the host root | `https://generativelanguage.googleapis.com` | `GOOGLE_API_KEY`, else `GEMINI_API_KEY` |
///
/// Anthropic's client appends `/v1/messages` and Gemini's
/// `/v1beta/models/…`, unless the base URL already ends with a version
/// segment (`…/v1`, `…/v1beta`), which is then used as it is and never
/// doubled. OpenAI's base URL is used as it is, as its SDK does
/// (`{base}/chat/completions`). A key is required only for the provider's
/// own API; a compatible server at another URL may go without one.
///
/// ```
/// use toolreg_llm::client::{ClientConfig, ProviderKind};
///
/// let kind: ProviderKind = "anthropic".parse()?;
/// // A proxy configured the way the Anthropic SDK reads it: the host root.
/// let client = kind.client(ClientConfig::new("http://localhost:4000"))?;
/// assert_eq!(client.name(), "anthropic");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    OpenAiChat,
    /// OpenAI Responses (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    OpenAiResponses,
    /// Anthropic Messages (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`).
    Anthropic,
    /// Gemini (`GOOGLE_GEMINI_BASE_URL`, `GOOGLE_API_KEY` or `GEMINI_API_KEY`).
    Gemini,
}

/// A provider name [`ProviderKind`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`; use openai, openai-responses, anthropic or gemini")]
pub struct UnknownProviderKind(pub String);

impl std::str::FromStr for ProviderKind {
    type Err = UnknownProviderKind;

    /// `openai` (or `openai-chat`), `openai-responses`, `anthropic`,
    /// `gemini`; any case, `-` or `_`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Ok(match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "openai" | "openai-chat" => ProviderKind::OpenAiChat,
            "openai-responses" => ProviderKind::OpenAiResponses,
            "anthropic" => ProviderKind::Anthropic,
            "gemini" | "google" => ProviderKind::Gemini,
            _ => return Err(UnknownProviderKind(name.to_owned())),
        })
    }
}

impl ProviderKind {
    /// The provider's configuration from the environment (see the table above).
    pub fn config_from_env(self) -> ClientConfig {
        match self {
            ProviderKind::OpenAiChat | ProviderKind::OpenAiResponses => {
                ClientConfig::from_env(&["OPENAI_BASE_URL"], OPENAI_URL, &["OPENAI_API_KEY"])
            }
            ProviderKind::Anthropic => {
                ClientConfig::from_env(&["ANTHROPIC_BASE_URL"], ANTHROPIC_URL, &["ANTHROPIC_API_KEY"])
            }
            // `GEMINI_BASE_URL` is what earlier versions read; the SDK's
            // own variable wins.
            ProviderKind::Gemini => ClientConfig::from_env(
                &["GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"],
                GEMINI_URL,
                &["GOOGLE_API_KEY", "GEMINI_API_KEY"],
            ),
        }
    }

    /// The variable the key is read from (the first one, when several are).
    pub fn key_var(self) -> &'static str {
        match self {
            ProviderKind::OpenAiChat | ProviderKind::OpenAiResponses => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GOOGLE_API_KEY or GEMINI_API_KEY",
        }
    }

    /// A client of this kind with `config`. The provider's own API without
    /// a key is [`LlmError::Config`].
    pub fn client(self, config: ClientConfig) -> Result<Box<dyn crate::LlmClient>, LlmError> {
        self.check_key(&config)?;
        Ok(match self {
            ProviderKind::OpenAiChat => Box::new(OpenAiChatClient::new(config)?),
            ProviderKind::OpenAiResponses => Box::new(OpenAiResponsesClient::new(config)?),
            ProviderKind::Anthropic => Box::new(AnthropicClient::new(config)?),
            ProviderKind::Gemini => Box::new(GeminiClient::new(config)?),
        })
    }

    /// The configuration from the environment, checked for a key.
    pub(crate) fn checked_env_config(self) -> Result<ClientConfig, LlmError> {
        let config = self.config_from_env();
        self.check_key(&config)?;
        Ok(config)
    }

    /// A key is required for the provider's own API only.
    fn check_key(self, config: &ClientConfig) -> Result<(), LlmError> {
        let official = match self {
            ProviderKind::OpenAiChat | ProviderKind::OpenAiResponses => "api.openai.com",
            ProviderKind::Anthropic => "api.anthropic.com",
            ProviderKind::Gemini => "generativelanguage.googleapis.com",
        };
        let host = reqwest::Url::parse(&config.base_url)
            .map_err(|e| LlmError::Config(format!("the base URL `{}` is not a URL: {e}", config.base_url)))?
            .host_str()
            .unwrap_or_default()
            .to_owned();
        if !config.has_api_key() && host == official {
            return Err(LlmError::Config(format!("{} is not set", self.key_var())));
        }
        Ok(())
    }
}

const OPENAI_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com";
const GEMINI_URL: &str = "https://generativelanguage.googleapis.com";

/// A client for `kind`, configured from the environment
/// ([`ProviderKind::config_from_env`]). A provider's own API without a key
/// is [`LlmError::Config`]; a compatible server at another base URL may go
/// without one.
pub fn from_env(kind: ProviderKind) -> Result<Box<dyn crate::LlmClient>, LlmError> {
    kind.client(kind.config_from_env())
}
