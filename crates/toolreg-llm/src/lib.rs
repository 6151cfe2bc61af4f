//! LLM clients and the agent loop for toolreg.
//!
//! - [`model`]: the contract — a provider-neutral, serialisable conversation
//!   and the [`LlmClient`] trait.
//! - [`client`]: clients over HTTP for OpenAI-compatible Chat Completions,
//!   OpenAI Responses, Anthropic Messages and Gemini, with streaming, retries
//!   and timeouts.
//! - [`agent`]: the agent loop over a [`ToolEngine`](toolreg::ToolEngine),
//!   sub-agents and the agent functions, and one serialisable suspension.
//! - [`scripted`]: a model that answers from a script, for tests.

pub mod agent;
pub mod client;
pub mod model;
pub mod scripted;

pub use agent::{Agent, AgentError, AgentEvent, RunOutcome, Suspended};
pub use model::{LlmClient, LlmError, Message, ModelRequest, ModelResponse, OfferedTool, StreamEvent, Usage};
