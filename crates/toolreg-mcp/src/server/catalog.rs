//! Deferred loading for MCP clients: a short `tools/list` in front of a
//! large catalog (`toolreg serve --deferred`); see [`Deferral`].

use std::borrow::Cow;
use std::collections::HashMap;

use rmcp::model::{CallToolResult, ErrorData, JsonObject, Tool, ToolAnnotations};
use rmcp::service::{RequestContext, RoleServer};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use toolreg::provider::mcp::Mcp;
use toolreg::provider::{ToolRef, WireFormat};
use toolreg::{Principal, ToolEngine, ToolError, ToolOutput, ToolResult};

#[cfg(doc)]
use super::McpServer;
use super::result::to_call_tool_result;
use super::session::Session;
use super::{ServerOptions, policed};

use toolreg::search::Ranking;
/// The meta-tool that finds deferred tools (and loads them on a session).
pub use toolreg::search::SEARCH_TOOLS;

/// The meta-tool that runs a tool by name.
pub const CALL_TOOL: &str = "call_tool";

/// The most tools one `search_tools` call returns (it returns 5 unless
/// asked for more).
pub const MAX_SEARCH_RESULTS: usize = 20;

const DEFAULT_SEARCH_RESULTS: usize = 5;

/// In an MCP server: which tools it lists only once a client searches for
/// them.
///
/// Served with [`ServerOptions::deferred`], the tools a deferral names are
/// not listed up front. A client is offered the always-on tools (in the
/// registry's order) and two meta-tools:
///
/// - [`SEARCH_TOOLS`] (`{"query": "...", "limit": 5}`) ranks the deferred
///   tools with the registry's own BM25 index
///   ([`FunctionRegistry::search`](toolreg::FunctionRegistry::search)) and
///   answers with each found tool's name, description and input schema, at
///   most [`MAX_SEARCH_RESULTS`] of them;
/// - [`CALL_TOOL`] (`{"name": "...", "arguments": {...}}`) runs any tool of
///   the server through the same path as a direct `tools/call`: selection,
///   validation, approval (elicitation, or an `input_required` round for a
///   2026-07-28 client), audit and progress all apply to the tool it names.
///   An unknown name is a failed result (`isError: true`) that says so.
///
/// On a session — a stdio connection, or an HTTP session of a client on a
/// revision before 2026-07-28 — the tools a search finds also join that
/// session's `tools/list`, after the tools already listed, and the server
/// sends `notifications/tools/list_changed` (on a 2026-07-28 connection, on
/// its `subscriptions/listen` streams): a client that lists again calls them
/// by name. They stay for the session, as long as the server still has them.
/// A stateless HTTP server, or a 2026-07-28 request over HTTP, has no
/// session: there `search_tools` and `call_tool` are the way. A direct call
/// of a deferred tool the session has not loaded never runs: the answer
/// says to search first. When the server's tools change
/// ([`McpServer::set_engine`], as the gateway does on a remote server's
/// `list_changed`), loaded tools that are gone leave the sessions' lists and
/// new deferred tools can be searched for at once.
///
/// A tool of the registry named `search_tools` or `call_tool` is not served
/// in deferred mode (the meta-tool has its name; a warning says so).
///
/// ```
/// use toolreg_mcp::server::{Deferral, ServerOptions};
///
/// // What `toolreg serve --deferred` does: the imported MCP servers' tools
/// // (category `mcp`) are searched for, the built-ins stay listed.
/// let options = ServerOptions::default().deferred(Deferral::imported());
/// // `--deferred-past 20`: also every tool past the first 20.
/// let options = ServerOptions::default().deferred(Deferral::imported().past(20));
/// # let _ = options;
/// ```
pub use toolreg::engine::Deferral;

/// The engine and its `tools/list` answer, computed once per engine.
pub(super) struct Served {
    pub(super) engine: ToolEngine,
    pub(super) listed: Vec<Tool>,
    /// In deferred mode, `listed` split into the short list and the rest.
    pub(super) catalog: Option<Catalog>,
    /// Each tool's `execution` (the tasks extension), which rmcp's `Tool`
    /// cannot carry: added to `tools/list` answers on their way out.
    pub(super) execution: HashMap<String, Value>,
}

impl Served {
    pub(super) fn new(engine: ToolEngine, options: &ServerOptions) -> Self {
        let engine = policed(engine, options);
        let refs: Vec<ToolRef<'_>> = engine.offered().list().map(ToolRef::from).collect();
        let declared = Mcp::new().declare_partial(&refs).into_value();
        for (tool, reason) in declared.refused() {
            tracing::warn!(tool, %reason, "tool not served over MCP");
        }
        let mut execution = HashMap::new();
        let listed = match declared.tools {
            Value::Array(tools) => tools
                .into_iter()
                .inspect(|tool| {
                    if let (Some(name), Some(value)) = (tool.get("name").and_then(Value::as_str), tool.get("execution"))
                    {
                        execution.insert(name.to_owned(), value.clone());
                    }
                })
                .filter_map(|tool| match serde_json::from_value::<Tool>(tool) {
                    Ok(tool) => Some(tool),
                    Err(error) => {
                        tracing::warn!(%error, "tool not served over MCP: unreadable declaration");
                        None
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        let catalog = options.deferred.as_ref().map(|deferral| Catalog::new(&engine, &listed, deferral));
        Served { engine, listed, catalog, execution }
    }
}

/// One engine's tools split for deferred loading (computed once per engine).
pub(super) struct Catalog {
    /// What every client is offered first: the always-on tools in the
    /// registry's order, then the two meta-tools.
    listed: Vec<Tool>,
    /// The deferred tools, by name.
    deferred: HashMap<String, Tool>,
}

impl Catalog {
    /// Split `listed` (the engine's tools as MCP declares them) by `deferral`.
    pub(super) fn new(engine: &ToolEngine, listed: &[Tool], deferral: &Deferral) -> Catalog {
        let tools = engine.offered();
        let mut catalog = Catalog { listed: Vec::new(), deferred: HashMap::new() };
        for tool in listed {
            let name = tool.name.as_ref();
            if name == SEARCH_TOOLS || name == CALL_TOOL {
                // The meta-tool answers to this name; the tool stays unserved.
                tracing::warn!(tool = name, "tool not served in deferred mode: the meta-tool has its name");
                continue;
            }
            let deferred = match (tools.position(name), tools.get(name)) {
                (Some(position), Some(entry)) => deferral.defers(position, entry.declaration()),
                _ => false,
            };
            if deferred {
                catalog.deferred.insert(name.to_owned(), tool.clone());
            } else {
                catalog.listed.push(tool.clone());
            }
        }
        catalog.listed.extend(meta_tools());
        catalog
    }

    /// The deferred tools `session` loaded that are still here, in load order.
    fn loaded(&self, session: &Session) -> Vec<Tool> {
        let names = session.loaded(|name| self.deferred.contains_key(name));
        names.iter().filter_map(|name| self.deferred.get(name).cloned()).collect()
    }
}

/// The declarations of [`SEARCH_TOOLS`] and [`CALL_TOOL`].
fn meta_tools() -> [Tool; 2] {
    let object = |schema: Value| match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let search = Tool::new(
        SEARCH_TOOLS,
        "Find tools of this server that are not in your tool list yet, by what they do or by name. Answers with \
         each tool's name, description and input schema. They then join your tool list (call them by name once \
         you have listed the tools again), or run any of them with `call_tool`.",
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words, or its name."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS,
                          "description": "At most this many tools (default 5)."}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
    .with_title("Search tools")
    .with_annotations(ToolAnnotations::new().read_only(true).open_world(false));
    let call = Tool::new(
        CALL_TOOL,
        "Run a tool of this server by name, with its arguments: a tool `search_tools` found, or any tool in your \
         list. It runs exactly as a direct call would, with the same checks and approvals.",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as `search_tools` gave it."},
                "arguments": {"type": "object", "description": "The tool's arguments, as its input schema asks."}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_title("Call a tool");
    [search, call]
}

/// What a `tools/call` comes to.
pub(super) enum Route {
    /// Run this tool through the engine.
    Run { name: String, arguments: Value },
    /// Answered without running a tool: a search, or a call refused before
    /// it reached the engine.
    Answered(Box<CallToolResult>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

impl Served {
    /// The tools `tools/list` offers a client: every tool, or in deferred
    /// mode the short list and what its session (if it lasts) loaded.
    pub(super) fn offered(&self, session: Option<&Session>, principal: Option<&Principal>) -> Cow<'_, [Tool]> {
        let all = match &self.catalog {
            None => Cow::Borrowed(self.listed.as_slice()),
            Some(catalog) => {
                let loaded = session.map(|session| catalog.loaded(session)).unwrap_or_default();
                if loaded.is_empty() {
                    Cow::Borrowed(catalog.listed.as_slice())
                } else {
                    Cow::Owned(catalog.listed.iter().cloned().chain(loaded).collect())
                }
            }
        };
        if self.engine.access().is_none() {
            return all;
        }
        Cow::Owned(all.iter().filter(|tool| self.visible(principal, &tool.name)).cloned().collect())
    }

    /// Whether `principal` may see the tool `name` under the engine's
    /// access policy (every tool without one; the meta-tools always).
    pub(super) fn visible(&self, principal: Option<&Principal>, name: &str) -> bool {
        match (self.engine.access(), self.engine.offered().get(name)) {
            (Some(policy), Some(entry)) => policy.decide(principal, entry.declaration()).is_granted(),
            _ => true,
        }
    }

    /// Decide what a `tools/call` of `name` runs: the tool itself, the tool
    /// `call_tool` names, or nothing (a search; a deferred tool not loaded).
    /// An unknown tool called directly is JSON-RPC error -32602, as without
    /// deferral.
    pub(super) async fn route(
        &self,
        session: Option<&Session>,
        principal: Option<&Principal>,
        name: &str,
        arguments: Option<JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Route, ErrorData> {
        let known = |name: &str| self.engine.offered().contains(name);
        let Some(catalog) = &self.catalog else {
            if !known(name) {
                return Err(ErrorData::invalid_params(format!("unknown tool `{name}`"), None));
            }
            return Ok(Route::Run { name: name.to_owned(), arguments: Value::Object(arguments.unwrap_or_default()) });
        };
        match name {
            SEARCH_TOOLS => match parse::<SearchArgs>(SEARCH_TOOLS, arguments) {
                Ok(args) => self.search(catalog, session, principal, args, context).await,
                Err(refused) => refused,
            },
            CALL_TOOL => match parse::<CallArgs>(CALL_TOOL, arguments) {
                Ok(CallArgs { name, .. }) if name == SEARCH_TOOLS || name == CALL_TOOL => {
                    failed(CALL_TOOL, format!("Error: `{name}` is not run through `{CALL_TOOL}`: call it directly."))
                }
                Ok(CallArgs { name, .. }) if !known(&name) => failed(
                    CALL_TOOL,
                    format!(
                        "Error: unknown tool `{name}`, so nothing ran. Call `{SEARCH_TOOLS}` with what you need to \
                         find a tool's name."
                    ),
                ),
                Ok(CallArgs { name, arguments }) => {
                    Ok(Route::Run { name, arguments: Value::Object(arguments.unwrap_or_default()) })
                }
                Err(refused) => refused,
            },
            _ if !known(name) => Err(ErrorData::invalid_params(format!("unknown tool `{name}`"), None)),
            _ if catalog.deferred.contains_key(name) && !session.is_some_and(|s| s.has_loaded(name)) => {
                let advice = match session {
                    Some(_) => format!(
                        "Error: `{name}` is not loaded yet, so it did not run. Call `{SEARCH_TOOLS}` with what you \
                         need (for example its name) to load it, then call it again, or run it with `{CALL_TOOL}`."
                    ),
                    None => format!(
                        "Error: `{name}` is not in this server's tool list, so it did not run. Find it with \
                         `{SEARCH_TOOLS}`, then run it with `{CALL_TOOL}` ({{\"name\": \"{name}\", \"arguments\": \
                         {{...}}}})."
                    ),
                };
                failed(name, advice)
            }
            _ => Ok(Route::Run { name: name.to_owned(), arguments: Value::Object(arguments.unwrap_or_default()) }),
        }
    }

    /// Run a search; on a session, load what it found and tell the client.
    async fn search(
        &self,
        catalog: &Catalog,
        session: Option<&Session>,
        principal: Option<&Principal>,
        args: SearchArgs,
        context: &RequestContext<RoleServer>,
    ) -> Result<Route, ErrorData> {
        let limit = args.limit.unwrap_or(DEFAULT_SEARCH_RESULTS).clamp(1, MAX_SEARCH_RESULTS);
        let hits = self.engine.offered().search_where(&args.query, limit, |name| {
            catalog.deferred.contains_key(name) && self.visible(principal, name)
        });
        let found: Vec<&Tool> = hits.iter().filter_map(|hit| catalog.deferred.get(&hit.name)).collect();
        let listed: Vec<Value> = found
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}))
            .collect();
        let note = match session {
            _ if found.is_empty() => "No tool matches; try other words (what the tool does, or its name).".to_owned(),
            Some(session) => {
                if session.load(found.iter().map(|tool| tool.name.to_string())) {
                    session.announce(context).await;
                }
                format!(
                    "These tools are now in your tool list: call them by name (list the tools again if your client \
                     has not yet), or run any of them with `{CALL_TOOL}`."
                )
            }
            None => format!("Run them with `{CALL_TOOL}`: {{\"name\": \"<tool>\", \"arguments\": {{...}}}}."),
        };
        // Which search answered: keywords until a search model's tool vectors are ready.
        let search = hits.first().map_or(Ranking::Keyword, |hit| hit.ranking);
        let output = ToolOutput::new(json!({"tools": listed, "note": note, "search": search}));
        answer(SEARCH_TOOLS, Ok(output))
    }
}

/// A meta-tool's arguments, or the failed result that says what is wrong.
fn parse<T: DeserializeOwned>(tool: &str, arguments: Option<JsonObject>) -> Result<T, Result<Route, ErrorData>> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|error| {
        failed(tool, format!("Error: invalid arguments for `{tool}`: {error}. Fix them and call again."))
    })
}

fn failed(tool: &str, message: String) -> Result<Route, ErrorData> {
    answer(tool, Err(ToolError::failed(message)))
}

fn answer(tool: &str, outcome: Result<ToolOutput, ToolError>) -> Result<Route, ErrorData> {
    let result = ToolResult { id: String::new(), name: tool.to_owned(), outcome };
    to_call_tool_result(&result).map(|result| Route::Answered(Box::new(result)))
}
