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
//! - Streamed: whole `functionCall` parts, kept as they come.
//!
//! Tool choice: `toolConfig.functionCallingConfig` has four modes, and
//! `allowedFunctionNames` only with `ANY` or `VALIDATED` (as its API
//! reference says). Each choice maps to one of them:
//!
//! | choice | Gemini |
//! |---|---|
//! | [`Auto`](ToolChoice::Auto) | `{"mode":"AUTO"}` |
//! | [`Required`](ToolChoice::Required) | `{"mode":"ANY"}` |
//! | [`None`](ToolChoice::None) | `{"mode":"NONE"}` |
//! | [`Validated`](ToolChoice::Validated) | `{"mode":"VALIDATED"}` |
//! | [`Tool(name)`](ToolChoice::Tool) | `{"mode":"ANY","allowedFunctionNames":[name]}` |
//! | [`Allowed { required: true, .. }`](ToolChoice::Allowed) | `{"mode":"ANY","allowedFunctionNames":[..]}` |
//! | [`Allowed { required: false, .. }`](ToolChoice::Allowed) | `{"mode":"VALIDATED","allowedFunctionNames":[..]}` |
//!
//! ```
//! use toolreg::provider::{CallMapping, Provider, ProviderError, ToolChoice};
//! use serde_json::json;
//!
//! // Text or a call, and a call sticks to its tool's schema.
//! let validated = ToolChoice::Validated;
//! let mapping = CallMapping::default();
//! assert_eq!(validated.render(Provider::Gemini, &mapping)?, json!({"functionCallingConfig": {"mode": "VALIDATED"}}));
//! // Elsewhere that is strict mode, set per tool: no choice says it.
//! assert!(matches!(validated.render(Provider::OpenAiChat, &mapping), Err(ProviderError::UnsupportedChoice { .. })));
//! # Ok::<(), ProviderError>(())
//! ```

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::blocks::{self, accepted};
use super::choice::spelled;
use super::history::{as_object, text_block};
use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, NameRule, Prepared, Provider, ProviderError,
    Registration, RenderedResults, SchemaMode, StreamedCalls, ToolChoice, ToolRef, ToolStatus, WireFormat, find,
    generated_id, invalid, object_arguments, prepare, result_text, sealed, str_field,
};
use crate::exec::{Content, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Gemini,
    name: "gemini",
    aliases: &[],
    title: "Google Gemini",
    name_rule: NameRule::GEMINI,
    build: |options| Box::new(Gemini::with_options(options)),
};

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
/// Gemini's `tools`, written by [`serialize`]: with `parametersJsonSchema`
/// when the flag is set.
struct GeminiTools<'b, 'a>(&'b [Prepared<'a>], bool);

impl Serialize for GeminiTools<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(self.0, self.1, serializer)
    }
}

/// declaration, or none at all for no tools.
fn serialize<S: Serializer>(tools: &[Prepared<'_>], json_schema: bool, serializer: S) -> Result<S::Ok, S::Error> {
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
    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
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
        match self.json_schema {
            true => prepared.finish(|tools, _| Box::new(GeminiTools(tools, true))),
            false => prepared.finish(|tools, _| Box::new(GeminiTools(tools, false))),
        }
    }

    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let names = |ns: &[String]| Value::Array(ns.iter().map(|n| spelled(mapping, n)).collect());
        let config = match choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Validated => json!({"mode": "VALIDATED"}),
            ToolChoice::Tool(n) => json!({"mode": "ANY", "allowedFunctionNames": [spelled(mapping, n)]}),
            ToolChoice::Allowed { tools, required } => json!({
                "mode": if *required { "ANY" } else { "VALIDATED" },
                "allowedFunctionNames": names(tools)
            }),
        };
        Ok(json!({"functionCallingConfig": config}))
    }

    /// One `model` content: a text part, then a `functionCall` part per
    /// call, without the ids toolreg made up.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        let mut parts = text_block(text, |t| json!({"text": t}));
        parts.extend(calls.iter().map(|c| {
            let mut call = json!({"name": mapping.provider_name(&c.name), "args": as_object(&c.arguments)});
            if !mapping.is_generated_id(&c.id) {
                call["id"] = json!(c.id);
            }
            json!({"functionCall": call})
        }));
        vec![json!({"role": "model", "parts": parts})]
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
    /// Whole `functionCall` parts, kept in order.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        let parts = event.pointer("/candidates/0/content/parts").and_then(Value::as_array);
        for part in parts.into_iter().flatten().filter(|p| p.get("functionCall").is_some()) {
            stream.push_whole(part)?;
        }
        Ok(())
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        Some(json!({"candidates": [{"content": {"role": "model", "parts": stream.whole}}]}))
    }

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
