//! What a model is told about a tool: [`ToolDeclaration`] and its builder.
//!
//! A declaration is data only; the registry pairs it with the function that
//! implements it (see [`crate::ToolRegistration`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::schema;

mod builder;
pub use builder::{DeclarationBuilder, ParamType};

/// How much harm a tool can do, ordered `Safe < Cautious < Dangerous`.
///
/// A tool that says nothing is [`SafetyLevel::Dangerous`]: like MCP's
/// `destructiveHint`, which defaults to `true`, toolreg assumes the worst of a
/// tool it knows nothing about. Mark read-only tools `Safe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SafetyLevel {
    /// Reads only; runs without a second thought.
    Safe,
    /// Changes something recoverable; runs and is recorded.
    Cautious,
    /// May destroy data or reach the outside world; needs approval.
    #[default]
    Dangerous,
}

impl SafetyLevel {
    /// The lower-case name (`"safe"`, `"cautious"`, `"dangerous"`).
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyLevel::Safe => "safe",
            SafetyLevel::Cautious => "cautious",
            SafetyLevel::Dangerous => "dangerous",
        }
    }

    /// The level a name stands for, case-insensitively, with `moderate` for
    /// [`SafetyLevel::Cautious`]; `None` for any other text.
    ///
    /// A `const fn`, so that `#[tool(safety = "...")]` is checked at compile
    /// time by the same rule as [`str::parse`] at run time.
    ///
    /// ```
    /// use toolreg::SafetyLevel;
    /// const LEVEL: Option<SafetyLevel> = SafetyLevel::parse("Moderate");
    /// assert_eq!(LEVEL, Some(SafetyLevel::Cautious));
    /// assert_eq!(SafetyLevel::parse("risky"), None);
    /// ```
    pub const fn parse(s: &str) -> Option<SafetyLevel> {
        if eq_ignore_case(s, "safe") {
            Some(SafetyLevel::Safe)
        } else if eq_ignore_case(s, "cautious") || eq_ignore_case(s, "moderate") {
            Some(SafetyLevel::Cautious)
        } else if eq_ignore_case(s, "dangerous") {
            Some(SafetyLevel::Dangerous)
        } else {
            None
        }
    }
}

/// ASCII case-insensitive equality, usable in `const fn`s.
const fn eq_ignore_case(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if !a[i].eq_ignore_ascii_case(&b[i]) {
            return false;
        }
        i += 1;
    }
    true
}

impl fmt::Display for SafetyLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text did not name a safety level.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown safety level `{0}`: expected safe, cautious (or moderate) or dangerous")]
pub struct ParseSafetyLevelError(String);

impl FromStr for SafetyLevel {
    type Err = ParseSafetyLevelError;

    /// Case-insensitive; `moderate` is accepted as [`SafetyLevel::Cautious`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SafetyLevel::parse(s).ok_or_else(|| ParseSafetyLevelError(s.to_owned()))
    }
}

/// Who may see a tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Available to every agent (context store, files, shell).
    Core,
    /// Available to agents that may spawn others.
    Agent,
    /// The human user as a function: only top-level agents see these.
    User,
    /// Everything registered by the application (the default).
    #[default]
    Custom,
}

impl Scope {
    /// The scope a name stands for, case-insensitively; `None` for any other
    /// text.
    ///
    /// A `const fn`, so that `#[tool(scope = "...")]` is checked at compile
    /// time by the same rule as [`str::parse`] at run time.
    ///
    /// ```
    /// use toolreg::Scope;
    /// assert_eq!(Scope::parse("USER"), Some(Scope::User));
    /// assert_eq!(Scope::parse("everyone"), None);
    /// ```
    pub const fn parse(s: &str) -> Option<Scope> {
        if eq_ignore_case(s, "core") {
            Some(Scope::Core)
        } else if eq_ignore_case(s, "agent") {
            Some(Scope::Agent)
        } else if eq_ignore_case(s, "user") {
            Some(Scope::User)
        } else if eq_ignore_case(s, "custom") {
            Some(Scope::Custom)
        } else {
            None
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Core => "core",
            Scope::Agent => "agent",
            Scope::User => "user",
            Scope::Custom => "custom",
        })
    }
}

/// The text did not name a scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scope `{0}`: expected core, agent, user or custom")]
pub struct ParseScopeError(String);

impl FromStr for Scope {
    type Err = ParseScopeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::parse(s).ok_or_else(|| ParseScopeError(s.to_owned()))
    }
}

/// Everything a model (and the policy layer) knows about a tool.
///
/// Build one with [`ToolDeclaration::new`] from a raw JSON Schema,
/// [`ToolDeclaration::for_args`] from a Rust type, [`ToolDeclaration::builder`]
/// parameter by parameter, or let `#[tool]` write it.
///
/// ```
/// use toolreg::{ToolDeclaration, SafetyLevel};
/// use serde_json::json;
///
/// let decl = ToolDeclaration::new(
///     "echo",
///     "Repeat the text back",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// )
/// .with_safety(SafetyLevel::Safe);
/// assert_eq!(decl.name, "echo");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDeclaration {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema (an object schema) of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result, when the tool promises one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// How much harm the tool can do.
    #[serde(default)]
    pub safety: SafetyLevel,
    /// Free-form groups (`"fs"`, `"introspection"`) used by selections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Who may see the tool.
    #[serde(default)]
    pub scope: Scope,
    /// The argument whose value names the resource the tool changes (a file
    /// path, a record id). In a batch, calls with the same value run one at a
    /// time, in call order. Set with `#[tool(exclusive = "path")]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_key: Option<String>,
    /// A short human-readable name for user interfaces (MCP's `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whether calling the tool twice with the same arguments does no more
    /// than calling it once (MCP's `idempotentHint`), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Whether the tool reaches outside systems — the web, other services
    /// (MCP's `openWorldHint`), when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Example arguments that show the model how to call the tool (each a
    /// JSON object valid against `input_schema`): Anthropic's
    /// `input_examples`. Checked against the schema when the tool is
    /// registered ([`RegistryError::InvalidExample`](crate::RegistryError::InvalidExample)),
    /// or, for a declaration rendered without being registered, when it is
    /// rendered ([`ProviderError::InvalidExample`](crate::provider::ProviderError::InvalidExample)):
    /// an example that does not fit is never sent. Set with
    /// [`with_example`](ToolDeclaration::with_example),
    /// [`DeclarationBuilder::example`] or `#[tool(example = r#"{..}"#)]`.
    ///
    /// Only Anthropic's format sends them. The other providers have no
    /// field for examples, and they are not copied into the description:
    /// the description stays what the tool's author wrote, and what every
    /// request pays for does not grow behind the author's back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_examples: Vec<Value>,
    /// Whether the tool may run as an MCP task (MCP's `execution.taskSupport`,
    /// the tasks extension): a long-running tool says `Optional`, and an MCP
    /// server that has tasks enabled then answers its `tools/call` with a task
    /// the client polls. `None` is MCP's default (`forbidden`). Set with
    /// [`with_task_support`](ToolDeclaration::with_task_support); an imported
    /// MCP tool keeps its server's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// Whether a tool runs as an MCP task (the tasks extension's
/// `execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task: every call is answered with its result.
    Forbidden,
    /// As a task when the client supports tasks, else answered directly.
    Optional,
    /// Only as a task: a client without the tasks extension cannot call it.
    Required,
}

impl TaskSupport {
    /// The name MCP uses (`forbidden`, `optional`, `required`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// MCP-style behaviour hints derived from a [`SafetyLevel`]
/// (`readOnlyHint`, `destructiveHint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolHints {
    /// The tool changes nothing (`Safe`).
    pub read_only: bool,
    /// The tool may destroy data or act on the outside world (`Dangerous`).
    pub destructive: bool,
}

impl ToolDeclaration {
    /// A declaration from a raw JSON Schema for the arguments.
    ///
    /// The schema is cleaned ([`crate::schema::clean`]) but not otherwise checked
    /// here; the registry rejects one that is not an object schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        let mut input_schema = input_schema;
        schema::clean(&mut input_schema);
        ToolDeclaration {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            safety: SafetyLevel::default(),
            categories: Vec::new(),
            scope: Scope::default(),
            exclusive_key: None,
            title: None,
            idempotent: None,
            open_world: None,
            input_examples: Vec::new(),
            task_support: None,
        }
    }

    /// A declaration whose input schema is generated from `Args` with
    /// schemars (once per type: declarations of one type share the work).
    pub fn for_args<Args: schemars::JsonSchema + ?Sized + 'static>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let mut decl = Self::new(name, description, Value::Null);
        decl.input_schema = schema::cached_schema::<Args>().declared.clone();
        decl
    }

    /// Start a declaration parameter by parameter.
    pub fn builder(name: impl Into<String>) -> DeclarationBuilder {
        DeclarationBuilder::new(name.into())
    }

    /// Set the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        let mut schema = schema;
        schema::clean(&mut schema);
        self.output_schema = Some(schema);
        self
    }

    /// Set the output schema from a Rust type.
    pub fn with_output_type<T: schemars::JsonSchema + ?Sized>(self) -> Self {
        self.with_output_schema(schema::schema_for::<T>())
    }

    /// Set the safety level.
    pub fn with_safety(mut self, safety: SafetyLevel) -> Self {
        self.safety = safety;
        self
    }

    /// Add a category.
    pub fn with_category(mut self, category: impl Into<String>) -> Self {
        let category = category.into();
        if !self.categories.contains(&category) {
            self.categories.push(category);
        }
        self
    }

    /// Set the scope.
    pub fn with_scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Name the argument whose value is this tool's exclusive key: calls of a
    /// batch with the same value run one at a time.
    pub fn with_exclusive_key(mut self, argument: impl Into<String>) -> Self {
        self.exclusive_key = Some(argument.into());
        self
    }

    /// Give the tool a human-readable title (shown by MCP clients).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Declare whether repeating a call with the same arguments has no further effect.
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = Some(idempotent);
        self
    }

    /// Declare whether the tool reaches outside systems (the web, other services).
    pub fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Declare whether the tool may run as an MCP task (see
    /// [`task_support`](ToolDeclaration::task_support)).
    pub fn with_task_support(mut self, task_support: TaskSupport) -> Self {
        self.task_support = Some(task_support);
        self
    }

    /// Add an example of the tool's arguments (see
    /// [`input_examples`](ToolDeclaration::input_examples)).
    ///
    /// ```
    /// use toolreg::{FunctionRegistry, ParamType, RegistryError, ToolDeclaration};
    /// use serde_json::{Value, json};
    ///
    /// let decl = ToolDeclaration::builder("get_weather")
    ///     .param("city", ParamType::String, "City name")
    ///     .build()
    ///     .with_example(json!({"city": "Paris"}));
    /// let mut registry = FunctionRegistry::new();
    /// registry.register_sync_tool("get_weather", |_: Value| Ok::<_, String>("sunny"), decl.clone())?;
    ///
    /// // An example the schema refuses is refused with the tool.
    /// let bad = decl.with_example(json!({"town": "Paris"}));
    /// let mut other = FunctionRegistry::new();
    /// let error = other.register_sync_tool("get_weather", |_: Value| Ok::<_, String>("sunny"), bad).unwrap_err();
    /// assert!(matches!(error, RegistryError::InvalidExample { index: 1, .. }), "{error}");
    /// # Ok::<(), RegistryError>(())
    /// ```
    pub fn with_example(mut self, arguments: Value) -> Self {
        self.input_examples.push(arguments);
        self
    }

    /// Whether the tool only reads (its safety level is `Safe`). Read-only
    /// tools run in parallel in a batch.
    pub fn is_read_only(&self) -> bool {
        self.safety == SafetyLevel::Safe
    }

    /// MCP-style hints: `Safe` is read-only, `Dangerous` is destructive,
    /// `Cautious` is neither.
    ///
    /// ```
    /// use toolreg::{SafetyLevel, ToolDeclaration};
    /// use serde_json::json;
    ///
    /// let decl = ToolDeclaration::new("rm", "Delete a file", json!({"type": "object"}));
    /// let hints = decl.hints(); // dangerous by default
    /// assert!(!hints.read_only && hints.destructive);
    /// assert!(decl.with_safety(SafetyLevel::Safe).hints().read_only);
    /// ```
    pub fn hints(&self) -> ToolHints {
        ToolHints { read_only: self.safety == SafetyLevel::Safe, destructive: self.safety == SafetyLevel::Dangerous }
    }

    /// Names of the top-level parameters, in schema order.
    pub fn parameter_names(&self) -> impl Iterator<Item = &str> {
        self.input_schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|props| props.keys().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn safety_levels_order_and_parse() {
        assert!(SafetyLevel::Safe < SafetyLevel::Cautious);
        assert!(SafetyLevel::Cautious < SafetyLevel::Dangerous);
        assert_eq!("moderate".parse::<SafetyLevel>(), Ok(SafetyLevel::Cautious));
        assert_eq!("SAFE".parse::<SafetyLevel>(), Ok(SafetyLevel::Safe));
        assert!("risky".parse::<SafetyLevel>().is_err());
        assert_eq!(SafetyLevel::default(), SafetyLevel::Dangerous);
    }

    #[test]
    fn builder_marks_required_and_defaults() {
        let decl = ToolDeclaration::builder("t")
            .description("d")
            .param("a", ParamType::String, "first")
            .param("a", ParamType::Number, "redeclared")
            .optional_param("b", ParamType::Boolean, "second")
            .build();
        assert_eq!(decl.input_schema["required"], json!(["a"]));
        assert_eq!(decl.input_schema["properties"]["a"]["type"], "number");
        assert_eq!(decl.parameter_names().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn declaration_round_trips_through_serde() {
        let decl = ToolDeclaration::builder("t").category("fs").safety(SafetyLevel::Safe).build();
        let back: ToolDeclaration = serde_json::from_value(serde_json::to_value(&decl).unwrap()).unwrap();
        assert_eq!(decl, back);
    }
}
