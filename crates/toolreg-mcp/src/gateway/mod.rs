//! The gateway: imported MCP servers served again, above both the
//! [`client`](crate::client) (which talks to each of them) and the
//! [`server`](crate::server) (which serves a registry).
//!
//! Their tools reach the server as registry tools through the gateway
//! ([`Gateway::register_into`]), which puts each server's questions to the
//! MCP client whose call is running on it; their resources and prompts, and
//! the subscriptions to their resources, through the same [`Gateway`],
//! which the server takes as its [`Upstream`]:
//!
//! - a server's elicitation and sampling requests, and its tasks' questions,
//!   go to the client of the most recent of its calls in flight that came
//!   over MCP, else to the host's answerer ([`Gateway::answer_with`]), else
//!   are refused with a reason (`forward`);
//! - a client on the 2026-07-28 revision is asked in its next round: its
//!   call is parked between rounds under [`FORWARDED_KEY`], and its rounds
//!   do not reach into a remote task (`rounds`);
//! - resources and prompts are namespaced as the tools are
//!   (`toolreg://<server>/<uri>`, `server__name`); a URI or prompt name as a
//!   server itself gives it reaches that server too when no other imported
//!   server claims it;
//! - a client subscribes to a resource by the URI it reads it by; the
//!   gateway subscribes once on the server and passes each update on to
//!   every client that subscribed, under the URI that client used;
//! - a remote server's refusal keeps its own error code.
//!
//! ```no_run
//! use toolreg::FunctionRegistry;
//! use toolreg_mcp::client::RemoteServer;
//! use toolreg_mcp::gateway::Gateway;
//! use toolreg_mcp::server::{McpServer, ServerOptions};
//!
//! # async fn run(remotes: Vec<RemoteServer>) -> Result<(), toolreg_mcp::server::ServeError> {
//! let gateway = Gateway::new(remotes);
//! let mut registry = FunctionRegistry::new();
//! for (tool, error) in gateway.register_into(&mut registry) {
//!     eprintln!("skipped {tool}: {error}");
//! }
//! let server = McpServer::from_registry(&registry, ServerOptions::default());
//! server.set_upstream(gateway);
//! server.serve_stdio().await
//! # }
//! ```

mod forward;
mod resources;
mod rounds;
mod subscribe;

use std::future::Future;
use std::sync::{Arc, PoisonError};

use futures_util::future::BoxFuture;
use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};

use toolreg::{ErasedTool, FunctionRegistry, RegistryError, ToolRegistration};

use crate::client::{Answerer, ClientError, RemoteServer};
use crate::server::{ResourceListener, Upstream};
use forward::{Forward, Forwarded, HostAnswerer};
pub use rounds::FORWARDED_KEY;
use subscribe::Subscriptions;

/// Imported servers served again: their tools registered through it
/// ([`register_into`](Self::register_into)), their questions put to the MCP
/// client behind the call, and their resources and prompts offered beside
/// the tools (give it to [`McpServer::set_upstream`](crate::server::McpServer::set_upstream)).
/// Cloning shares it.
#[derive(Clone)]
pub struct Gateway {
    remotes: Vec<RemoteServer>,
    /// Each server's questions, in the order of `remotes`.
    forwards: Vec<Arc<Forward>>,
    host: HostAnswerer,
    subscriptions: Arc<Subscriptions>,
}

impl Gateway {
    /// Serve these servers again: answer their questions (this gateway is
    /// now each one's [`Answerer`], in place of any set before), offer their
    /// resources (list, templates, read, subscribe) and prompts (list, get),
    /// and follow their resources' updates.
    pub fn new(remotes: Vec<RemoteServer>) -> Gateway {
        let host = HostAnswerer::default();
        let forwards = remotes
            .iter()
            .map(|remote| {
                let forward = Arc::new(Forward::new(remote.name(), Arc::clone(&host)));
                remote.answer_with(Arc::clone(&forward) as Arc<dyn Answerer>);
                forward
            })
            .collect();
        let subscriptions = Subscriptions::watching(&remotes);
        Gateway { remotes, forwards, host, subscriptions }
    }

    /// The imported servers.
    pub fn remotes(&self) -> &[RemoteServer] {
        &self.remotes
    }

    /// Let `answerer` answer the servers' questions that no MCP client can:
    /// those made while none of the server's calls in flight came over MCP
    /// (a host's own agent calling its tools).
    pub fn answer_with(&self, answerer: Arc<dyn Answerer>) {
        *self.host.lock().unwrap_or_else(PoisonError::into_inner) = Some(answerer);
    }

    /// Every server's tools as registrations ([`RemoteServer::registrations`]),
    /// each call made through the gateway so that the server's questions
    /// reach the MCP client behind it.
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.remotes.iter().zip(&self.forwards).flat_map(|(remote, forward)| through(remote, forward)).collect()
    }

    /// Register every server's tools the registry accepts, through the
    /// gateway (see [`registrations`](Self::registrations)); the ones it
    /// refuses (a hostile schema, a clash with a local name) are left out
    /// and returned with why.
    pub fn register_into(&self, registry: &mut FunctionRegistry) -> Vec<(String, RegistryError)> {
        let mut refused = Vec::new();
        for (remote, forward) in self.remotes.iter().zip(&self.forwards) {
            refused.extend(remote.register_all(registry, through(remote, forward)));
        }
        refused
    }
}

/// `remote`'s registrations, each tool wrapped to forward its server's questions.
fn through(remote: &RemoteServer, forward: &Arc<Forward>) -> Vec<ToolRegistration> {
    remote.registrations_through(&|tool| {
        Arc::new(Forwarded { tool, forward: Arc::clone(forward) }) as Arc<dyn ErasedTool>
    })
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("remotes", &self.remotes).finish_non_exhaustive()
    }
}

impl Upstream for Gateway {
    fn offers_resources(&self) -> bool {
        self.remotes.iter().any(RemoteServer::offers_resources)
    }

    fn offers_subscriptions(&self) -> bool {
        self.remotes.iter().any(RemoteServer::offers_subscriptions)
    }

    fn list_resources(&self) -> BoxFuture<'_, ListResourcesResult> {
        Box::pin(self.resources())
    }

    fn list_resource_templates(&self) -> BoxFuture<'_, ListResourceTemplatesResult> {
        Box::pin(self.templates())
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> BoxFuture<'_, Result<ReadResourceResult, ErrorData>> {
        Box::pin(self.read(request))
    }

    fn list_prompts(&self) -> BoxFuture<'_, ListPromptsResult> {
        Box::pin(self.prompts())
    }

    fn get_prompt(&self, request: GetPromptRequestParams) -> BoxFuture<'_, Result<GetPromptResult, ErrorData>> {
        Box::pin(self.prompt(request))
    }

    fn resource_server(&self, uri: &str) -> Option<String> {
        let owner = self.remotes.iter().find(|remote| remote.remote_uri(uri).is_some() || remote.linked(uri));
        owner.map(|remote| remote.name().to_owned())
    }

    fn prompt_server(&self, name: &str) -> Option<String> {
        self.remotes
            .iter()
            .filter(|remote| {
                name.strip_prefix(remote.name()).is_some_and(|rest| rest.starts_with(crate::client::SEPARATOR))
            })
            .max_by_key(|remote| remote.name().len())
            .map(|remote| remote.name().to_owned())
    }

    fn subscribe<'a>(&'a self, uri: &'a str, listener: ResourceListener) -> BoxFuture<'a, Result<(), ErrorData>> {
        Box::pin(self.subscribe_to(uri, listener))
    }

    fn unsubscribe<'a>(&'a self, uri: &'a str, listener: &'a ResourceListener) -> BoxFuture<'a, ()> {
        Box::pin(self.subscriptions.remove(uri, listener))
    }
}

/// The servers' lists, one after another; a server that cannot be listed
/// now is left out (and logged) so the others are still offered.
async fn gather<T, F, Fut>(servers: impl Iterator<Item = &RemoteServer>, list: F) -> Vec<T>
where
    F: Fn(RemoteServer) -> Fut,
    Fut: Future<Output = Result<Vec<T>, ClientError>>,
{
    let mut all = Vec::new();
    for server in servers {
        match list(server.clone()).await {
            Ok(items) => all.extend(items),
            Err(error) => tracing::warn!(server = %server.name(), %error, "left out of a list"),
        }
    }
    all
}

/// A remote server's failure as the gateway's client sees it.
fn remote_error(error: ClientError) -> ErrorData {
    match error {
        // The remote server's own code (say -32002, no such resource) stands.
        ClientError::Refused { code, .. } => ErrorData::new(rmcp::model::ErrorCode(code), error.to_string(), None),
        ClientError::Protocol { .. } => ErrorData::invalid_params(error.to_string(), None),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}
