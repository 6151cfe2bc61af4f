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

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    CallMapping, Declarations, Dialect, FormatOptions, Provider, ProviderError, SchemaMode, ToolRef, ToolStatus,
    WireFormat, find, generated_id, invalid, object_arguments, prepare, result_text, sealed, str_field,
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
struct GeminiTool<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
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
    fn declare_partial(&self, tools: &[ToolRef<'_>]) -> Declarations {
        let mode = if self.json_schema { SchemaMode::Canonical } else { SchemaMode::Lowered(Dialect::Gemini) };
        let mut prepared = prepare(Provider::Gemini, mode, &self.options, tools);
        let mut declarations = Vec::with_capacity(prepared.tools.len());
        for p in &prepared.tools {
            let (parameters, parameters_json_schema) = if self.json_schema {
                (None, Some(p.schema.as_ref()))
            } else {
                let empty = p.schema.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty());
                (if empty { None } else { Some(p.schema.as_ref()) }, None)
            };
            if parameters.is_none() && parameters_json_schema.is_none() {
                prepared.report[p.report].status = ToolStatus::Declared;
            }
            declarations.push(FunctionDeclaration {
                name: &p.name,
                description: super::description(p.tool.declaration()),
                parameters,
                parameters_json_schema,
            });
        }
        let tools = if declarations.is_empty() {
            Value::Array(Vec::new())
        } else {
            super::to_json(&[GeminiTool { function_declarations: declarations }])
        };
        prepared.finish(tools)
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
