//! LLM clients and the agent loop for toolreg.
//!
//! - [`model`]: the contract — a provider-neutral, serialisable conversation
//!   and the [`LlmClient`] trait.
//! - [`client`]: clients over HTTP for OpenAI-compatible Chat Completions,
//!   OpenAI Responses, Anthropic Messages and Gemini, with streaming, retries
//!   and timeouts.

pub mod client;
pub mod model;

pub use model::{LlmClient, LlmError, Message, ModelRequest, ModelResponse, StreamEvent, Usage};
