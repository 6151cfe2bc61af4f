//! OpenAI Responses API.
//!
//! - Declarations are flat: `{"type":"function","name","description","parameters","strict"}`.
//! - Calls in: `function_call` items of `output`; `call_id` is the id results answer.
//! - Results out: one `{"type":"function_call_output","call_id","output"}`
//!   item per result. `output` is the result's text, or, for a result with
//!   blocks other than text, the list the API reference's
//!   `FunctionCallOutput` takes: `input_text`, `input_image` (PNG, JPEG,
//!   GIF, WebP, as a data URL) and `input_file` (`filename` and `file_data`,
//!   a data URL). Audio, other image types, links and embedded text
//!   resources are their summary text
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.

use serde::Serialize;
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted};
use super::openai_chat::MAX_TOOLS;
use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, Prepared, Provider, ProviderError,
    RenderedResults, SchemaMode, Shape, Strictness, ToolRef, WireFormat, find, generated_id, invalid, prepare,
    result_text, sealed, str_field,
};
use crate::exec::{Content, ToolArguments, ToolCall, ToolResult};

/// The Responses API's wire format.
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponses {
    options: FormatOptions,
}

/// One entry of the Responses API's `tools`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ResponsesTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    /// Sent explicitly: `false` opts out of the API's "strict if compatible".
    strict: bool,
}

/// A prepared tool as an entry of `tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> ResponsesTool<'b> {
    ResponsesTool {
        kind: "function",
        name: &p.name,
        description: super::description(p.tool.declaration()),
        parameters: &p.schema,
        strict: p.strict,
    }
}

impl OpenAiResponses {
    /// Default options: strict if compatible, names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(OpenAiResponses, strict);

impl WireFormat for OpenAiResponses {
    fn provider(&self) -> Provider {
        Provider::OpenAiResponses
    }

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        let mode = SchemaMode::Strict(Dialect::OpenAiStrict, Strictness::IfCompatible);
        let mut prepared = prepare(Provider::OpenAiResponses, mode, &self.options, tools);
        prepared.limit(MAX_TOOLS);
        prepared.finish(Shape::OpenAiResponses)
    }

    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> RenderedResults {
        let mut fallbacks = Vec::new();
        let messages = results
            .iter()
            .map(|r| {
                let output = match blocks::rich(r) {
                    None => Value::String(result_text(r)),
                    Some(output) => Value::Array(blocks::inline(
                        &r.id,
                        output,
                        &mut fallbacks,
                        |text| json!({"type": "input_text", "text": text}),
                        output_item,
                    )),
                };
                json!({"type": "function_call_output", "call_id": r.id, "output": output})
            })
            .collect();
        RenderedResults { messages, fallbacks }
    }
}

/// A block as an item of `function_call_output.output`, if it can be one.
fn output_item(block: &Content) -> Option<Value> {
    let media = blocks::media(block)?;
    let mime = &media.mime_type;
    if let Some(image) = accepted(mime, WEB_IMAGES) {
        return Some(json!({"type": "input_image", "image_url": format!("data:{image};base64,{}", media.base64())}));
    }
    if blocks::is(mime, "image") || blocks::is(mime, "audio") {
        return None;
    }
    Some(json!({"type": "input_file", "filename": blocks::file_name(&media), "file_data": media.data_url()}))
}

impl sealed::Format for OpenAiResponses {
    /// The `function_call` items of a response (its `output`), of an item
    /// list, or a single item. The call's id is its `call_id`.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
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
                    None => generated_id("call_", i, name, item.get("arguments").unwrap_or(&Value::Null), mapping),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments })
            })
            .collect()
    }
}
