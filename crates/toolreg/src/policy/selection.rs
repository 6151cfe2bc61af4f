//! [`Selection`]: which tools an agent is offered; applied to a registry, it
//! gives the registry of the offered tools.

use std::collections::HashSet;

use crate::declaration::{SafetyLevel, Scope, ToolDeclaration};
use crate::registry::FunctionRegistry;

/// Which tools an agent is offered.
///
/// A tool is selected when it passes every filter that is set (AND):
/// safety at most [`max_safety`](Self::max_safety), at least one category in
/// common with [`categories`](Self::categories), a scope among
/// [`scopes`](Self::scopes), its name in the [`allow`](Self::allow) list and
/// not in the [`deny`](Self::deny) list. A filter left unset admits every tool.
///
/// ```
/// use toolreg::policy::Selection;
/// use toolreg::{SafetyLevel, Scope, ToolDeclaration};
/// use serde_json::json;
///
/// let read = ToolDeclaration::new("read_file", "Read a file", json!({"type": "object"}))
///     .with_safety(SafetyLevel::Safe)
///     .with_category("fs");
/// let ask = ToolDeclaration::new("ask_user", "Ask the user", json!({"type": "object"}))
///     .with_safety(SafetyLevel::Safe)
///     .with_scope(Scope::User);
///
/// let selection = Selection::sub_agent().max_safety(SafetyLevel::Cautious);
/// assert!(selection.admits(&read));
/// assert!(!selection.admits(&ask)); // user tools are for top-level agents only
/// assert!(Selection::top_level().admits(&ask));
/// assert!(!Selection::all().categories(["web"]).admits(&read));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    max_safety: SafetyLevel,
    categories: Option<HashSet<String>>,
    scopes: Option<Vec<Scope>>,
    allow: Option<HashSet<String>>,
    deny: HashSet<String>,
}

impl Default for Selection {
    fn default() -> Self {
        Selection::all()
    }
}

impl Selection {
    /// Every tool.
    pub fn all() -> Self {
        Selection {
            max_safety: SafetyLevel::Dangerous,
            categories: None,
            scopes: None,
            allow: None,
            deny: HashSet::new(),
        }
    }

    /// What a top-level agent (the one talking to the user) sees: every
    /// scope, user functions included.
    pub fn top_level() -> Self {
        Selection::all()
    }

    /// What a sub-agent sees: every scope but [`Scope::User`], since only the
    /// top-level agent may talk to the user.
    pub fn sub_agent() -> Self {
        Selection::all().scopes([Scope::Core, Scope::Agent, Scope::Custom])
    }

    /// Admit only tools at most this dangerous.
    pub fn max_safety(mut self, level: SafetyLevel) -> Self {
        self.max_safety = level;
        self
    }

    /// Admit only tools with at least one of these categories.
    pub fn categories<S: Into<String>>(mut self, categories: impl IntoIterator<Item = S>) -> Self {
        self.categories = Some(categories.into_iter().map(Into::into).collect());
        self
    }

    /// Admit only tools in one of these scopes.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = Scope>) -> Self {
        self.scopes = Some(scopes.into_iter().collect());
        self
    }

    /// Admit only tools with these names.
    pub fn allow<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.allow = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Never admit tools with these names (adds to any earlier deny list).
    pub fn deny<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.deny.extend(names.into_iter().map(Into::into));
        self
    }

    /// The highest safety level admitted.
    pub fn safety_limit(&self) -> SafetyLevel {
        self.max_safety
    }

    /// Whether this selection admits the tool.
    pub fn admits(&self, declaration: &ToolDeclaration) -> bool {
        declaration.safety <= self.max_safety
            && self.categories.as_ref().is_none_or(|wanted| declaration.categories.iter().any(|c| wanted.contains(c)))
            && self.scopes.as_ref().is_none_or(|scopes| scopes.contains(&declaration.scope))
            && self.allow.as_ref().is_none_or(|allow| allow.contains(&declaration.name))
            && (self.deny.is_empty() || !self.deny.contains(&declaration.name))
    }

    /// The tools of `registry` this selection admits: a registry holding
    /// only them, in registration order, their entries shared (the
    /// declarations to offer a model). A [`ToolEngine`](crate::engine::ToolEngine)
    /// built with the same selection runs their calls and refuses every
    /// other tool ([`ToolEngine::offered`](crate::engine::ToolEngine::offered)
    /// is this set).
    ///
    /// ```
    /// use toolreg::engine::ToolEngine;
    /// use toolreg::policy::Selection;
    /// use toolreg::{CallOptions, FunctionRegistry, SafetyLevel, ToolCall, ToolDeclaration, ToolExecutor};
    /// use serde_json::{json, Value};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut registry = FunctionRegistry::new();
    /// let decl = |name: &str, safety| ToolDeclaration::new(name, "t", json!({"type": "object"})).with_safety(safety);
    /// registry.register_sync_tool("look", |_: Value| Ok::<_, String>("seen"), decl("look", SafetyLevel::Safe))?;
    /// registry.register_sync_tool("wipe", |_: Value| Ok::<_, String>("gone"), decl("wipe", SafetyLevel::Dangerous))?;
    ///
    /// let selection = Selection::all().max_safety(SafetyLevel::Cautious);
    /// let offered = selection.apply(&registry);
    /// assert_eq!(offered.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["look"]); // declare these
    ///
    /// let engine = ToolEngine::builder(&registry).selection(selection).build();
    /// let result = engine.execute_call(ToolCall::new("c1", "wipe", "{}"), CallOptions::default()).await;
    /// assert!(result.is_error()); // not offered, so not run
    /// assert!(result.text().contains("not available"));
    /// # Ok::<(), toolreg::RegistryError>(())
    /// # }).unwrap();
    /// ```
    pub fn apply(&self, registry: &FunctionRegistry) -> FunctionRegistry {
        registry.filtered(|declaration| self.admits(declaration))
    }
}
