//! [`Conversation`]: a run's messages and the model request made of them.
//!
//! The conversation owns the one request the run sends, step after step:
//! the messages live in it from the first request to the last, a step adds
//! to them, a model request borrows them, and the run's end takes them out
//! as its transcript. Beside the messages it keeps what the request offers:
//! the tools of the agent's engine as the run last saw it, and the deferred
//! tools loaded so far (see [`catalog`](super::catalog)).

use toolreg::engine::OfferedTools;

use super::catalog;
use super::{Agent, Engines};
use crate::model::{Message, ModelRequest};

/// A run's messages, and what each model request sends beside them.
pub(super) struct Conversation {
    request: ModelRequest,
    /// Deferred tools loaded so far, in load order.
    loaded: Vec<String>,
    /// Whether the provider searches deferred tools itself: then every
    /// tool is in every request, the deferred ones marked.
    native: bool,
    /// The engine generation whose tools the request offers (`None`: none
    /// offered yet).
    generation: Option<u64>,
}

impl Conversation {
    /// `messages` with `agent`'s model, prompt and request settings; the
    /// tools are offered at the first step ([`offer`](Self::offer)).
    pub(super) fn new(agent: &Agent, messages: Vec<Message>, loaded: Vec<String>) -> Self {
        let inner = &agent.inner;
        let mut request = ModelRequest::new(inner.model.clone(), messages);
        request.system = inner.system.clone();
        request.max_tokens = inner.max_tokens_per_request;
        request.code_execution = inner.code_execution.clone();
        let native = !inner.deferral.is_empty() && inner.client.native_tool_search();
        Conversation { request, loaded, native, generation: None }
    }

    /// The next model request.
    pub(super) fn request(&self) -> &ModelRequest {
        &self.request
    }

    /// Add a message.
    pub(super) fn push(&mut self, message: Message) {
        self.request.messages.push(message);
    }

    /// The deferred tools loaded so far.
    pub(super) fn loaded(&self) -> &[String] {
        &self.loaded
    }

    /// Offer the tools of `engines`, unless the request offers them
    /// already: the host may have replaced them since the last step
    /// ([`Agent::set_tools`]).
    pub(super) fn offer(&mut self, agent: &Agent, engines: &Engines) {
        if self.generation == Some(engines.generation) {
            return;
        }
        self.generation = Some(engines.generation);
        let tools = engines.engine.offered();
        catalog::offer(&mut self.request, &agent.inner.deferral, tools, &self.loaded, self.native);
    }

    /// The deferred tools loaded now (what the step's searches left in the
    /// run's state): new ones join the next request, after the others.
    pub(super) fn load(&mut self, agent: &Agent, loaded: Vec<String>, tools: &OfferedTools) {
        if loaded == self.loaded {
            return;
        }
        self.loaded = loaded;
        if !self.native {
            self.request.tools = catalog::offered(&agent.inner.deferral, tools, &self.loaded);
        }
    }

    /// The names of the tools the model was offered, in the request's
    /// order. (Sent deferred to a provider that searches natively, a tool
    /// counts as offered only once a search found it.)
    pub(super) fn offered(&self) -> impl Iterator<Item = &str> {
        let request = &self.request;
        request
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .filter(|n| !request.deferred_tools.contains(*n) || self.loaded.iter().any(|l| l == n))
    }

    /// Whether the model was offered `tool`.
    pub(super) fn offers(&self, tool: &str) -> bool {
        self.offered().any(|n| n == tool)
    }

    /// The transcript and the deferred tools loaded, as the run ends.
    pub(super) fn into_parts(self) -> (Vec<Message>, Vec<String>) {
        (self.request.messages, self.loaded)
    }

    /// The transcript, as the run ends.
    pub(super) fn into_transcript(self) -> Vec<Message> {
        self.request.messages
    }
}
