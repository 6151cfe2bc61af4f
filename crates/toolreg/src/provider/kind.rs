//! Which provider a format speaks for: the [`Provider`] enum, a plain name
//! for each format. What a provider *does* is its format's (one module
//! each); what it is called, its name rule and how its format is built are
//! in the format's [`Registration`](super::Registration), looked up by
//! the methods on [`Provider`] in this module's parent.

/// The wire formats toolreg renders.
///
/// Each variant names one format module of [`provider`](super) and is
/// registered there once; [`Provider::ALL`] lists them in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions and the servers that copy it.
    OpenAiChat,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini (`generateContent`).
    Gemini,
    /// Model Context Protocol.
    Mcp,
    /// AWS Bedrock Converse.
    Bedrock,
    /// Mistral chat completions.
    Mistral,
    /// Ollama's native `/api/chat`.
    Ollama,
}
