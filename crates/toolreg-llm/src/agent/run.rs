//! The loop of one run: model request, tool calls through the agent's
//! engine, results back to the model, until the model answers, a tool
//! finishes the run, the run suspends, or a limit is hit.
//!
//! [`Agent::drive`] repeats [`Agent::step`]: [`Agent::ask_model`] sends the
//! conversation and adds the answer to it; a turn with calls goes to
//! [`Agent::call_tools`], which screens the calls, runs them in one batch
//! ([`Agent::call_batch`]) and adds the results, or suspends the run.

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::engine::OfferedTools;
use toolreg::provider::HostedTurn;
use toolreg::{ToolCall, ToolEngine, ToolError, ToolResult};
use tracing::{Instrument, Span};

use super::approval::{ApprovalRound, Held};
use super::catalog;
use super::conversation::Conversation;
use super::state::{LoopState, RunState};
use super::suspend::Waiting;
use super::{Agent, AgentError, AgentEvent, Finished, RunOutcome, Suspended};
use crate::model::{FinishReason, LlmError, Message, ModelResponse, StreamEvent, ToolResultMessage, Usage};

/// What a step leaves the run to do.
enum Step {
    /// Ask the model again.
    Next,
    /// End with this result (after post-processing).
    Finish(Value),
    /// Wait for the outside.
    Suspend(Waiting),
}

/// Why a step stopped the run: an [`AgentError`] once the transcript is
/// added.
enum Stop {
    Cancelled,
    Steps(usize),
    Tokens { limit: u64, used: u64 },
    Time(Duration),
    Model(LlmError),
}

impl Stop {
    fn into_error(self, transcript: Vec<Message>) -> AgentError {
        match self {
            Stop::Cancelled => AgentError::Cancelled { transcript },
            Stop::Steps(limit) => AgentError::StepLimit { limit, transcript },
            Stop::Tokens { limit, used } => AgentError::TokenLimit { limit, used, transcript },
            Stop::Time(limit) => AgentError::TimeLimit { limit, transcript },
            Stop::Model(error) => AgentError::Model { error, transcript },
        }
    }
}

impl Agent {
    /// Run a task to the end.
    pub async fn run(&self, task: impl Into<String>) -> Result<RunOutcome, AgentError> {
        self.run_with(vec![Message::user(task)], CancellationToken::new()).await
    }

    /// Run from a conversation, cancellable: cancelling stops the model
    /// request and every running tool, sub-agents included.
    pub async fn run_with(&self, messages: Vec<Message>, cancel: CancellationToken) -> Result<RunOutcome, AgentError> {
        self.check_post_process()?;
        let state = LoopState::new(Conversation::new(self, messages, Vec::new()), Usage::default(), 0);
        self.traced(self.drive(state, cancel)).await
    }

    /// `run` (a run from its start, or resumed) in OpenTelemetry's GenAI
    /// `invoke_agent` span (the `otel.*` fields are read by
    /// `tracing-opentelemetry`): the model, then the run's usage.
    pub(super) async fn traced(
        &self,
        run: impl Future<Output = Result<RunOutcome, AgentError>>,
    ) -> Result<RunOutcome, AgentError> {
        let span = tracing::info_span!(
            "agent_run",
            depth = self.inner.depth,
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.request.model = %self.inner.model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let outcome = run.instrument(span.clone()).await;
        if !span.is_disabled() {
            match &outcome {
                Ok(RunOutcome::Finished(Finished { usage, .. }) | RunOutcome::Suspended(Suspended { usage, .. })) => {
                    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                }
                Err(_) => {
                    span.record("error.type", "agent_error");
                }
            }
        }
        outcome
    }

    /// Step until the run ends.
    pub(super) async fn drive(
        &self,
        mut state: LoopState,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, AgentError> {
        loop {
            match self.step(&mut state, &cancel).await {
                Ok(Step::Next) => {}
                Ok(Step::Finish(value)) => return Ok(RunOutcome::Finished(state.finished(value))),
                Ok(Step::Suspend(waiting)) => return Ok(RunOutcome::Suspended(state.suspended(waiting))),
                Err(stop) => return Err(stop.into_error(state.conversation.into_transcript())),
            }
        }
    }

    /// One model request, and the calls it makes.
    async fn step(&self, state: &mut LoopState, cancel: &CancellationToken) -> Result<Step, Stop> {
        // The host may have replaced the tools (`Agent::set_tools`).
        let current = self.current();
        state.conversation.offer(self, &current);
        let left = self.time_left(state, cancel)?;
        let response = self.ask_model(state, cancel, left).await?;
        if !response.tool_calls.is_empty() || !response.refused.is_empty() {
            return self.call_tools(state, &current.engine, response, cancel).await;
        }
        // The provider paused a turn in which it runs code (Anthropic's
        // `pause_turn`): the turn goes back as it is, and the model carries
        // it on (within the step limit).
        if response.hosted.is_some() && response.finish == FinishReason::Other("pause_turn".into()) {
            return Ok(Step::Next);
        }
        let run = state.run_state(self, cancel);
        Ok(match self.accept(state, Value::String(response.text), &run).await {
            Some(value) => Step::Finish(value),
            None => Step::Next,
        })
    }

    /// What stops the run before its next request (a cancellation, a
    /// limit reached); else the time it has left, if it is limited.
    fn time_left(&self, state: &LoopState, cancel: &CancellationToken) -> Result<Option<Duration>, Stop> {
        let limits = &self.inner.limits;
        if cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if state.steps >= limits.max_steps {
            return Err(Stop::Steps(limits.max_steps));
        }
        if let Some(limit) = limits.max_tokens
            && state.usage.total() >= limit
        {
            return Err(Stop::Tokens { limit, used: state.usage.total() });
        }
        match limits.max_time {
            None => Ok(None),
            Some(limit) => limit.checked_sub(state.started.elapsed()).map(Some).ok_or(Stop::Time(limit)),
        }
    }

    /// Send the conversation to the model (within the time `left`) and add
    /// its answer to it.
    async fn ask_model(
        &self,
        state: &mut LoopState,
        cancel: &CancellationToken,
        left: Option<Duration>,
    ) -> Result<ModelResponse, Stop> {
        state.steps += 1;
        let step = state.steps;
        self.emit(&AgentEvent::ModelRequest { step, depth: self.inner.depth });
        let request = state.conversation.request();
        let span = chat_span(step, &request.model);
        let on_stream = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => self.emit(&AgentEvent::TextDelta(text)),
            StreamEvent::Retrying { attempt, delay } => self.emit(&AgentEvent::Retrying { attempt, delay }),
            _ => {}
        };
        let call = self.inner.client.complete(request, &on_stream).instrument(span.clone());
        let answer = tokio::select! {
            answer = call => answer,
            () = cancel.cancelled() => return Err(Stop::Cancelled),
            () = sleep(left) => return Err(Stop::Time(self.inner.limits.max_time.unwrap_or_default())),
        };
        let mut response = match answer {
            Ok(response) => response,
            Err(error) => {
                span.record("error.type", "model_error");
                return Err(Stop::Model(error));
            }
        };
        span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
        // The `chat` span ends with the response, before the tools run.
        drop(span);
        unique_generated_ids(&mut response, step);
        state.usage += response.usage;
        self.emit(&AgentEvent::ModelResponse { step, usage: response.usage, total: state.usage });
        state.conversation.push(response.to_message());
        Ok(response)
    }

    /// Run the calls of the model's turn through `engine` and add their
    /// results to the conversation; or suspend, when some wait for the
    /// outside.
    async fn call_tools(
        &self,
        state: &mut LoopState,
        engine: &ToolEngine,
        response: ModelResponse,
        cancel: &CancellationToken,
    ) -> Result<Step, Stop> {
        for call in &response.tool_calls {
            self.emit(&AgentEvent::ToolCall(call.clone()));
        }
        let (mut done, calls) = self.screen(&state.conversation, engine.offered(), &response);
        // Tools the host runs itself wait; the rest run now.
        let (external, local): (Vec<ToolCall>, Vec<ToolCall>) =
            calls.into_iter().partition(|c| self.inner.external.contains(&c.name));
        let run = state.run_state(self, cancel);
        let round = ApprovalRound::default();
        let (answered, held) = self
            .call_batch(engine, local, &run, round, response.hosted.as_ref())
            .instrument(tracing::info_span!("tool_calls", step = state.steps))
            .await;
        state.absorb(self, &run, engine.offered());
        done.extend(answered);
        if cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if !held.approvals.is_empty() || !external.is_empty() {
            self.announce(&held);
            return Ok(Step::Suspend(Waiting { calls: response.tool_calls, done, held, external }));
        }
        state.conversation.push(Message::Tool { results: done });
        Ok(match self.finish_if_returned(state, &run).await {
            Some(value) => Step::Finish(value),
            None => Step::Next,
        })
    }

    /// The turn's calls that may run, and the answers (each announced) for
    /// those that never will: calls of tools the request did not declare,
    /// which the client refused, and calls of deferred tools not loaded yet,
    /// whatever the client let through. Any other call the engine answers
    /// and audits.
    fn screen(
        &self,
        conversation: &Conversation,
        tools: &OfferedTools,
        response: &ModelResponse,
    ) -> (Vec<ToolResultMessage>, Vec<ToolCall>) {
        let deferral = &self.inner.deferral;
        let mut refused = response.refused.clone();
        let mut calls = Vec::with_capacity(response.tool_calls.len());
        for call in &response.tool_calls {
            if conversation.offers(&call.name) || !deferral.holds(tools, &call.name) {
                calls.push(call.clone());
                continue;
            }
            let available = conversation.offered().take(8).map(str::to_owned).collect();
            let outcome = Err(ToolError::NotOffered { available });
            refused.push(ToolResult { id: call.id.clone(), name: call.name.clone(), outcome });
        }
        let done = refused
            .into_iter()
            .map(|result| {
                // The model reads why, and which tools it has.
                let message = ToolResultMessage::from(&catalog::explain(deferral, tools, result));
                self.emit(&AgentEvent::ToolResult(message.clone()));
                message
            })
            .collect();
        (done, calls)
    }

    /// Run `calls` in one batch through `engine`, with `run`'s state and
    /// `round` in their context (and the provider's turn, when its code made
    /// some of them): the answers the model reads now, each announced, and
    /// what the round held back.
    pub(super) async fn call_batch(
        &self,
        engine: &ToolEngine,
        calls: Vec<ToolCall>,
        run: &RunState,
        round: ApprovalRound,
        hosted: Option<&HostedTurn>,
    ) -> (Vec<ToolResultMessage>, Held) {
        let round = std::sync::Arc::new(round);
        let mut extensions = run.extensions();
        round.attach(&mut extensions);
        if let Some(turn) = hosted {
            // Approvers and hooks can tell the calls the provider's code
            // made (`HostedTurn::caller`) from the model's own.
            extensions.insert(turn.clone());
        }
        let options = run.agent.call_options(run.cancel.child_token(), extensions);
        let results = engine.execute_batch(calls, options).await;
        let held = round.close(&results);
        let answered = results
            .iter()
            .filter(|result| !held.holds(&result.id))
            .map(|result| {
                let message = ToolResultMessage::from(result);
                self.emit(&AgentEvent::ToolResult(message.clone()));
                message
            })
            .collect();
        (answered, held)
    }

    /// Tell the host which calls wait for its approval.
    pub(super) fn announce(&self, held: &Held) {
        for pending in &held.approvals {
            self.emit(&AgentEvent::ApprovalNeeded(pending.clone()));
        }
    }

    /// The run's result, when a tool of the step finished the run and
    /// post-processing accepted it.
    pub(super) async fn finish_if_returned(&self, state: &mut LoopState, run: &RunState) -> Option<Value> {
        let value = run.finish.get()?.clone();
        self.accept(state, value, run).await
    }
}

/// OpenTelemetry's GenAI `chat` span for the request of `step`; usage is
/// recorded when the response arrives.
fn chat_span(step: usize, model: &str) -> Span {
    tracing::info_span!(
        "model_request",
        step,
        otel.name = format_args!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %model,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Wait for `left`, or forever.
async fn sleep(left: Option<Duration>) {
    match left {
        Some(left) => tokio::time::sleep(left).await,
        None => std::future::pending().await,
    }
}

/// Ids toolreg made up for calls that came without one are derived from
/// the call (its tool, arguments and place in the turn), so the same call in
/// a later turn would get the same id again: each is made unique to its step
/// of the run, everywhere the response names it. (Approvals, a program's
/// record and the audit trail tell calls apart by id.)
fn unique_generated_ids(response: &mut ModelResponse, step: usize) {
    if response.generated_ids.is_empty() {
        return;
    }
    let generated: std::collections::HashSet<String> = response.generated_ids.iter().cloned().collect();
    let scoped = |id: &mut String| {
        if generated.contains(id.as_str()) {
            id.push_str(&format!("_s{step}"));
        }
    };
    response.tool_calls.iter_mut().for_each(|c| scoped(&mut c.id));
    response.sent_calls.iter_mut().for_each(|c| scoped(&mut c.id));
    response.refused.iter_mut().for_each(|r| scoped(&mut r.id));
    response.generated_ids.iter_mut().for_each(scoped);
}
