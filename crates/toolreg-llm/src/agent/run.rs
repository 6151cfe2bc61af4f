//! The loop of one run: model request, tool calls through the agent's
//! engine, results back to the model, until the model answers, a tool
//! finishes the run, the run suspends, or a limit is hit.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::exec::value_text;
use toolreg::{CallOptions, Extensions, Finish, ToolCall, ToolError, ToolResult};
use tracing::Instrument;

use super::catalog;
use super::suspend::{Deferred, suspension_id};
use super::{Agent, AgentError, AgentEvent, Budget, Finished, Outcome, PendingApproval, RunState, Suspended};
use crate::model::{FinishReason, Message, ModelRequest, ModelResponse, StreamEvent, ToolResultMessage, Usage};

impl Agent {
    /// Run a task to the end.
    pub async fn run(&self, task: impl Into<String>) -> Result<Outcome, AgentError> {
        self.run_with(vec![Message::user(task)], CancellationToken::new()).await
    }

    /// Run from a conversation, cancellable: cancelling stops the model
    /// request and every running tool, sub-agents included.
    pub async fn run_with(&self, messages: Vec<Message>, cancel: CancellationToken) -> Result<Outcome, AgentError> {
        self.check_post_process()?;
        let state =
            LoopState { messages, usage: Usage::default(), steps: 0, started: Instant::now(), loaded: Vec::new() };
        self.traced(self.drive(state, cancel)).await
    }

    /// `run` (a run from its start, or resumed) in OpenTelemetry's GenAI
    /// `invoke_agent` span (the `otel.*` fields are read by
    /// `tracing-opentelemetry`): the model, then the run's usage.
    pub(super) async fn traced(
        &self,
        run: impl Future<Output = Result<Outcome, AgentError>>,
    ) -> Result<Outcome, AgentError> {
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
                Ok(Outcome::Finished(Finished { usage, .. }) | Outcome::Suspended(Suspended { usage, .. })) => {
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

    pub(super) fn emit(&self, event: &AgentEvent) {
        if let Some(on_event) = &self.inner.on_event {
            on_event(event);
        }
    }

    pub(super) fn run_state(&self, cancel: &CancellationToken, state: &LoopState) -> RunState {
        let limits = &self.inner.limits;
        RunState {
            agent: self.clone(),
            cancel: cancel.clone(),
            remaining: Budget {
                steps: limits.max_steps.saturating_sub(state.steps),
                tokens: limits.max_tokens.map(|t| t.saturating_sub(state.usage.total())),
                deadline: limits.max_time.map(|t| state.started + t),
            },
            finish: Finish::new(),
            spent_by_children: Arc::default(),
            loaded: Arc::new(Mutex::new(state.loaded.clone())),
        }
    }

    pub(super) fn finished(&self, state: LoopState, value: Value) -> Finished {
        let answer = value_text(&value).into_owned();
        Finished { answer, value, transcript: state.messages, usage: state.usage, steps: state.steps }
    }

    pub(super) async fn drive(&self, mut state: LoopState, cancel: CancellationToken) -> Result<Outcome, AgentError> {
        let inner = &self.inner;
        let limits = inner.limits;
        let mut current = self.current();
        // With the provider's own search, every tool goes in every request
        // (the deferred ones deferred); otherwise found tools are added.
        let native = !inner.deferral.is_empty() && inner.client.native_tool_search();
        let mut request = ModelRequest::new(inner.model.clone(), std::mem::take(&mut state.messages));
        catalog::offer(&mut request, &inner.deferral, current.engine.offered(), &state.loaded, native);
        request.system = inner.system.clone();
        request.max_tokens = inner.max_tokens_per_request;
        request.code_execution = inner.code_execution.clone();
        let on_stream = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => self.emit(&AgentEvent::TextDelta(text)),
            StreamEvent::Retrying { attempt, delay } => self.emit(&AgentEvent::Retrying { attempt, delay }),
            _ => {}
        };
        loop {
            // The host replaced the tools (`Agent::set_tools`): offer the new set.
            let now = self.current();
            if now.generation != current.generation {
                current = now;
                catalog::offer(&mut request, &inner.deferral, current.engine.offered(), &state.loaded, native);
            }
            let engine = &current.engine;
            let offered = engine.offered();
            state.messages = std::mem::take(&mut request.messages);
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled { transcript: state.messages });
            }
            if state.steps >= limits.max_steps {
                return Err(AgentError::StepLimit { limit: limits.max_steps, transcript: state.messages });
            }
            if let Some(limit) = limits.max_tokens
                && state.usage.total() >= limit
            {
                return Err(AgentError::TokenLimit { limit, used: state.usage.total(), transcript: state.messages });
            }
            let left = match limits.max_time {
                None => None,
                Some(limit) => match limit.checked_sub(state.started.elapsed()) {
                    Some(left) => Some(left),
                    None => return Err(AgentError::TimeLimit { limit, transcript: state.messages }),
                },
            };
            request.messages = std::mem::take(&mut state.messages);
            state.steps += 1;
            let step = state.steps;
            self.emit(&AgentEvent::ModelRequest { step, depth: inner.depth });
            // OpenTelemetry's GenAI `chat` span; usage is recorded when the
            // response arrives.
            let span = tracing::info_span!(
                "model_request",
                step,
                otel.name = format_args!("chat {}", request.model),
                otel.kind = "client",
                gen_ai.operation.name = "chat",
                gen_ai.request.model = %request.model,
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
                error.type = tracing::field::Empty,
            );
            let answer = {
                let call = inner.client.complete(&request, &on_stream).instrument(span.clone());
                let timeout = async {
                    match left {
                        Some(left) => tokio::time::sleep(left).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    answer = call => Ok(answer),
                    () = cancel.cancelled() => Err(Stop::Cancelled),
                    () = timeout => Err(Stop::Time),
                }
            };
            let response: ModelResponse = match answer {
                Ok(Ok(response)) => {
                    span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
                    response
                }
                Ok(Err(error)) => {
                    span.record("error.type", "model_error");
                    return Err(AgentError::Model { error, transcript: request.messages });
                }
                Err(Stop::Cancelled) => return Err(AgentError::Cancelled { transcript: request.messages }),
                Err(Stop::Time) => {
                    let limit = limits.max_time.unwrap_or_default();
                    return Err(AgentError::TimeLimit { limit, transcript: request.messages });
                }
            };
            // The `chat` span ends with the response, before the tools run.
            drop(span);
            let mut response = response;
            unique_generated_ids(&mut response, step);
            state.usage += response.usage;
            self.emit(&AgentEvent::ModelResponse { step, usage: response.usage, total: state.usage });
            request.messages.push(response.to_message());
            if response.tool_calls.is_empty() && response.refused.is_empty() {
                // The provider paused a turn in which it runs code
                // (Anthropic's `pause_turn`): the turn goes back as it is,
                // and the model carries it on (within the step limit).
                if response.hosted.is_some() && response.finish == FinishReason::Other("pause_turn".into()) {
                    continue;
                }
                state.messages = std::mem::take(&mut request.messages);
                let run = self.run_state(&cancel, &state);
                if let Some(value) = self.accept(&mut state, Value::String(response.text), &run).await {
                    return Ok(Outcome::Finished(self.finished(state, value)));
                }
                request.messages = std::mem::take(&mut state.messages);
                continue;
            }
            for call in &response.tool_calls {
                self.emit(&AgentEvent::ToolCall(call.clone()));
            }
            // Calls of tools the request did not declare never run: the
            // model reads why, and which tools it has.
            let mut done = Vec::with_capacity(response.sent_calls.len().max(response.tool_calls.len()));
            for result in &response.refused {
                let message = ToolResultMessage::from(&catalog::explain(&inner.deferral, offered, result.clone()));
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.push(message);
            }
            // A deferred tool not loaded yet never runs, whatever the client
            // let through (any other call the engine answers and audits).
            // (Sent deferred to a provider that searches natively counts as
            // offered only once a search found it.)
            let offered_names: HashSet<&str> = request
                .tools
                .iter()
                .map(|t| t.name.as_str())
                .filter(|n| !request.deferred_tools.contains(*n) || state.loaded.iter().any(|l| l == n))
                .collect();
            let (unoffered, calls): (Vec<ToolCall>, Vec<ToolCall>) = response
                .tool_calls
                .iter()
                .cloned()
                .partition(|c| !offered_names.contains(c.name.as_str()) && inner.deferral.holds(offered, &c.name));
            for call in unoffered {
                let available = offered_names.iter().take(8).map(|n| (*n).to_owned()).collect();
                let refused =
                    ToolResult { id: call.id, name: call.name, outcome: Err(ToolError::NotOffered { available }) };
                let message = ToolResultMessage::from(&catalog::explain(&inner.deferral, offered, refused));
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.push(message);
            }
            // Tools the host runs itself wait; the rest run now.
            let (external, local): (Vec<ToolCall>, Vec<ToolCall>) =
                calls.into_iter().partition(|c| inner.external.contains(&c.name));
            state.messages = std::mem::take(&mut request.messages);
            let run = self.run_state(&cancel, &state);
            let deferred = Arc::new(Deferred::default());
            let mut batch = extensions(&run, Some(&deferred));
            if let Some(turn) = &response.hosted {
                // Approvers and hooks can tell the calls the provider's code
                // made (`HostedTurn::caller`) from the model's own.
                batch.insert(turn.clone());
            }
            let results = engine
                .execute_batch_with(local, CallOptions::new().cancel(cancel.child_token()).extensions(batch))
                .instrument(tracing::info_span!("tool_calls", step))
                .await;
            state.usage += std::mem::take(&mut *run.spent_by_children.lock().unwrap_or_else(PoisonError::into_inner));
            // Tools a search loaded join the next request, after the others.
            let loaded = run.loaded.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if loaded != state.loaded {
                state.loaded = loaded;
                if !native {
                    request.tools = catalog::offered(&inner.deferral, offered, &state.loaded);
                }
            }
            let waiting: Vec<PendingApproval> = deferred.take_pending(&results);
            // Calls stopped part-way (a program waiting at one of its own
            // calls) answer on resume, like the calls that wait themselves.
            let checkpoints = deferred.take_checkpoints();
            for result in &results {
                if waiting.iter().any(|p| p.call_id == result.id) || checkpoints.contains_key(&result.id) {
                    continue;
                }
                let message = ToolResultMessage::from(result);
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.push(message);
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled { transcript: state.messages });
            }
            if !waiting.is_empty() || !external.is_empty() {
                for pending in &waiting {
                    self.emit(&AgentEvent::ApprovalNeeded(pending.clone()));
                }
                return Ok(Outcome::Suspended(Suspended {
                    id: suspension_id(),
                    transcript: state.messages,
                    calls: response.tool_calls,
                    done,
                    approvals: waiting,
                    external,
                    usage: state.usage,
                    steps: state.steps,
                    loaded: state.loaded,
                    checkpoints,
                }));
            }
            state.messages.push(Message::Tool { results: done });
            if let Some(value) = run.finish.get()
                && let Some(value) = self.accept(&mut state, value.clone(), &run).await
            {
                return Ok(Outcome::Finished(self.finished(state, value)));
            }
            request.messages = std::mem::take(&mut state.messages);
        }
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
    let generated: HashSet<String> = response.generated_ids.iter().cloned().collect();
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

enum Stop {
    Cancelled,
    Time,
}

pub(super) struct LoopState {
    pub(super) messages: Vec<Message>,
    pub(super) usage: Usage,
    pub(super) steps: usize,
    pub(super) started: Instant,
    /// Deferred tools loaded so far, in load order.
    pub(super) loaded: Vec<String>,
}

/// What every call of a run carries in its context: the run's state, its
/// [`Finish`] slot, and, for the calls the model made, where
/// [`SuspendForApproval`](super::SuspendForApproval) defers to (calls the
/// agent makes itself, such as a merge or a post-processing function, have
/// none: nothing outside can approve them later).
pub(super) fn extensions(run: &RunState, deferred: Option<&Arc<Deferred>>) -> Extensions {
    let mut extensions = Extensions::default();
    extensions.insert(run.finish.clone());
    extensions.insert(run.clone());
    if let Some(deferred) = deferred {
        extensions.insert_arc(Arc::clone(deferred));
        extensions.insert_arc(Arc::clone(&deferred.checkpoints));
    }
    extensions
}

/// What a call the agent makes itself carries (a merge or post-processing
/// function): the run's state, so agent functions work, but no [`Finish`]
/// slot (it cannot end the run) and nowhere to defer an approval to.
pub(super) fn nested_extensions(run: &RunState) -> Extensions {
    let mut extensions = Extensions::default();
    extensions.insert(run.clone());
    extensions
}
