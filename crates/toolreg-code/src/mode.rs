//! [`CodeMode`]: the `run_code` tool, and running a program directly.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};
use toolreg::{
    CallContext, Checkpoints, ErasedTool, RegistryError, SafetyLevel, ToolDeclaration, ToolEngine, ToolEntry,
    ToolError, ToolFuture, ToolRegistration,
};

use crate::SealingKey;
use crate::host::{Ended, ProgramOutput, Session, Worker};
use crate::journal::Journal;
use crate::{CodeError, Limits, stubs};

/// The name of the code tool.
pub const RUN_CODE: &str = "run_code";

/// How many tools are written out in full in `run_code`'s description; past
/// it the rest are listed by name (the model finds their parameters with
/// `search_tools`), up to [`NAMED`]; past that, only counted.
const FULL_STUBS: usize = 40;
const NAMED: usize = 200;

/// Code mode: a model's program calls the tools inside a sandbox.
///
/// The program is JavaScript, run by QuickJS in a worker process (see the
/// [crate docs](crate)); every call it makes goes through the
/// [`ToolEngine`] it was given — selection, validation, approval, hooks,
/// audit, timeouts — under the id `<run_code call id>/<n>`, and only its
/// return value and printed output come back.
///
/// ```no_run
/// # async fn demo(engine: toolreg::ToolEngine) -> Result<(), Box<dyn std::error::Error>> {
/// use toolreg_code::{CodeMode, Worker};
///
/// let code = CodeMode::new(Worker::new("toolreg-code-worker"));
/// // Run a program yourself …
/// let out = code.run(&engine, "const n = await tools.add({a: 1, b: 2}); return n * 10;").await?;
/// assert_eq!(out.value, 30);
/// // … or offer `run_code` to a model beside the engine's tools.
/// let with_code = code.attach(&engine)?;
/// # let _ = with_code; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CodeMode {
    worker: Worker,
    limits: Limits,
    key: SealingKey,
}

impl CodeMode {
    /// Code mode running programs in `worker`, with the default
    /// [`Limits`] and a random [`SealingKey`].
    pub fn new(worker: Worker) -> Self {
        CodeMode { worker, limits: Limits::default(), key: SealingKey::random() }
    }

    /// With these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// With this key for sealing the state of a suspended program: a run
    /// suspended in one process resumes in another only under the same key.
    pub fn key(mut self, key: SealingKey) -> Self {
        self.key = key;
        self
    }

    /// The limits in force.
    pub fn limits_in_force(&self) -> Limits {
        self.limits
    }

    /// What a program stopped at a call waiting for an approval had
    /// printed before it stopped, for the person asked to approve that
    /// call: read from the state it saved (`state`, the
    /// [`Checkpoints`](toolreg::Checkpoints) entry of the `run_code` call
    /// `run_id` running `program`, as a stored suspension keeps it), after
    /// checking its seal under this mode's key.
    ///
    /// The state is refused ([`CodeError::StateRejected`]) if it was
    /// changed, sealed with another key, or made for another call or
    /// program: what an approver is shown comes from the same record the
    /// resumed run trusts.
    pub fn printed_at_stop(&self, run_id: &str, program: &str, state: &Value) -> Result<String, CodeError> {
        Journal::open(state.clone(), &self.key, run_id, program).map(|journal| journal.printed)
    }

    /// Run `program` with `engine`'s tools. A call that waits for an
    /// approval from outside fails inside the program (it cannot stop
    /// here: use the `run_code` tool in an agent for that).
    pub async fn run(&self, engine: &ToolEngine, program: &str) -> Result<ProgramOutput, CodeError> {
        let session = Session {
            engine: engine.clone(),
            offered: Arc::new(offered(engine)),
            limits: self.limits,
            run_id: "program".to_owned(),
            extensions: toolreg::Extensions::default(),
            principal: None,
            cancel: toolreg::CancellationToken::new(),
            replay: Journal::default(),
            can_wait: false,
        };
        match session.run(&self.worker, program).await {
            Ended::Finished(output) => Ok(output),
            Ended::Failed { error, .. } => Err(error),
            // A session that cannot wait answers a pending call inside the
            // program; should one stop anyway, say so rather than hang.
            Ended::Waiting { reason, .. } => Err(CodeError::Sandbox { message: format!("a call waits: {reason}") }),
        }
    }

    /// The `run_code` tool: programs calling `engine`'s tools. Register it
    /// where a model can call it (or use [`attach`](Self::attach)).
    pub fn tool(&self, engine: &ToolEngine) -> ToolRegistration {
        let offered = offered(engine);
        let declaration = declaration(engine, &offered);
        let tool = CodeTool { mode: self.clone(), engine: engine.clone(), offered: Arc::new(offered) };
        ToolRegistration::new(declaration, tool)
    }

    /// `engine` with `run_code` added, configured as it is (approver,
    /// hooks, audit, limits): the program's calls go through `engine`
    /// itself. The engine's selection must admit `run_code` (a `Cautious`
    /// tool): with an allow-list, allow it; with a safety limit, `Cautious`
    /// or above.
    pub fn attach(&self, engine: &ToolEngine) -> Result<ToolEngine, RegistryError> {
        Ok(engine.to_builder().register(self.tool(engine))?.build())
    }
}

/// The names a program may call: the engine's tools but code mode's own.
fn offered(engine: &ToolEngine) -> HashSet<String> {
    engine.offered().list().map(|tool| tool.name().to_owned()).filter(|n| n != RUN_CODE).collect()
}

/// `run_code`'s declaration: how to write a program, and the tools' types.
fn declaration(engine: &ToolEngine, offered: &HashSet<String>) -> ToolDeclaration {
    let tools: Vec<&ToolDeclaration> =
        engine.offered().list().map(ToolEntry::declaration).filter(|d| offered.contains(&d.name)).collect();
    let (full, named) = tools.split_at(tools.len().min(FULL_STUBS));
    let mut description = String::from(
        "Run a JavaScript program that calls tools as async functions, and get back only what it returns (and \
         prints). Use it when a task needs many tool calls or their results combined: one program instead of many \
         calls. Call a tool as `await tools.<name>(args)`; run independent calls together with `Promise.all`. A \
         failed call throws a `ToolError` (with `.kind` and `.message`) you can catch. End with `return <value>` \
         (JSON). There is no file system, network, clock or randomness except through the tools.\n\n",
    );
    description.push_str(&stubs::declarations(full.iter().copied()));
    if !named.is_empty() {
        description.push_str("\nAlso callable (find their parameters with search_tools): ");
        let shown = &named[..named.len().min(NAMED)];
        description.push_str(&shown.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", "));
        if named.len() > shown.len() {
            description.push_str(&format!(", and {} more (search_tools finds them)", named.len() - shown.len()));
        }
        description.push('\n');
    }
    let mut declaration = ToolDeclaration::new(
        RUN_CODE,
        description,
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The program: the body of an async JavaScript function."}
            },
            "required": ["code"],
            "additionalProperties": false
        }),
    );
    // Its calls are approved one by one; the program itself changes nothing.
    declaration.safety = SafetyLevel::Cautious;
    declaration
}

/// The `run_code` tool over one engine.
struct CodeTool {
    mode: CodeMode,
    engine: ToolEngine,
    offered: Arc<HashSet<String>>,
}

impl ErasedTool for CodeTool {
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        let mode = self.mode.clone();
        let engine = self.engine.clone();
        let offered = Arc::clone(&self.offered);
        ToolFuture::new(async move {
            let Some(program) = args.get("code").and_then(Value::as_str) else {
                return Err(ToolError::failed("`code` must be the program's text"));
            };
            let run_id = cx.call_id().filter(|id| !id.is_empty()).unwrap_or("program").to_owned();
            let checkpoints = cx.extensions().get_arc::<Checkpoints>();
            let replay = match checkpoints.as_ref().and_then(|c| c.take_restored(&run_id)) {
                Some(sealed) => {
                    Journal::open(sealed, &mode.key, &run_id, program).map_err(|e| ToolError::failed(e.to_string()))?
                }
                None => Journal::default(),
            };
            // Under an access policy, the program reaches only what the
            // principal it runs for may call.
            let offered = match engine.access() {
                None => offered,
                Some(policy) => {
                    let principal = cx.principal().map(|p| &**p);
                    let granted = |name: &&String| {
                        engine
                            .offered()
                            .get(name)
                            .is_some_and(|e| policy.decide(principal, e.declaration()).is_granted())
                    };
                    Arc::new(offered.iter().filter(granted).cloned().collect())
                }
            };
            let session = Session {
                engine,
                offered,
                limits: mode.limits,
                run_id: run_id.clone(),
                extensions: cx.extensions().clone(),
                principal: cx.principal().cloned(),
                cancel: cx.cancellation().cloned().unwrap_or_default(),
                replay,
                can_wait: checkpoints.is_some(),
            };
            match session.run(&mode.worker, program).await {
                Ended::Finished(output) => Ok(output.into_tool_output()),
                Ended::Failed { error: CodeError::Cancelled, .. } => Err(ToolError::Cancelled),
                Ended::Failed { error, output } => Err(ToolError::failed(failure_text(&error, &output))),
                Ended::Waiting { journal, reason } => {
                    if let Some(checkpoints) = checkpoints {
                        checkpoints.save(&run_id, journal.seal(&mode.key, &run_id, program));
                    }
                    Err(ToolError::Pending { reason, approver: RUN_CODE.to_owned() })
                }
            }
        })
    }
}

/// What the model reads of a failed program: why, and what it printed.
fn failure_text(error: &CodeError, output: &str) -> String {
    if output.is_empty() {
        format!("Error: {error}")
    } else {
        format!("Error: {error}\nThe program printed before that:\n{output}")
    }
}

#[cfg(test)]
mod tests {
    use toolreg::{FunctionRegistry, ParamType, ToolRegistration};

    use super::*;

    #[test]
    fn a_large_catalog_is_described_in_full_up_to_a_point_then_by_name_then_counted() {
        let mut registry = FunctionRegistry::new();
        for i in 0..300 {
            let declaration =
                ToolDeclaration::builder(format!("tool_{i:03}")).param("x", ParamType::String, "X").build();
            registry.register(ToolRegistration::new(declaration, |_: Value| Ok::<_, String>(1))).unwrap();
        }
        let engine = ToolEngine::builder(&registry).build();
        let declaration = declaration(&engine, &offered(&engine));
        let text = &declaration.description;
        assert_eq!(text.matches("(args: {").count(), FULL_STUBS);
        assert!(text.contains("tool_039(args: {") && !text.contains("tool_040(args"), "{text}");
        assert!(text.contains("tool_040, tool_041") && text.contains("tool_239"), "{text}");
        assert!(!text.contains("tool_240") && text.contains("and 60 more"), "{text}");
    }
}
