//! Anthropic Messages.
//!
//! - Declarations: `{"name","description","input_schema","strict"?,"input_examples"?}`; strict
//!   tools get Anthropic's strict subset ([`lower::anthropic_strict`](super::lower::anthropic_strict)).
//!   `input_examples` are the declaration's
//!   [examples](crate::ToolDeclaration::input_examples), checked against its
//!   schema (a tool whose example does not fit is refused with
//!   [`ProviderError::InvalidExample`]). A tool marked
//!   [`ToolRef::deferred`] gets `"defer_loading": true` (Anthropic refuses
//!   a request whose tools are all deferred: keep the search tool not deferred).
//! - Native tool search (see [`WireFormat::native_search`]): the
//!   `tool_result` of a tool search's answer
//!   ([`with_tool_references`](super::with_tool_references)) is one
//!   `{"type":"tool_reference","tool_name"}` block per tool found that the
//!   request declared deferred, as Anthropic documents for a custom tool
//!   search tool.
//! - Calls in: `tool_use` content blocks, whose `input` is an object.
//! - Results out: one user turn of `tool_result` blocks with `is_error`.
//!   Their `content` is the result's text, or, for a result with blocks
//!   other than text, the list of content blocks the API reference's
//!   `ToolResultBlockParam` takes: `text`; `image` with a base64 `source`
//!   (PNG, JPEG, GIF, WebP); `document` with a base64 PDF `source`, or a
//!   `text` source for a UTF-8 text file (its name as `title`). Audio, other
//!   types, links and embedded text resources have no `tool_result` form:
//!   they are their summary text
//!   ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted};
use super::{
    CallMapping, Declarations, DeclaredTools, Dialect, FormatOptions, LoweringError, Prepared, Provider, ProviderError,
    RenderedResults, SchemaMode, Shape, Strictness, ToolRef, ToolStatus, WireFormat, find, generated_id, invalid,
    object_arguments, prepare, result_text, sealed, str_field,
};
use crate::exec::{Content, ToolCall, ToolResult};

/// Anthropic's limit on strict tools in one request.
pub const MAX_STRICT_TOOLS: usize = 20;
/// Anthropic's limit on optional parameters across the strict tools of a request.
pub const MAX_OPTIONAL_PARAMS: usize = 24;
/// Anthropic's limit on parameters with a union type (`anyOf`) across the strict tools of a request.
pub const MAX_UNION_PARAMS: usize = 16;

/// Anthropic Messages' wire format.
///
/// Strict mode defaults to [`Strictness::Off`], Anthropic's own default.
#[derive(Debug, Clone, Default)]
pub struct Anthropic {
    options: FormatOptions,
}

/// One entry of Anthropic's `tools`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AnthropicTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    /// Present (and `true`) for strict tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
    /// The declaration's example arguments, when it has some.
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    input_examples: &'a [Value],
    /// Present (and `true`) for deferred tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    defer_loading: Option<bool>,
}

/// A tool result as a `tool_result` content block.
#[derive(Debug, Clone, Serialize)]
struct ToolResultBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    tool_use_id: &'a str,
    content: ResultContent,
    is_error: bool,
}

/// A `tool_result`'s `content`: text, or content blocks.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum ResultContent {
    Text(String),
    Blocks(Vec<Value>),
}

/// A prepared tool as an entry of `tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> AnthropicTool<'b> {
    AnthropicTool {
        name: &p.name,
        description: super::description(p.tool.declaration()),
        input_schema: &p.schema,
        strict: p.strict.then_some(true),
        input_examples: &p.tool.declaration().input_examples,
        defer_loading: p.tool.is_deferred().then_some(true),
    }
}

impl Anthropic {
    /// Default options: not strict, names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Anthropic, strict);

impl WireFormat for Anthropic {
    fn provider(&self) -> Provider {
        Provider::Anthropic
    }

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        let mode = SchemaMode::Strict(Dialect::AnthropicStrict, Strictness::Off);
        let mut prepared = prepare(Provider::Anthropic, mode, &self.options, tools);
        // Examples of a registered tool were checked when it was registered;
        // a bare declaration's are checked here, and a tool with one that
        // does not fit is refused rather than sent.
        let mut i = 0;
        while i < prepared.tools.len() {
            let tool = prepared.tools[i].tool;
            match tool.is_registered() {
                true => i += 1,
                false => match crate::validate::check_declared_examples(tool.declaration()) {
                    Ok(()) => i += 1,
                    Err((index, reason)) => {
                        let name = tool.declaration().name.clone();
                        let provider = Provider::Anthropic;
                        prepared.refuse(i, ProviderError::InvalidExample { provider, tool: name, index, reason });
                    }
                },
            }
        }
        // Per-request budgets of strict mode: a tool that would go over is
        // sent plain when strictness was "if compatible", refused when required.
        let mut used = [0usize; 3];
        let mut i = 0;
        while i < prepared.tools.len() {
            let p = &mut prepared.tools[i];
            if !p.strict {
                i += 1;
                continue;
            }
            let (optional, unions) = count_params(&p.schema);
            let wanted = [used[0] + 1, used[1] + optional, used[2] + unions];
            let limits = [MAX_STRICT_TOOLS, MAX_OPTIONAL_PARAMS, MAX_UNION_PARAMS];
            let what = ["strict tools", "optional parameters in strict tools", "union parameters in strict tools"];
            let Some(k) = (0..3).find(|&k| wanted[k] > limits[k]) else {
                used = wanted;
                i += 1;
                continue;
            };
            let decl = p.tool.declaration();
            if self.options.strictness(&decl.name, Strictness::Off) == Strictness::Required {
                let reason = ProviderError::TooMany {
                    provider: Provider::Anthropic,
                    what: what[k],
                    count: wanted[k],
                    limit: limits[k],
                };
                prepared.refuse(i, reason);
                continue;
            }
            let reason = LoweringError::Limit { what: what[k], count: wanted[k], limit: limits[k] };
            p.strict = false;
            p.schema = Cow::Borrowed(&decl.input_schema);
            let line = p.report;
            prepared.report[line].status = ToolStatus::NotStrict { reason };
            i += 1;
        }
        prepared.finish(Shape::Anthropic)
    }

    fn native_search(&self) -> bool {
        true
    }

    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults {
        if results.is_empty() {
            return RenderedResults::default();
        }
        let mut fallbacks = Vec::new();
        let blocks: Vec<ToolResultBlock<'_>> = results
            .iter()
            .map(|r| ToolResultBlock {
                kind: "tool_result",
                tool_use_id: &r.id,
                content: match (references(r, mapping), blocks::rich(r)) {
                    (Some(references), _) => ResultContent::Blocks(references),
                    (None, None) => ResultContent::Text(result_text(r)),
                    (None, Some(output)) => ResultContent::Blocks(blocks::inline(
                        &r.id,
                        output,
                        &mut fallbacks,
                        |text| json!({"type": "text", "text": text}),
                        content_block,
                    )),
                },
                is_error: r.is_error(),
            })
            .collect();
        RenderedResults { messages: vec![json!({"role": "user", "content": blocks})], fallbacks }
    }
}

/// A tool search's answer as `tool_reference` blocks, one per tool found
/// that this request declared deferred: Anthropic expands each into the
/// tool's declaration (a reference to any other tool is an error on its
/// side, so those are left out). `None` for any other result, or when no
/// reference is left: the result then goes as it is.
fn references(result: &ToolResult, mapping: &CallMapping) -> Option<Vec<Value>> {
    let output = result.outcome.as_ref().ok()?;
    let blocks: Vec<Value> = super::tool_references(output)
        .into_iter()
        .filter(|name| mapping.is_deferred(name))
        .map(|name| json!({"type": "tool_reference", "tool_name": mapping.provider_name(name)}))
        .collect();
    (!blocks.is_empty()).then_some(blocks)
}

/// A block as Anthropic's `tool_result` content takes it, if it can.
fn content_block(block: &Content) -> Option<Value> {
    let media = blocks::media(block)?;
    let mime = &media.mime_type;
    if let Some(image) = accepted(mime, WEB_IMAGES) {
        let source = json!({"type": "base64", "media_type": image, "data": media.base64()});
        return Some(json!({"type": "image", "source": source}));
    }
    let source = if accepted(mime, &["application/pdf"]).is_some() {
        json!({"type": "base64", "media_type": "application/pdf", "data": media.base64()})
    } else if blocks::is(mime, "text") {
        // A text source takes text, not bytes: a file that is not UTF-8 is its summary.
        let text = std::str::from_utf8(&media.data).ok()?;
        json!({"type": "text", "media_type": "text/plain", "data": text})
    } else {
        return None;
    };
    let mut document = json!({"type": "document", "source": source});
    if let Some(name) = &media.name {
        document["title"] = json!(name);
    }
    Some(document)
}

impl sealed::Format for Anthropic {
    /// The `tool_use` blocks of a response or message (its `content`), or of
    /// a content-block list.
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Anthropic;
        let blocks = match body {
            Value::Array(blocks) => blocks,
            _ => match find(body, &["/content"]) {
                Some(Value::Array(blocks)) => blocks,
                Some(Value::String(_)) => return Ok(Vec::new()),
                _ => return Err(invalid(p, "expected a message with `content` or a list of content blocks")),
            },
        };
        blocks
            .iter()
            .filter(|b| b.get("type").is_some_and(|t| t == "tool_use"))
            .enumerate()
            .map(|(i, block)| {
                let name = str_field(p, block, "name", "a tool_use block")?;
                let id = match block.get("id").and_then(Value::as_str) {
                    Some(id) => id.to_owned(),
                    None => generated_id("toolu_", i, name, block.get("input").unwrap_or(&Value::Null), mapping),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(block.get("input")) })
            })
            .collect()
    }
}

/// Optional parameters and union-typed parameters in a (strict) schema,
/// nested objects included.
fn count_params(schema: &Value) -> (usize, usize) {
    let mut optional = 0;
    let mut unions = 0;
    let mut stack = vec![schema];
    while let Some(s) = stack.pop() {
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let required = s.get("required").and_then(Value::as_array);
            for (k, p) in props {
                if !required.is_some_and(|r| r.iter().any(|x| x == k)) {
                    optional += 1;
                }
                if p.get("anyOf").is_some() {
                    unions += 1;
                }
            }
            stack.extend(props.values());
        }
        if let Some(items) = s.get("items") {
            stack.push(items);
        }
        for branch in s.get("anyOf").and_then(Value::as_array).into_iter().flatten() {
            stack.push(branch);
        }
    }
    (optional, unions)
}
