//! LLM clients and the agent loop for toolreg.
//!
//! [`model`] is the contract: a provider-neutral conversation and the
//! [`LlmClient`](model::LlmClient) trait.

pub mod model;

pub use model::{LlmClient, LlmError, Message, ModelRequest, ModelResponse, StreamEvent, Usage};
