//! Deferred loading: which tools a run offers the model at each step.
//!
//! With a [`Deferral`], the tools it names are not offered up front: the
//! model gets the always-on tools and `search_tools` (an agent function,
//! see [`AgentTools`](super::functions::AgentTools)); what a search finds
//! joins the next request, appended after the tools already offered (so the
//! prompt's prefix stays the same for providers' prompt caching) and stays
//! for the rest of the run, suspensions included. A call to a deferred tool
//! not loaded yet never runs: the model is told to search first.
//!
//! With a client whose provider searches natively
//! ([`LlmClient::native_tool_search`](crate::LlmClient::native_tool_search):
//! Anthropic), every tool is in every request, the deferred ones declared
//! with the provider's deferred loading, and `search_tools`' answer goes to
//! the model as the provider's references to the tools it found
//! ([`tool_references`](toolreg::provider::tool_references)): the provider
//! shows them then, and the request's tools never change. The search is
//! the same local one either way; so is the refusal of a deferred tool
//! called before a search found it.

use std::collections::HashSet;

use toolreg::search::SearchHit;
use toolreg::{FunctionRegistry, ToolDeclaration, ToolError, ToolResult};

use crate::model::OfferedTool;

/// The agent function that loads deferred tools.
pub const SEARCH_TOOLS: &str = "search_tools";

/// Which tools a run loads only when the model searches for them.
///
/// ```
/// use toolreg_llm::agent::Deferral;
///
/// // Every tool of the MCP servers, and anything past the first 20 tools.
/// let deferral = Deferral::new().categories(["mcp"]).past(20);
/// # let _ = deferral;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deferral {
    /// Tools deferred by name.
    pub tools: HashSet<String>,
    /// Tools deferred by category (an imported MCP server's tools carry the
    /// categories `mcp` and the server's name).
    pub categories: HashSet<String>,
    /// Every tool past this many, in registration order.
    pub past: Option<usize>,
}

impl Deferral {
    /// Nothing deferred.
    pub fn new() -> Self {
        Self::default()
    }

    /// Defer these tools.
    pub fn tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Defer the tools of these categories.
    pub fn categories<S: Into<String>>(mut self, categories: impl IntoIterator<Item = S>) -> Self {
        self.categories.extend(categories.into_iter().map(Into::into));
        self
    }

    /// Defer every tool past the first `n`.
    pub fn past(mut self, n: usize) -> Self {
        self.past = Some(n);
        self
    }

    /// Whether anything is deferred at all.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.categories.is_empty() && self.past.is_none()
    }

    /// Whether the tool at `position` (registration order) is deferred.
    /// `search_tools` itself never is.
    pub fn defers(&self, position: usize, tool: &ToolDeclaration) -> bool {
        tool.name != SEARCH_TOOLS
            && (self.tools.contains(&tool.name)
                || tool.categories.iter().any(|c| self.categories.contains(c))
                || self.past.is_some_and(|n| position >= n))
    }

    /// The best `limit` deferred tools for `query` that are not loaded
    /// yet. The search runs on the registry's own index (built once for a
    /// run's tools), keeping only tools that could be loaded.
    pub fn search(&self, tools: &FunctionRegistry, loaded: &[String], query: &str, limit: usize) -> Vec<SearchHit> {
        // Checked on the tools that match, not on the whole catalog.
        tools.search_where(query, limit, |name| self.holds(tools, name) && !loaded.iter().any(|l| l == name))
    }

    /// The tools a request offers: the always-on ones in registration
    /// order, then the loaded ones in the order they were loaded.
    pub(super) fn offered(&self, tools: &FunctionRegistry, loaded: &[String]) -> Vec<OfferedTool> {
        let mut offered: Vec<OfferedTool> = tools
            .entries()
            .enumerate()
            // Nothing deferred, nothing to search for.
            .filter(|(_, entry)| !(self.is_empty() && entry.declaration().name == SEARCH_TOOLS))
            .filter(|(i, entry)| !self.defers(*i, entry.declaration()))
            .map(|(_, entry)| OfferedTool::from(entry))
            .collect();
        offered.extend(loaded.iter().filter_map(|name| tools.get(name)).map(OfferedTool::from));
        offered
    }

    /// The tools a request offers when the provider searches natively
    /// ([`LlmClient::native_tool_search`](crate::LlmClient::native_tool_search)):
    /// every tool, in registration order, from the first request to the
    /// last, and the names of the deferred ones, which the client declares
    /// with the provider's deferred loading. The request's tools never
    /// change; what a search finds reaches the model as the provider's
    /// references to it, in the search's result.
    pub(super) fn offered_native(&self, tools: &FunctionRegistry) -> (Vec<OfferedTool>, HashSet<String>) {
        let mut deferred = HashSet::new();
        let offered = tools
            .entries()
            .enumerate()
            .inspect(|(i, entry)| {
                if self.defers(*i, entry.declaration()) {
                    deferred.insert(entry.declaration().name.clone());
                }
            })
            .map(|(_, entry)| OfferedTool::from(entry))
            .collect();
        (offered, deferred)
    }

    /// Whether `name` is a tool of `tools` this deferral holds back.
    pub(super) fn holds(&self, tools: &FunctionRegistry, name: &str) -> bool {
        matches!((tools.position(name), tools.get(name)), (Some(i), Some(entry)) if self.defers(i, entry.declaration()))
    }

    /// A refused call's answer, told to search first when the tool is a
    /// deferred one the model has not loaded.
    pub(super) fn explain(&self, tools: &FunctionRegistry, mut refused: ToolResult) -> ToolResult {
        if self.holds(tools, &refused.name) {
            refused.outcome = Err(ToolError::failed(format!(
                "Error: `{}` is not loaded yet, so it did not run. Call `{SEARCH_TOOLS}` with what you need \
                 (for example its name) to load it, then call it again.",
                refused.name
            )));
        }
        refused
    }
}
