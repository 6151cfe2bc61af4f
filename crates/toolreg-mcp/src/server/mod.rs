//! Serve a registry, a selection or a whole [`ToolEngine`] over MCP.
//!
//! Every `tools/call` goes through the engine — selection, argument
//! validation, approval, hooks, audit — so serving a registry over MCP gives
//! it the same policy as calling it in process. Tool failures (bad arguments
//! included) are results with `isError: true` and the text a model reads; an
//! unknown tool is JSON-RPC error -32602, as the specification names it. A
//! panicking tool is a failed result: the server keeps serving.
//!
//! The protocol itself (initialisation, version negotiation, cancellation,
//! the streamable HTTP transport) is rmcp's; this module maps it onto the
//! engine:
//!
//! - `notifications/cancelled` cancels the running call's token, which the
//!   tool sees through [`CallContext::cancelled`](toolreg::CallContext::cancelled);
//! - a tool's [`CallContext::report_progress`](toolreg::CallContext::report_progress)
//!   becomes `notifications/progress` when the client sent a progress token,
//!   in order and all before the call's answer (none after it);
//! - results are the core's MCP rendering
//!   ([`toolreg::provider::mcp::CallToolResult`]), sent unchanged: every
//!   content block of the tool's output with its annotations (a file as an
//!   embedded resource), the structured value as `structuredContent` when it
//!   is an object (a declared output schema is listed as `outputSchema`);
//! - [`McpServer::set_engine`] swaps the tools at run time and sends
//!   `notifications/tools/list_changed` to every connected client;
//! - dangerous tools are approved through MCP elicitation where the client
//!   supports it ([`ElicitationApprover`]);
//! - a tool reaches the client itself through its context:
//!   `cx.extensions().get::<rmcp::service::Peer<RoleServer>>()` is the
//!   connection the call came on (to send log messages, ask the user through
//!   elicitation, or request sampling), and [`McpServer::log_level`] is the
//!   level the client asked for with `logging/setLevel`;
//! - a client on the 2026-07-28 revision is asked questions (approval of a
//!   dangerous call, a tool's own) with Multi Round-Trip Requests, through
//!   the call's [`InputRound`]; the log level such a client asks for in the
//!   request's `_meta` is `cx.extensions().get::<rmcp::model::LoggingLevel>()`
//!   (none: send it no log messages);
//! - with [`ServerOptions::deferred`], a large catalog is served as a short
//!   list plus `search_tools` and `call_tool` (see [`Deferral`]);
//! - resources and prompts come from an [`Upstream`] (a gateway's imported
//!   servers, [`McpServer::set_upstream`]); without one their lists are empty;
//! - with [`ServerOptions::tasks`], tools that declare task support
//!   ([`ToolDeclaration::task_support`](toolreg::ToolDeclaration::task_support))
//!   run as MCP tasks (the `io.modelcontextprotocol/tasks` extension) for
//!   clients that declare it, their state in the context store (see
//!   [`TaskOptions`]).
//!
//! ```no_run
//! use toolreg::FunctionRegistry;
//! use toolreg_mcp::server::{McpServer, ServerOptions};
//!
//! # async fn run(registry: FunctionRegistry) -> Result<(), toolreg_mcp::server::ServeError> {
//! let server = McpServer::from_registry(&registry, ServerOptions::default());
//! server.serve_stdio().await
//! # }
//! ```

// rmcp marks MCP logging deprecated (a protocol draft drops it); every
// revision this server speaks has it, and clients use it.
#![allow(deprecated)]

mod approval;
mod ask;
mod call;
mod catalog;
mod clients;
mod http;
mod input;
mod oauth;
mod options;
mod progress;
mod result;
mod serving;
mod session;

use catalog::Served;
use clients::Clients;
use session::{Session, Transport};
mod stdio;
mod tasks;
mod upstream;

use std::sync::{Arc, PoisonError, RwLock};

use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use toolreg::engine::EngineBuilder;
use toolreg::policy::ApproveAll;
use toolreg::{FunctionRegistry, ToolEngine};
use tracing::Instrument;

use crate::protocol::is_2026_07_28;

pub use crate::protocol::{InputRound, STATE_TTL};
pub use approval::{APPROVAL_KEY, ElicitationApprover};
pub use ask::{ASK_KEY, ask_user};
pub use catalog::{CALL_TOOL, Deferral, MAX_SEARCH_RESULTS, SEARCH_TOOLS};
pub use http::{HttpOptions, bearer_token_from_env};
pub use input::RequestStates;
pub use oauth::{OAuth, TokenError};
pub use options::ServerOptions;
pub use stdio::{SERVER_BUSY, StdioOptions};
pub use tasks::{TASK_ID_LEN, TaskOptions, is_task_id};
pub use upstream::{ResourceListener, Upstream};

/// Why a server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Reading or writing the transport, or binding the address, failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The client did not complete the MCP handshake.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
}

/// An MCP server over a [`ToolEngine`]. Cloning shares it: every clone
/// serves the same tools, and [`set_engine`](Self::set_engine) on one
/// reaches the clients of all.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    /// This connection: what its searches loaded (deferred mode), its streams.
    session: Arc<Session>,
    /// Who this connection's task requests come from; its tasks end with it.
    task_connection: Arc<tasks::Connection>,
}

struct Shared {
    options: ServerOptions,
    tools: RwLock<Arc<Served>>,
    /// The connected clients, told when the tools change.
    clients: Clients,
    /// The resources and prompts offered beside the tools.
    upstream: RwLock<Arc<dyn Upstream>>,
    /// Seals the `requestState` of Multi Round-Trip Requests.
    seal: input::StateSeal,
    /// The tasks, when [`ServerOptions::tasks`] enables them.
    tasks: Option<Arc<tasks::Tasks>>,
}

/// The engine as `options` would have it served: with `allow_dangerous`,
/// every call that needs approval is approved (the operator said so),
/// whatever approver the engine was built with.
fn policed(engine: ToolEngine, options: &ServerOptions) -> ToolEngine {
    if options.allow_dangerous {
        engine.to_builder().approver(ApproveAll::new("allow-dangerous")).build()
    } else {
        engine
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("options", &self.shared.options)
            .field("tools", &self.served().listed.len())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serve this engine as it is (its selection, approver, hooks and
    /// audit) — except that with [`ServerOptions::allow_dangerous`] its
    /// approver is replaced by an [`ApproveAll`].
    ///
    /// Dangerous tools need an approver on the engine; build it with an
    /// [`ElicitationApprover`] to ask the MCP client
    /// ([`engine_builder`](Self::engine_builder) does).
    pub fn new(engine: ToolEngine, options: ServerOptions) -> Self {
        let served = Served::new(engine, &options);
        let seal = input::StateSeal::new(&options.request_states);
        let tasks = options.tasks.clone().map(|o| Arc::new(tasks::Tasks::new(o)));
        McpServer {
            session: Arc::new(Session::new(Transport::Stream)),
            task_connection: Arc::new(tasks::Connection::new(tasks.as_ref())),
            shared: Arc::new(Shared {
                options,
                tools: RwLock::new(Arc::new(served)),
                clients: Clients::default(),
                upstream: RwLock::new(Arc::new(upstream::NoUpstream)),
                seal,
                tasks,
            }),
        }
    }

    /// Serve every tool of `registry`, with dangerous tools approved through
    /// elicitation (or allowed outright with [`ServerOptions::allow_dangerous`]).
    pub fn from_registry(registry: &FunctionRegistry, options: ServerOptions) -> Self {
        let engine = Self::engine_for(registry, &options);
        McpServer::new(engine, options)
    }

    /// The engine [`from_registry`](Self::from_registry) builds: all tools,
    /// an [`ElicitationApprover`] following `options.allow_dangerous`.
    pub fn engine_for(registry: &FunctionRegistry, options: &ServerOptions) -> ToolEngine {
        Self::engine_builder(registry, options).build()
    }

    /// The builder of [`engine_for`](Self::engine_for)'s engine, for a host
    /// that adds to it (audit sinks, layers, a selection) before serving it.
    pub fn engine_builder(registry: &FunctionRegistry, options: &ServerOptions) -> EngineBuilder {
        ToolEngine::builder(registry).approver(ElicitationApprover::new(options.allow_dangerous))
    }

    /// The options the server was made with.
    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    /// The engine now serving.
    pub fn engine(&self) -> ToolEngine {
        self.served().engine.clone()
    }

    /// Serve another engine from now on (calls already running finish on the
    /// old one; [`ServerOptions::allow_dangerous`] applies as in
    /// [`new`](Self::new)) and tell every connected client with
    /// `notifications/tools/list_changed`.
    pub async fn set_engine(&self, engine: ToolEngine) {
        let served = Arc::new(Served::new(engine, &self.shared.options));
        *self.shared.tools.write().unwrap_or_else(PoisonError::into_inner) = served;
        self.shared.clients.tools_changed().await;
    }

    /// Serve one client on this process's stdin and stdout until it
    /// disconnects. Logs must go to stderr: stdout carries the protocol.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let (read, write) = rmcp::transport::io::stdio_pipes();
        self.serve_stream(read, write, StdioOptions::default()).await
    }

    /// Serve one client on any byte stream pair (a child's pipes, a socket,
    /// an in-memory duplex in tests) until it disconnects.
    pub async fn serve_stream<R, W>(&self, read: R, write: W, options: StdioOptions) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let connection = self.connection(Transport::Stream);
        let transport = stdio::LineTransport::new(read, write, options, connection.session.input_closed().clone());
        let running = match rmcp::serve_server(serving::Serving(connection), transport).await {
            Ok(running) => running,
            // The client left before saying anything: nothing to serve, no error.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(error) => return Err(ServeError::Handshake(error.to_string())),
        };
        running.waiting().await.map_err(|error| ServeError::Handshake(error.to_string()))?;
        Ok(())
    }

    /// Offer `upstream`'s resources and prompts beside the tools (a
    /// gateway's imported servers: [`Gateway`](crate::gateway::Gateway)),
    /// replacing what was offered before.
    pub fn set_upstream(&self, upstream: impl Upstream + 'static) {
        *self.shared.upstream.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(upstream);
    }

    fn upstream(&self) -> Arc<dyn Upstream> {
        Arc::clone(&self.shared.upstream.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serve a 2026-07-28 client's `subscriptions/listen` stream's resource
    /// URIs until `closed` resolves (the stream ends).
    async fn listen_to_resources(
        &self,
        sink: &rmcp::service::SubscriptionSink,
        uris: &[String],
        closed: impl Future<Output = ()>,
    ) {
        let upstream = self.upstream();
        let listener = ResourceListener::stream(sink);
        for uri in uris {
            if let Err(error) = upstream.subscribe(uri, listener.clone()).await {
                tracing::info!(%uri, error = %error.message, "a listened resource cannot be subscribed to");
            }
        }
        closed.await;
        for uri in uris {
            upstream.unsubscribe(uri, &listener).await;
        }
    }

    /// The log level the client last asked for with `logging/setLevel`
    /// (`None`: it has not asked; send what matters).
    pub fn log_level(&self) -> Option<rmcp::model::LoggingLevel> {
        self.shared.clients.log_level()
    }

    fn task_store(&self) -> Result<&Arc<tasks::Tasks>, ErrorData> {
        // rmcp answers `tasks/*` with "method not found" unless the
        // extension is advertised, which it is only with tasks enabled.
        self.shared.tasks.as_ref().ok_or_else(ErrorData::method_not_found::<rmcp::model::GetTaskMethod>)
    }

    fn served(&self) -> Arc<Served> {
        Arc::clone(&self.shared.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// This server for one connection: the same tools, its own session.
    fn connection(&self, transport: Transport) -> McpServer {
        McpServer {
            shared: Arc::clone(&self.shared),
            session: Arc::new(Session::new(transport)),
            task_connection: Arc::new(tasks::Connection::new(self.shared.tasks.as_ref())),
        }
    }

    /// Whether the request's principal reaches the imported server `server`
    /// (its resources and prompts) under the engine's access policy.
    fn reaches(&self, context: &RequestContext<RoleServer>, server: Option<String>) -> bool {
        let served = self.served();
        let Some(policy) = served.engine.access() else { return true };
        policy.reaches_server(self.session.principal(context).as_deref(), server.as_deref())
    }

    /// [`reaches`](Self::reaches), or the error naming the rule.
    fn may_reach(
        &self,
        context: &RequestContext<RoleServer>,
        server: Option<String>,
        what: &str,
        name: &str,
    ) -> Result<(), ErrorData> {
        if self.reaches(context, server.clone()) {
            return Ok(());
        }
        let why = match server {
            Some(server) => format!("no role of yours reaches the server `{server}`"),
            None => "it belongs to no server your roles reach (name it by its gateway URI or name)".to_owned(),
        };
        Err(ErrorData::invalid_params(format!("you may not read the {what} `{name}`: {why}"), None))
    }

    /// The `tools/list` page starting at `cursor` (an offset this server
    /// handed out).
    fn list_page(
        &self,
        cursor: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let served = self.served();
        let principal = self.session.principal(context);
        let listed = served.offered(self.session.lasting(context), principal.as_deref());
        let start = match cursor {
            None => 0,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|&n| n <= listed.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{text}`"), None))?,
        };
        let end = start.saturating_add(self.shared.options.page_size).min(listed.len());
        let mut page = ListToolsResult::with_all_items(listed[start..end].to_vec());
        page.next_cursor = (end < listed.len()).then(|| end.to_string());
        Ok(page)
    }
}

/// Whether the client is on 2026-07-28 or later, which requires cache
/// hints on lists. The tools can change at any moment (`set_engine`), and a
/// gateway's lists at a remote server's word: nothing may be cached.
fn wants_cache_hints(context: &RequestContext<RoleServer>) -> bool {
    is_2026_07_28(context)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut builder = ServerCapabilities::builder().enable_logging().enable_tools().enable_tool_list_changed();
        if self.shared.tasks.is_some() {
            builder = builder.enable_tasks();
        }
        let mut capabilities = builder.build();
        // The imported servers' resources and prompts (a gateway's), declared
        // only when one of them offers some: hosts warn about, and list in
        // vain, a capability with nothing behind it.
        let upstream = self.upstream();
        if upstream.offers_resources() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = upstream.offers_subscriptions().then_some(true);
            capabilities.resources = Some(resources);
        }
        // Prompts stay declared: the server answers `prompts/list` (empty
        // when no import offers any), and a server that answers it must
        // declare it (the 2026-07-28 conformance suite checks this); an
        // imported 2026-07-28 server's capabilities are not known at
        // `initialize`, so refusing the method would hide its prompts.
        capabilities.prompts = Some(rmcp::model::PromptsCapability::default());
        let options = &self.shared.options;
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(options.name.clone(), options.version.clone()));
        if let Some(instructions) = &options.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page = self.list_page(request.as_ref().and_then(|r| r.cursor.as_deref()), &context)?;
        Ok(if wants_cache_hints(&context) { page.with_ttl_ms(0).with_cache_scope(CacheScope::Private) } else { page })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Made before the call runs, so that the engine's `execute_tool`
        // span is its child (and, with a `traceparent`, the caller's).
        let span = crate::trace::server_tool_call(&request.name, &context.id, &context.meta, &context.extensions);
        let answer = self.call(request, context).instrument(span.clone()).await;
        match &answer {
            Err(_) => crate::trace::failed(&span, "mcp_error"),
            Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
                crate::trace::failed(&span, "tool_error")
            }
            Ok(_) => {}
        }
        answer
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let upstream = self.upstream();
        let mut list = upstream.list_resources().await;
        list.resources.retain(|resource| self.reaches(&context, upstream.resource_server(&resource.uri)));
        Ok(if wants_cache_hints(&context) { list.with_ttl_ms(0).with_cache_scope(CacheScope::Private) } else { list })
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        let upstream = self.upstream();
        let mut list = upstream.list_resource_templates().await;
        list.resource_templates
            .retain(|template| self.reaches(&context, upstream.resource_server(&template.uri_template)));
        Ok(if wants_cache_hints(&context) { list.with_ttl_ms(0).with_cache_scope(CacheScope::Private) } else { list })
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let upstream = self.upstream();
        self.may_reach(&context, upstream.resource_server(&request.uri), "resource", &request.uri)?;
        upstream.read_resource(request).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let listener = ResourceListener::client(&context.peer).ok_or_else(|| {
            ErrorData::invalid_request("resources/subscribe needs a connection that completed `initialize`", None)
        })?;
        let upstream = self.upstream();
        self.may_reach(&context, upstream.resource_server(&request.uri), "resource", &request.uri)?;
        upstream.subscribe(&request.uri, listener).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if let Some(listener) = ResourceListener::client(&context.peer) {
            self.upstream().unsubscribe(&request.uri, &listener).await;
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        let upstream = self.upstream();
        let mut list = upstream.list_prompts().await;
        list.prompts.retain(|prompt| self.reaches(&context, upstream.prompt_server(&prompt.name)));
        Ok(if wants_cache_hints(&context) { list.with_ttl_ms(0).with_cache_scope(CacheScope::Private) } else { list })
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let upstream = self.upstream();
        self.may_reach(&context, upstream.prompt_server(&request.name), "prompt", &request.name)?;
        upstream.get_prompt(request).await.map(Into::into)
    }

    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.clients.set_log_level(request.level);
        Ok(())
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.task_store()?.get(&self.task_connection.owner_of(&context), &request.task_id).await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_store()?.cancel(&self.task_connection.owner_of(&context), &request.task_id).await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.task_store()?
            .update(&self.task_connection.owner_of(&context), &request.task_id, request.input_responses)
            .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        // rmcp keeps only what was asked for and what `get_info` advertises:
        // here, tool list changes.
        Some(requested.clone())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        self.shared.clients.listening(sink.clone());
        let _listening = self.session.listening(sink.clone());
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        // The stream ends when the client cancels it, or when its input
        // closes: rmcp ends a connection's streams only after it has waited
        // for every running request to answer, this one included.
        let ended = async {
            tokio::select! {
                () = context.cancelled() => {}
                () = self.session.input_closed().cancelled() => {}
            }
        };
        self.listen_to_resources(&sink, &uris, ended).await;
        self.shared.clients.stopped_listening(sink.id());
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.clients.joined(context.peer);
    }
}
