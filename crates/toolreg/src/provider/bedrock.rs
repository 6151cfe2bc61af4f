//! AWS Bedrock Converse.
//!
//! - Declarations: `toolConfig.tools = [{"toolSpec":{"name","description","inputSchema":{"json":..}}}]`,
//!   the canonical JSON Schema passed through.
//! - Calls in: `toolUse` content blocks of `output.message`.
//! - Results out: one user message of `toolResult` blocks with `status: "success" | "error"`.
//!   A result with blocks other than text gets the `ToolResultContentBlock`s
//!   of the Converse API reference: `text`; `image` (`format` png, jpeg, gif
//!   or webp, `source.bytes` in base64); `document` (`format` pdf, csv, doc,
//!   docx, xls, xlsx, html, txt or md, a `name` made of the characters
//!   Bedrock allows, `source.bytes`); and, after them, `json` with the
//!   structured value when it is an object. Audio, other types, links and
//!   embedded text resources are their summary text
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.

use serde::Serialize;
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted};
use super::choice::{spelled, unsupported, unsupported_validated};
use super::declared::Entries;
use super::history::{as_object, text_block};
use super::stream::streamed_input;
use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, NameRule, Prepared, Provider, ProviderError, Registration,
    RenderedResults, SchemaMode, StreamedCalls, ToolChoice, ToolRef, WireFormat, find, generated_id, invalid,
    object_arguments, prepare, result_text, sealed, str_field,
};
use crate::exec::{Content, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Bedrock,
    name: "bedrock",
    aliases: &[],
    title: "AWS Bedrock Converse",
    name_rule: NameRule::OPENAI,
    build: |options| Box::new(Bedrock::with_options(options)),
};

/// The document types of a `document` block, by MIME type.
const DOCUMENTS: &[(&str, &str)] = &[
    ("application/pdf", "pdf"),
    ("text/csv", "csv"),
    ("application/msword", "doc"),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    ("application/vnd.ms-excel", "xls"),
    ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
    ("text/html", "html"),
    ("text/plain", "txt"),
    ("text/markdown", "md"),
];

/// Bedrock Converse's wire format.
#[derive(Debug, Clone, Default)]
pub struct Bedrock {
    options: FormatOptions,
}

/// One entry of `toolConfig.tools`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BedrockTool<'a> {
    #[serde(rename = "toolSpec")]
    tool_spec: ToolSpec<'a>,
}

/// A `toolSpec`.
#[derive(Debug, Clone, Serialize)]
struct ToolSpec<'a> {
    name: &'a str,
    /// Bedrock refuses an empty description, so it is left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(rename = "inputSchema")]
    input_schema: InputSchema<'a>,
}

/// The `inputSchema` union: a JSON Schema document.
#[derive(Debug, Clone, Serialize)]
struct InputSchema<'a> {
    json: &'a Value,
}

/// A prepared tool as an entry of `toolConfig.tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> BedrockTool<'b> {
    BedrockTool {
        tool_spec: ToolSpec {
            name: &p.name,
            description: super::description(p.tool.declaration()),
            input_schema: InputSchema { json: &p.schema },
        },
    }
}

impl Bedrock {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Bedrock);

impl WireFormat for Bedrock {
    fn provider(&self) -> Provider {
        Provider::Bedrock
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Bedrock, SchemaMode::Canonical, &self.options, tools)
            .finish(|tools, _| Box::new(Entries(tools, entry)))
    }

    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let provider = Provider::Bedrock;
        Ok(match choice {
            ToolChoice::Auto => json!({"auto": {}}),
            ToolChoice::Required => json!({"any": {}}),
            ToolChoice::Tool(n) => json!({"tool": {"name": spelled(mapping, n)}}),
            ToolChoice::Validated => return Err(unsupported_validated(provider)),
            ToolChoice::None => {
                return Err(unsupported(provider, "way to forbid tool calls but to leave out `toolConfig`"));
            }
            ToolChoice::Allowed { .. } => return Err(unsupported(provider, "list of allowed tools")),
        })
    }

    /// One assistant message: a text block, then a `toolUse` block per call.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        let mut blocks = text_block(text, |t| json!({"text": t}));
        blocks.extend(calls.iter().map(|c| {
            json!({"toolUse": {"toolUseId": c.id, "name": mapping.provider_name(&c.name), "input": as_object(&c.arguments)}})
        }));
        vec![json!({"role": "assistant", "content": blocks})]
    }

    /// Objects go back as `{"json"}` content, anything else (and errors) as
    /// `{"text"}`; blocks as their content blocks.
    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> RenderedResults {
        if results.is_empty() {
            return RenderedResults::default();
        }
        let mut fallbacks = Vec::new();
        let blocks: Vec<Value> = results
            .iter()
            .map(|result| {
                let content = match (blocks::rich(result), result.value()) {
                    (Some(output), _) => {
                        let text = |text| json!({"text": text});
                        let mut content = blocks::inline(&result.id, output, &mut fallbacks, text, content_block);
                        if let Some(value @ Value::Object(_)) = output.structured() {
                            content.push(json!({"json": value}));
                        }
                        Value::Array(content)
                    }
                    (None, Some(value @ Value::Object(_))) => json!([{"json": value}]),
                    _ => json!([{"text": result_text(result)}]),
                };
                let status = if result.is_error() { "error" } else { "success" };
                json!({"toolResult": {"toolUseId": result.id, "content": content, "status": status}})
            })
            .collect();
        RenderedResults { messages: vec![json!({"role": "user", "content": blocks})], fallbacks }
    }
}

/// A block as a `ToolResultContentBlock`, if Bedrock has one for it.
fn content_block(block: &Content) -> Option<Value> {
    let media = blocks::media(block)?;
    if let Some(image) = accepted(&media.mime_type, WEB_IMAGES) {
        let format = image.trim_start_matches("image/");
        return Some(json!({"image": {"format": format, "source": {"bytes": media.base64()}}}));
    }
    let essence = blocks::essence(&media.mime_type);
    let (_, format) = DOCUMENTS.iter().find(|(mime, _)| mime.eq_ignore_ascii_case(essence))?;
    let name = document_name(blocks::file_name(&media));
    Some(json!({"document": {"format": format, "name": name, "source": {"bytes": media.base64()}}}))
}

/// A document name Bedrock takes: letters, digits, single spaces, hyphens,
/// parentheses and square brackets. A file's extension is dropped (the
/// `format` says it) and any other character becomes a hyphen.
fn document_name(file: &str) -> String {
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let mut name = String::with_capacity(stem.len());
    for c in stem.chars() {
        let c = match c {
            c if c.is_ascii_alphanumeric() || "-()[]".contains(c) => c,
            c if c.is_whitespace() => ' ',
            _ => '-',
        };
        if !(c == ' ' && (name.is_empty() || name.ends_with(' '))) {
            name.push(c);
        }
    }
    let name = name.trim_end();
    if name.is_empty() { "document".to_owned() } else { name.to_owned() }
}

impl sealed::Format for Bedrock {
    /// A `toolUse` block's start, then the deltas of its input text.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        let at = event.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
        if let Some(start) = event.pointer("/start/toolUse") {
            let call = stream.at(at)?;
            call.id = start["toolUseId"].as_str().unwrap_or_default().to_owned();
            call.name = start["name"].as_str().unwrap_or_default().to_owned();
        } else if let Some(text) = event.pointer("/delta/toolUse/input").and_then(Value::as_str)
            && let Some(call) = stream.started(at)
        {
            call.arguments.push_str(text);
        }
        Ok(())
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        let blocks: Vec<Value> = stream
            .into_calls()
            .map(|c| {
                let input = streamed_input(c.arguments);
                json!({"toolUse": {"toolUseId": c.id, "name": c.name, "input": input}})
            })
            .collect();
        Some(json!({"output": {"message": {"role": "assistant", "content": blocks}}}))
    }

    /// The `toolUse` blocks of a Converse response, a message, or a content list.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Bedrock;
        let blocks = match body {
            Value::Array(blocks) => blocks,
            _ => match find(body, &["/output/message/content", "/content"]) {
                Some(Value::Array(blocks)) => blocks,
                _ => return Err(invalid(p, "expected a Converse response, a message or a content list")),
            },
        };
        blocks
            .iter()
            .filter_map(|b| b.get("toolUse"))
            .enumerate()
            .map(|(i, tool_use)| {
                let name = str_field(p, tool_use, "name", "a toolUse block")?;
                let id = match tool_use.get("toolUseId").and_then(Value::as_str) {
                    Some(id) => id.to_owned(),
                    None => generated_id("tooluse_", i, name, tool_use.get("input").unwrap_or(&Value::Null), mapping),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(tool_use.get("input")) })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::document_name;

    #[test]
    fn document_names_keep_to_the_characters_bedrock_allows() {
        assert_eq!(document_name("report.pdf"), "report");
        assert_eq!(document_name("Q3  results (final).v2.xlsx"), "Q3 results (final)-v2");
        assert_eq!(document_name("données_2026.csv"), "donn-es-2026");
        assert_eq!(document_name(".pdf"), "document");
        assert_eq!(document_name("  "), "document");
    }
}
