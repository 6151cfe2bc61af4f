//! How a server presents itself, treats dangerous tools, and which of
//! the protocol's extensions it serves.

#[cfg(doc)]
use super::McpServer;
use super::{Deferral, RequestStates, TaskOptions};
#[cfg(doc)]
use toolreg::policy::ApproveAll;

/// How the server presents itself and treats dangerous tools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The `serverInfo.name` sent at `initialize`.
    pub name: String,
    /// The `serverInfo.version`.
    pub version: String,
    /// Instructions for the client's model, sent at `initialize`.
    pub instructions: Option<String>,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Run dangerous tools without asking (the operator's `--allow-dangerous`):
    /// the server then serves every engine it is given ([`McpServer::new`],
    /// [`McpServer::set_engine`]) with its approver replaced by an
    /// [`ApproveAll`]. Otherwise dangerous tools go to the engine's approver
    /// (with [`McpServer::engine_builder`]'s, they are approved through
    /// elicitation, or refused when the client cannot be asked).
    pub allow_dangerous: bool,
    /// Deferred mode (`None`: every tool listed): the tools the [`Deferral`]
    /// names are found with `search_tools` and run with `call_tool` (or by
    /// name once a session has found them); see [`Deferral`].
    pub deferred: Option<Deferral>,
    /// How Multi Round-Trip Requests' `requestState` is sealed and its one
    /// use recorded: per process by default; shared by replicas with
    /// [`RequestStates::shared`].
    pub request_states: RequestStates,
    /// Run long-running tools as MCP tasks (`None`: no tasks; every call
    /// is answered directly and tools are listed without `execution`). See
    /// [`TaskOptions`].
    pub tasks: Option<TaskOptions>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            name: "toolreg".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            page_size: 100,
            allow_dangerous: false,
            deferred: None,
            request_states: RequestStates::local(),
            tasks: None,
        }
    }
}

impl ServerOptions {
    /// Set the server's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Set instructions for the client's model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Set the number of tools per `tools/list` page (at least one).
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Run dangerous tools without asking.
    pub fn allow_dangerous(mut self, allow: bool) -> Self {
        self.allow_dangerous = allow;
        self
    }

    /// Seal and record Multi Round-Trip request state as `states` says.
    pub fn request_states(mut self, states: RequestStates) -> Self {
        self.request_states = states;
        self
    }

    /// Run tools that declare task support as MCP tasks, kept as `tasks` says.
    pub fn tasks(mut self, tasks: TaskOptions) -> Self {
        self.tasks = Some(tasks);
        self
    }

    /// Serve in deferred mode, holding back what `deferral` names.
    pub fn deferred(mut self, deferral: Deferral) -> Self {
        self.deferred = Some(deferral);
        self
    }
}
