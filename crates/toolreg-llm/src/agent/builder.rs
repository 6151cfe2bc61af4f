//! [`AgentBuilder`]: what an agent adds to the engine it runs its calls
//! through — the model, the prompt, its limits and how it suspends.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use toolreg::Principal;
use toolreg::engine::EngineBuilder;
use toolreg::provider::CodeExecution;
use toolreg_store::Namespace;

use super::event::OnAgentEvent;
use super::{Agent, AgentEvent, AgentLimits, Deferral, Inner};
use crate::model::LlmClient;

/// Builds an [`Agent`] on an [`EngineBuilder`].
///
/// Everything about the tools — which are offered (selection), who
/// approves (approver), what wraps each call (layers, hooks,
/// [`OutputBudget`](toolreg::engine::OutputBudget)), where calls are
/// recorded (audit) and the batch limits — is the engine builder's, set
/// exactly as for any [`ToolEngine`](toolreg::ToolEngine): with no
/// approver, a dangerous call is refused; with
/// [`SuspendForApproval`](super::SuspendForApproval) (alone or as a policy's
/// fallback), it suspends the run for the host to decide. The agent adds
/// the model, the prompt, its own [`AgentLimits`], the tools the host runs
/// itself and the functions its result goes through.
#[must_use]
pub struct AgentBuilder {
    client: Arc<dyn LlmClient>,
    model: String,
    engine: EngineBuilder,
    system: Option<String>,
    limits: AgentLimits,
    external: HashSet<String>,
    post_process: Vec<String>,
    max_tokens_per_request: Option<u32>,
    on_event: Option<OnAgentEvent>,
    claims: Option<Namespace>,
    deferral: Deferral,
    code_execution: Option<CodeExecution>,
    principal: Option<Arc<Principal>>,
}

impl Agent {
    /// Start building an agent on `client` and `model` whose tool calls go
    /// through the engine `engine` builds. To give the agent functions of
    /// its own over a shared registry, register them in a clone of it
    /// (cloning shares every tool) and build the engine on the clone; for
    /// an engine already built, pass [`ToolEngine::to_builder`](toolreg::ToolEngine::to_builder).
    pub fn builder(client: impl LlmClient + 'static, model: impl Into<String>, engine: EngineBuilder) -> AgentBuilder {
        Self::builder_shared(Arc::new(client), model, engine)
    }

    /// [`builder`](Self::builder) with a shared client.
    pub fn builder_shared(client: Arc<dyn LlmClient>, model: impl Into<String>, engine: EngineBuilder) -> AgentBuilder {
        AgentBuilder {
            client,
            model: model.into(),
            engine,
            system: None,
            limits: AgentLimits::default(),
            external: HashSet::new(),
            post_process: Vec::new(),
            max_tokens_per_request: None,
            on_event: None,
            claims: None,
            deferral: Deferral::new(),
            code_execution: None,
            principal: None,
        }
    }
}

impl AgentBuilder {
    /// Record resumed suspensions in this context-store namespace, so each
    /// resumes once across processes and restarts. Without one, each
    /// resumes once per [`Agent`] (and its clones), in memory. Give it a
    /// namespace of its own, which tools do not write.
    pub fn resume_claims(mut self, namespace: Namespace) -> Self {
        self.claims = Some(namespace);
        self
    }

    /// The system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// How far a run may go.
    pub fn limits(mut self, limits: AgentLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Tools the host runs itself: their calls suspend the run.
    pub fn external<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.external.extend(names.into_iter().map(Into::into));
        self
    }

    /// Functions of the registry that the run's result goes through, in
    /// order, before it is returned: each validates or transforms it. Each
    /// is called through the agent's engine like any call (selection,
    /// approval and audit apply) with one argument,
    /// [`POST_PROCESS_ARGUMENT`](super::POST_PROCESS_ARGUMENT)
    /// (`{"result": value}`: the model's text as a string, or a finishing
    /// tool's value), and what it returns is the result the next one gets.
    ///
    /// A function that fails (or is refused) sends the model a
    /// [`PostProcessError`](super::PostProcessError) in a message, as a
    /// tool's error reads, and the run goes on: the model may correct its
    /// result, within the run's limits. A function the engine does not
    /// offer stops the run before it starts
    /// ([`AgentError::PostProcessNotOffered`](super::AgentError::PostProcessNotOffered)).
    /// Sub-agents' results are not post-processed.
    pub fn post_process<S: Into<String>>(mut self, functions: impl IntoIterator<Item = S>) -> Self {
        self.post_process.extend(functions.into_iter().map(Into::into));
        self
    }

    /// Cap each answer's tokens.
    pub fn max_tokens_per_request(mut self, tokens: u32) -> Self {
        self.max_tokens_per_request = Some(tokens);
        self
    }

    /// Receive an [`AgentEvent`] for everything that happens.
    pub fn on_event(mut self, on_event: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.on_event = Some(Arc::new(on_event));
        self
    }

    /// Run every tool call for `principal` (the person or service the agent
    /// works for): the engine's access policy, approver and audit see it;
    /// its sub-agents run for the same one.
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// The agent: its engine is built here, once.
    pub fn build(self) -> Agent {
        let engine = self.engine.build();
        let mut deferral = self.deferral;
        if !deferral.is_empty() && !engine.offered().contains(super::SEARCH_TOOLS) {
            // Deferred tools the model could never load would be lost to it.
            tracing::warn!("tools are deferred but `search_tools` is not registered (AgentTools): all are offered");
            deferral = Deferral::new();
        }
        Agent {
            inner: Arc::new(Inner {
                client: self.client,
                model: self.model,
                engines: RwLock::new(Arc::new(super::Engines::new(engine, 0))),
                system: self.system,
                limits: self.limits,
                external: self.external,
                post_process: self.post_process,
                max_tokens_per_request: self.max_tokens_per_request,
                on_event: self.on_event,
                depth: 0,
                claims: self.claims,
                consumed: Mutex::default(),
                deferral,
                code_execution: self.code_execution,
                principal: self.principal,
            }),
        }
    }

    /// Offer the tools `deferral` names only once the model finds them with
    /// `search_tools` (register the agent functions,
    /// [`AgentTools`](super::functions::AgentTools), so that it exists).
    pub fn defer(mut self, deferral: Deferral) -> Self {
        self.deferral = deferral;
        self
    }

    /// Let the provider's own code execution call the agent's tools
    /// (Anthropic's and OpenAI Responses' programmatic tool calling; see
    /// [`toolreg::provider::hosted`]): the model may write a program the
    /// provider runs, and each call the program makes comes back as a tool
    /// call, which the agent runs through its engine like any other —
    /// selection, validation, approval, hooks and audit — before the
    /// program goes on. Off by default. A client without it
    /// ([`LlmClient::code_execution`]) declares the tools as usual.
    ///
    /// An approver or hook tells a call from code by the turn in the call's
    /// extensions:
    /// `request.extensions().get::<HostedTurn>().and_then(|t| t.caller(id))`
    /// ([`HostedTurn`](toolreg::provider::HostedTurn), [`Caller`](toolreg::provider::Caller)).
    ///
    /// A call from code that waits for an approval suspends the run as any
    /// call does, but Anthropic's container keeps the program only
    /// until its `expires_at`
    /// ([`HostedTurn::expires_at`](toolreg::provider::HostedTurn::expires_at)):
    /// resume before then.
    pub fn code_execution(mut self, code: CodeExecution) -> Self {
        if !self.client.code_execution() {
            tracing::warn!(
                client = self.client.name(),
                "this client has no provider code execution: tools are declared as usual"
            );
        }
        self.code_execution = Some(code);
        self
    }
}
