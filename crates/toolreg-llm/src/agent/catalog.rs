//! Deferred loading: which tools a run offers the model at each step.
//!
//! With a [`Deferral`], the tools it names are not offered up front: the
//! model gets the always-on tools and `search_tools` (an agent function,
//! see [`AgentTools`](super::functions::AgentTools)); what a search finds
//! joins the next request, appended after the tools already offered (so the
//! prompt's prefix stays the same for providers' prompt caching) and stays
//! for the rest of the run, suspensions included. A call to a deferred tool
//! not loaded yet never runs: the model is told to search first.

use toolreg::{FunctionRegistry, ToolError, ToolResult};

use crate::model::OfferedTool;

pub use toolreg::search::{Deferral, SEARCH_TOOLS};

/// The tools a request offers: the always-on ones in registration order,
/// then the loaded ones in the order they were loaded.
pub(super) fn offered(deferral: &Deferral, tools: &FunctionRegistry, loaded: &[String]) -> Vec<OfferedTool> {
    let mut offered: Vec<OfferedTool> = tools
        .entries()
        .enumerate()
        // Nothing deferred, nothing to search for.
        .filter(|(_, entry)| !(deferral.is_empty() && entry.declaration().name == SEARCH_TOOLS))
        .filter(|(i, entry)| !deferral.defers(*i, entry.declaration()))
        .map(|(_, entry)| OfferedTool::from(entry))
        .collect();
    offered.extend(loaded.iter().filter_map(|name| tools.get(name)).map(OfferedTool::from));
    offered
}

/// A refused call's answer, told to search first when the tool is a
/// deferred one the model has not loaded.
pub(super) fn explain(deferral: &Deferral, tools: &FunctionRegistry, mut refused: ToolResult) -> ToolResult {
    if deferral.holds(tools, &refused.name) {
        refused.outcome = Err(ToolError::failed(format!(
            "Error: `{}` is not loaded yet, so it did not run. Call `{SEARCH_TOOLS}` with what you need \
                 (for example its name) to load it, then call it again.",
            refused.name
        )));
    }
    refused
}
