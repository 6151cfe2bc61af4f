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
//! - Programmatic tool calling (off unless [`FormatOptions::code_execution`]
//!   is set; see [`hosted`](super::hosted)), as the API reference describes
//!   it: each function the code may call gets `"allowed_callers":
//!   ["direct", "programmatic"]` (`["programmatic"]` when
//!   [`CodeExecution::code_only`]; [`CodeExecution::version`] is
//!   Anthropic's and does not apply), and the tools end with
//!   `{"type":"programmatic_tool_calling"}`. A `function_call` item whose
//!   `caller` is `{"type":"program","caller_id"}` is read with that
//!   [`Caller::Program`]; a turn with `program` or `program_output` items
//!   or such calls is kept whole ([`HostedTurn`]) and goes back as it came
//!   — `program` items with their `fingerprint`, which must be sent back —
//!   except what the stateless requests (`store: false`) cannot take back:
//!   reasoning items are left out, message items go back as
//!   `{"role":"assistant","content"}` and `function_call` items without
//!   their item `id`, as in every other turn. Its outputs are ordinary
//!   `function_call_output` items.
//! - Native tool search ([`WireFormat::native_search`]), client-executed as
//!   OpenAI documents it (the `tool_search` tool's `"execution": "client"`):
//!   - a tool marked [`ToolRef::deferred`] is declared with
//!     `"defer_loading": true`;
//!   - the tool marked [`ToolRef::search_tool`] is declared as
//!     `{"type":"tool_search","execution":"client","description","parameters"}`
//!     (its own description and parameters; at most one such tool, a second
//!     is refused with [`ProviderError::TooMany`]);
//!   - a `tool_search_call` item with `"execution": "client"` is read as a
//!     call of that tool, its `arguments` object as the call's arguments and
//!     its `call_id` as the call's id (one without `call_id` is refused: its
//!     output could not answer it). Server-executed search items are not
//!     toolreg's and are skipped. (A `function_call` that names the search
//!     tool, which the request did not declare as a function, is read as
//!     its call too, and goes back as a `tool_search_call`: calls keep one
//!     name, not the item type they came in);
//!   - the call goes back into the history as the `tool_search_call` item
//!     (`call_id`, `execution`, `arguments` as sent, `status`), without its
//!     item `id`, as function calls go back without theirs: requests are
//!     sent with `store: false`, where item ids refer to nothing;
//!   - the tool's result is one `tool_search_output` item
//!     (`call_id`, `"execution": "client"`, `status`, `tools`) whose `tools`
//!     are the definitions, as declared, of the deferred tools the search
//!     found ([`with_tool_references`](super::with_tool_references)).
//!     `tool_search_output` has no place for text, so a search that failed
//!     is sent with no tools and `"status": "incomplete"`, and a search that
//!     found nothing new with no tools and `"status": "completed"`.
//!
//!   - deferred tools of an imported MCP server (categories `mcp` and the
//!     server's name, named `<server>__<tool>`) are declared inside one
//!     `{"type":"namespace","name":<server>,"description","tools"}` entry,
//!     as bare `<tool>` functions with `"defer_loading": true`, so the model
//!     first sees only the server's name and description. Other tools stay
//!     ungrouped. A `function_call` with `namespace` and a bare `name` is
//!     read as a call of `<namespace>__<name>` (then mapped back like any
//!     name); the call goes back into the history with its `namespace` and
//!     bare name, its `function_call_output` carries the `namespace`, and a
//!     `tool_search_output` sends found namespaced tools inside their
//!     namespace entry.

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::blocks::{self, WEB_IMAGES, accepted};
use super::openai_chat::MAX_TOOLS;
use std::collections::BTreeMap;

use super::choice::{spelled, unsupported_validated};
use super::history::as_object;
use super::{
    CallMapping, Caller, CodeExecution, Declarations, DeclaredTools, Dialect, FormatOptions, HostedTurn, NameRule,
    Prepared, Provider, ProviderError, Registration, RenderedResults, SchemaMode, StreamedCalls, Strictness,
    ToolChoice, ToolRef, WireFormat, find, generated_id, invalid, prepare, result_text, sealed, str_field,
};
use crate::exec::{Content, ToolArguments, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::OpenAiResponses,
    name: "openai_responses",
    aliases: &[],
    title: "OpenAI Responses",
    name_rule: NameRule::OPENAI,
    build: |options| Box::new(OpenAiResponses::with_options(options)),
};

/// The Responses API's wire format.
#[derive(Debug, Clone, Default)]
pub struct OpenAiResponses {
    options: FormatOptions,
}

/// One entry of the Responses API's `tools`: a function, or the
/// client-executed `tool_search` tool.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ResponsesTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    /// Absent for `tool_search`, whose name is its type.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    /// `"client"` for `tool_search`: toolreg runs the search.
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    /// Sent explicitly for functions: `false` opts out of the API's
    /// "strict if compatible". `tool_search` has no such field.
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
    /// Present (and `true`) for deferred functions.
    #[serde(skip_serializing_if = "Option::is_none")]
    defer_loading: Option<bool>,
    /// Who may call the function, for functions a program may call.
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_callers: Option<&'static [&'static str]>,
}

/// The `allowed_callers` of a function a program may call.
fn allowed_callers(code: &CodeExecution) -> &'static [&'static str] {
    if code.code_only { &["programmatic"] } else { &["direct", "programmatic"] }
}

/// A prepared tool as an entry of `tools`, callable from programs when
/// `code` says so.
fn entry_with<'b>(p: &'b Prepared<'_>, code: Option<&CodeExecution>) -> ResponsesTool<'b> {
    let mut tool = entry(p);
    if tool.kind == "function"
        && let Some(code) = code.filter(|c| c.applies_to(&p.tool.declaration().name))
    {
        tool.allowed_callers = Some(allowed_callers(code));
    }
    tool
}

/// A prepared tool as an entry of `tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> ResponsesTool<'b> {
    let description = super::description(p.tool.declaration());
    if p.tool.is_search_tool() {
        return ResponsesTool {
            kind: "tool_search",
            name: None,
            execution: Some("client"),
            description,
            parameters: &p.schema,
            strict: None,
            defer_loading: None,
            allowed_callers: None,
        };
    }
    ResponsesTool {
        kind: "function",
        name: Some(namespace(p).map_or(&*p.name, |(_, bare)| bare)),
        execution: None,
        description,
        parameters: &p.schema,
        strict: Some(p.strict),
        defer_loading: p.tool.is_deferred().then_some(true),
        allowed_callers: None,
    }
}

/// The namespace a prepared tool is declared in, and its bare name there:
/// a deferred tool of an imported MCP server (categories `mcp` and
/// `<server>`, named `<server>__<tool>`).
pub(crate) fn namespace<'b>(p: &'b Prepared<'_>) -> Option<(&'b str, &'b str)> {
    if !p.tool.is_deferred() || p.tool.is_search_tool() {
        return None;
    }
    let categories = &p.tool.declaration().categories;
    if !categories.iter().any(|c| c == "mcp") {
        return None;
    }
    categories.iter().filter(|c| *c != "mcp" && !c.is_empty()).find_map(|server| {
        let bare = p.name.strip_prefix(server.as_str())?.strip_prefix("__")?;
        (!bare.is_empty()).then_some((server.as_str(), bare))
    })
}

/// What a namespace tells the model before any of its tools are loaded.
fn namespace_description(server: &str) -> String {
    format!("Tools of the `{server}` MCP server.")
}

/// An entry of `tools`: a tool, a namespace grouping deferred tools, or
/// the programmatic tool calling tool.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'b> {
    Tool(ResponsesTool<'b>),
    Programmatic {
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Namespace {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'b str,
        description: String,
        tools: Vec<ResponsesTool<'b>>,
    },
}

/// The Responses API's `tools`, written by [`serialize`].
struct ResponsesTools<'b, 'a>(&'b [Prepared<'a>], Option<&'b CodeExecution>);

impl Serialize for ResponsesTools<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(self.0, self.1, serializer)
    }
}

/// The prepared tools as `tools`: each namespace where its first tool is;
/// then, when programs may call them, the programmatic tool calling tool.
fn serialize<S: Serializer>(
    tools: &[Prepared<'_>],
    code: Option<&CodeExecution>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut entries: Vec<Entry<'_>> = Vec::with_capacity(tools.len() + 1);
    let entry = |p| entry_with(p, code);
    for p in tools {
        let Some((server, _)) = namespace(p) else {
            entries.push(Entry::Tool(entry(p)));
            continue;
        };
        let group = entries.iter_mut().find_map(|e| match e {
            Entry::Namespace { name, tools, .. } if *name == server => Some(tools),
            _ => None,
        });
        match group {
            Some(group) => group.push(entry(p)),
            None => entries.push(Entry::Namespace {
                kind: "namespace",
                name: server,
                description: namespace_description(server),
                tools: vec![entry(p)],
            }),
        }
    }
    if code.is_some() {
        entries.push(Entry::Programmatic { kind: "programmatic_tool_calling" });
    }
    serializer.collect_seq(entries)
}

impl OpenAiResponses {
    /// Default options: strict if compatible, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Let programs OpenAI runs call the tools (programmatic tool calling;
    /// see [`hosted`](super::hosted)).
    pub fn code_execution(mut self, code: CodeExecution) -> Self {
        self.options.code_execution = Some(code);
        self
    }
}

super::format_options!(OpenAiResponses, strict);

impl WireFormat for OpenAiResponses {
    fn provider(&self) -> Provider {
        Provider::OpenAiResponses
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        let mode = SchemaMode::Strict(Dialect::OpenAiStrict, Strictness::IfCompatible);
        let mut prepared = prepare(Provider::OpenAiResponses, mode, &self.options, tools);
        // One `tool_search` tool per request: a second marked one is refused.
        let searches: Vec<usize> =
            prepared.tools.iter().enumerate().filter(|(_, p)| p.tool.is_search_tool()).map(|(i, _)| i).collect();
        for &i in searches.iter().skip(1).rev() {
            let count = searches.len();
            let what = "tool search tools";
            prepared.refuse(i, ProviderError::TooMany { provider: Provider::OpenAiResponses, what, count, limit: 1 });
        }
        prepared.limit(MAX_TOOLS);
        // A search's answer sends the found tools' definitions as declared.
        let loadable = prepared
            .tools
            .iter()
            .filter(|p| p.tool.is_deferred() && !p.tool.is_search_tool())
            .filter_map(|p| {
                let definition = serde_json::to_value(entry_with(p, self.options.code_execution.as_ref())).ok()?;
                Some((p.tool.declaration().name.clone(), definition))
            })
            .collect();
        prepared.mapping.loadable = loadable;
        prepared.mapping.namespaced = prepared
            .tools
            .iter()
            .filter_map(|p| {
                let (server, bare) = namespace(p)?;
                Some((p.tool.declaration().name.clone(), (server.to_owned(), bare.to_owned())))
            })
            .collect();
        let mut declared = prepared.finish(|tools, code| Box::new(ResponsesTools(tools, code)));
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
        let Some(turn) = hosted.filter(|t| !t.content.is_empty()) else {
            return self.render_calls(text, calls, mapping);
        };
        turn.content
            .iter()
            .filter_map(|item| match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                // Needs its encrypted content to go back statelessly; never sent back.
                "reasoning" => None,
                "message" => {
                    let parts = item.get("content").and_then(Value::as_array).into_iter().flatten();
                    let text: String = parts.filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
                    Some(json!({"role": "assistant", "content": text}))
                }
                "function_call" => {
                    let mut call = item.clone();
                    if let Some(fields) = call.as_object_mut() {
                        fields.remove("id");
                    }
                    Some(call)
                }
                // `program` (with its fingerprint), `program_output`, …: as they came.
                _ => Some(item.clone()),
            })
            .collect()
    }

    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let function = |n: &String| json!({"type": "function", "name": spelled(mapping, n)});
        Ok(match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(n) => function(n),
            ToolChoice::Validated => return Err(unsupported_validated(Provider::OpenAiResponses)),
            ToolChoice::Allowed { tools, required } => json!({
                "type": "allowed_tools",
                "mode": if *required { "required" } else { "auto" },
                "tools": tools.iter().map(function).collect::<Vec<_>>()
            }),
        })
    }

    /// An assistant item with the text, then an item per call.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        let mut items = Vec::with_capacity(calls.len() + 1);
        if !text.is_empty() {
            items.push(json!({"role": "assistant", "content": text}));
        }
        items.extend(calls.iter().map(|c| match mapping.search_tool() == Some(c.name.as_str()) {
            // A call of the `tool_search` tool was a `tool_search_call`
            // item, and goes back as one.
            true => json!({"type": "tool_search_call", "call_id": c.id, "execution": "client",
                "arguments": as_object(&c.arguments), "status": "completed"}),
            // A namespaced tool's call goes back as it came: its
            // namespace and its bare name.
            false => match mapping.namespaced.get(&c.name) {
                Some((space, bare)) => json!({"type": "function_call", "call_id": c.id, "namespace": space,
                    "name": bare, "arguments": c.arguments.to_string()}),
                None => json!({"type": "function_call", "call_id": c.id, "name": mapping.provider_name(&c.name),
                    "arguments": c.arguments.to_string()}),
            },
        }));
        items
    }

    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults {
        let mut fallbacks = Vec::new();
        let messages = results
            .iter()
            .map(|r| {
                if mapping.search_tool() == Some(r.name.as_str()) {
                    return search_output(r, mapping);
                }
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
                let mut item = json!({"type": "function_call_output", "call_id": r.id, "output": output});
                if let Some((server, _)) = mapping.namespaced.get(&r.name) {
                    item["namespace"] = json!(server);
                }
                item
            })
            .collect();
        RenderedResults { messages, fallbacks }
    }
}

/// The answer to a `tool_search_call`: the definitions of the deferred
/// tools the search found, in its order (tools it found that were not
/// deferred are already loaded, and a tool search output may only load).
fn search_output(result: &ToolResult, mapping: &CallMapping) -> Value {
    let (status, tools): (&str, Vec<Value>) = match &result.outcome {
        Ok(output) => ("completed", found_tools(super::tool_references(output), mapping)),
        Err(_) => ("incomplete", Vec::new()),
    };
    json!({"type": "tool_search_output", "call_id": result.id, "execution": "client", "status": status, "tools": tools})
}

/// The definitions of the found deferred tools (real names), a namespaced
/// one inside its namespace entry (one per namespace, where its first found
/// tool is), as `tool_search_output` takes them.
fn found_tools(names: Vec<&str>, mapping: &CallMapping) -> Vec<Value> {
    let mut tools: Vec<Value> = Vec::with_capacity(names.len());
    for name in names {
        let Some(definition) = mapping.loadable.get(name).cloned() else { continue };
        let Some((server, _)) = mapping.namespaced.get(name) else {
            tools.push(definition);
            continue;
        };
        let group = tools.iter_mut().find(|t| t["type"] == "namespace" && t["name"] == server.as_str());
        match group.and_then(|g| g["tools"].as_array_mut()) {
            Some(group) => group.push(definition),
            None => tools.push(json!({"type": "namespace", "name": server,
                "description": namespace_description(server), "tools": [definition]})),
        }
    }
    tools
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
    /// Function call items as they are added, and their argument deltas.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        let at = event.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("response.output_item.added") if event.pointer("/item/type") == Some(&json!("function_call")) => {
                let item = &event["item"];
                let call = stream.at(at)?;
                call.id = item["call_id"].as_str().unwrap_or_default().to_owned();
                let name = item["name"].as_str().unwrap_or_default();
                // A namespaced tool's call: our name joins the two (as
                // `calls_in` reads a whole `function_call`).
                call.name = match item.get("namespace").and_then(Value::as_str) {
                    Some(space) if !space.is_empty() => format!("{space}__{name}"),
                    _ => name.to_owned(),
                };
            }
            Some("response.function_call_arguments.delta") => {
                if let (Some(call), Some(text)) = (stream.started(at), event.get("delta").and_then(Value::as_str)) {
                    call.arguments.push_str(text);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        let items: Vec<Value> = stream
            .into_calls()
            .map(|c| json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        Some(json!({"output": items}))
    }

    /// The `function_call` items of a response (its `output`), of an item
    /// list, or a single item. The call's id is its `call_id`. A
    /// client-executed `tool_search_call` is a call of the tool declared as
    /// the search tool ([`ToolRef::search_tool`]).
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::OpenAiResponses;
        let is_call = |item: &Value| {
            item.get("type").is_some_and(|t| t == "function_call")
                || (item.get("type").is_some_and(|t| t == "tool_search_call")
                    && item.get("execution").is_some_and(|e| e == "client"))
        };
        let items: Vec<&Value> = match body {
            Value::Array(items) => items.iter().collect(),
            Value::Object(_) if is_call(body) => vec![body],
            Value::Object(_) => match find(body, &["/output"]) {
                Some(Value::Array(items)) => items.iter().collect(),
                _ => return Err(invalid(p, "expected a response with `output`, an item list or an item")),
            },
            _ => return Err(invalid(p, "expected a JSON object or array")),
        };
        items
            .into_iter()
            .filter(|item| is_call(item))
            .enumerate()
            .map(|(i, item)| {
                if item["type"] == "tool_search_call" {
                    return search_call(item, mapping);
                }
                let name = str_field(p, item, "name", "a function_call item")?;
                // A namespaced tool is called by its bare name: our name
                // for it is `<namespace>__<name>` (see the module docs).
                let name = match item.get("namespace").and_then(Value::as_str) {
                    Some(space) if !space.is_empty() => format!("{space}__{name}"),
                    _ => name.to_owned(),
                };
                let name = name.as_str();
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

    /// With programmatic tool calling configured, a turn in which OpenAI
    /// ran a program (`program`/`program_output` items, or calls with a
    /// program `caller`): its items verbatim, and each call's caller.
    fn hosted_in(&self, body: &Value) -> Result<Option<HostedTurn>, ProviderError> {
        if self.options.code_execution.is_none() {
            return Ok(None);
        }
        let p = Provider::OpenAiResponses;
        let items = match body {
            Value::Array(items) => items,
            _ => match find(body, &["/output"]) {
                Some(Value::Array(items)) => items,
                _ => return Ok(None),
            },
        };
        let mut callers = BTreeMap::new();
        let mut program = false;
        for item in items {
            match item.get("type").and_then(Value::as_str).unwrap_or_default() {
                "program" | "program_output" => program = true,
                "function_call" => {
                    let Some(caller) = item.get("caller") else { continue };
                    if str_field(p, caller, "type", "a function_call caller")? != "program" {
                        continue;
                    }
                    let caller_id = str_field(p, caller, "caller_id", "a function_call caller")?;
                    let id = str_field(p, item, "call_id", "a function_call made by a program")?;
                    callers.insert(id.to_owned(), Caller::Program { caller_id: caller_id.to_owned() });
                }
                _ => {}
            }
        }
        if !program && callers.is_empty() {
            return Ok(None);
        }
        Ok(Some(HostedTurn { content: items.clone(), container: None, expires_at: None, callers }))
    }
}

/// A client-executed `tool_search_call` as a call of the search tool, with
/// the tool's name as the request spelled it (mapped back like any other).
fn search_call(item: &Value, mapping: &CallMapping) -> Result<ToolCall, ProviderError> {
    let p = Provider::OpenAiResponses;
    let Some(search) = mapping.search_tool() else {
        return Err(invalid(p, "a tool_search_call, but the request declared no tool_search tool"));
    };
    // Its output is matched to it by `call_id`: without one it cannot be answered.
    let id = str_field(p, item, "call_id", "a client tool_search_call item")?;
    let arguments = match item.get("arguments") {
        Some(Value::Object(_)) | None | Some(Value::Null) => super::object_arguments(item.get("arguments")),
        Some(_) => return Err(invalid(p, "a tool_search_call's `arguments` is not an object")),
    };
    Ok(ToolCall { id: id.to_owned(), name: mapping.provider_name(search).to_owned(), arguments })
}
