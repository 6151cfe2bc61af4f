//! Deferred loading: which of the tools an engine offers are held back
//! from a model until it searches for them. The agent loop and the MCP
//! server both decide with one [`Deferral`], over [`OfferedTools`].

use std::collections::HashSet;

use super::OfferedTools;
use crate::declaration::ToolDeclaration;
use crate::search::{SEARCH_TOOLS, SearchHit};

/// Which tools are held back until they are searched for: by name, by
/// category, or every tool past the first N (registration order). The
/// agent loop (`toolreg_llm::agent::AgentBuilder::defer`) and the MCP
/// gateway (`toolreg_mcp::server::ServerOptions::deferred`) both take one.
///
/// ```
/// use toolreg::engine::Deferral;
/// use toolreg::ToolDeclaration;
///
/// // Every tool of the imported MCP servers, and anything past the first 20.
/// let deferral = Deferral::imported().past(20);
/// let imported = ToolDeclaration::builder("github__create_issue").category("mcp").build();
/// let local = ToolDeclaration::builder("read_file").build();
/// assert!(deferral.defers(0, &imported));
/// assert!(!deferral.defers(0, &local) && deferral.defers(20, &local));
///
/// // Everything but one tool (what `toolreg serve --code-mode` serves).
/// let code = Deferral::new().past(0).keep(["run_code"]);
/// assert!(code.defers(0, &local));
/// assert!(!code.defers(5, &ToolDeclaration::builder("run_code").build()));
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
    /// Tools never deferred, whatever else says so (code mode's
    /// `run_code` in front of a deferred catalog).
    pub kept: HashSet<String>,
}

impl Deferral {
    /// Nothing deferred.
    pub fn new() -> Self {
        Self::default()
    }

    /// The imported MCP servers' tools (category `mcp`) deferred.
    pub fn imported() -> Self {
        Self::new().categories(["mcp"])
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

    /// Never defer these tools.
    pub fn keep<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.kept.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether anything is deferred at all.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.categories.is_empty() && self.past.is_none()
    }

    /// Whether the tool at `position` (registration order) is deferred.
    /// [`SEARCH_TOOLS`] itself never is.
    pub fn defers(&self, position: usize, tool: &ToolDeclaration) -> bool {
        tool.name != SEARCH_TOOLS
            && !self.kept.contains(&tool.name)
            && (self.tools.contains(&tool.name)
                || tool.categories.iter().any(|c| self.categories.contains(c))
                || self.past.is_some_and(|n| position >= n))
    }

    /// Whether `name` is a tool of `tools` this deferral holds back.
    pub fn holds(&self, tools: &OfferedTools, name: &str) -> bool {
        let Some(tool) = tools.get(name).map(|entry| entry.declaration()) else { return false };
        // The position is looked up only when it decides.
        tool.name != SEARCH_TOOLS
            && !self.kept.contains(&tool.name)
            && (self.tools.contains(&tool.name)
                || tool.categories.iter().any(|c| self.categories.contains(c))
                || self.past.is_some_and(|n| tools.position(name).is_some_and(|i| i >= n)))
    }

    /// The best `limit` deferred tools of `tools` for `query` that are not
    /// in `loaded`, ranked by the registry's own index.
    pub fn search(&self, tools: &OfferedTools, loaded: &[String], query: &str, limit: usize) -> Vec<SearchHit> {
        // Checked on the tools that match, not on the whole catalog.
        tools.search_where(query, limit, |name| self.holds(tools, name) && !loaded.iter().any(|l| l == name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferral_decides_by_name_category_and_position_never_search_tools() {
        let mcp = ToolDeclaration::builder("fs__read").description("Read.").build().with_category("mcp");
        let plain = ToolDeclaration::builder("echo").description("Echo.").build();
        assert!(Deferral::imported().defers(0, &mcp));
        assert!(!Deferral::imported().defers(0, &plain));
        assert!(Deferral::new().tools(["echo"]).defers(0, &plain));
        assert!(!Deferral::new().past(2).defers(1, &plain));
        assert!(Deferral::new().past(2).defers(2, &plain));
        assert!(!Deferral::new().defers(100, &mcp));
        let search = ToolDeclaration::builder(SEARCH_TOOLS).description("Find tools.").build();
        assert!(!Deferral::new().past(0).tools([SEARCH_TOOLS]).defers(5, &search));
    }
}
