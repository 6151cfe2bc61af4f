//! Google Gemini (`generateContent`).
//!
//! - Declarations: `[{"functionDeclarations":[{"name","description","parameters"}]}]`,
//!   `parameters` in Gemini's OpenAPI subset ([`lower::gemini`](super::lower::gemini)),
//!   or the canonical schema as `parametersJsonSchema` when asked for. A
//!   recursive type cannot be written as `parameters`: typed error.
//! - Calls in: `functionCall` parts; `args` is an object; a call without an
//!   `id` gets a stable generated one (not sent back).
//! - Results out: `functionResponse` parts, `{"output": ..}` or `{"error": ..}`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::{
    CallMapping, Declarations, Lowering, NameStyle, Provider, ProviderError, ToolRef, find, generated_id, invalid,
    object_arguments, spell_names, str_field,
};
use crate::exec::{ToolCall, ToolResult};

/// Prefix of the ids toolreg makes up for calls Gemini sent without one.
const GENERATED: &str = "gemini_call_";

/// Renders tools for Gemini and reads its `functionCall` parts.
#[derive(Debug, Clone, Default)]
pub struct Gemini {
    json_schema: bool,
    names: NameStyle,
}

/// The single entry of Gemini's `tools` that holds every declaration.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GeminiTool<'a> {
    /// The functions.
    pub function_declarations: Vec<FunctionDeclaration<'a>>,
}

/// One `functionDeclarations` entry.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FunctionDeclaration<'a> {
    /// The name as sent.
    pub name: Cow<'a, str>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// The OpenAPI-subset schema; left out for tools without parameters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Cow<'a, Value>>,
    /// The canonical JSON Schema, when asked for instead of `parameters`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters_json_schema: Option<Cow<'a, Value>>,
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

    /// What to do with names Gemini cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as Gemini's `tools` (one `Tool` holding every
    /// declaration; none at all for no tools).
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<GeminiTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let tools: Vec<ToolRef<'a>> = tools.into_iter().map(Into::into).collect();
        let (names, mapping) = spell_names(Provider::Gemini, self.names, &tools)?;
        let mut declarations = Vec::with_capacity(tools.len());
        for (tool, name) in tools.into_iter().zip(names) {
            let decl = tool.declaration();
            let (parameters, parameters_json_schema) =
                if self.json_schema {
                    (None, Some(Cow::Borrowed(&decl.input_schema)))
                } else {
                    let lowered = tool.lowered(Lowering::Gemini).map_err(|reason| {
                        ProviderError::UnsupportedSchema { provider: Provider::Gemini, tool: decl.name.clone(), reason }
                    })?;
                    let empty = lowered.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty());
                    (if empty { None } else { Some(lowered) }, None)
                };
            declarations.push(FunctionDeclaration {
                name,
                description: super::description(decl),
                parameters,
                parameters_json_schema,
            });
        }
        let tools =
            if declarations.is_empty() { Vec::new() } else { vec![GeminiTool { function_declarations: declarations }] };
        Ok(Declarations { tools, mapping, not_strict: Vec::new() })
    }

    /// The `functionCall` parts of a response (first candidate), of a
    /// `Content`, or of a part list.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
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
                    _ => generated_id(GENERATED, i, name, call.get("args").unwrap_or(&Value::Null)),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(call.get("args")) })
            })
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `functionResponse` part. The name is the one Gemini
    /// called (respelled through `mapping`); an id toolreg generated is not
    /// sent back.
    pub fn result_part(result: &ToolResult, mapping: &CallMapping) -> Value {
        let response = match result.value() {
            Some(value) => json!({"output": value}),
            None => json!({"error": result.text()}),
        };
        let mut function_response = json!({"name": mapping.provider_name(&result.name), "response": response});
        if !result.id.starts_with(GENERATED) {
            function_response["id"] = Value::String(result.id.clone());
        }
        json!({"functionResponse": function_response})
    }

    /// The `Content` that answers a batch of calls.
    pub fn results_content(results: &[ToolResult], mapping: &CallMapping) -> Value {
        let parts: Vec<Value> = results.iter().map(|r| Self::result_part(r, mapping)).collect();
        json!({"role": "user", "parts": parts})
    }
}
