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
//! Anthropic, OpenAI Responses), every tool is in every request, the
//! deferred ones declared with the provider's deferred loading, and
//! `search_tools`' answer goes to the model as the provider's references to
//! the tools it found ([`tool_references`](toolreg::provider::tool_references)):
//! the provider shows them then, and the request's tools never change. For
//! OpenAI Responses `search_tools` is declared as the client-executed
//! `tool_search` tool ([`ModelRequest::search_tool`]): the model's
//! `tool_search_call` is a call of `search_tools` (same arguments), and its
//! answer a `tool_search_output` with the found tools' definitions. The search is
//! the same local one either way; so is the refusal of a deferred tool
//! called before a search found it.

use std::collections::HashSet;

use toolreg::engine::OfferedTools;
use toolreg::{ToolError, ToolResult};

use crate::model::{ModelRequest, OfferedTool};

pub use toolreg::engine::Deferral;
pub use toolreg::search::SEARCH_TOOLS;

/// The tools a request offers: the always-on ones in registration order,
/// then the loaded ones in the order they were loaded.
pub(super) fn offered(deferral: &Deferral, tools: &OfferedTools, loaded: &[String]) -> Vec<OfferedTool> {
    let mut offered: Vec<OfferedTool> = tools
        .list()
        .enumerate()
        // Nothing deferred, nothing to search for.
        .filter(|(_, entry)| !(deferral.is_empty() && entry.declaration().name == SEARCH_TOOLS))
        .filter(|(i, entry)| !deferral.defers(*i, entry.declaration()))
        .map(|(_, entry)| OfferedTool::from(entry))
        .collect();
    offered.extend(loaded.iter().filter_map(|name| tools.get(name)).map(OfferedTool::from));
    offered
}

/// The tools a request offers when the provider searches natively
/// ([`LlmClient::native_tool_search`](crate::LlmClient::native_tool_search)):
/// every tool, in registration order, from the first request to the last,
/// and the names of the deferred ones, which the client declares with the
/// provider's deferred loading. The request's tools never change; what a
/// search finds reaches the model as the provider's references to it, in
/// the search's result.
pub(super) fn offered_native(deferral: &Deferral, tools: &OfferedTools) -> (Vec<OfferedTool>, HashSet<String>) {
    let mut deferred = HashSet::new();
    let offered = tools
        .list()
        .enumerate()
        .inspect(|(i, entry)| {
            if deferral.defers(*i, entry.declaration()) {
                deferred.insert(entry.declaration().name.clone());
            }
        })
        .map(|(_, entry)| OfferedTool::from(entry))
        .collect();
    (offered, deferred)
}

/// Set the tools `request` offers: with native search, every tool (the
/// deferred ones marked); otherwise the always-on ones and those loaded.
pub(super) fn offer(
    request: &mut ModelRequest,
    deferral: &Deferral,
    tools: &OfferedTools,
    loaded: &[String],
    native: bool,
) {
    if native {
        (request.tools, request.deferred_tools) = offered_native(deferral, tools);
        // `search_tools` is the provider's search entry point where it has
        // one the client executes (OpenAI Responses' `tool_search`).
        request.search_tool = request.tools.iter().any(|t| t.name == SEARCH_TOOLS).then(|| SEARCH_TOOLS.to_owned());
    } else {
        request.tools = offered(deferral, tools, loaded);
    }
}

/// A refused call's answer, told to search first when the tool is a
/// deferred one the model has not loaded.
pub(super) fn explain(deferral: &Deferral, tools: &OfferedTools, mut refused: ToolResult) -> ToolResult {
    if deferral.holds(tools, &refused.name) {
        refused.outcome = Err(ToolError::failed(format!(
            "Error: `{}` is not loaded yet, so it did not run. Call `{SEARCH_TOOLS}` with what you need \
                 (for example its name) to load it, then call it again.",
            refused.name
        )));
    }
    refused
}
