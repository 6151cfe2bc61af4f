//! `spawn_agent` and `spawn_many`: sub-agents, and how `spawn_many` merges
//! their results.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use toolreg::{CallContext, ToolArgs, ToolCall, ToolExecutor};
use toolreg_store::Namespace;

use super::{AgentTools, SpawnArgs, context, run_state};
use crate::agent::{RunOutcome, RunState};
use crate::model::Message;

/// Sub-agents of one `spawn_many` running at once.
pub const SPAWN_MANY_CONCURRENCY: usize = 3;

/// The one argument a merge function is called with: `{"results": [..]}`,
/// every sub-agent's [`TaskResult`] in task order.
pub const MERGE_FUNCTION_ARGUMENT: &str = "results";

/// Arguments of `spawn_many`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct SpawnManyArgs {
    /// The tasks; each gets its own sub-agent.
    pub tasks: Vec<SpawnArgs>,
    /// How to combine the results: "all" (default: every result in task
    /// order), "first_success" (the first answer; the others are stopped),
    /// or {"function": "name"} (that function gets {"results": [...]} and
    /// its answer is the result).
    #[serde(default)]
    pub merge: Merge,
}

/// How `spawn_many` combines its sub-agents' results.
///
/// In JSON, as a model writes it: `"all"`, `"first_success"`, or
/// `{"function": "name"}` — one plain word for the built-in strategies,
/// an object only when a name must be given.
///
/// - [`All`](Self::All) (the default): every result, in task order, each
///   `{"ok": answer}` or `{"error": why}` ([`TaskResult`]); a failing
///   sub-agent loses nothing else.
/// - [`FirstSuccess`](Self::FirstSuccess): `{"task": index, "answer": ..}`
///   of the first sub-agent to succeed; the others are stopped. When all
///   fail, [`MergeError::NoSuccess`] with each one's error.
/// - [`Function`](Self::Function): a registered function, called through
///   the agent's engine like any call (selection, approval and audit
///   apply), with [`MERGE_FUNCTION_ARGUMENT`] `{"results": [TaskResult, ..]}`;
///   what it returns is the result. A function the agent is not offered is
///   [`MergeError::NotOffered`] before any sub-agent starts; its failure is
///   [`MergeError::Failed`] with the results it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Merge {
    /// Every result, in task order.
    #[default]
    All,
    /// The first answer; the other sub-agents are stopped.
    FirstSuccess,
    /// A function you are offered, given {"results": [...]}.
    Function(String),
}

/// One `spawn_many` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskResult {
    /// The sub-agent's answer.
    Ok(String),
    /// Why it failed.
    Error(String),
}

/// Why `spawn_many` could not merge its results; the model reads it as the
/// call's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// The named merge function is not offered to this agent (unknown, or
    /// outside its selection): no sub-agent was started.
    #[error("the merge function `{function}` is not available here; functions you have: {}", available.join(", "))]
    NotOffered {
        /// The name given.
        function: String,
        /// What the agent is offered (at most a handful).
        available: Vec<String>,
    },
    /// The merge function failed (or was refused: approval, hooks).
    #[error("the merge function `{function}` failed: {message}\nThe sub-agents' results were: {results}")]
    Failed {
        /// The function.
        function: String,
        /// Its error, as the model would read it.
        message: String,
        /// The results it was given, as JSON, so that nothing is lost.
        results: String,
    },
    /// With `first_success`: every sub-agent failed.
    #[error("no sub-agent succeeded: {}", failures(errors))]
    NoSuccess {
        /// Each one's error, in task order.
        errors: Vec<String>,
    },
}

/// Each task's error, for the model; or why there are none.
fn failures(errors: &[String]) -> String {
    if errors.is_empty() {
        return "no tasks were given".to_owned();
    }
    errors.iter().enumerate().map(|(i, e)| format!("task {i}: {e}")).collect::<Vec<_>>().join("; ")
}

/// Run one sub-agent on `args` within the caller's remaining budget.
pub(super) async fn spawn(cx: &CallContext, args: SpawnArgs, store: Option<Namespace>) -> Result<String, String> {
    let run = run_state(cx)?;
    let task = format!("{}{}", args.task, context(&args.context_refs, store.as_ref()).await?);
    let child = run.agent.sub_agent(args.tools.as_deref(), run.remaining).map_err(|e| e.to_string())?;
    // The child's token is a child of the parent's: cancelling the parent reaches it.
    match Box::pin(child.run_with(vec![Message::user(task)], run.cancel.child_token())).await {
        Ok(RunOutcome::Finished(done)) => {
            run.charge(done.usage);
            Ok(done.answer)
        }
        Ok(RunOutcome::Suspended(_)) => {
            Err("the sub-agent needs an approval from outside, which a sub-agent cannot wait for".to_owned())
        }
        Err(error) => Err(format!("the sub-agent failed: {error}")),
    }
}

pub(super) async fn spawn_many(
    cx: CallContext,
    args: SpawnManyArgs,
    store: Option<Namespace>,
) -> Result<Value, String> {
    let run = run_state(&cx)?;
    match args.merge {
        Merge::All => {
            let results = all(&cx, &run, args.tasks, store).await;
            Ok(serde_json::to_value(results).map_err(|e| e.to_string())?)
        }
        Merge::FirstSuccess => first_success(&cx, &run, args.tasks, store).await.map_err(|e| e.to_string()),
        Merge::Function(function) => {
            let engine = run.agent.engine();
            let offered = engine.offered();
            if !offered.contains(&function) {
                let available = offered.list().take(8).map(|tool| tool.name().to_owned()).collect();
                return Err(MergeError::NotOffered { function, available }.to_string());
            }
            let results = all(&cx, &run, args.tasks, store).await;
            merge_with(&cx, &run, function, results).await.map_err(|e| e.to_string())
        }
    }
}

/// The calls' contexts for `n` sub-agents: each with an equal share of the
/// caller's steps, cancelled with `cancel`.
fn task_context(cx: &CallContext, run: &RunState, n: usize, cancel: &CancellationToken) -> CallContext {
    let mut state = run.clone();
    state.remaining.steps = (run.remaining.steps / n.max(1)).max(1);
    state.cancel = cancel.clone();
    let mut cx = cx.clone();
    cx.extensions_mut().insert(state);
    cx
}

/// Every sub-agent, at most [`SPAWN_MANY_CONCURRENCY`] at a time; results in task order.
async fn all(cx: &CallContext, run: &RunState, tasks: Vec<SpawnArgs>, store: Option<Namespace>) -> Vec<TaskResult> {
    let gate = Arc::new(Semaphore::new(SPAWN_MANY_CONCURRENCY));
    let n = tasks.len();
    let each = tasks.into_iter().map(|task| {
        let (gate, store) = (Arc::clone(&gate), store.clone());
        let cx = task_context(cx, run, n, &run.cancel);
        async move {
            let Ok(_permit) = gate.acquire().await else { return TaskResult::Error("cancelled".to_owned()) };
            match spawn(&cx, task, store).await {
                Ok(answer) => TaskResult::Ok(answer),
                Err(error) => TaskResult::Error(error),
            }
        }
    });
    futures_util::future::join_all(each).await
}

/// The first sub-agent to succeed; the rest are stopped (cancelled, and
/// their runs dropped).
async fn first_success(
    cx: &CallContext,
    run: &RunState,
    tasks: Vec<SpawnArgs>,
    store: Option<Namespace>,
) -> Result<Value, MergeError> {
    let gate = Arc::new(Semaphore::new(SPAWN_MANY_CONCURRENCY));
    let stop = run.cancel.child_token();
    let n = tasks.len();
    let mut running: FuturesUnordered<_> = tasks
        .into_iter()
        .enumerate()
        .map(|(i, task)| {
            let (gate, store) = (Arc::clone(&gate), store.clone());
            let cx = task_context(cx, run, n, &stop);
            async move {
                let Ok(_permit) = gate.acquire().await else { return (i, Err("cancelled".to_owned())) };
                (i, spawn(&cx, task, store).await)
            }
        })
        .collect();
    let mut errors = vec![String::new(); n];
    while let Some((i, result)) = running.next().await {
        match result {
            Ok(answer) => {
                stop.cancel();
                return Ok(json!({"task": i, "answer": answer}));
            }
            Err(error) => errors[i] = error,
        }
    }
    Err(MergeError::NoSuccess { errors })
}

/// Hand every result to `function`, through the agent's engine.
async fn merge_with(
    cx: &CallContext,
    run: &RunState,
    function: String,
    results: Vec<TaskResult>,
) -> Result<Value, MergeError> {
    let results = serde_json::to_value(results).unwrap_or_default();
    let id = format!("{}-merge", cx.call_id().unwrap_or(AgentTools::SPAWN_MANY_TOOL_NAME));
    let call = ToolCall::new(id, function.clone(), json!({ MERGE_FUNCTION_ARGUMENT: results }));
    let options = run.agent.call_options(run.cancel.child_token(), run.nested_extensions());
    let merged = run.agent.engine().execute_call(call, options).await;
    match merged.outcome {
        Ok(output) => Ok(output.value),
        Err(error) => {
            Err(MergeError::Failed { message: error.model_text(&function), function, results: results.to_string() })
        }
    }
}
