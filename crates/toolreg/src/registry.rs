//! [`FunctionRegistry`]: every tool's function and declaration in one entry.

use std::fmt::{self, Display};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use indexmap::IndexMap;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::declaration::ToolDeclaration;
use crate::exec::{CallContext, ToolArguments, ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult};
use crate::handler::{AsyncFnTool, CallFailure, ErasedTool, SyncFnTool, ToolFuture};
use crate::schema;
use crate::validate::{self, ArgumentError, ArgumentValidator};

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
}

/// The longest tool name toolreg accepts (OpenAI's and Bedrock's limit).
pub const MAX_NAME_LEN: usize = 64;

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

/// Limits on the arguments a call may carry, checked before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgumentLimits {
    /// Largest argument text, in bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Deepest array/object nesting (default 64).
    pub max_depth: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits { max_bytes: 1 << 20, max_depth: 64 }
    }
}

impl ArgumentLimits {
    /// Set the size limit in bytes.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Set the nesting limit.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }
}

/// A function and its declaration, ready to register: what `#[tool]`
/// generates as `<fn>_tool::registration()`.
///
/// The constructors are the only way to make one, so no function travels
/// without a declaration.
pub struct ToolRegistration {
    name: String,
    declaration: ToolDeclaration,
    tool: Arc<dyn ErasedTool>,
    /// The schema is exactly what serde enforces for the argument type, so a
    /// clean deserialisation needs no schema validation.
    serde_checked: bool,
}

impl fmt::Debug for ToolRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRegistration")
            .field("name", &self.name)
            .field("declaration", &self.declaration)
            .finish_non_exhaustive()
    }
}

fn serde_checked<A: schemars::JsonSchema>(declaration: &ToolDeclaration) -> bool {
    declaration.input_schema == schema::schema_for::<A>() && !schema::serde_accepts_more_than(&declaration.input_schema)
}

impl ToolRegistration {
    /// An async function `Fn(Args) -> Future<Output = Result<R, E>>`.
    pub fn from_async<F, A, Fut, R, E>(name: impl Into<String>, func: F, declaration: ToolDeclaration) -> Self
    where
        F: Fn(A) -> Fut + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: Display,
    {
        Self::from_async_with_context(name, move |_cx: CallContext, a: A| func(a), declaration)
    }

    /// An async function that also takes the call's [`CallContext`].
    pub fn from_async_with_context<F, A, Fut, R, E>(
        name: impl Into<String>,
        func: F,
        declaration: ToolDeclaration,
    ) -> Self
    where
        F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: Display,
    {
        let serde_checked = serde_checked::<A>(&declaration);
        ToolRegistration { name: name.into(), declaration, tool: Arc::new(AsyncFnTool::new(func)), serde_checked }
    }

    /// A synchronous function `Fn(Args) -> Result<R, E>`.
    pub fn from_sync<F, A, R, E>(name: impl Into<String>, func: F, declaration: ToolDeclaration) -> Self
    where
        F: Fn(A) -> Result<R, E> + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: Serialize,
        E: Display,
    {
        Self::from_sync_with_context(name, move |_cx: CallContext, a: A| func(a), declaration)
    }

    /// A synchronous function that also takes the call's [`CallContext`].
    pub fn from_sync_with_context<F, A, R, E>(name: impl Into<String>, func: F, declaration: ToolDeclaration) -> Self
    where
        F: Fn(CallContext, A) -> Result<R, E> + Send + Sync + 'static,
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: Serialize,
        E: Display,
    {
        let serde_checked = serde_checked::<A>(&declaration);
        ToolRegistration { name: name.into(), declaration, tool: Arc::new(SyncFnTool::new(func)), serde_checked }
    }

    /// A tool implemented by hand; its arguments are always checked against
    /// the declaration's schema before it runs.
    pub fn from_erased(name: impl Into<String>, tool: Arc<dyn ErasedTool>, declaration: ToolDeclaration) -> Self {
        ToolRegistration { name: name.into(), declaration, tool, serde_checked: false }
    }

    /// The name the tool is registered under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declaration.
    pub fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    /// Change the declaration before registering (safety, categories, ...).
    /// Its name must still match.
    pub fn map_declaration(mut self, f: impl FnOnce(ToolDeclaration) -> ToolDeclaration) -> Self {
        let before = self.declaration.input_schema.clone();
        self.declaration = f(self.declaration);
        if self.declaration.input_schema != before {
            self.serde_checked = false;
        }
        self
    }
}

/// A registered tool: declaration, function and compiled argument validator.
/// Cloning is cheap (three `Arc`s).
#[derive(Clone)]
pub struct ToolEntry {
    declaration: Arc<ToolDeclaration>,
    tool: Arc<dyn ErasedTool>,
    validator: Arc<ArgumentValidator>,
    serde_checked: bool,
    /// Provider lowerings of the input schema, computed on first use.
    pub(crate) lowered: Arc<crate::provider::LoweredSchemas>,
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry").field("declaration", &self.declaration).finish_non_exhaustive()
    }
}

impl ToolEntry {
    /// The tool's declaration.
    pub fn declaration(&self) -> &ToolDeclaration {
        &self.declaration
    }

    /// The declaration, shared.
    pub fn declaration_arc(&self) -> &Arc<ToolDeclaration> {
        &self.declaration
    }

    /// Check `args` against the input schema, filling defaults: every problem at once.
    pub fn check_arguments(&self, args: &mut Value) -> Result<(), Vec<ArgumentError>> {
        normalise_root(args)?;
        self.validator.fill_defaults(args);
        if self.validator.is_valid(args) { Ok(()) } else { Err(self.validator.errors(args)) }
    }

    /// Run the tool on parsed arguments: validate, call, contain panics.
    ///
    /// This is the whole execution path of [`FunctionRegistry::execute`] once
    /// the entry is found; policy layers call it after their own checks.
    pub fn call(&self, cx: CallContext, args: Value) -> Execution<'_> {
        Execution { state: CallState::Value(self, cx, args) }
    }

    /// Run the tool on argument text that passed the registry's
    /// [`ArgumentLimits`] (see [`FunctionRegistry::check_argument_text`]):
    /// typed tools deserialise straight from it, others parse and validate it.
    pub(crate) fn call_text(&self, cx: CallContext, text: String) -> Execution<'_> {
        Execution { state: CallState::OwnedText(self, cx, text) }
    }

    /// Validate parsed arguments and start the tool, containing a panic.
    fn start(&self, cx: CallContext, mut args: Value) -> Result<ToolFuture, ToolError> {
        let invalid = |errors| ToolError::InvalidArguments { tool: self.declaration.name.clone(), errors };
        if self.serde_checked {
            normalise_root(&mut args).map_err(invalid)?;
        } else {
            self.check_arguments(&mut args).map_err(invalid)?;
        }
        std::panic::catch_unwind(AssertUnwindSafe(|| self.tool.call(cx, args))).map_err(|panic| self.panicked(panic))
    }

    /// Start the tool on argument text that passed the size and depth limits.
    /// Typed tools deserialise straight from the text; anything else, and any
    /// text that does not deserialise, is parsed and goes through [`start`](Self::start).
    fn start_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, ToolError> {
        // Only an object goes straight to serde: serde would also take an array for a struct.
        let cx = if self.serde_checked && text.trim_start().starts_with('{') {
            match std::panic::catch_unwind(AssertUnwindSafe(|| self.tool.call_text(cx, text))) {
                Ok(Ok(future)) => return Ok(future),
                Ok(Err(cx)) => cx,
                Err(panic) => return Err(self.panicked(panic)),
            }
        } else {
            cx
        };
        let args = parse_arguments(&self.declaration.name, text)?;
        self.start(cx, args)
    }

    /// Name the tool in the outcome of a call.
    fn settle(&self, outcome: Result<Value, CallFailure>) -> Result<ToolOutput, ToolError> {
        let name = &self.declaration.name;
        match outcome {
            Ok(value) => Ok(ToolOutput::success(value)),
            Err(CallFailure::Arguments { args, errors }) => {
                let schema_errors = self.validator.errors(&args);
                let errors = if schema_errors.is_empty() { errors } else { schema_errors };
                Err(ToolError::InvalidArguments { tool: name.clone(), errors })
            }
            Err(CallFailure::Tool(message)) => Err(ToolError::Failed { tool: name.clone(), message }),
            Err(CallFailure::Result(message)) => Err(ToolError::ResultSerialization { tool: name.clone(), message }),
            Err(CallFailure::Error(error)) => Err(error),
        }
    }

    fn panicked(&self, panic: Box<dyn std::any::Any + Send>) -> ToolError {
        let name = &self.declaration.name;
        let message = panic_message(&*panic);
        tracing::error!(tool = %name, %message, "tool panicked");
        ToolError::Panicked { tool: name.clone(), message }
    }
}

/// A tool call in progress, as [`FunctionRegistry::execute`] and its siblings
/// return it. Nothing runs until it is polled; a synchronous tool finishes
/// in the first poll, without allocating. A panic in the tool, when it
/// starts or while it runs, ends the call with [`ToolError::Panicked`].
#[must_use = "futures do nothing unless awaited"]
pub struct Execution<'a> {
    state: CallState<'a>,
}

enum CallState<'a> {
    Value(&'a ToolEntry, CallContext, Value),
    Text(&'a ToolEntry, CallContext, &'a str),
    OwnedText(&'a ToolEntry, CallContext, String),
    Running(&'a ToolEntry, ToolFuture),
    Failed(ToolError),
    Done,
}

impl Execution<'_> {
    fn failed(error: ToolError) -> Self {
        Execution { state: CallState::Failed(error) }
    }
}

impl fmt::Debug for Execution<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            CallState::Value(..) | CallState::Text(..) | CallState::OwnedText(..) => "unstarted",
            CallState::Running(..) => "running",
            CallState::Failed(_) => "failed",
            CallState::Done => "done",
        };
        f.debug_struct("Execution").field("state", &state).finish()
    }
}

impl Future for Execution<'_> {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (entry, mut future) = match std::mem::replace(&mut this.state, CallState::Done) {
            CallState::Value(entry, cx, args) => match entry.start(cx, args) {
                Ok(future) => (entry, future),
                Err(error) => return Poll::Ready(Err(error)),
            },
            CallState::Text(entry, cx, text) => match entry.start_text(cx, text) {
                Ok(future) => (entry, future),
                Err(error) => return Poll::Ready(Err(error)),
            },
            CallState::OwnedText(entry, cx, text) => match entry.start_text(cx, &text) {
                Ok(future) => (entry, future),
                Err(error) => return Poll::Ready(Err(error)),
            },
            CallState::Running(entry, future) => (entry, future),
            CallState::Failed(error) => return Poll::Ready(Err(error)),
            CallState::Done => panic!("Execution polled after completion"),
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut future).poll(task))) {
            Ok(Poll::Ready(outcome)) => Poll::Ready(entry.settle(outcome)),
            Ok(Poll::Pending) => {
                this.state = CallState::Running(entry, future);
                Poll::Pending
            }
            Err(panic) => Poll::Ready(Err(entry.panicked(panic))),
        }
    }
}

/// Size and nesting checks on argument text, before any parsing.
fn check_limits(tool: &str, text: &str, limits: ArgumentLimits) -> Result<(), ToolError> {
    if text.len() > limits.max_bytes {
        return Err(ToolError::ArgumentsTooLarge { tool: tool.to_owned(), size: text.len(), limit: limits.max_bytes });
    }
    if validate::json_depth_exceeds(text, limits.max_depth) {
        return Err(ToolError::ArgumentsTooDeep { tool: tool.to_owned(), limit: limits.max_depth });
    }
    Ok(())
}

/// Parse argument text that passed [`check_limits`]; empty text means no arguments.
fn parse_arguments(tool: &str, text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(validate::empty_args());
    }
    serde_json::from_str(text)
        .map_err(|e| ToolError::MalformedArguments { tool: tool.to_owned(), message: e.to_string() })
}

/// Models send `null` or nothing for tools without parameters; anything else
/// that is not an object is an error.
fn normalise_root(args: &mut Value) -> Result<(), Vec<ArgumentError>> {
    match args {
        Value::Object(_) => Ok(()),
        Value::Null => {
            *args = validate::empty_args();
            Ok(())
        }
        other => Err(vec![ArgumentError {
            path: String::new(),
            message: format!("expected an object of named arguments, got {}", validate::describe_value(other)),
        }]),
    }
}

/// The text of a contained panic, when its payload was a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
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
/// assert!(err.model_text().contains("`/x`: expected number, got string \"21\""));
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
        FunctionRegistry { tools: Arc::default(), limits }
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
        self.register(ToolRegistration::from_async(name, func, declaration))
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
        self.register(ToolRegistration::from_sync(name, func, declaration))
    }

    /// Register a prepared tool, such as `my_fn_tool::registration()`.
    ///
    /// Checked in this order: name matches declaration, name rule, not a
    /// duplicate, usable input schema.
    pub fn register(&mut self, registration: ToolRegistration) -> Result<(), RegistryError> {
        let (key, entry) = self.prepare(registration, false)?;
        Arc::make_mut(&mut self.tools).insert(key, entry);
        Ok(())
    }

    /// Register several tools, all or none: if any is refused, the registry is unchanged.
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
        Arc::make_mut(&mut self.tools).extend(prepared);
        Ok(())
    }

    /// Register a tool, overwriting any tool of the same name in place (seed
    /// 003's idempotent re-registration). Returns the entry it replaced.
    pub fn replace(&mut self, registration: ToolRegistration) -> Result<Option<ToolEntry>, RegistryError> {
        let (key, entry) = self.prepare(registration, true)?;
        Ok(Arc::make_mut(&mut self.tools).insert(key, entry))
    }

    fn prepare(
        &self,
        registration: ToolRegistration,
        allow_existing: bool,
    ) -> Result<(Arc<str>, ToolEntry), RegistryError> {
        let ToolRegistration { name, declaration, tool, serde_checked } = registration;
        if name != declaration.name {
            return Err(RegistryError::NameMismatch { name, declaration_name: declaration.name });
        }
        validate_name(&name)?;
        if !allow_existing && self.tools.contains_key(name.as_str()) {
            return Err(RegistryError::DuplicateTool { name });
        }
        let validator = ArgumentValidator::compile(&declaration.input_schema)
            .map_err(|reason| RegistryError::InvalidSchema { name: name.clone(), reason })?;
        let entry = ToolEntry {
            declaration: Arc::new(declaration),
            tool,
            validator: Arc::new(validator),
            serde_checked,
            lowered: Arc::default(),
        };
        Ok((Arc::from(name), entry))
    }

    /// Remove a tool, returning its entry.
    pub fn unregister(&mut self, name: &str) -> Result<ToolEntry, RegistryError> {
        if !self.tools.contains_key(name) {
            return Err(RegistryError::NotFound { name: name.to_owned() });
        }
        Arc::make_mut(&mut self.tools)
            .shift_remove(name)
            .ok_or_else(|| RegistryError::NotFound { name: name.to_owned() })
    }

    /// Remove every tool.
    pub fn clear(&mut self) {
        self.tools = Arc::default();
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name)
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

    /// The declarations, in registration order, without copying them.
    pub fn list(&self) -> impl ExactSizeIterator<Item = &ToolDeclaration> + '_ {
        self.tools.values().map(|e| &*e.declaration)
    }

    /// The registered entries, in registration order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = &ToolEntry> + '_ {
        self.tools.values()
    }

    /// The names, in registration order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.tools.keys().map(|k| &**k)
    }

    /// Copies of all declarations, in registration order (seed 002).
    pub fn get_declarations(&self) -> Vec<ToolDeclaration> {
        self.list().cloned().collect()
    }

    /// Run a tool by name on parsed arguments.
    pub fn execute(&self, name: &str, args: Value) -> Execution<'_> {
        self.execute_with(name, args, CallContext::default())
    }

    /// Run a tool by name on parsed arguments, with a call context.
    pub fn execute_with(&self, name: &str, args: Value, cx: CallContext) -> Execution<'_> {
        match self.tools.get(name) {
            Some(entry) => entry.call(cx, args),
            None => Execution::failed(self.unknown_tool(name)),
        }
    }

    /// Run a tool by name on argument text, as models emit it. The text is
    /// checked against the [`ArgumentLimits`] before it is parsed; empty
    /// text means no arguments.
    pub fn execute_json<'a>(&'a self, name: &str, args: &'a str) -> Execution<'a> {
        self.execute_json_with(name, args, CallContext::default())
    }

    /// [`execute_json`](Self::execute_json) with a call context.
    pub fn execute_json_with<'a>(&'a self, name: &str, args: &'a str, cx: CallContext) -> Execution<'a> {
        let Some(entry) = self.tools.get(name) else {
            return Execution::failed(self.unknown_tool(name));
        };
        match check_limits(name, args, self.limits) {
            Ok(()) => Execution { state: CallState::Text(entry, cx, args) },
            Err(error) => Execution::failed(error),
        }
    }

    /// Check argument text against this registry's limits, without parsing it.
    pub(crate) fn check_argument_text(&self, tool: &str, text: &str) -> Result<(), ToolError> {
        check_limits(tool, text, self.limits)
    }

    /// Parse argument text under this registry's limits; empty text is `{}`.
    pub fn parse_arguments(&self, tool: &str, text: &str) -> Result<Value, ToolError> {
        check_limits(tool, text, self.limits)?;
        parse_arguments(tool, text)
    }

    /// The error for a call to a name that is not registered.
    pub fn unknown_tool(&self, name: &str) -> ToolError {
        const SHOWN: usize = 20;
        ToolError::UnknownTool {
            name: name.to_owned(),
            available: self.tools.keys().take(SHOWN).map(|k| k.to_string()).collect(),
        }
    }
}

impl ToolExecutor for FunctionRegistry {
    async fn execute_call(&self, call: ToolCall) -> ToolResult {
        let ToolCall { id, name, arguments } = call;
        let cx = CallContext::new(id.as_str());
        let outcome = match arguments {
            ToolArguments::Json(value) => self.execute_with(&name, value, cx).await,
            ToolArguments::Raw(text) => self.execute_json_with(&name, &text, cx).await,
        };
        ToolResult { id, name, outcome }
    }
}
