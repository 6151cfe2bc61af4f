//! Google Gemini (`generateContent`).
//!
//! - Declarations: `[{"functionDeclarations":[{"name","description","parameters"}]}]`,
//!   `parameters` in Gemini's OpenAPI subset ([`lower::gemini`](super::lower::gemini)),
//!   or the canonical schema as `parametersJsonSchema` when asked for. A
//!   recursive type cannot be written as `parameters`: the tool is refused
//!   with [`LoweringError::Recursive`](super::LoweringError::Recursive), and
//!   [`declare_partial`](super::WireFormat::declare_partial) sends the rest.
//! - Calls in: `functionCall` parts; `args` is an object; a call without an
//!   `id` gets a stable generated one, noted in the [`CallMapping`] and not
//!   sent back.
//! - Results out: one user `Content` of `functionResponse` parts,
//!   `{"output": ..}` or `{"error": ..}`.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, Prepared, Provider, ProviderError, SchemaMode,
    Shape, ToolRef, ToolStatus, WireFormat, find, generated_id, invalid, object_arguments, prepare, result_text,
    sealed, str_field,
};
use crate::exec::{ToolCall, ToolResult};

/// Gemini's wire format.
#[derive(Debug, Clone, Default)]
pub struct Gemini {
    json_schema: bool,
    options: FormatOptions,
}

/// The single entry of Gemini's `tools` that holds every declaration.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct GeminiTool<T> {
    function_declarations: T,
}

/// One `functionDeclarations` entry.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    /// The OpenAPI-subset schema; left out for tools without parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a Value>,
    /// The canonical JSON Schema, when asked for instead of `parameters`.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<&'a Value>,
}

/// Whether a lowered schema declares no parameter (then `parameters` is left out).
fn no_parameters(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty())
}

/// The prepared tools as Gemini's `tools`: one `Tool` holding every
/// declaration, or none at all for no tools.
pub(crate) fn serialize<S: Serializer>(
    tools: &[Prepared<'_>],
    json_schema: bool,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    struct Declarations<'b, 'a>(&'b [Prepared<'a>], bool);
    impl Serialize for Declarations<'_, '_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let json_schema = self.1;
            serializer.collect_seq(self.0.iter().map(|p| {
                let schema = Some(p.schema.as_ref());
                let (parameters, parameters_json_schema) = match json_schema {
                    true => (None, schema),
                    false => (schema.filter(|s| !no_parameters(s)), None),
                };
                FunctionDeclaration {
                    name: &p.name,
                    description: super::description(p.tool.declaration()),
                    parameters,
                    parameters_json_schema,
                }
            }))
        }
    }
    if tools.is_empty() {
        return serializer.collect_seq(std::iter::empty::<()>());
    }
    [GeminiTool { function_declarations: Declarations(tools, json_schema) }].serialize(serializer)
}

impl Gemini {
    /// Default options: `parameters` (OpenAPI subset), names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Send the canonical schema as `parametersJsonSchema` instead of a
    /// lowered `parameters` (recursive types allowed).
    pub fn json_schema(mut self, yes: bool) -> Self {
        self.json_schema = yes;
        self
    }
}

super::format_options!(Gemini);

impl WireFormat for Gemini {
    fn provider(&self) -> Provider {
        Provider::Gemini
    }

    /// One `Tool` holding every declaration; none at all for no tools.
    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        let mode = if self.json_schema { SchemaMode::Canonical } else { SchemaMode::Lowered(Dialect::Gemini) };
        let mut prepared = prepare(Provider::Gemini, mode, &self.options, tools);
        if !self.json_schema {
            // A tool without parameters is sent without a schema: nothing lowered.
            for p in &prepared.tools {
                if no_parameters(&p.schema) {
                    prepared.report[p.report].status = ToolStatus::Declared;
                }
            }
        }
        prepared.finish(Shape::Gemini { json_schema: self.json_schema })
    }

    /// The name in each part is the one Gemini called (respelled through
    /// `mapping`); an id toolreg generated is not sent back.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> Vec<Value> {
        if results.is_empty() {
            return Vec::new();
        }
        let parts: Vec<Value> = results
            .iter()
            .map(|result| {
                let response = match result.value() {
                    Some(value) => json!({"output": value}),
                    None => json!({"error": result_text(result)}),
                };
                let mut function_response = json!({"name": mapping.provider_name(&result.name), "response": response});
                if !mapping.is_generated_id(&result.id) {
                    function_response["id"] = Value::String(result.id.clone());
                }
                json!({"functionResponse": function_response})
            })
            .collect();
        vec![json!({"role": "user", "parts": parts})]
    }
}

impl sealed::Format for Gemini {
    /// The `functionCall` parts of a response (first candidate), of a
    /// `Content`, or of a part list.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Gemini;
        let parts = match body {
            Value::Array(parts) => parts,
            _ => match find(body, &["/candidates/0/content/parts", "/content/parts", "/parts"]) {
                Some(Value::Array(parts)) => parts,
                _ if body.pointer("/candidates/0").is_some() => return Ok(Vec::new()),
                _ => return Err(invalid(p, "expected a response with candidates, a Content or a list of parts")),
            },
        };
        parts
            .iter()
            .filter_map(|part| part.get("functionCall"))
            .enumerate()
            .map(|(i, call)| {
                let name = str_field(p, call, "name", "a functionCall")?;
                let id = match call.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() => id.to_owned(),
                    _ => generated_id("gemini_call_", i, name, call.get("args").unwrap_or(&Value::Null), mapping),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(call.get("args")) })
            })
            .collect()
    }
}
