//! [`DeclarationBuilder`]: a declaration written by hand, parameter by
//! parameter ([`ParamType`]), instead of derived with `#[tool]`.

use serde_json::{Map, Value, json};

use super::{SafetyLevel, Scope, ToolDeclaration};

/// JSON type of a parameter declared with [`DeclarationBuilder::param`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// A JSON string.
    String,
    /// Any JSON number.
    Number,
    /// A whole number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A JSON object.
    Object,
    /// A JSON array.
    Array,
}

impl ParamType {
    /// The JSON Schema `type` keyword for this type.
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Number => "number",
            ParamType::Integer => "integer",
            ParamType::Boolean => "boolean",
            ParamType::Object => "object",
            ParamType::Array => "array",
        }
    }
}

/// Builds a [`ToolDeclaration`] one parameter at a time, for tools defined at
/// run time (configuration, scripts, remote servers).
///
/// Parameters are required unless marked optional; a default makes a
/// parameter optional and is filled in when the key is absent.
///
/// ```
/// use toolreg::{ToolDeclaration, ParamType};
/// use serde_json::json;
///
/// let decl = ToolDeclaration::builder("normalize_scores")
///     .description("Normalize an array of scores to 0-1 range")
///     .param("scores", ParamType::Array, "Array of numeric scores")
///     .optional_param("precision", ParamType::Integer, "Decimal places")
///     .param_with_default("scale", ParamType::Number, "Upper bound", json!(1.0))
///     .build();
/// assert_eq!(decl.input_schema["required"], json!(["scores"]));
/// assert_eq!(decl.input_schema["properties"]["scale"]["default"], json!(1.0));
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct DeclarationBuilder {
    name: String,
    description: String,
    properties: Map<String, Value>,
    required: Vec<String>,
    output_schema: Option<Value>,
    safety: SafetyLevel,
    categories: Vec<String>,
    scope: Scope,
    exclusive_key: Option<String>,
    examples: Vec<Value>,
}

impl DeclarationBuilder {
    pub(super) fn new(name: String) -> Self {
        DeclarationBuilder {
            name,
            description: String::new(),
            properties: Map::new(),
            required: Vec::new(),
            output_schema: None,
            safety: SafetyLevel::default(),
            categories: Vec::new(),
            scope: Scope::default(),
            exclusive_key: None,
            examples: Vec::new(),
        }
    }

    /// What the tool does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// A required parameter.
    pub fn param(self, name: impl Into<String>, ty: ParamType, description: impl Into<String>) -> Self {
        self.push(name.into(), json!({"type": ty.as_str(), "description": description.into()}), true)
    }

    /// An optional parameter with no default.
    pub fn optional_param(self, name: impl Into<String>, ty: ParamType, description: impl Into<String>) -> Self {
        self.push(name.into(), json!({"type": ty.as_str(), "description": description.into()}), false)
    }

    /// An optional parameter whose `default` is filled in when it is absent.
    pub fn param_with_default(
        self,
        name: impl Into<String>,
        ty: ParamType,
        description: impl Into<String>,
        default: Value,
    ) -> Self {
        let schema = json!({"type": ty.as_str(), "description": description.into(), "default": default});
        self.push(name.into(), schema, false)
    }

    /// A parameter with a full JSON Schema of its own (enums, nested objects).
    pub fn param_schema(self, name: impl Into<String>, schema: Value, required: bool) -> Self {
        self.push(name.into(), schema, required)
    }

    /// Set the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Set the safety level.
    pub fn safety(mut self, safety: SafetyLevel) -> Self {
        self.safety = safety;
        self
    }

    /// Add a category.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.categories.push(category.into());
        self
    }

    /// Set the scope.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Name the argument whose value is the tool's exclusive key.
    pub fn exclusive_key(mut self, argument: impl Into<String>) -> Self {
        self.exclusive_key = Some(argument.into());
        self
    }

    /// Add an example of the tool's arguments: a JSON object the finished
    /// schema accepts (checked when the tool is registered; see
    /// [`ToolDeclaration::input_examples`]).
    ///
    /// ```
    /// use toolreg::{ToolDeclaration, ParamType};
    /// use toolreg::provider::{ToolRef, WireFormat, anthropic::Anthropic, openai_chat::OpenAiChat};
    /// use serde_json::json;
    ///
    /// let decl = ToolDeclaration::builder("get_weather")
    ///     .param("city", ParamType::String, "City name")
    ///     .optional_param("unit", ParamType::String, "celsius or fahrenheit")
    ///     .example(json!({"city": "Paris"}))
    ///     .example(json!({"city": "Boston", "unit": "fahrenheit"}))
    ///     .build();
    /// let anthropic = Anthropic::new().declare(&[ToolRef::from(&decl)])?;
    /// assert_eq!(anthropic.tools[0]["input_examples"][1], json!({"city": "Boston", "unit": "fahrenheit"}));
    /// // Other providers have no field for them.
    /// let openai = OpenAiChat::new().declare(&[ToolRef::from(&decl)])?;
    /// assert!(!openai.tools.to_string().contains("Boston"));
    /// # Ok::<(), toolreg::provider::ProviderError>(())
    /// ```
    pub fn example(mut self, arguments: Value) -> Self {
        self.examples.push(arguments);
        self
    }

    fn push(mut self, name: String, schema: Value, required: bool) -> Self {
        self.required.retain(|r| r != &name);
        if required {
            self.required.push(name.clone());
        }
        self.properties.insert(name, schema);
        self
    }

    /// Finish the declaration. Names are checked when it is registered.
    pub fn build(self) -> ToolDeclaration {
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            schema.insert("required".into(), self.required.into_iter().map(Value::String).collect());
        }
        let mut decl = ToolDeclaration::new(self.name, self.description, Value::Object(schema))
            .with_safety(self.safety)
            .with_scope(self.scope);
        for category in self.categories {
            decl = decl.with_category(category);
        }
        if let Some(output) = self.output_schema {
            decl = decl.with_output_schema(output);
        }
        decl.exclusive_key = self.exclusive_key;
        decl.input_examples = self.examples;
        decl
    }
}
