//! A realistic large tool catalog for toolreg's search and deferred loading:
//! the hand-written MCP server tools of `data/tools.txt`, the labelled
//! requests of `data/queries.txt` (the tuning set) and `data/heldout.txt`
//! (the held-out set), and the always-on core an agent keeps
//! (toolreg's file tools, user tools and agent functions, `search_tools`
//! among them). See the README for what the bench measures.
//!
//! [`code_task`] is the multi-step task of the code-mode bench (issue 22):
//! the same work done by direct tool calls and by one program.

pub mod code_task;

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use toolreg::{FunctionRegistry, ToolDeclaration, ToolRegistration};
use toolreg_builtins::Builtins;
use toolreg_builtins::user::InProcessChannel;
use toolreg_llm::agent::Deferral;
use toolreg_llm::agent::functions::AgentTools;

/// The hand-written tools, as the gateway imports them.
pub const TOOLS: &str = include_str!("../data/tools.txt");
/// The labelled requests the index was tuned on.
pub const QUERIES: &str = include_str!("../data/queries.txt");
/// The held-out labelled requests: written before any tuning was measured
/// against them, and never tuned on.
pub const HELDOUT: &str = include_str!("../data/heldout.txt");

/// The gateway's separator between a server's name and its tool's.
pub const SEPARATOR: &str = "__";

/// One tool of `data/tools.txt`.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The MCP server it comes from.
    pub server: String,
    /// Its name on that server.
    pub name: String,
    /// What the server says it does.
    pub description: String,
    /// Its input schema, as the server lists it.
    pub input_schema: Value,
}

impl Spec {
    /// The declaration the gateway registers for it: `<server>__<name>`,
    /// categories `mcp` and the server's name. `copy` > 0 stands for the
    /// same server connected again (another account or workspace), named
    /// `<server>_<copy + 1>`.
    pub fn declaration(&self, copy: usize) -> ToolDeclaration {
        let server = if copy == 0 { self.server.clone() } else { format!("{}_{}", self.server, copy + 1) };
        ToolDeclaration::new(
            format!("{server}{SEPARATOR}{}", self.name),
            self.description.clone(),
            self.input_schema.clone(),
        )
        .with_category("mcp")
        .with_category(server)
    }
}

/// Why a line of the data files could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)
    }
}

impl std::error::Error for DataError {}

/// The tools of a `data/tools.txt`-style text, in file order.
pub fn parse_tools(text: &str) -> Result<Vec<Spec>, DataError> {
    let mut server: Option<String> = None;
    let mut specs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let error = |reason: String| DataError { line: i + 1, reason };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("@server ") {
            server = Some(name.trim().to_owned());
            continue;
        }
        let server = server.clone().ok_or_else(|| error("a tool before any `@server` line".into()))?;
        let mut parts = line.splitn(3, '|').map(str::trim);
        let (Some(name), Some(description), Some(params)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(error("expected `name | description | params`".into()));
        };
        if name.is_empty() || description.is_empty() {
            return Err(error("empty name or description".into()));
        }
        specs.push(Spec {
            server,
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema(params).map_err(error)?,
        });
    }
    Ok(specs)
}

/// `p:type:description ; q?:type:description` as a JSON Schema object.
fn schema(params: &str) -> Result<Value, String> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in params.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let mut fields = param.splitn(3, ':');
        let (Some(name), Some(ty), Some(description)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!("parameter `{param}`: expected `name:type:description`"));
        };
        let (name, optional) = match name.strip_suffix('?') {
            Some(name) => (name, true),
            None => (name, false),
        };
        let mut property = match ty {
            "string" | "integer" | "number" | "boolean" | "object" => json!({"type": ty}),
            "string[]" => json!({"type": "array", "items": {"type": "string"}}),
            other => return Err(format!("parameter `{name}`: unknown type `{other}`")),
        };
        property["description"] = Value::String(description.trim().to_owned());
        if properties.insert(name.to_owned(), property).is_some() {
            return Err(format!("parameter `{name}` given twice"));
        }
        if !optional {
            required.push(Value::String(name.to_owned()));
        }
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    Ok(schema)
}

/// The hand-written tools of `data/tools.txt`.
pub fn specs() -> Vec<Spec> {
    parse_tools(TOOLS).unwrap_or_else(|e| panic!("data/tools.txt: {e}"))
}

/// `n` MCP tool declarations: the hand-written ones in file order, then
/// the same servers connected again (`github_2__create_issue`, …) until
/// there are `n`.
pub fn mcp_declarations(n: usize) -> Vec<ToolDeclaration> {
    let specs = specs();
    (0..n).map(|i| specs[i % specs.len()].declaration(i / specs.len())).collect()
}

/// The always-on core: toolreg's five file tools (over the temp
/// directory), three user tools and five agent functions (`search_tools`
/// among them): 13 tools.
pub fn core_registrations() -> Vec<ToolRegistration> {
    let (channel, _inbox) = InProcessChannel::new();
    let mut core = Builtins::new()
        .files(std::env::temp_dir())
        .user(channel)
        .registrations()
        .unwrap_or_else(|e| panic!("built-ins: {e}"));
    core.extend(AgentTools::new().registrations());
    core
}

/// A registry of `n` tools: the core, then `n - 13` MCP tools. Every MCP
/// tool answers `null` (only declarations and search are measured).
pub fn registry(n: usize) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let core = core_registrations();
    let mcp = n.saturating_sub(core.len());
    toolreg::register_tools!(registry, core).unwrap_or_else(|e| panic!("core: {e}"));
    for declaration in mcp_declarations(mcp) {
        let name = declaration.name.clone();
        registry
            .register_sync_tool(&name, |_: Value| Ok::<_, String>(Value::Null), declaration)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    registry
}

/// The number of tools in the core.
pub fn core_len() -> usize {
    core_registrations().len()
}

/// One labelled request.
#[derive(Debug, Clone)]
pub struct Labelled {
    /// What is asked, as a user or a model would put it.
    pub request: String,
    /// The tools that answer it (finding any one counts).
    pub answers: Vec<String>,
}

/// The requests of a `data/queries.txt`-style text.
pub fn parse_queries(text: &str) -> Result<Vec<Labelled>, DataError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((request, answers)) = line.split_once("=>") else {
            return Err(DataError { line: i + 1, reason: "expected `request => tool, tool`".into() });
        };
        let answers: Vec<String> =
            answers.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect();
        if request.trim().is_empty() || answers.is_empty() {
            return Err(DataError { line: i + 1, reason: "empty request or no answer".into() });
        }
        out.push(Labelled { request: request.trim().to_owned(), answers });
    }
    Ok(out)
}

/// The labelled requests of `data/queries.txt` (the tuning set).
pub fn queries() -> Vec<Labelled> {
    parse_queries(QUERIES).unwrap_or_else(|e| panic!("data/queries.txt: {e}"))
}

/// The labelled requests of `data/heldout.txt` (the held-out set).
pub fn heldout() -> Vec<Labelled> {
    parse_queries(HELDOUT).unwrap_or_else(|e| panic!("data/heldout.txt: {e}"))
}

/// Recall of one ranked list per request: the share of requests with an
/// answer among the first `k` names.
pub fn recall_at(queries: &[Labelled], ranked: &[Vec<String>], k: usize) -> f64 {
    let hits = queries.iter().zip(ranked).filter(|(q, r)| r.iter().take(k).any(|n| q.answers.contains(n))).count();
    hits as f64 / queries.len().max(1) as f64
}

/// The names of the gateway tools of `data/tools.txt` (copy 0).
pub fn tool_names() -> HashSet<String> {
    specs().iter().map(|s| s.declaration(0).name).collect()
}

/// The deferral the bench measures: every MCP server's tools held back,
/// the core always offered.
pub fn deferral() -> Deferral {
    Deferral::new().categories(["mcp"])
}

/// The tools a request offers before any search: those `deferral` keeps,
/// in registration order (the agent's first request).
pub fn always_on<'a>(registry: &'a FunctionRegistry, deferral: &Deferral) -> Vec<&'a str> {
    registry
        .list()
        .enumerate()
        .filter(|(i, entry)| !deferral.defers(*i, entry.declaration()))
        .map(|(_, entry)| entry.declaration().name.as_str())
        .collect()
}

/// The tools a request offers after one `search_tools` call for `query`
/// with the default limit (5): the always-on ones, then what it found.
pub fn after_search(registry: &FunctionRegistry, deferral: &Deferral, query: &str) -> Vec<String> {
    let mut offered: Vec<String> = always_on(registry, deferral).into_iter().map(str::to_owned).collect();
    // A deferral searches what an engine offers: here, every tool.
    let engine = toolreg::ToolEngine::builder(registry).build();
    offered.extend(deferral.search(engine.offered(), &[], query, SEARCH_LIMIT).into_iter().map(|hit| hit.name));
    offered
}

/// How many tools `search_tools` loads when the model gives no limit.
pub const SEARCH_LIMIT: usize = 5;
