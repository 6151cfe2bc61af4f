//! The tools as rmcp `#[tool]` methods, and the router path rmcp's server
//! takes for `tools/call`.
//!
//! rmcp's server answers `tools/call` by building a [`ToolCallContext`] from
//! the request's parameters and the request's [`RequestContext`], then
//! awaiting [`ToolRouter::call`] (rmcp's `handler/server/router.rs` and the
//! `#[tool_handler]` macro). A `RequestContext` needs a [`Peer`], whose
//! constructor is private to rmcp; the cheapest public way to get one is to
//! start a real service over an in-memory pipe with
//! [`serve_directly`](rmcp::service::serve_directly) (no handshake) and clone
//! its peer. Each call then builds a fresh `RequestContext` (a peer clone
//! and a new cancellation token) as the server's loop does, without the
//! JSON-RPC decoding, task spawn and response encoding around it, so the
//! figures are the router's own cost, a floor for an rmcp server.

use std::future::Future;

use rmcp::handler::server::tool::{ToolCallContext, ToolRoute, ToolRouter, schema_for_input};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject, NumberOrString, Tool};
use rmcp::service::{Peer, RequestContext, RunningService, serve_directly};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_router};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::io::DuplexStream;

use crate::args::{AddArgs, AreaArgs, ConvertArgs, ShipArgs, StatsArgs};
use crate::toolreg_side;

/// The service whose methods are the tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct RmcpTools;

/// rmcp's text content for a number, which is how an rmcp tool that returns
/// `String` answers (a tool result is content blocks, not a JSON value).
fn number_text(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_default()
}

#[tool_router(vis = "pub")]
impl RmcpTools {
    /// Add two numbers.
    #[tool(description = "Add two numbers.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        number_text(toolreg_side::add(a, b))
    }

    /// Price a parcel to a customer.
    #[tool(description = "Price a parcel to a customer.")]
    fn ship(&self, Parameters(ShipArgs { customer, weight_kg }): Parameters<ShipArgs>) -> String {
        number_text(toolreg_side::ship(customer, weight_kg))
    }

    /// Convert a temperature between units.
    #[tool(description = "Convert a temperature between units.")]
    fn convert(&self, Parameters(ConvertArgs { value, from, to }): Parameters<ConvertArgs>) -> String {
        number_text(toolreg_side::convert(value, from, to))
    }

    /// Area of a scaled shape.
    #[tool(description = "Area of a scaled shape.")]
    fn area(&self, Parameters(AreaArgs { shape, scale }): Parameters<AreaArgs>) -> String {
        number_text(toolreg_side::area(shape, scale))
    }

    /// Sum of the samples plus the sum of the weights.
    #[tool(description = "Sum of the samples plus the sum of the weights.")]
    fn stats(&self, Parameters(StatsArgs { values, weights }): Parameters<StatsArgs>) -> String {
        number_text(toolreg_side::stats(values, weights))
    }
}

impl ServerHandler for RmcpTools {}

/// A router over [`RmcpTools`] and a live peer to build request contexts
/// from. Create it inside a Tokio runtime: the service loop is a task.
pub struct RmcpServer {
    tools: RmcpTools,
    router: ToolRouter<RmcpTools>,
    peer: Peer<RoleServer>,
    _running: RunningService<RoleServer, RmcpTools>,
    _client_end: DuplexStream,
}

impl RmcpServer {
    /// Start the service over an in-memory pipe and build the router once,
    /// as a server does (not per call, which `#[tool_handler]`'s default does).
    pub fn start() -> Self {
        let (server_end, client_end) = tokio::io::duplex(4096);
        let running = serve_directly::<RoleServer, _, _, _, _>(RmcpTools, server_end, None);
        let peer = running.peer().clone();
        RmcpServer {
            tools: RmcpTools,
            router: RmcpTools::tool_router(),
            peer,
            _running: running,
            _client_end: client_end,
        }
    }

    /// The router, for listing.
    pub fn router(&self) -> &ToolRouter<RmcpTools> {
        &self.router
    }

    /// One `tools/call` through the router, with arguments already parsed
    /// into the JSON object the request carries.
    pub fn call(
        &self,
        name: &'static str,
        arguments: JsonObject,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + '_ {
        let context = RequestContext::new(NumberOrString::Number(1), self.peer.clone());
        let params = CallToolRequestParams::new(name).with_arguments(arguments);
        self.router.call(ToolCallContext::new(&self.tools, params, context))
    }
}

/// Whether an rmcp answer is a successful tool result, and its text.
pub fn answer_text(response: &Result<CallToolResponse, ErrorData>) -> Result<String, String> {
    match response {
        Ok(CallToolResponse::Complete(result)) => {
            let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
            if result.is_error == Some(true) { Err(text) } else { Ok(text) }
        }
        Ok(_) => Err("not a complete result".to_owned()),
        Err(error) => Err(error.message.to_string()),
    }
}

fn filler_handler<A: DeserializeOwned>(Parameters(_): Parameters<A>) -> String {
    String::new()
}

/// A route named `name` taking `A`, declared as rmcp's `#[tool]` declares
/// one: a `Tool` with the schema from `schema_for_input` (cached per type).
pub fn filler_route<A>(name: String) -> ToolRoute<RmcpTools>
where
    A: JsonSchema + DeserializeOwned + Send + Sync + 'static,
{
    let schema = schema_for_input::<A>().unwrap_or_else(|e| panic!("filler schema: {e}"));
    ToolRoute::new(Tool::new(name, "Filler", schema), filler_handler::<A>)
}
