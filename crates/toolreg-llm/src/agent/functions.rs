//! The agent functions: tools of scope `Agent` that an agent calls to use a
//! model or other agents.
//!
//! - `call_llm(prompt, context_refs?)`: one model call without tools;
//!   context passed as context-store handles.
//! - `spawn_agent(task, tools?, context_refs?)`: a sub-agent with its own
//!   selection (never user-scope tools), its limits taken from what the
//!   caller has left, at most [`Limits::max_depth`](super::Limits) deep.
//! - `spawn_many(tasks)`: sub-agents in parallel, at most three at a time,
//!   results in order, a failing one not losing the others.
//! - `return_result(value)`: ends a sub-agent's run with its value.
//!
//! They read the run they serve from their call's context (the agent loop
//! puts a [`RunState`] there), so one registration serves every agent and
//! sub-agent; outside an agent run they refuse. Cancelling a run cancels
//! every sub-agent under it.
//!
//! ```
//! use toolreg::FunctionRegistry;
//! use toolreg_llm::agent::functions::AgentTools;
//!
//! let mut registry = FunctionRegistry::new();
//! AgentTools::new().register(&mut registry).unwrap();
//! assert!(registry.contains("spawn_agent") && registry.contains("return_result"));
//! ```

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;
use toolreg::{CallContext, FunctionRegistry, RegistryError, SafetyLevel, Scope, ToolDeclaration, ToolRegistration};
use toolreg_builtins::store::{Namespace, StoreRef};

use super::{Outcome, RunState};
use crate::model::{Message, ModelRequest};

/// Sub-agents of one `spawn_many` running at once.
pub const SPAWN_MANY_CONCURRENCY: usize = 3;

/// Registers the agent functions.
#[derive(Debug, Clone, Default)]
pub struct AgentTools {
    store: Option<Namespace>,
}

/// Arguments of `call_llm`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallLlmArgs {
    /// What to ask the model.
    pub prompt: String,
    /// Handles `{key, version}` of stored values to give the model as context.
    #[serde(default)]
    pub context_refs: Vec<StoreRef>,
}

/// Arguments of `spawn_agent`, and one task of `spawn_many`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// The sub-agent's task, complete in itself: it sees nothing else of this conversation.
    pub task: String,
    /// The only tools it may use (default: all but the user's).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Handles `{key, version}` of stored values it needs.
    #[serde(default)]
    pub context_refs: Vec<StoreRef>,
}

/// Arguments of `spawn_many`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnManyArgs {
    /// The tasks; each gets its own sub-agent.
    pub tasks: Vec<SpawnArgs>,
}

/// Arguments of `return_result`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReturnArgs {
    /// The result of your task.
    pub value: Value,
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

impl AgentTools {
    /// The functions, with `context_refs` unavailable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Read `context_refs` from this context-store namespace.
    pub fn store(mut self, namespace: Namespace) -> Self {
        self.store = Some(namespace);
        self
    }

    /// The four registrations.
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        let store = self.store.clone();
        let call_llm = {
            let store = store.clone();
            ToolRegistration::from_async_with_context(
                "call_llm",
                move |cx: CallContext, args: CallLlmArgs| {
                    let store = store.clone();
                    async move { call_llm(cx, args, store).await }
                },
                declaration::<CallLlmArgs>(
                    "call_llm",
                    "Ask the model one question, without tools, for example to summarise or transform text. Pass \
                     stored values as context_refs handles instead of pasting them.",
                    SafetyLevel::Safe,
                ),
            )
        };
        let spawn_agent = {
            let store = store.clone();
            ToolRegistration::from_async_with_context(
                "spawn_agent",
                move |cx: CallContext, args: SpawnArgs| {
                    let store = store.clone();
                    async move { spawn(&cx, args, store).await }
                },
                declaration::<SpawnArgs>(
                    "spawn_agent",
                    "Hand a self-contained task to a sub-agent and get its result. It has its own tools and a share \
                     of your remaining budget, and sees nothing of this conversation but the task and context_refs.",
                    SafetyLevel::Cautious,
                ),
            )
        };
        let spawn_many = ToolRegistration::from_async_with_context(
            "spawn_many",
            move |cx: CallContext, args: SpawnManyArgs| {
                let store = store.clone();
                async move { spawn_many(cx, args, store).await }
            },
            declaration::<SpawnManyArgs>(
                "spawn_many",
                "Run several independent tasks with sub-agents in parallel; the results come back in the order of \
                 the tasks, each an answer or an error.",
                SafetyLevel::Cautious,
            ),
        );
        let return_result = ToolRegistration::from_async_with_context(
            "return_result",
            |cx: CallContext, args: ReturnArgs| async move {
                run_state(&cx)?;
                if cx.finish(args.value) {
                    Ok("result recorded".to_owned())
                } else {
                    Err("a result was already returned".to_owned())
                }
            },
            declaration::<ReturnArgs>(
                "return_result",
                "End your task with its result. Call it once, when you are done.",
                SafetyLevel::Safe,
            ),
        );
        vec![call_llm, spawn_agent, spawn_many, return_result]
    }

    /// Register the four functions, all or none.
    pub fn register(&self, registry: &mut FunctionRegistry) -> Result<(), RegistryError> {
        registry.register_all(self.registrations())
    }
}

fn declaration<A: JsonSchema + 'static>(name: &str, description: &str, safety: SafetyLevel) -> ToolDeclaration {
    ToolDeclaration::for_args::<A>(name, description)
        .with_safety(safety)
        .with_scope(Scope::Agent)
        .with_category("agent")
}

fn run_state(cx: &CallContext) -> Result<RunState, String> {
    cx.extensions().get::<RunState>().cloned().ok_or_else(|| "this function works only inside an agent run".to_owned())
}

/// The stored values behind `refs`, as context text.
async fn context(refs: &[StoreRef], store: Option<&Namespace>) -> Result<String, String> {
    if refs.is_empty() {
        return Ok(String::new());
    }
    let store = store.ok_or("no context store is configured, so context_refs cannot be read")?;
    let mut text = String::from("\n\nContext:\n");
    for handle in refs {
        let stored = store.get_ref(handle).await.map_err(|e| e.to_string())?;
        text.push_str(&format!("- {} (version {}): {}\n", handle.key, handle.version, stored.value));
    }
    Ok(text)
}

async fn call_llm(cx: CallContext, args: CallLlmArgs, store: Option<Namespace>) -> Result<String, String> {
    let run = run_state(&cx)?;
    let prompt = format!("{}{}", args.prompt, context(&args.context_refs, store.as_ref()).await?);
    let request = ModelRequest::new(run.agent.model(), vec![Message::user(prompt)]);
    let call = run.agent.client().complete(&request, &|_| {});
    tokio::select! {
        answer = call => answer.map(|r| r.text).map_err(|e| e.to_string()),
        () = run.cancel.cancelled() => Err("cancelled".to_owned()),
    }
}

async fn spawn(cx: &CallContext, args: SpawnArgs, store: Option<Namespace>) -> Result<String, String> {
    let run = run_state(cx)?;
    let task = format!("{}{}", args.task, context(&args.context_refs, store.as_ref()).await?);
    let child = run.agent.sub_agent(args.tools.as_deref(), run.remaining).map_err(|e| e.to_string())?;
    // The child's token is a child of the parent's: cancelling the parent reaches it.
    match Box::pin(child.run_with(vec![Message::user(task)], run.cancel.child_token())).await {
        Ok(Outcome::Finished(done)) => {
            run.charge(done.usage);
            Ok(done.answer)
        }
        Ok(Outcome::Suspended(_)) => {
            Err("the sub-agent needs an approval from outside, which a sub-agent cannot wait for".to_owned())
        }
        Err(error) => Err(format!("the sub-agent failed: {error}")),
    }
}

async fn spawn_many(cx: CallContext, args: SpawnManyArgs, store: Option<Namespace>) -> Result<Vec<TaskResult>, String> {
    let run = run_state(&cx)?;
    let gate = Arc::new(Semaphore::new(SPAWN_MANY_CONCURRENCY));
    // Each sub-agent shares the caller's remaining budget: split the steps.
    let mut share = run.remaining;
    share.steps = (run.remaining.steps / args.tasks.len().max(1)).max(1);
    let mut each = Vec::with_capacity(args.tasks.len());
    for task in args.tasks {
        let gate = Arc::clone(&gate);
        let mut cx = cx.clone();
        let mut state = run.clone();
        state.remaining = share;
        cx.extensions_mut().insert(state);
        let store = store.clone();
        each.push(async move {
            let Ok(_permit) = gate.acquire().await else { return TaskResult::Error("cancelled".to_owned()) };
            match spawn(&cx, task, store).await {
                Ok(answer) => TaskResult::Ok(answer),
                Err(error) => TaskResult::Error(error),
            }
        });
    }
    Ok(futures_util::future::join_all(each).await)
}
