//! The agent functions: tools of scope `Agent` that an agent calls to use a
//! model or other agents.
//!
//! - `call_llm(prompt, context_refs?)`: one model call without tools;
//!   context passed as context-store handles.
//! - `spawn_agent(task, tools?, context_refs?)`: a sub-agent on the
//!   caller's engine, offered what the caller is offered but the user-scope
//!   tools (only `tools` when given), its limits taken from what the caller
//!   has left, at most `max_depth` deep ([`AgentLimits`](super::AgentLimits)).
//! - `spawn_many(tasks, merge?)`: sub-agents in parallel, at most three at a
//!   time, their results merged as the caller asks (see [`Merge`]): all of
//!   them in task order (the default; a failing one not losing the others),
//!   the first success, or a registered function of the caller's choosing
//!   that receives every result and returns the merged value.
//! - `search_tools(query, limit?)`: finds deferred tools (see
//!   [`Deferral`](super::Deferral)) and loads them for the rest of the run.
//! - `return_result(value)`: ends the run with its value, through the call
//!   context's [`Finish`](toolreg::Finish) slot (the first finish wins).
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

mod spawn;

pub use spawn::{MERGE_FUNCTION_ARGUMENT, Merge, MergeError, SPAWN_MANY_CONCURRENCY, SpawnManyArgs, TaskResult};

use std::sync::PoisonError;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::{Value, json};
use toolreg::provider::with_tool_references;
use toolreg::{CallContext, FunctionRegistry, RegistryError, ToolArgs, ToolOutput, ToolRegistration, tools};
use toolreg_store::{Namespace, StoreRef};

use super::RunState;
use crate::model::{Message, ModelRequest};

/// Registers the agent functions.
#[derive(Debug, Clone, Default)]
pub struct AgentTools {
    store: Option<Namespace>,
}

/// Arguments of `call_llm`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct CallLlmArgs {
    /// What to ask the model.
    pub prompt: String,
    /// Handles `{key, version}` of stored values to give the model as context.
    #[serde(default)]
    pub context_refs: Vec<StoreRef>,
}

/// Arguments of `spawn_agent`, and one task of `spawn_many`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
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

/// Arguments of `search_tools`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct SearchToolsArgs {
    /// What the tool should do, in a few words, or its name.
    pub query: String,
    /// At most this many tools (default 5, at most 20).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `return_result`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct ReturnArgs {
    /// The result of your task.
    pub value: Value,
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

    /// The five registrations: the `#[tool]` methods below, sharing one
    /// clone of `self`.
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.tool_registrations()
    }

    /// Register the five functions, all or none.
    pub fn register(&self, registry: &mut FunctionRegistry) -> Result<(), RegistryError> {
        toolreg::register_tools!(registry, self.registrations())
    }
}

#[tools]
impl AgentTools {
    /// Ask the model one question, without tools, for example to summarise or
    /// transform text. Pass stored values as context_refs handles instead of
    /// pasting them.
    #[tool(safety = "safe", category = "agent", scope = "agent")]
    async fn call_llm(&self, #[context] cx: &CallContext, #[args] args: CallLlmArgs) -> Result<String, String> {
        let run = run_state(cx)?;
        let prompt = format!("{}{}", args.prompt, context(&args.context_refs, self.store.as_ref()).await?);
        let request = ModelRequest::new(run.agent.model(), vec![Message::user(prompt)]);
        let call = run.agent.client().complete(&request, &|_| {});
        tokio::select! {
            answer = call => answer.map(|r| r.text).map_err(|e| e.to_string()),
            () = run.cancel.cancelled() => Err("cancelled".to_owned()),
        }
    }

    /// Hand a self-contained task to a sub-agent and get its result. It has
    /// its own tools and a share of your remaining budget, and sees nothing of
    /// this conversation but the task and context_refs.
    #[tool(safety = "cautious", category = "agent", scope = "agent")]
    async fn spawn_agent(&self, #[context] cx: &CallContext, #[args] args: SpawnArgs) -> Result<String, String> {
        spawn::spawn(cx, args, self.store.clone()).await
    }

    /// Run several independent tasks with sub-agents in parallel. By default
    /// (merge "all") the results come back in the order of the tasks, each an
    /// answer or an error; merge "first_success" returns the first answer and
    /// stops the rest; merge {"function": "name"} hands every result to that
    /// function of yours and returns what it returns.
    #[tool(safety = "cautious", category = "agent", scope = "agent")]
    async fn spawn_many(&self, #[context] cx: CallContext, #[args] args: SpawnManyArgs) -> Result<Value, String> {
        spawn::spawn_many(cx, args, self.store.clone()).await
    }

    /// Find tools you do not have yet by describing what you need (or
    /// naming them); the tools found are added to yours for the rest of the
    /// task, so call them directly next.
    #[tool(safety = "safe", category = "agent", scope = "agent")]
    async fn search_tools(
        &self,
        #[context] cx: &CallContext,
        #[args] args: SearchToolsArgs,
    ) -> Result<ToolOutput, String> {
        let run = run_state(cx)?;
        let engine = run.agent.engine();
        let tools = engine.offered();
        let limit = args.limit.unwrap_or(5).clamp(1, 20);
        let mut loaded = run.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let hits = run.agent.deferral().search(tools, &loaded, &args.query, limit);
        let found: Vec<Value> = hits
            .iter()
            .filter_map(|hit| tools.get(&hit.name))
            .map(|entry| json!({"name": entry.declaration().name, "description": entry.declaration().description}))
            .collect();
        let names: Vec<String> = hits.into_iter().map(|hit| hit.name).collect();
        loaded.extend(names.iter().cloned());
        let note = if found.is_empty() {
            "No tool you do not have yet matches; try other words."
        } else {
            "These tools are now available to you: call them directly."
        };
        // A provider with native search is sent references to the tools
        // found instead of this value (see `Deferral`).
        Ok(with_tool_references(ToolOutput::new(json!({"found": found, "note": note})), names))
    }

    /// End your task with its result. Call it once, when you are done.
    #[tool(safety = "safe", category = "agent", scope = "agent")]
    async fn return_result(&self, #[context] cx: &CallContext, #[args] args: ReturnArgs) -> Result<String, String> {
        run_state(cx)?;
        if cx.finish(args.value) {
            Ok("result recorded".to_owned())
        } else {
            Err("a result was already returned".to_owned())
        }
    }
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

#[cfg(test)]
mod tests {
    use toolreg::{SafetyLevel, Scope, ToolDeclaration};

    use super::*;

    /// The declarations the model sees are the ones the functions had before
    /// they were `#[tool]` methods: names in order, classification, and the
    /// argument types' own schemas.
    #[test]
    fn declarations_keep_their_names_classification_and_schemas() {
        let expected: [(&str, SafetyLevel, ToolDeclaration); 5] = [
            ("call_llm", SafetyLevel::Safe, ToolDeclaration::for_args::<CallLlmArgs>("call_llm", "")),
            ("spawn_agent", SafetyLevel::Cautious, ToolDeclaration::for_args::<SpawnArgs>("spawn_agent", "")),
            ("spawn_many", SafetyLevel::Cautious, ToolDeclaration::for_args::<SpawnManyArgs>("spawn_many", "")),
            ("search_tools", SafetyLevel::Safe, ToolDeclaration::for_args::<SearchToolsArgs>("search_tools", "")),
            ("return_result", SafetyLevel::Safe, ToolDeclaration::for_args::<ReturnArgs>("return_result", "")),
        ];
        let mut registry = FunctionRegistry::new();
        AgentTools::new().register(&mut registry).unwrap();
        let declared = registry.get_declarations();
        assert_eq!(AgentTools::TOOL_NAMES, expected.each_ref().map(|(name, ..)| *name));
        for (decl, (name, safety, plain)) in declared.iter().zip(expected) {
            assert_eq!(decl.name, name);
            assert_eq!((decl.safety, decl.scope.clone()), (safety, Scope::Agent), "{name}");
            assert_eq!(decl.categories, ["agent"], "{name}");
            assert_eq!(decl.exclusive_key, None, "{name}");
            assert_eq!(decl.input_schema, plain.input_schema, "{name}");
            assert!(!decl.description.is_empty() && !decl.description.contains('\n'), "{name}");
        }
        assert!(declared[2].description.contains(r#"merge {"function": "name"}"#));
    }
}
