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
//!   `{"output": ..}` or `{"error": ..}`. For a result with blocks other
//!   than text, `response` is `{"output": text}` (its text blocks, one per
//!   line) and the media go in the function response's own `parts` as
//!   `inlineData` (`mimeType`, base64 `data`, the file's name as
//!   `displayName`), as Gemini's API reference documents multimodal function
//!   responses: images (PNG, JPEG, WebP, HEIC, HEIF), audio (WAV, MP3, AIFF,
//!   AAC, OGG, FLAC) and PDF. Other types, links and embedded text
//!   resources are their summary text in `output`
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::blocks::{self, accepted};
use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, Prepared, Provider, ProviderError,
    RenderedResults, SchemaMode, Shape, ToolRef, ToolStatus, WireFormat, find, generated_id, invalid, object_arguments,
    prepare, result_text, sealed, str_field,
};
use crate::exec::{Content, ToolCall, ToolResult};

/// The media types a function response's `inlineData` takes.
const INLINE: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
    "audio/wav",
    "audio/mp3",
    "audio/mpeg",
    "audio/aiff",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "application/pdf",
];

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
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults {
        if results.is_empty() {
            return RenderedResults::default();
        }
        let mut fallbacks = Vec::new();
        let parts: Vec<Value> = results
            .iter()
            .map(|result| {
                let mut media_parts = Vec::new();
                let response = match &result.outcome {
                    Err(_) => json!({"error": result_text(result)}),
                    Ok(output) if output.content.is_empty() => json!({"output": output.value}),
                    Ok(output) if output.is_text() => json!({"output": output.text()}),
                    Ok(output) => {
                        let mut lines = Vec::new();
                        for piece in blocks::inline(&result.id, output, &mut fallbacks, Piece::Line, inline_data) {
                            match piece {
                                Piece::Media(part) => media_parts.push(part),
                                Piece::Line(line) => lines.push(line),
                            }
                        }
                        json!({"output": lines.join("\n")})
                    }
                };
                let mut function_response = json!({"name": mapping.provider_name(&result.name), "response": response});
                if !mapping.is_generated_id(&result.id) {
                    function_response["id"] = Value::String(result.id.clone());
                }
                if !media_parts.is_empty() {
                    function_response["parts"] = Value::Array(media_parts);
                }
                json!({"functionResponse": function_response})
            })
            .collect();
        RenderedResults { messages: vec![json!({"role": "user", "parts": parts})], fallbacks }
    }
}

/// Where a block of a result goes: a line of `response.output`, or a part
/// of the function response.
enum Piece {
    Line(String),
    Media(Value),
}

/// A block as a function response part, if `inlineData` can carry it.
fn inline_data(block: &Content) -> Option<Piece> {
    let media = blocks::media(block)?;
    let mime = accepted(&media.mime_type, INLINE)?;
    let mut data = json!({"mimeType": mime, "data": media.base64()});
    if let Some(name) = &media.name {
        data["displayName"] = json!(name);
    }
    Some(Piece::Media(json!({"inlineData": data})))
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
