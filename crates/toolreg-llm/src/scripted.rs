//! A model that answers from a script: for deterministic tests of agent
//! loops, in this crate and in yours.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use toolreg::{BoxFuture, ToolArguments, ToolCall};

use crate::model::{FinishReason, LlmClient, LlmError, ModelRequest, ModelResponse, OnEvent, StreamEvent, Usage};

type Responder = dyn Fn(&ModelRequest) -> Result<ModelResponse, LlmError> + Send + Sync;

/// An [`LlmClient`] that answers each request with the next scripted
/// response (or from a closure over the request), and records what it was
/// asked. Cloning shares the script and the record.
///
/// ```
/// use toolreg_llm::scripted::ScriptedClient;
/// use toolreg_llm::{LlmClient, Message, ModelRequest};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedClient::new()
///     .then_call("c1", "add", serde_json::json!({"a": 1, "b": 2}))
///     .then_text("3");
/// let request = ModelRequest::new("scripted", vec![Message::user("1 + 2?")]);
/// let first = model.complete(&request, &|_| {}).await.unwrap();
/// assert_eq!(first.tool_calls[0].name, "add");
/// assert_eq!(model.complete(&request, &|_| {}).await.unwrap().text, "3");
/// assert_eq!(model.requests().len(), 2);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct ScriptedClient {
    script: Arc<Mutex<VecDeque<Result<ModelResponse, LlmError>>>>,
    responder: Option<Arc<Responder>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
    /// Keep the requests (on by default; off for benchmarks).
    record: bool,
    /// Answer [`LlmClient::native_tool_search`] with this.
    native_search: bool,
}

impl std::fmt::Debug for ScriptedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedClient")
            .field("left", &self.script.lock().unwrap_or_else(PoisonError::into_inner).len())
            .finish_non_exhaustive()
    }
}

impl ScriptedClient {
    /// An empty script: every request is answered with an error.
    pub fn new() -> Self {
        ScriptedClient { record: true, ..Self::default() }
    }

    /// A model that answers every request with `responder(request)`.
    pub fn from_fn(
        responder: impl Fn(&ModelRequest) -> Result<ModelResponse, LlmError> + Send + Sync + 'static,
    ) -> Self {
        ScriptedClient { responder: Some(Arc::new(responder)), ..Self::new() }
    }

    /// Stop recording requests (for benchmarks, where copies would be measured).
    pub fn unrecorded(mut self) -> Self {
        self.record = false;
        self
    }

    /// Claim a provider's native tool search
    /// ([`LlmClient::native_tool_search`]), as the Anthropic client does: an
    /// agent then sends every tool, the deferred ones in
    /// [`ModelRequest::deferred_tools`].
    pub fn native_search(mut self, yes: bool) -> Self {
        self.native_search = yes;
        self
    }

    /// Queue a response.
    pub fn then(self, response: Result<ModelResponse, LlmError>) -> Self {
        self.script.lock().unwrap_or_else(PoisonError::into_inner).push_back(response);
        self
    }

    /// Queue a text answer (no tool calls).
    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(Ok(text_response(text)))
    }

    /// Queue one tool call.
    pub fn then_call(self, id: &str, name: &str, arguments: impl Into<ToolArguments>) -> Self {
        self.then_calls(vec![ToolCall::new(id, name, arguments)])
    }

    /// Queue several tool calls in one answer.
    pub fn then_calls(self, calls: Vec<ToolCall>) -> Self {
        self.then(Ok(calls_response(calls)))
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A text answer with a token count.
pub fn text_response(text: impl Into<String>) -> ModelResponse {
    ModelResponse { text: text.into(), usage: Usage { input_tokens: 10, output_tokens: 5 }, ..ModelResponse::default() }
}

/// An answer that calls tools.
pub fn calls_response(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        tool_calls: calls,
        usage: Usage { input_tokens: 10, output_tokens: 5 },
        finish: FinishReason::ToolCalls,
        ..ModelResponse::default()
    }
}

impl LlmClient for ScriptedClient {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_event: OnEvent<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, LlmError>> {
        Box::pin(async move {
            if self.record {
                self.requests.lock().unwrap_or_else(PoisonError::into_inner).push(request.clone());
            }
            let answer = match &self.responder {
                Some(responder) => responder(request),
                None => self
                    .script
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front()
                    .unwrap_or_else(|| Err(LlmError::Protocol("the script has no more answers".into()))),
            };
            if let Ok(response) = &answer {
                if !response.text.is_empty() {
                    on_event(StreamEvent::TextDelta(response.text.clone()));
                }
                for call in &response.tool_calls {
                    on_event(StreamEvent::ToolCall(call.clone()));
                }
            }
            tokio::task::yield_now().await;
            answer
        })
    }

    fn name(&self) -> &str {
        "scripted"
    }

    fn native_tool_search(&self) -> bool {
        self.native_search
    }
}
