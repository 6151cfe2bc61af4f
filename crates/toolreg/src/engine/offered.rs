//! [`OfferedTools`]: the tools an engine offers, to read and declare.

use std::fmt;
use std::sync::Arc;

use crate::declaration::ToolDeclaration;
use crate::registry::{FunctionRegistry, ToolEntry};
#[cfg(feature = "search")]
use crate::search::SearchHit;

/// The tools a [`ToolEngine`](super::ToolEngine) offers (those its
/// selection admits), to declare to a model, look up and search: read-only.
///
/// Nothing here runs a tool or hands out its function: a call to an
/// engine's tool goes through the engine, so that its selection, approver,
/// hooks and audit see it.
///
/// ```
/// use toolreg::engine::ToolEngine;
/// use toolreg::policy::Selection;
/// use toolreg::{tool, FunctionRegistry, SafetyLevel};
///
/// /// Delete a file.
/// #[tool(safety = "dangerous")]
/// fn delete_file(path: String) -> String { path }
///
/// /// Read a file.
/// #[tool(safety = "safe")]
/// fn read_file(path: String) -> String { path }
///
/// # fn main() -> Result<(), toolreg::RegistryError> {
/// let mut registry = FunctionRegistry::new();
/// toolreg::register_tools!(registry, [delete_file_tool, read_file_tool])?;
/// let engine = ToolEngine::builder(&registry).selection(Selection::all().max_safety(SafetyLevel::Safe)).build();
/// assert_eq!(engine.offered().list().map(|tool| tool.name()).collect::<Vec<_>>(), ["read_file"]);
/// assert!(!engine.offered().contains("delete_file"));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct OfferedTools {
    /// The selected tools, their entries shared with the engine's registry.
    pub(crate) registry: FunctionRegistry,
}

impl fmt::Debug for OfferedTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.registry.list().map(ToolEntry::name)).finish()
    }
}

impl OfferedTools {
    /// The offered tool with this name.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.registry.get(name)
    }

    /// Whether a tool of this name is offered.
    pub fn contains(&self, name: &str) -> bool {
        self.registry.contains(name)
    }

    /// Where the tool with this name stands among the offered ones, in
    /// registration order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.registry.position(name)
    }

    /// Number of tools offered.
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no tool is offered.
    pub fn is_empty(&self) -> bool {
        self.registry.is_empty()
    }

    /// The offered tools, in registration order (see
    /// [`FunctionRegistry::list`]).
    pub fn list(&self) -> impl ExactSizeIterator<Item = &ToolEntry> + '_ {
        self.registry.list()
    }

    /// The offered tools' declarations, shared (see
    /// [`FunctionRegistry::get_declarations`]).
    pub fn get_declarations(&self) -> Vec<Arc<ToolDeclaration>> {
        self.registry.get_declarations()
    }

    #[cfg(feature = "search")]
    /// The `limit` offered tools that best match `query` (see
    /// [`FunctionRegistry::search`]).
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.registry.search(query, limit)
    }

    #[cfg(feature = "search")]
    /// [`search`](Self::search) among the tools whose name `keep` admits.
    pub fn search_where(&self, query: &str, limit: usize, keep: impl Fn(&str) -> bool) -> Vec<SearchHit> {
        self.registry.search_where(query, limit, keep)
    }
}
