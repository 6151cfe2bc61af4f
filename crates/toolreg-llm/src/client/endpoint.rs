//! Where each client reads its settings from the environment, following its
//! provider's official SDK: an [`Endpoint`], registered by each client in
//! its own file and listed once in this module's parent.

use super::ClientConfig;
use crate::model::{LlmClient, LlmError};
use toolreg::provider::Provider;

/// How one provider's client is reached: which [`Provider`] it speaks, the
/// variables its base URL and key are read from, and its default model.
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
/// use toolreg_llm::client::{ClientConfig, Endpoint};
///
/// let endpoint = Endpoint::parse("anthropic")?;
/// // A proxy configured the way the Anthropic SDK reads it: the host root.
/// let client = endpoint.client(ClientConfig::new("http://localhost:4000"))?;
/// assert_eq!(client.name(), "anthropic");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Endpoint {
    /// The provider (and wire format) the client speaks.
    pub provider: Provider,
    /// Other names [`Endpoint::parse`] takes for it (`openai`, `google`).
    pub(crate) aliases: &'static [&'static str],
    /// The variables the base URL is read from, the first set one winning.
    pub base_url_vars: &'static [&'static str],
    /// The base URL when none is set: the provider's own API.
    pub default_url: &'static str,
    /// The variables the key is read from, the first set one winning.
    pub key_vars: &'static [&'static str],
    /// The model `toolreg run` asks for when none is named.
    pub default_model: &'static str,
    pub(crate) build: fn(ClientConfig) -> Result<Box<dyn LlmClient>, LlmError>,
}

/// A provider name no client of this crate answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`; use {known}", known = super::endpoint_names())]
pub struct UnknownEndpoint(pub String);

impl Endpoint {
    /// The client of `provider`, when this crate has one.
    pub fn of(provider: Provider) -> Option<&'static Endpoint> {
        super::ENDPOINTS.into_iter().find(|e| e.provider == provider)
    }

    /// The client named `name`: the provider's short name
    /// ([`Provider::as_str`], with `-` or `_`) or an alias (`openai` for
    /// Chat Completions, `google` for Gemini); any case.
    pub fn parse(name: &str) -> Result<&'static Endpoint, UnknownEndpoint> {
        let key = name.trim().to_ascii_lowercase().replace('-', "_");
        super::ENDPOINTS
            .into_iter()
            .find(|e| e.provider.as_str() == key || e.aliases.contains(&key.as_str()))
            .ok_or_else(|| UnknownEndpoint(name.to_owned()))
    }

    /// The configuration from the environment (see the table above).
    pub fn config_from_env(&self) -> ClientConfig {
        ClientConfig::from_env(self.base_url_vars, self.default_url, self.key_vars)
    }

    /// The variables the key is read from, as a person reads them.
    pub fn key_var(&self) -> String {
        self.key_vars.join(" or ")
    }

    /// A client with `config`. The provider's own API without a key is
    /// [`LlmError::Config`].
    pub fn client(&self, config: ClientConfig) -> Result<Box<dyn LlmClient>, LlmError> {
        self.check_key(&config)?;
        (self.build)(config)
    }

    /// The configuration from the environment, checked for a key.
    pub(crate) fn checked_env_config(&self) -> Result<ClientConfig, LlmError> {
        let config = self.config_from_env();
        self.check_key(&config)?;
        Ok(config)
    }

    /// A key is required for the provider's own API only.
    fn check_key(&self, config: &ClientConfig) -> Result<(), LlmError> {
        let host_of = |url: &str| {
            reqwest::Url::parse(url)
                .map_err(|e| LlmError::Config(format!("the base URL `{url}` is not a URL: {e}")))
                .map(|u| u.host_str().unwrap_or_default().to_owned())
        };
        let official = host_of(self.default_url)?;
        if !config.has_api_key() && host_of(&config.base_url)? == official {
            return Err(LlmError::Config(format!("{} is not set", self.key_var())));
        }
        Ok(())
    }
}

/// A client for `provider`, configured from the environment
/// ([`Endpoint::config_from_env`]). A provider's own API without a key is
/// [`LlmError::Config`]; a compatible server at another base URL may go
/// without one; a provider this crate has no client for is
/// [`LlmError::Config`] too.
pub fn from_env(provider: Provider) -> Result<Box<dyn LlmClient>, LlmError> {
    let endpoint = Endpoint::of(provider).ok_or_else(|| LlmError::Config(format!("no client speaks {provider}")))?;
    endpoint.client(endpoint.config_from_env())
}
