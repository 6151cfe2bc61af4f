//! Toolset transforms: the same tools under other names, with other
//! descriptions, with arguments fixed or given defaults — for built-ins,
//! Rust tools and imported MCP tools alike.
//!
//! [`FunctionRegistry::transformed`](crate::FunctionRegistry::transformed)
//! makes a registry whose declarations are transformed (what every wire
//! format sends) and whose tools map each call back before the original
//! runs: a fixed argument is put in (the model never sees it, and a value
//! it sends anyway is replaced — or refused by the schema when the tool
//! takes no other arguments), a
//! default is filled in when absent, and the result is checked against the
//! original tool's schema, so a transform can never make a tool run on
//! arguments it would refuse.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::declaration::ToolDeclaration;
use crate::exec::CallContext;
use crate::handler::{ErasedTool, ToolFuture};
use crate::registry::{FunctionRegistry, RegistryError, ToolEntry, ToolRegistration};

/// What to change about one tool.
///
/// ```
/// use toolreg::transform::{ToolTransform, Transforms};
/// use serde_json::json;
///
/// let transforms = Transforms::new()
///     .prefix("fs_")
///     .tool(ToolTransform::new("read_file").rename("read").describe("Read a file of the project.").fix("limit", json!(200)));
/// # let _ = transforms;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolTransform {
    /// The tool's name in the registry transformed.
    pub tool: String,
    /// Its new name (before any prefix).
    pub rename: Option<String>,
    /// Its new description.
    pub description: Option<String>,
    /// Arguments hidden from the model and always given this value.
    pub fixed: Map<String, Value>,
    /// Arguments given this value when the model leaves them out.
    pub defaults: Map<String, Value>,
}

impl ToolTransform {
    /// A transform of the tool named `tool` that changes nothing yet.
    pub fn new(tool: impl Into<String>) -> Self {
        ToolTransform { tool: tool.into(), ..Default::default() }
    }

    /// Offer it under this name.
    pub fn rename(mut self, name: impl Into<String>) -> Self {
        self.rename = Some(name.into());
        self
    }

    /// Offer it with this description.
    pub fn describe(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Hide the argument `name`: it is always `value`.
    pub fn fix(mut self, name: impl Into<String>, value: Value) -> Self {
        self.fixed.insert(name.into(), value);
        self
    }

    /// Give the argument `name` this default.
    pub fn default(mut self, name: impl Into<String>, value: Value) -> Self {
        self.defaults.insert(name.into(), value);
        self
    }
}

/// The transforms of a toolset: a prefix for every tool (a namespace such
/// as `github__`) and changes to single tools.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Transforms {
    /// Put before every tool's name.
    pub prefix: String,
    /// Changes to single tools.
    pub tools: Vec<ToolTransform>,
}

impl Transforms {
    /// No changes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Put `prefix` before every tool's name.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Change one tool.
    pub fn tool(mut self, transform: ToolTransform) -> Self {
        self.tools.push(transform);
        self
    }
}

/// Why a transform could not be applied; the registry is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TransformError {
    /// A transform names a tool the registry does not have.
    #[error("no tool `{0}` to transform")]
    UnknownTool(String),
    /// A transform fixes or defaults an argument the tool does not take.
    #[error("tool `{tool}` has no argument `{argument}` to fix or default")]
    UnknownArgument {
        /// The tool.
        tool: String,
        /// The argument.
        argument: String,
    },
    /// The transformed tools could not be registered (a name that breaks the
    /// rule, two tools with one name).
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl FunctionRegistry {
    /// This registry's tools with `transforms` applied, all or none (see
    /// [`crate::transform`]); the tools are shared, not copied.
    ///
    /// ```
    /// use toolreg::transform::{ToolTransform, Transforms};
    /// use toolreg::{FunctionRegistry, ParamType, ToolDeclaration, ToolRegistration};
    /// use serde_json::{json, Value};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let mut registry = FunctionRegistry::new();
    /// let decl = ToolDeclaration::builder("search")
    ///     .description("Search the index")
    ///     .param("query", ParamType::String, "What to find")
    ///     .param("index", ParamType::String, "Which index")
    ///     .build();
    /// registry.register(ToolRegistration::new(decl, |args: Value| Ok::<_, String>(args)))?;
    ///
    /// let docs = registry.transformed(
    ///     &Transforms::new().prefix("docs_").tool(ToolTransform::new("search").fix("index", json!("manuals"))),
    /// )?;
    /// let decl = docs.get("docs_search").unwrap().declaration();
    /// assert!(decl.input_schema["properties"].get("index").is_none()); // hidden from the model
    /// let out = docs.execute("docs_search", json!({"query": "setup"})).await?;
    /// assert_eq!(out.value, json!({"query": "setup", "index": "manuals"}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn transformed(&self, transforms: &Transforms) -> Result<FunctionRegistry, TransformError> {
        let mut by_tool: HashMap<&str, &ToolTransform> = HashMap::new();
        for transform in &transforms.tools {
            if !self.contains(&transform.tool) {
                return Err(TransformError::UnknownTool(transform.tool.clone()));
            }
            by_tool.insert(&transform.tool, transform);
        }
        let mut registrations = Vec::with_capacity(self.len());
        for entry in self.list() {
            let original = entry.declaration();
            let transform = by_tool.get(original.name.as_str()).copied();
            let name = transform.and_then(|t| t.rename.as_deref()).unwrap_or(&original.name);
            let mut declaration = original.clone();
            declaration.name = format!("{}{name}", transforms.prefix);
            let Some(transform) = transform else {
                registrations.push(ToolRegistration::new(declaration, MappedTool::plain(entry)));
                continue;
            };
            if let Some(description) = &transform.description {
                declaration.description.clone_from(description);
            }
            hide_and_default(&mut declaration, transform)?;
            let tool = MappedTool {
                original: entry.clone(),
                fixed: transform.fixed.clone(),
                defaults: transform.defaults.clone(),
            };
            registrations.push(ToolRegistration::new(declaration, tool));
        }
        let mut transformed = FunctionRegistry::with_limits(self.limits());
        transformed.register_all(registrations)?;
        Ok(transformed)
    }
}

/// The model's schema: fixed arguments gone, defaulted ones optional with
/// their default shown.
fn hide_and_default(declaration: &mut ToolDeclaration, transform: &ToolTransform) -> Result<(), TransformError> {
    let schema = &mut declaration.input_schema;
    let unknown = |argument: &str| TransformError::UnknownArgument {
        tool: transform.tool.clone(),
        argument: argument.to_owned(),
    };
    for (argument, value) in transform
        .fixed
        .iter()
        .map(|(a, v)| (a, (v, true)))
        .chain(transform.defaults.iter().map(|(a, v)| (a, (v, false))))
    {
        let (value, hide) = value;
        let properties =
            schema.get_mut("properties").and_then(Value::as_object_mut).ok_or_else(|| unknown(argument))?;
        if hide {
            properties.remove(argument).ok_or_else(|| unknown(argument))?;
        } else {
            let property = properties.get_mut(argument).ok_or_else(|| unknown(argument))?;
            if let Value::Object(property) = property {
                property.insert("default".into(), value.clone());
            }
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r.as_str() != Some(argument));
        }
    }
    // Examples show the model calls to copy: never with an argument it no
    // longer has.
    for example in &mut declaration.input_examples {
        if let Value::Object(example) = example {
            example.retain(|argument, _| !transform.fixed.contains_key(argument));
        }
    }
    Ok(())
}

/// A transformed tool: the original, run on arguments mapped back.
struct MappedTool {
    original: ToolEntry,
    fixed: Map<String, Value>,
    defaults: Map<String, Value>,
}

impl MappedTool {
    /// Only renamed: the arguments go through unchanged.
    fn plain(original: &ToolEntry) -> Self {
        MappedTool { original: original.clone(), fixed: Map::new(), defaults: Map::new() }
    }
}

impl ErasedTool for MappedTool {
    fn call(&self, cx: CallContext, mut args: Value) -> ToolFuture {
        if let Value::Object(arguments) = &mut args {
            for (name, value) in &self.fixed {
                arguments.insert(name.clone(), value.clone());
            }
            for (name, value) in &self.defaults {
                arguments.entry(name.clone()).or_insert_with(|| value.clone());
            }
        }
        // The original's own schema has the last word.
        if let Err(error) = self.original.check_arguments(&mut args) {
            return ToolFuture::ready(Err(error));
        }
        self.original.tool().call(cx, args)
    }

    fn runs_inline(&self) -> bool {
        self.original.tool().runs_inline()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::declaration::ParamType;
    use crate::exec::ToolError;

    fn registry() -> FunctionRegistry {
        let mut registry = FunctionRegistry::new();
        let decl = ToolDeclaration::builder("query")
            .description("Run a query")
            .param("sql", ParamType::String, "The SQL")
            .param("database", ParamType::String, "Which database")
            .optional_param("limit", ParamType::Integer, "At most")
            .build();
        registry.register(ToolRegistration::new(decl, |args: Value| Ok::<_, String>(args))).unwrap();
        let other = ToolDeclaration::builder("ping").description("Check the connection").build();
        registry.register(ToolRegistration::new(other, |_: Value| Ok::<_, String>("pong"))).unwrap();
        registry
    }

    #[test]
    fn a_fixed_argument_leaves_the_examples_too() {
        let mut registry = FunctionRegistry::new();
        let decl = ToolDeclaration::builder("query")
            .param("sql", ParamType::String, "The SQL")
            .param("database", ParamType::String, "Which database")
            .example(json!({"sql": "select 1", "database": "main"}))
            .build();
        let mut schema = decl.input_schema.clone();
        schema["additionalProperties"] = json!(false);
        let decl = ToolDeclaration { input_schema: schema, ..decl };
        registry.register(ToolRegistration::new(decl, |args: Value| Ok::<_, String>(args))).unwrap();
        let fixed = Transforms::new().tool(ToolTransform::new("query").fix("database", json!("analytics")));
        // The example would not fit the closed schema with `database` left in.
        let transformed = registry.transformed(&fixed).unwrap();
        let decl = transformed.get("query").unwrap().declaration();
        assert_eq!(decl.input_examples, [json!({"sql": "select 1"})]);
    }

    #[tokio::test]
    async fn renamed_described_fixed_and_defaulted_calls_map_back() {
        let transforms = Transforms::new().prefix("pg__").tool(
            ToolTransform::new("query")
                .rename("sql")
                .describe("Query the analytics database")
                .fix("database", json!("analytics"))
                .default("limit", json!(100)),
        );
        let pg = registry().transformed(&transforms).unwrap();
        assert_eq!(pg.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["pg__sql", "pg__ping"]);
        let decl = pg.get("pg__sql").unwrap().declaration();
        assert_eq!(decl.description, "Query the analytics database");
        assert!(decl.input_schema["properties"].get("database").is_none());
        assert_eq!(decl.input_schema["properties"]["limit"]["default"], 100);
        assert_eq!(decl.input_schema["required"], json!(["sql"]));

        let out = pg.execute("pg__sql", json!({"sql": "select 1"})).await.unwrap();
        assert_eq!(out.value, json!({"sql": "select 1", "database": "analytics", "limit": 100}));
        let out = pg.execute("pg__sql", json!({"sql": "select 1", "limit": 5})).await.unwrap();
        assert_eq!(out.value["limit"], 5);
        // The hidden argument cannot be changed: the fixed value wins.
        let sneaky = pg.execute("pg__sql", json!({"sql": "x", "database": "prod"})).await.unwrap();
        assert_eq!(sneaky.value["database"], "analytics");
        assert_eq!(pg.execute("pg__ping", json!({})).await.unwrap().value, "pong");
    }

    #[tokio::test]
    async fn a_fixed_value_the_original_refuses_is_refused_at_call_time() {
        let transforms = Transforms::new().tool(ToolTransform::new("query").fix("database", json!(7)));
        let broken = registry().transformed(&transforms).unwrap();
        let error = broken.execute("query", json!({"sql": "x"})).await.unwrap_err();
        assert!(matches!(error, ToolError::InvalidArguments { .. }), "{error}");
    }

    /// Through every format: the transformed tool is declared as it is
    /// offered, the model's call (written as each provider writes it) is
    /// read back to it, and it runs with its arguments mapped back.
    #[cfg(feature = "providers")]
    #[tokio::test]
    async fn transformed_calls_round_trip_through_every_format() {
        use crate::exec::ToolCall;
        use crate::provider::{Provider, ToolRef};
        let transforms = Transforms::new()
            .prefix("pg-")
            .tool(ToolTransform::new("query").fix("database", json!("analytics")).default("limit", json!(10)));
        let pg = registry().transformed(&transforms).unwrap();
        for provider in Provider::ALL.into_iter().filter(|p| *p != Provider::Mcp) {
            let format = provider.wire_format();
            let declared = format.declare(&ToolRef::list(pg.list())).unwrap();
            let sent = [ToolCall::new("c1", "pg-query", json!({"sql": "select 1"}))];
            let turn = format.render_calls("", &sent, &declared.mapping);
            let calls = format.parse_calls(&turn[0], &declared.mapping).unwrap_or_else(|e| panic!("{provider}: {e}"));
            assert_eq!(calls[0].name, "pg-query", "{provider}");
            let arguments = match calls.into_iter().next().map(|call| call.arguments).unwrap() {
                crate::exec::ToolArguments::Json(value) => value,
                crate::exec::ToolArguments::Raw(text) => serde_json::from_str(&text).unwrap(),
            };
            let out = pg.execute("pg-query", arguments).await.unwrap();
            assert_eq!(out.value, json!({"sql": "select 1", "database": "analytics", "limit": 10}), "{provider}");
        }
    }

    #[test]
    fn bad_transforms_are_typed_errors() {
        let r = registry();
        let missing = r.transformed(&Transforms::new().tool(ToolTransform::new("nope")));
        assert_eq!(missing.unwrap_err(), TransformError::UnknownTool("nope".into()));
        let argument = r.transformed(&Transforms::new().tool(ToolTransform::new("ping").fix("x", json!(1))));
        assert!(matches!(argument, Err(TransformError::UnknownArgument { .. })));
        let clash = r.transformed(&Transforms::new().tool(ToolTransform::new("ping").rename("query")));
        assert!(matches!(clash, Err(TransformError::Registry(RegistryError::DuplicateTool { .. }))));
        let bad_name = r.transformed(&Transforms::new().prefix("a.b"));
        assert!(matches!(bad_name, Err(TransformError::Registry(RegistryError::InvalidName { .. }))));
    }
}
