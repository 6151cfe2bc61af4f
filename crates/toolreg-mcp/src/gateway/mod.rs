//! The gateway: imported MCP servers served again, above both the
//! [`client`](crate::client) (which talks to each of them) and the
//! [`server`](crate::server) (which serves a registry).
//!
//! Their tools reach the server as registry tools
//! ([`RemoteServer::register_into`]); their resources and prompts, and the
//! subscriptions to their resources, through a [`Gateway`], which the
//! server takes as its [`Upstream`]:
//!
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
//! let mut registry = FunctionRegistry::new();
//! for remote in &remotes {
//!     remote.register_into(&mut registry);
//! }
//! let server = McpServer::from_registry(&registry, ServerOptions::default());
//! server.set_upstream(Gateway::new(remotes));
//! server.serve_stdio().await
//! # }
//! ```

mod resources;
mod subscribe;

use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};

use crate::client::{ClientError, RemoteServer};
use crate::server::{ResourceListener, Upstream};
use subscribe::Subscriptions;

/// Imported servers whose resources and prompts a server offers beside the
/// tools: give it to [`McpServer::set_upstream`](crate::server::McpServer::set_upstream).
pub struct Gateway {
    remotes: Vec<RemoteServer>,
    subscriptions: Arc<Subscriptions>,
}

impl Gateway {
    /// Offer the resources (list, templates, read, subscribe) and prompts
    /// (list, get) of these servers, and follow their resources' updates.
    pub fn new(remotes: Vec<RemoteServer>) -> Gateway {
        let subscriptions = Subscriptions::watching(&remotes);
        Gateway { remotes, subscriptions }
    }

    /// The imported servers.
    pub fn remotes(&self) -> &[RemoteServer] {
        &self.remotes
    }
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
