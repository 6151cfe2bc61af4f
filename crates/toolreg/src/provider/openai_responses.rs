//! OpenAI Responses API.
//!
//! - Declarations are flat: `{"type":"function","name","description","parameters","strict"}`.
//! - Calls in: `function_call` items of `output`; `call_id` is the id results answer.
//! - Results out: `{"type":"function_call_output","call_id","output"}` items.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::openai_chat::check_count;
use super::{
    CallMapping, Declarations, Lowering, NameStyle, Provider, ProviderError, StrictOptions, Strictness, ToolRef, find,
    generated_id, invalid, prepare, result_text, str_field,
};
use crate::exec::{ToolArguments, ToolCall, ToolResult};

/// Renders tools for the Responses API and reads its function calls.
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponses {
    strict: StrictOptions,
    names: NameStyle,
}

/// One entry of the Responses API's `tools`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ResponsesTool<'a> {
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The name as sent.
    pub name: Cow<'a, str>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// JSON Schema of the arguments.
    pub parameters: Cow<'a, Value>,
    /// Sent explicitly: `false` opts out of the API's "strict if compatible".
    pub strict: bool,
}

/// A tool result as a Responses input item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FunctionCallOutput {
    /// Always `"function_call_output"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The `call_id` of the call this answers.
    pub call_id: String,
    /// The result's text.
    pub output: String,
}

impl OpenAiResponses {
    /// Default options: strict if compatible, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Strict mode for every tool without its own setting.
    pub fn strict(mut self, strictness: Strictness) -> Self {
        self.strict.default = strictness;
        self
    }

    /// Strict mode for one tool.
    pub fn strict_for(mut self, tool: impl Into<String>, strictness: Strictness) -> Self {
        self.strict.per_tool.insert(tool.into(), strictness);
        self
    }

    /// What to do with names OpenAI cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as the Responses API's `tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<ResponsesTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (prepared, mapping, not_strict) =
            prepare(Provider::OpenAiResponses, Some(Lowering::OpenAiStrict), &self.strict, self.names, tools)?;
        check_count(Provider::OpenAiResponses, prepared.len())?;
        let tools = prepared
            .into_iter()
            .map(|p| ResponsesTool {
                kind: "function",
                name: p.name,
                description: super::description(p.tool.declaration()),
                parameters: p.schema,
                strict: p.strict,
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// The `function_call` items of a response (its `output`), of an item
    /// list, or a single item. The call's id is its `call_id`.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::OpenAiResponses;
        let items: Vec<&Value> = match body {
            Value::Array(items) => items.iter().collect(),
            Value::Object(_) if body.get("type").is_some_and(|t| t == "function_call") => vec![body],
            Value::Object(_) => match find(body, &["/output"]) {
                Some(Value::Array(items)) => items.iter().collect(),
                _ => return Err(invalid(p, "expected a response with `output`, an item list or an item")),
            },
            _ => return Err(invalid(p, "expected a JSON object or array")),
        };
        items
            .into_iter()
            .filter(|item| item.get("type").is_some_and(|t| t == "function_call"))
            .enumerate()
            .map(|(i, item)| {
                let name = str_field(p, item, "name", "a function_call item")?;
                let arguments = match item.get("arguments") {
                    Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
                    other => super::object_arguments(other),
                };
                let id = match item.get("call_id").and_then(Value::as_str) {
                    Some(id) => id.to_owned(),
                    None => generated_id("call_", i, name, item.get("arguments").unwrap_or(&Value::Null)),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments })
            })
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `function_call_output` item.
    pub fn result_item(result: &ToolResult) -> FunctionCallOutput {
        FunctionCallOutput { kind: "function_call_output", call_id: result.id.clone(), output: result_text(result) }
    }
}
