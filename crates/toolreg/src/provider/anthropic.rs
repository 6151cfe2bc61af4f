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
//! - Code execution calling the tools (Anthropic's programmatic tool
//!   calling, off unless [`FormatOptions::code_execution`] is set): each
//!   tool the code may call gets `allowed_callers`, the code execution tool
//!   (`{"type":"code_execution_20260120","name":"code_execution"}`) ends
//!   the tools (a tool of ours named `code_execution` is then refused as a
//!   [`ProviderError::NameCollision`]), a response's `tool_use` blocks keep
//!   their `caller` ([`ReadCalls::caller`](super::ReadCalls::caller)), and
//!   a turn in which Anthropic ran code is kept whole
//!   ([`HostedTurn`], with its container) and repeated
//!   verbatim by [`render_turn`](WireFormat::render_turn). See [`hosted`](super::hosted).
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

use std::collections::BTreeMap;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted};
use super::choice::{spelled, unsupported, unsupported_validated};
use super::history::{as_object, text_block};
use super::hosted::CODE_EXECUTION_TOOL;
use super::stream::{Partial, streamed_input};
use super::{
    CallMapping, Caller, CodeExecution, Declarations, DeclaredTools, Dialect, FormatOptions, HostedTurn, LoweringError,
    NameRule, Prepared, Provider, ProviderError, Registration, RenderedResults, SchemaMode, StreamedCalls, Strictness,
    ToolChoice, ToolRef, ToolStatus, WireFormat, find, generated_id, invalid, object_arguments, prepare, result_text,
    sealed, str_field,
};
use crate::exec::{Content, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Anthropic,
    name: "anthropic",
    aliases: &[],
    title: "Anthropic Messages",
    name_rule: NameRule::ANTHROPIC,
    build: |options| Box::new(Anthropic::with_options(options)),
};

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
    /// Who may call the tool, for tools the code execution may call.
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_callers: Option<Vec<&'a str>>,
}

/// The code execution tool, as the last entry of `tools`.
#[derive(Serialize)]
struct CodeExecutionTool<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    name: &'a str,
}

/// Anthropic's `tools`, written by [`serialize`].
struct AnthropicTools<'b, 'a>(&'b [Prepared<'a>], Option<&'b CodeExecution>);

impl Serialize for AnthropicTools<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(self.0, self.1, serializer)
    }
}

/// Anthropic's `tools`: the prepared tools, then, when code execution may
/// call them, the code execution tool.
fn serialize<S: Serializer>(
    tools: &[Prepared<'_>],
    code: Option<&CodeExecution>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut seq = serializer.serialize_seq(Some(tools.len() + usize::from(code.is_some())))?;
    for p in tools {
        let mut tool = entry(p);
        if let Some(code) = code.filter(|c| c.applies_to(&p.tool.declaration().name)) {
            tool.allowed_callers = Some(code.allowed_callers());
        }
        seq.serialize_element(&tool)?;
    }
    if let Some(code) = code {
        seq.serialize_element(&CodeExecutionTool { kind: &code.version, name: CODE_EXECUTION_TOOL })?;
    }
    seq.end()
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
        allowed_callers: None,
    }
}

impl Anthropic {
    /// Default options: not strict, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Let Anthropic's code execution call the tools (programmatic tool
    /// calling; see [`hosted`](super::hosted)).
    pub fn code_execution(mut self, code: CodeExecution) -> Self {
        self.options.code_execution = Some(code);
        self
    }
}

super::format_options!(Anthropic, strict);

impl WireFormat for Anthropic {
    fn provider(&self) -> Provider {
        Provider::Anthropic
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
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
        // The code execution tool takes its name: a tool of ours with it
        // would be ambiguous to the model.
        if self.options.code_execution.is_some()
            && let Some(i) = prepared.tools.iter().position(|p| p.name == CODE_EXECUTION_TOOL)
        {
            let reason = ProviderError::NameCollision {
                provider: Provider::Anthropic,
                first: CODE_EXECUTION_TOOL.to_owned(),
                second: prepared.tools[i].tool.declaration().name.clone(),
                spelled: CODE_EXECUTION_TOOL.to_owned(),
            };
            prepared.refuse(i, reason);
        }
        let mut declared = prepared.finish(|tools, code| Box::new(AnthropicTools(tools, code)));
        declared.tools = declared.tools.with_code_execution(self.options.code_execution.clone());
        declared
    }

    fn native_search(&self) -> bool {
        true
    }

    fn code_execution(&self) -> bool {
        true
    }

    fn render_turn(
        &self,
        text: &str,
        calls: &[ToolCall],
        hosted: Option<&HostedTurn>,
        mapping: &CallMapping,
    ) -> Vec<Value> {
        match hosted {
            // Anthropic checks the server blocks and the calls' callers
            // against the program it is running: the turn goes back as it came.
            Some(turn) if !turn.content.is_empty() => vec![json!({"role": "assistant", "content": turn.content})],
            _ => self.render_calls(text, calls, mapping),
        }
    }

    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let provider = Provider::Anthropic;
        Ok(match choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Tool(n) => json!({"type": "tool", "name": spelled(mapping, n)}),
            ToolChoice::Validated => return Err(unsupported_validated(provider)),
            ToolChoice::Allowed { .. } => return Err(unsupported(provider, "list of allowed tools")),
        })
    }

    /// One assistant message: a text block, then a `tool_use` block per call.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        let mut blocks = text_block(text, |t| json!({"type": "text", "text": t}));
        blocks.extend(calls.iter().map(|c| {
            json!({"type": "tool_use", "id": c.id, "name": mapping.provider_name(&c.name), "input": as_object(&c.arguments)})
        }));
        vec![json!({"role": "assistant", "content": blocks})]
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
    /// Content blocks as they start and as their deltas add to them; the
    /// container a message names.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("content_block_start") => {
                let block = &event["content_block"];
                let part = stream.at(index)?;
                if block.get("type") == Some(&json!("tool_use")) {
                    part.id = block["id"].as_str().unwrap_or_default().to_owned();
                    part.name = block["name"].as_str().unwrap_or_default().to_owned();
                    part.start_input = block.get("input").cloned();
                }
                // Every block is kept: a turn in which Anthropic ran code
                // goes back whole (see `hosted`); a plain call is
                // rebuilt from its parts as before.
                part.start = Some(block.clone());
            }
            Some("content_block_delta") => {
                let Some(part) = stream.started(index) else { return Ok(()) };
                let delta = &event["delta"];
                let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
                match delta.get("type").and_then(Value::as_str) {
                    Some("input_json_delta") => part.arguments.push_str(text("partial_json")),
                    Some("text_delta") => part.text.push_str(text("text")),
                    Some("thinking_delta") => part.text.push_str(text("thinking")),
                    Some("signature_delta") => part.signature.push_str(text("signature")),
                    _ => {}
                }
            }
            Some("message_start") => {
                if let Some(container) = event.pointer("/message/container").filter(|c| !c.is_null()) {
                    stream.container = Some(container.clone());
                }
            }
            Some("message_delta") => {
                if let Some(container) = event.pointer("/delta/container").filter(|c| !c.is_null()) {
                    stream.container = Some(container.clone());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn streamed_answer(&self, mut stream: StreamedCalls) -> Option<Value> {
        let container = stream.container.take();
        let blocks: Vec<Value> = stream.into_calls().map(streamed_block).collect();
        Some(match container {
            Some(container) => json!({"content": blocks, "container": container}),
            None => json!({"content": blocks}),
        })
    }

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

    /// With code execution configured, a turn in which Anthropic ran code
    /// (a server block, a call with a `caller`, or a container): its
    /// content verbatim, its container, and each call's caller.
    fn hosted_in(&self, body: &Value) -> Result<Option<HostedTurn>, ProviderError> {
        if self.options.code_execution.is_none() {
            return Ok(None);
        }
        let p = Provider::Anthropic;
        let blocks = match body {
            Value::Array(blocks) => blocks,
            _ => match find(body, &["/content"]) {
                Some(Value::Array(blocks)) => blocks,
                _ => return Ok(None),
            },
        };
        let mut callers = BTreeMap::new();
        let mut server = false;
        for block in blocks {
            match block.get("type").and_then(Value::as_str).unwrap_or_default() {
                "tool_use" => {
                    let Some(caller) = block.get("caller") else { continue };
                    let kind = str_field(p, caller, "type", "a tool_use caller")?;
                    if kind == "direct" {
                        continue;
                    }
                    let tool_id = str_field(p, caller, "tool_id", "a tool_use caller")?;
                    let id = str_field(p, block, "id", "a tool_use block called from code")?;
                    callers.insert(
                        id.to_owned(),
                        Caller::CodeExecution { kind: kind.to_owned(), tool_id: tool_id.to_owned() },
                    );
                }
                "text" | "thinking" | "redacted_thinking" => {}
                // `server_tool_use` and every server tool's result block.
                _ => server = true,
            }
        }
        let container = body.pointer("/container/id").and_then(Value::as_str).map(str::to_owned);
        if !server && callers.is_empty() && container.is_none() {
            return Ok(None);
        }
        let expires_at = body.pointer("/container/expires_at").and_then(Value::as_str).map(str::to_owned);
        Ok(Some(HostedTurn { content: blocks.clone(), container, expires_at, callers }))
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

/// A content block from its start and its deltas: a call rebuilt from its
/// parts (with its `caller`, when code made it); any other block as it
/// started, with the text, thinking or input its deltas added.
fn streamed_block(part: Partial) -> Value {
    let mut block = part.start.unwrap_or_else(|| json!({"type": "tool_use"}));
    match block.get("type").and_then(Value::as_str).unwrap_or_default() {
        "tool_use" => {
            // No delta: the input the block started with (`{}` for a call
            // without arguments).
            let input = match part.start_input {
                Some(start) if part.arguments.trim().is_empty() => start,
                _ => streamed_input(part.arguments),
            };
            let mut call = json!({"type": "tool_use", "id": part.id, "name": part.name, "input": input});
            if let Some(caller) = block.get_mut("caller") {
                call["caller"] = caller.take();
            }
            call
        }
        "text" => {
            let text = block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned() + &part.text;
            block["text"] = Value::String(text);
            block
        }
        "thinking" => {
            let thinking = block.get("thinking").and_then(Value::as_str).unwrap_or_default().to_owned() + &part.text;
            block["thinking"] = Value::String(thinking);
            if !part.signature.is_empty() {
                block["signature"] = Value::String(part.signature);
            }
            block
        }
        // A server tool's call (`server_tool_use`) streams its input too.
        _ if !part.arguments.trim().is_empty() => {
            block["input"] = streamed_input(part.arguments);
            block
        }
        _ => block,
    }
}
