//! [`FunctionRegistry`]: every tool's function and declaration in one entry.

use std::fmt::{self, Display};
use std::future::Future;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::args::ArgumentLimits;
use crate::declaration::ToolDeclaration;
use crate::exec::ToolError;
use crate::handler::{Async, Blocking, ErasedTool, Erasure, ToolHandler};
#[cfg(feature = "providers")]
use crate::provider::{LoweredSchemas, ToolRef};
use crate::schema::{self, CachedSchema};
#[cfg(feature = "search")]
use crate::search::{Embeddings, RegistrySearch, SearchError, SearchHit};
use crate::validate::ArgumentValidator;

/// Why a registration (or removal) was refused. The registry is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The name given does not match the declaration's name.
    #[error("tool name `{name}` does not match declaration name `{declaration_name}`")]
    NameMismatch {
        /// The name the function was registered under.
        name: String,
        /// The name in its declaration.
        declaration_name: String,
    },
    /// A tool with this name is already registered; use `replace` to overwrite.
    #[error("tool `{name}` is already registered")]
    DuplicateTool {
        /// The name.
        name: String,
    },
    /// The name breaks the rule every provider accepts.
    #[error("invalid tool name `{name}`: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Which part of the rule it breaks.
        reason: String,
    },
    /// No tool has this name.
    #[error("no tool named `{name}`")]
    NotFound {
        /// The name.
        name: String,
    },
    /// The declaration's input schema cannot be used to check arguments.
    #[error("tool `{name}` has an unusable input schema: {reason}")]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// One of the declaration's example arguments
    /// ([`input_examples`](ToolDeclaration::input_examples)) does not fit
    /// its input schema.
    #[error("tool `{name}`: example {index} does not fit the input schema: {reason}")]
    InvalidExample {
        /// The tool.
        name: String,
        /// The example's position, from 0.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
}

pub use crate::name_rule::MAX_NAME_LEN;

/// Check a tool name against the rule every provider accepts:
/// 1 to 64 characters from `[A-Za-z0-9_-]`.
///
/// ```
/// assert!(toolreg::validate_name("get_weather").is_ok());
/// assert!(toolreg::validate_name("server.tool").is_err());
/// ```
pub fn validate_name(name: &str) -> Result<(), RegistryError> {
    crate::name_rule::check_name(name)
        .map_err(|e| RegistryError::InvalidName { name: name.into(), reason: e.to_string() })
}

/// A function and its declaration, ready to register: what `#[tool]`
/// generates as `<fn>_tool::registration()`, or what
/// [`ToolRegistration::new`] makes of a declaration and a function.
///
/// The constructor is the only way to make one, so no function travels
/// without a declaration, and the tool's name is the declaration's.
pub struct ToolRegistration {
    declaration: ToolDeclaration,
    tool: Arc<dyn ErasedTool>,
    /// Set when the schema is exactly what serde enforces for the argument
    /// type, so a clean deserialisation needs no schema validation: the
    /// type's cached schema, whose validator all its tools share.
    serde_checked: Option<Arc<CachedSchema>>,
    preview: Option<ApprovalPreview>,
    /// The name `register_*_tool(name, ..)` was given, checked against the
    /// declaration's when registered.
    claimed_name: Option<String>,
}

/// Shows an approver what a call would do before it runs (the diff of an
/// edit, the command a shell would run). Given the validated arguments;
/// `None` when there is nothing better to show than the arguments.
pub type ApprovalPreview = Arc<dyn Fn(&serde_json::Value) -> Option<String> + Send + Sync>;

impl fmt::Debug for ToolRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistration").field("declaration", &self.declaration).finish_non_exhaustive()
    }
}

impl ToolRegistration {
    /// A tool from its declaration and the function that runs it: any
    /// [`ToolHandler`] — a synchronous or `async` function of typed
    /// arguments, with or without a [`CallContext`](crate::CallContext) first, or a hand-written
    /// [`ErasedTool`] (whose arguments are always checked against the
    /// schema before it runs). The tool is registered under the
    /// declaration's name.
    ///
    /// ```
    /// use toolreg::{FunctionRegistry, ParamType, ToolDeclaration, ToolRegistration};
    /// use serde_json::Value;
    ///
    /// let decl = ToolDeclaration::builder("echo").param("text", ParamType::String, "Text").build();
    /// let mut registry = FunctionRegistry::new();
    /// registry.register(ToolRegistration::new(decl, |args: Value| Ok::<_, String>(args["text"].clone())))?;
    /// assert!(registry.contains("echo"));
    /// # Ok::<(), toolreg::RegistryError>(())
    /// ```
    pub fn new<M>(declaration: ToolDeclaration, handler: impl ToolHandler<M>) -> Self {
        let Erasure { tool, serde_checked } = handler.into_tool(&declaration);
        ToolRegistration { declaration, tool, serde_checked, preview: None, claimed_name: None }
    }

    /// Check, when registered, that the declaration's name is `name`
    /// ([`RegistryError::NameMismatch`] otherwise): what
    /// `register_*_tool(name, ..)` promises.
    fn claiming(mut self, name: impl Into<String>) -> Self {
        self.claimed_name = Some(name.into());
        self
    }

    /// The name the tool is registered under: the declaration's.
    pub fn name(&self) -> &str {
        &self.declaration.name
    }

    /// The declaration.
    pub fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    /// Show approvers what a call would do (see [`ApprovalPreview`]): the
    /// approval stage computes it from the validated arguments and hands it
    /// to the approver with the request
    /// ([`ApprovalRequest::preview`](crate::policy::ApprovalRequest::preview)).
    pub fn with_approval_preview(
        mut self,
        preview: impl Fn(&serde_json::Value) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.preview = Some(Arc::new(preview));
        self
    }

    /// Change the declaration before registering (safety, categories, ...).
    /// Its name must still match.
    pub fn map_declaration(mut self, f: impl FnOnce(ToolDeclaration) -> ToolDeclaration) -> Self {
        let before = self.declaration.input_schema.clone();
        self.declaration = f(self.declaration);
        if self.declaration.input_schema != before {
            self.serde_checked = None;
        }
        self
    }
}

/// A registered tool: declaration, function and argument validator.
/// Cloning is cheap (a few `Arc`s).
#[derive(Clone)]
pub struct ToolEntry {
    declaration: Arc<ToolDeclaration>,
    tool: Arc<dyn ErasedTool>,
    /// Compiled at registration, so a schema that cannot check arguments is
    /// refused there; shared by every tool of one argument type, so
    /// registering many tools of a few types stays cheap.
    validator: Arc<ArgumentValidator>,
    serde_checked: bool,
    /// The declaration's schema lowered for each provider, computed on first
    /// use and kept for the life of the entry (and its clones): a typed
    /// field, so nothing is downcast and no other value can take the slot.
    #[cfg(feature = "providers")]
    lowered: Arc<LoweredSchemas>,
    preview: Option<ApprovalPreview>,
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry").field("declaration", &self.declaration).finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The name the tool is registered under: its declaration's.
    pub fn name(&self) -> &str {
        &self.declaration.name
    }

    /// The tool's declaration.
    pub fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    /// The declaration, shared.
    pub(crate) fn declaration_arc(&self) -> &Arc<ToolDeclaration> {
        &self.declaration
    }

    /// What an approver should see for these (validated) arguments, when the
    /// tool was registered with a preview.
    pub fn approval_preview(&self, arguments: &serde_json::Value) -> Option<String> {
        self.preview.as_ref().and_then(|preview| preview(arguments))
    }

    /// The tool itself, with its types erased. Not public: a call reaches
    /// the tool only through the pipeline (selection, approval, hooks,
    /// audit), never around it.
    pub(crate) fn tool(&self) -> &Arc<dyn ErasedTool> {
        &self.tool
    }

    /// Whether the tool's own deserialisation checks exactly what its input
    /// schema says, so arguments it accepts need no schema validation.
    pub(crate) fn is_serde_checked(&self) -> bool {
        self.serde_checked
    }

    /// Check `args` against the input schema, filling defaults: every
    /// problem at once, as [`ToolError::InvalidArguments`].
    pub(crate) fn check_arguments(&self, args: &mut serde_json::Value) -> Result<(), ToolError> {
        crate::args::normalise_root(args)?;
        let validator = &self.validator;
        validator.fill_defaults(args);
        if validator.is_valid(args) {
            Ok(())
        } else {
            Err(ToolError::InvalidArguments { errors: validator.errors(args) })
        }
    }

    /// [`check_arguments`](Self::check_arguments) for arguments the tool's
    /// own deserialisation has just refused: they are almost surely invalid,
    /// so the report is built at once, without a yes-or-no validation first.
    pub(crate) fn explain_refused(&self, args: &mut serde_json::Value) -> Result<(), ToolError> {
        crate::args::normalise_root(args)?;
        self.validator.fill_defaults(args);
        match self.validator.errors(args) {
            errors if errors.is_empty() => Ok(()),
            errors => Err(ToolError::InvalidArguments { errors }),
        }
    }
}

/// A registered tool, declared from the schemas its entry keeps lowered.
#[cfg(feature = "providers")]
impl<'a> From<&'a ToolEntry> for ToolRef<'a> {
    fn from(entry: &'a ToolEntry) -> Self {
        ToolRef::registered(&entry.declaration, &entry.lowered)
    }
}

/// Names to entries in registration order. Keys come from the application, so
/// a fast non-keyed hash is safe here: a model's input is only ever looked up.
type ToolTable = IndexMap<Arc<str>, ToolEntry, foldhash::fast::RandomState>;

/// Every function an agent can call, each stored with its declaration.
///
/// Tools are kept in registration order. Cloning a registry is cheap: the
/// table is shared until one of the clones is changed.
///
/// ```
/// use toolreg::{FunctionRegistry, ToolDeclaration, ParamType};
/// use serde_json::{json, Value};
///
/// # tokio_test(async {
/// let mut registry = FunctionRegistry::new();
/// let decl = ToolDeclaration::builder("double")
///     .description("Double a number")
///     .param("x", ParamType::Number, "The number")
///     .build();
/// registry.register_sync_tool("double", |args: Value| {
///     Ok::<_, String>(args["x"].as_f64().unwrap_or_default() * 2.0)
/// }, decl)?;
///
/// let out = registry.execute("double", json!({"x": 21})).await?;
/// assert_eq!(out.text(), "42.0");
///
/// let err = registry.execute("double", json!({"x": "21"})).await.unwrap_err();
/// assert!(err.to_string().contains("`/x`: expected number, got string \"21\""));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # });
/// # fn tokio_test<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone, Default)]
pub struct FunctionRegistry {
    tools: Arc<ToolTable>,
    limits: ArgumentLimits,
    /// The search indexes of these tools, built on first search and
    /// dropped by every change to them (see [`tools_mut`](Self::tools_mut)).
    #[cfg(feature = "search")]
    search: RegistrySearch,
}

impl fmt::Debug for FunctionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("limits", &self.limits)
            .finish()
    }
}

impl FunctionRegistry {
    /// An empty registry with default [`ArgumentLimits`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty registry with the given argument limits.
    pub fn with_limits(limits: ArgumentLimits) -> Self {
        FunctionRegistry {
            tools: Arc::default(),
            limits,
            #[cfg(feature = "search")]
            search: RegistrySearch::default(),
        }
    }

    /// The argument limits in force.
    pub fn limits(&self) -> ArgumentLimits {
        self.limits
    }

    /// Register an async function with its declaration.
    pub fn register_async_tool<F, A, Fut, R, E>(
        &mut self,
        name: &str,
        func: F,
        declaration: ToolDeclaration,
    ) -> Result<(), RegistryError>
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: Display,
    {
        self.register(ToolRegistration::new::<(Async, A)>(declaration, func).claiming(name))
    }

    /// Register a synchronous function with its declaration.
    pub fn register_sync_tool<F, A, R, E>(
        &mut self,
        name: &str,
        func: F,
        declaration: ToolDeclaration,
    ) -> Result<(), RegistryError>
    where
        F: Fn(A) -> Result<R, E> + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: Serialize,
        E: Display,
    {
        self.register(ToolRegistration::new::<(Blocking, A)>(declaration, func).claiming(name))
    }

    /// Register a prepared tool, such as `my_fn_tool::registration()`.
    ///
    /// Checked in this order: name matches declaration, name rule, not a
    /// duplicate, usable input schema, examples that fit it.
    pub fn register(&mut self, registration: ToolRegistration) -> Result<(), RegistryError> {
        let (key, entry) = self.prepare(registration, false)?;
        self.tools_mut().insert(key, entry);
        Ok(())
    }

    /// Register several tools, all or none: if any is refused, the registry
    /// is unchanged. What [`register_tools!`](crate::register_tools) expands to;
    /// call the macro.
    #[doc(hidden)]
    pub fn register_all(
        &mut self,
        registrations: impl IntoIterator<Item = ToolRegistration>,
    ) -> Result<(), RegistryError> {
        let mut prepared = ToolTable::default();
        for registration in registrations {
            let (key, entry) = self.prepare(registration, false)?;
            if prepared.contains_key(&*key) {
                return Err(RegistryError::DuplicateTool { name: key.to_string() });
            }
            prepared.insert(key, entry);
        }
        self.tools_mut().extend(prepared);
        Ok(())
    }

    /// Register a tool, overwriting any tool of the same name in place
    /// (idempotent re-registration). Returns the entry it replaced.
    pub fn replace(&mut self, registration: ToolRegistration) -> Result<Option<ToolEntry>, RegistryError> {
        let (key, entry) = self.prepare(registration, true)?;
        Ok(self.tools_mut().insert(key, entry))
    }

    fn prepare(
        &self,
        registration: ToolRegistration,
        allow_existing: bool,
    ) -> Result<(Arc<str>, ToolEntry), RegistryError> {
        let ToolRegistration { declaration, tool, serde_checked, preview, claimed_name } = registration;
        if let Some(name) = claimed_name.filter(|name| *name != declaration.name) {
            return Err(RegistryError::NameMismatch { name, declaration_name: declaration.name });
        }
        let name = declaration.name.clone();
        validate_name(&name)?;
        if !allow_existing && self.tools.contains_key(name.as_str()) {
            return Err(RegistryError::DuplicateTool { name });
        }
        let invalid = |reason| RegistryError::InvalidSchema { name: name.clone(), reason };
        schema::check_input_schema(&declaration.input_schema).map_err(invalid)?;
        // A `$ref` bomb, or nesting past what anything here will walk, is refused
        // now rather than hanging or overflowing a later stage.
        schema::check_bounds(&declaration.input_schema).map_err(invalid)?;
        if let Some(output) = &declaration.output_schema {
            schema::check_bounds(output).map_err(invalid)?;
        }
        // Every schema is compiled now, so one that cannot check arguments
        // is refused here rather than waved through at call time (a typed
        // tool's schema can be hand-written: `impl JsonSchema`,
        // `#[schemars(schema_with)]`). A schema derived from the argument
        // type is compiled once per type and shared.
        let validator = match &serde_checked {
            Some(cached) => cached.validator(),
            None => ArgumentValidator::compile(&declaration.input_schema).map(Arc::new),
        }
        .map_err(invalid)?;
        // Examples are shown to the model as calls to copy: one the schema
        // refuses is refused now, with the tool, never sent.
        crate::validate::check_examples(&validator, &declaration.input_examples)
            .map_err(|(index, reason)| RegistryError::InvalidExample { name: name.clone(), index, reason })?;
        let entry = ToolEntry {
            declaration: Arc::new(declaration),
            tool,
            validator,
            serde_checked: serde_checked.is_some(),
            #[cfg(feature = "providers")]
            lowered: Arc::default(),
            preview,
        };
        // The per-provider lint, when someone listens: what each provider
        // would refuse of the tool declared strictly. The schemas it lowers
        // stay in the entry for its declarations.
        #[cfg(feature = "providers")]
        if tracing::enabled!(target: "toolreg::lint", tracing::Level::DEBUG) {
            for finding in crate::provider::lint((&entry).into()) {
                tracing::debug!(target: "toolreg::lint", tool = %name, provider = %finding.provider, reason = %finding.reason, "a provider would refuse this tool declared strictly");
            }
        }
        Ok((Arc::from(name), entry))
    }

    /// Remove a tool, returning its entry.
    pub fn unregister(&mut self, name: &str) -> Result<ToolEntry, RegistryError> {
        if !self.tools.contains_key(name) {
            return Err(RegistryError::NotFound { name: name.to_owned() });
        }
        self.tools_mut().shift_remove(name).ok_or_else(|| RegistryError::NotFound { name: name.to_owned() })
    }

    /// Remove every tool.
    pub fn clear(&mut self) {
        self.tools = Arc::default();
        self.drop_index();
    }

    /// The tool table, to change it: the search index no longer matches.
    fn tools_mut(&mut self) -> &mut ToolTable {
        self.drop_index();
        Arc::make_mut(&mut self.tools)
    }

    #[cfg(feature = "search")]
    fn drop_index(&mut self) {
        self.search.changed();
    }

    #[cfg(not(feature = "search"))]
    fn drop_index(&mut self) {}

    #[cfg(feature = "search")]
    /// The `limit` tools that best match `query`, best first. By keywords
    /// (BM25 over names, titles, descriptions, categories and parameters;
    /// see [`crate::search`]); and, with [embeddings](Self::use_embeddings)
    /// whose vectors for these tools are ready, by keywords and meaning
    /// fused. Each hit says which [`Ranking`](crate::search::Ranking)
    /// answered. The indexes are built on the first search after a change.
    ///
    /// ```
    /// use toolreg::{FunctionRegistry, ToolDeclaration, ToolRegistration};
    /// use serde_json::{json, Value};
    ///
    /// let mut registry = FunctionRegistry::new();
    /// let decl = ToolDeclaration::new("convert_currency", "Convert an amount between currencies", json!({"type": "object"}));
    /// registry.register(ToolRegistration::new(decl, |_: Value| Ok::<_, String>(0)))?;
    /// assert_eq!(registry.search("exchange dollars to euros currency", 5)[0].name, "convert_currency");
    /// # Ok::<(), toolreg::RegistryError>(())
    /// ```
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_where(query, limit, |_| true)
    }

    #[cfg(feature = "search")]
    /// [`search`](Self::search) among the tools whose name `keep` admits.
    ///
    /// With embeddings, a search encodes the query (a few milliseconds of
    /// CPU for a small model) on the calling thread.
    pub fn search_where(&self, query: &str, limit: usize, keep: impl Fn(&str) -> bool) -> Vec<SearchHit> {
        self.search.search_where(|| self.tools.values().map(ToolEntry::declaration).collect(), query, limit, keep)
    }

    #[cfg(feature = "search")]
    /// The tools whose name, title or description match a regex
    /// (case-insensitive), in registration order, at most `limit`.
    pub fn search_regex(&self, pattern: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        self.search.keyword(|| self.tools.values().map(ToolEntry::declaration).collect()).search_regex(pattern, limit)
    }

    #[cfg(feature = "search")]
    /// Search by meaning too, with these embeddings (shared with every
    /// clone made after, and kept across changes to the tools): once the
    /// vectors of the registry's tools are computed — in the background,
    /// started by the first search — searches fuse keywords and meaning.
    pub fn use_embeddings(&mut self, embeddings: Embeddings) {
        self.search.use_embeddings(embeddings);
    }

    #[cfg(feature = "search")]
    /// The embeddings given to [`use_embeddings`](Self::use_embeddings).
    pub fn embeddings(&self) -> Option<&Embeddings> {
        self.search.embeddings()
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name)
    }

    /// Where the tool with this name stands in registration order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.tools.get_index_of(name)
    }

    /// Whether a tool has this name.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The registered tools, in registration order: each one's
    /// [`name`](ToolEntry::name) and [`declaration`](ToolEntry::declaration),
    /// and what [`provider::ToolRef`](crate::provider::ToolRef) declares to a provider.
    pub fn list(&self) -> impl ExactSizeIterator<Item = &ToolEntry> + '_ {
        self.tools.values()
    }

    /// The registered tools as registrations again, in registration order:
    /// to register tools prepared in a registry of their own (renamed,
    /// [transformed](Self::transformed)) into another.
    pub fn into_registrations(self) -> impl Iterator<Item = ToolRegistration> {
        let tools = Arc::unwrap_or_clone(self.tools);
        tools.into_values().map(|entry| ToolRegistration {
            declaration: Arc::unwrap_or_clone(entry.declaration),
            tool: entry.tool,
            serde_checked: None,
            preview: entry.preview,
            claimed_name: None,
        })
    }

    #[cfg(feature = "providers")]
    /// What each provider would refuse of the registered tools declared in
    /// its strictest mode ([`provider::lint`](crate::provider::lint)), tool
    /// by tool in registration order; empty when every provider takes
    /// every tool as it is.
    ///
    /// ```
    /// use toolreg::{FunctionRegistry, ParamType, ToolDeclaration, ToolRegistration};
    /// use serde_json::Value;
    ///
    /// let decl = ToolDeclaration::builder("echo").param("text", ParamType::String, "Text").build();
    /// let mut registry = FunctionRegistry::new();
    /// registry.register(ToolRegistration::new(decl, |args: Value| Ok::<_, String>(args["text"].clone())))?;
    /// assert!(registry.lint().is_empty());
    /// # Ok::<(), toolreg::RegistryError>(())
    /// ```
    pub fn lint(&self) -> Vec<crate::provider::LintFinding> {
        self.list().flat_map(|entry| crate::provider::lint(entry.into())).collect()
    }

    /// All declarations, in registration order, shared with the registry
    /// (no copies: an agent loop offers the same tools every step).
    pub fn get_declarations(&self) -> Vec<Arc<ToolDeclaration>> {
        self.list().map(|entry| Arc::clone(entry.declaration_arc())).collect()
    }

    /// The tools `keep` admits, in registration order, their entries
    /// shared: what a [`Selection`](crate::policy::Selection) offers.
    pub(crate) fn filtered(&self, keep: impl Fn(&ToolDeclaration) -> bool) -> FunctionRegistry {
        if self.list().all(|entry| keep(entry.declaration())) {
            return self.clone();
        }
        let tools =
            self.tools.iter().filter(|(_, entry)| keep(entry.declaration())).map(|(k, e)| (Arc::clone(k), e.clone()));
        FunctionRegistry {
            tools: Arc::new(tools.collect()),
            limits: self.limits,
            #[cfg(feature = "search")]
            search: self.search.for_other_tools(),
        }
    }
}
