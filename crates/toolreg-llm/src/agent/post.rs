//! Post-processing: registered functions that validate or transform a
//! run's result before it is returned (see
//! [`AgentBuilder::post_process`](super::AgentBuilder::post_process)).

use serde_json::{Value, json};
use toolreg::{ToolCall, ToolError, ToolExecutor};

use super::state::{LoopState, RunState};
use super::{Agent, AgentError, AgentEvent};
use crate::model::Message;

/// The one argument a post-processing function is called with:
/// `{"result": value}`, the run's result so far (the model's text as a JSON
/// string, or the value a finishing tool gave).
pub const POST_PROCESS_ARGUMENT: &str = "result";

/// A post-processing function refused the run's result. The model reads it
/// (as it reads a tool's error) and may correct the result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("Your result was not accepted. {}\nCorrect the result and finish again.", error.model_text(function))]
#[non_exhaustive]
pub struct PostProcessError {
    /// The function that refused it.
    pub function: String,
    /// Why: its error, or the engine's refusal (approval, hooks).
    pub error: ToolError,
}

impl Agent {
    /// Refuse to start when a post-processing function is not offered:
    /// the model could not fix that, only the host can.
    pub(super) fn check_post_process(&self) -> Result<(), AgentError> {
        let current = self.current();
        let offered = current.engine.offered();
        match self.inner.post_process.iter().find(|f| !offered.contains(f)) {
            Some(function) => Err(AgentError::PostProcessNotOffered { function: function.clone() }),
            None => Ok(()),
        }
    }

    /// The result after the post-processing functions, in order, each
    /// given the previous one's output; `None` when one refused it, which
    /// the model is then told in a message of its own, and the run goes on.
    pub(super) async fn accept(&self, state: &mut LoopState, value: Value, run: &RunState) -> Option<Value> {
        match self.post_process(value, run, state.steps).await {
            Ok(value) => Some(value),
            Err(refused) => {
                self.emit(&AgentEvent::ResultRefused(refused.clone()));
                state.conversation.push(Message::user(refused.to_string()));
                None
            }
        }
    }

    async fn post_process(&self, mut value: Value, run: &RunState, step: usize) -> Result<Value, PostProcessError> {
        let engine = self.engine();
        for (i, function) in self.inner.post_process.iter().enumerate() {
            let call =
                ToolCall::new(format!("post-{step}-{i}"), function.clone(), json!({ POST_PROCESS_ARGUMENT: value }));
            let options = run.agent.call_options(run.cancel.child_token(), run.nested_extensions());
            let result = engine.execute_call(call, options).await;
            match result.outcome {
                Ok(output) => value = output.value,
                Err(error) => return Err(PostProcessError { function: function.clone(), error }),
            }
        }
        Ok(value)
    }
}
