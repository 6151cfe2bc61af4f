//! The contract every format keeps: the [`WireFormat`] trait (declare,
//! read calls, render results), what a declaration produces
//! ([`Declarations`], with a [`ToolReport`] per tool), what reading a
//! response produces ([`ReadCalls`]), and what each format registers about
//! itself (`Registration`). The one error type, [`ProviderError`], is in
//! `error`.
//!
//! Apart from the formats themselves so that a reader sees the promises
//! once; how a format keeps them is in its own module, with the shared
//! steps in `prepare` (declarations) and `mapping` (calls back).

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Caller, DeclaredTools, FormatOptions, HostedTurn, LoweringError, NameRule, Provider, ProviderError,
    StreamedCalls, ToolChoice, ToolRef,
};
use crate::exec::{ToolCall, ToolError, ToolResult};

/// What became of one tool when a selection was declared for a provider.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolReport {
    /// The tool's real name.
    pub tool: String,
    /// Whether and how it was sent.
    pub status: ToolStatus,
}

/// How a tool was sent to a provider, or why it was not.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolStatus {
    /// Sent with its canonical JSON Schema.
    Declared,
    /// Sent with a schema rewritten into the provider's subset: strict mode
    /// (`strict: true`) or Gemini's OpenAPI subset.
    Lowered {
        /// Whether the tool is declared in strict mode.
        strict: bool,
    },
    /// Asked to be strict "if compatible" and could not be: sent with the
    /// canonical schema, not strict.
    NotStrict {
        /// Why the schema cannot be strict.
        reason: LoweringError,
    },
    /// Not sent. [`WireFormat::declare`] fails with this error;
    /// [`WireFormat::declare_partial`] leaves the tool out.
    Refused {
        /// Why the provider cannot take it.
        reason: ProviderError,
    },
}

impl ToolStatus {
    /// Whether the tool is in the request.
    pub fn is_sent(&self) -> bool {
        !matches!(self, ToolStatus::Refused { .. })
    }
}

/// Tools declared for one provider: the request's `tools`, the name
/// mapping for the calls that come back, and a report per tool.
///
/// `tools` is a [`DeclaredTools`] view, written straight to the request
/// text, from [`declare_partial`](WireFormat::declare_partial), and a
/// `Value` from [`declare`](WireFormat::declare) and [`into_value`](Declarations::into_value).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Declarations<T = Value> {
    /// The provider's `tools`, ready to put in a request (for Bedrock,
    /// `toolConfig.tools`; for MCP, the tools of a `tools/list` result).
    pub tools: T,
    /// Maps the provider's spelling of names back to the real tools.
    pub mapping: CallMapping,
    /// One entry per tool asked for, in order.
    pub report: Vec<ToolReport>,
}

impl<T> Declarations<T> {
    /// The tools sent without strict mode though it was asked for "if
    /// compatible", with why.
    pub fn not_strict(&self) -> impl Iterator<Item = (&str, &LoweringError)> {
        self.report.iter().filter_map(|r| match &r.status {
            ToolStatus::NotStrict { reason } => Some((r.tool.as_str(), reason)),
            _ => None,
        })
    }

    /// The tools left out, with why.
    pub fn refused(&self) -> impl Iterator<Item = (&str, &ProviderError)> {
        self.report.iter().filter_map(|r| match &r.status {
            ToolStatus::Refused { reason } => Some((r.tool.as_str(), reason)),
            _ => None,
        })
    }
}

impl Declarations<DeclaredTools<'_>> {
    /// The same declarations with `tools` as a `Value` (a copy of every
    /// schema), as [`declare`](WireFormat::declare) returns them.
    pub fn into_value(self) -> Declarations {
        Declarations { tools: self.tools.to_value(), mapping: self.mapping, report: self.report }
    }
}

impl<T: Serialize> Serialize for Declarations<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.tools.serialize(serializer)
    }
}

/// What a format registers about itself, once, in the list of formats in
/// `provider/mod.rs`: the methods on [`Provider`] read it from there, so
/// nothing outside the format's module names its provider in a `match`.
#[derive(Debug)]
pub(crate) struct Registration {
    /// The provider the format speaks for.
    pub(crate) provider: Provider,
    /// A short, stable name (`Provider::as_str`).
    pub(crate) name: &'static str,
    /// Other names it is parsed from, the first shown in the list of known names.
    pub(crate) aliases: &'static [&'static str],
    /// The name people know it by (`Provider`'s `Display`).
    pub(crate) title: &'static str,
    /// The rule its tool names follow.
    pub(crate) name_rule: NameRule,
    /// The format with these options.
    pub(crate) build: fn(FormatOptions) -> Box<dyn WireFormat>,
}

/// One provider's wire format: declarations out, tool calls in, results out.
///
/// Every format in this module implements it with the same three jobs, so
/// a client or agent loop can hold a `Box<dyn WireFormat>` chosen at run
/// time. The trait is sealed: the formats live here.
///
/// ```
/// use toolreg::provider::{WireFormat, ToolRef, anthropic::Anthropic, openai_chat::OpenAiChat};
/// use toolreg::{CallOptions, FunctionRegistry, ToolDeclaration, ParamType, ToolExecutor};
/// use serde_json::{json, Value};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut registry = FunctionRegistry::new();
/// let decl = ToolDeclaration::builder("double").param("x", ParamType::Number, "A number").build();
/// registry.register_sync_tool("double", |a: Value| Ok::<_, String>(a["x"].as_f64().unwrap_or(0.0) * 2.0), decl)?;
///
/// let format: Box<dyn WireFormat> = Box::new(Anthropic::new());
/// let declared = format.declare(&ToolRef::list(registry.list()))?;
/// let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "double", "input": {"x": 21}}]});
/// let mut results = Vec::new();
/// for call in format.parse_calls(&response, &declared.mapping)? {
///     results.push(registry.execute_call(call, CallOptions::default()).await);
/// }
/// let messages = format.render_results(&results, &declared.mapping).messages;
/// assert_eq!(messages[0]["content"][0]["content"], "42.0");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait WireFormat: sealed::Format + fmt::Debug + Send + Sync {
    /// Which provider this format speaks to.
    fn provider(&self) -> Provider;

    /// Declare every tool that can be sent and report on each: tools the
    /// provider cannot take are left out and reported as
    /// [`ToolStatus::Refused`], so the rest can still be offered.
    ///
    /// The `tools` are a [`DeclaredTools`] that serialises each tool from
    /// the schema the registry entry keeps (canonical, or lowered once and
    /// cached), with no `Value` in between: what a client puts in the body
    /// of a request. [`Declarations::into_value`] gives the same JSON as a
    /// `Value`.
    ///
    /// ```
    /// use toolreg::provider::{ToolRef, WireFormat, mcp::Mcp};
    /// use toolreg::{ParamType, ToolDeclaration};
    ///
    /// let decl = ToolDeclaration::builder("ping").param("host", ParamType::String, "Host").build();
    /// let declared = Mcp::new().declare_partial(&[ToolRef::from(&decl)]);
    /// let text = serde_json::to_string(&declared.tools)?;
    /// assert!(text.starts_with(r#"[{"name":"ping","inputSchema":{"#));
    /// assert_eq!(declared.mapping.real_name("ping"), "ping");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>>;

    /// Declare tools, all or nothing: the first refused tool is the error;
    /// the `tools` come as a `Value`.
    fn declare(&self, tools: &[ToolRef<'_>]) -> Result<Declarations, ProviderError> {
        let declared = self.declare_partial(tools);
        if let Some((_, reason)) = declared.refused().next() {
            return Err(reason.clone());
        }
        Ok(declared.into_value())
    }

    /// The tool calls of a provider response (or message, or part list),
    /// mapped back to the real tools with [`CallMapping::apply`]. A call
    /// without an id gets a stable generated one.
    ///
    /// A response is refused whole when two of its calls share an id
    /// ([`ProviderError::DuplicateCallId`]: their results could not be told
    /// apart), or, with the mapping of a [`declare`](WireFormat::declare), when
    /// it calls a tool that declaration did not send
    /// ([`ProviderError::UndeclaredTool`]). A default [`CallMapping`] accepts
    /// any name. [`read_calls`](WireFormat::read_calls) answers such calls
    /// instead, so a conversation can go on.
    fn parse_calls(&self, response: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let read = self.read_calls(response, mapping)?;
        match read.refused.first() {
            Some(refused) => {
                Err(ProviderError::UndeclaredTool { provider: self.provider(), tool: refused.name.clone() })
            }
            None => Ok(read.calls),
        }
    }

    /// [`parse_calls`](WireFormat::parse_calls), and the calls as the model
    /// sent them ([`ReadCalls::sent`]): what the conversation's history
    /// must repeat, whatever toolreg does to the arguments on their way to
    /// the tool. A call to a tool the declaration did not send is not
    /// refused here but answered: its [`ToolError::NotOffered`] result is in
    /// [`ReadCalls::refused`], for the model to read, and it must not run.
    ///
    /// ```
    /// use toolreg::provider::{ToolRef, WireFormat, openai_chat::OpenAiChat};
    /// use toolreg::{ParamType, ToolArguments, ToolDeclaration};
    /// use serde_json::json;
    ///
    /// let decl = ToolDeclaration::builder("find").optional_param("limit", ParamType::Integer, "At most").build();
    /// let format = OpenAiChat::new();
    /// let declared = format.declare(&[ToolRef::from(&decl)])?;
    /// // Strict mode made `limit` nullable; the model sends `null` for "absent".
    /// let text = r#"{"limit": null}"#;
    /// let response = json!([{"id": "c1", "type": "function", "function": {"name": "find", "arguments": text}}]);
    /// let read = format.read_calls(&response, &declared.mapping)?;
    /// assert_eq!(read.calls[0].arguments, ToolArguments::Json(json!({})));  // to the tool: absent
    /// assert_eq!(read.sent[0].arguments, ToolArguments::Raw(text.into()));  // to the history: verbatim
    /// # Ok::<(), toolreg::provider::ProviderError>(())
    /// ```
    fn read_calls(&self, response: &Value, mapping: &CallMapping) -> Result<ReadCalls, ProviderError> {
        let provider = self.provider();
        let mut sent = self.calls_in(response, mapping)?;
        let mut ids = HashSet::with_capacity(sent.len());
        let mut refused = Vec::new();
        for call in &sent {
            if !ids.insert(call.id.as_str()) {
                return Err(ProviderError::DuplicateCallId { provider, id: call.id.clone() });
            }
            if let Some(declared) = &mapping.declared
                && !declared.contains(&call.name)
            {
                let available = declared.iter().map(|n| mapping.real.get(n).unwrap_or(n).clone()).take(8).collect();
                let outcome = Err(ToolError::NotOffered { available });
                refused.push(ToolResult { id: call.id.clone(), name: call.name.clone(), outcome });
            }
        }
        let mut calls = sent.clone();
        calls.retain(|call| !refused.iter().any(|r| r.id == call.id));
        mapping.apply(&mut calls);
        for call in &mut sent {
            if let Some(real) = mapping.real.get(&call.name) {
                call.name.clone_from(real);
            }
        }
        let hosted = self.hosted_in(response)?;
        Ok(ReadCalls { calls, sent, refused, hosted })
    }

    /// What to append to the conversation to answer a batch of calls
    /// ([`RenderedResults::messages`]): one message per result (OpenAI Chat,
    /// Mistral, Ollama), one item per result (OpenAI Responses), one
    /// `CallToolResult` per result (MCP), or a single user turn holding every
    /// result (Anthropic, Bedrock, Gemini). Names are spelled as `mapping`
    /// sent them. No results, no messages.
    ///
    /// A result without content blocks, or with text blocks only, renders as
    /// text, as it always has. Other blocks (images, audio, files, resources)
    /// render as the provider's API documents them; a block the provider
    /// cannot carry in a tool result is never dropped: it goes by the
    /// format's fallback — a user message after the tool messages, or its
    /// [summary](crate::exec::Content::summary) text — and is listed in
    /// [`RenderedResults::fallbacks`]. Annotations are left out by every
    /// format but MCP: the providers have no place for them.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults;

    /// Whether this format has the provider's own tool search: tools
    /// declared [deferred](ToolRef::deferred) are sent with deferred
    /// loading, and a tool search's answer
    /// ([`with_tool_references`](super::with_tool_references)) is sent as
    /// references the provider expands into those tools' declarations.
    /// Anthropic (`tool_reference` blocks) and OpenAI Responses (a
    /// `tool_search_output` item; the search tool, marked
    /// [`ToolRef::search_tool`], is declared as its client-executed
    /// `tool_search`); for every other format a caller offers a deferred
    /// tool once a search has found it (toolreg-llm's agent does).
    fn native_search(&self) -> bool {
        false
    }

    /// Whether this format has provider-hosted code execution that calls
    /// the tools (see [`hosted`](super::hosted)): it then honours
    /// [`FormatOptions::code_execution`](super::FormatOptions::code_execution).
    /// Anthropic (code execution) and OpenAI Responses (programmatic tool calling).
    fn code_execution(&self) -> bool {
        false
    }

    /// The model's turn as the conversation must repeat it, given what the
    /// provider ran in it ([`ReadCalls::hosted`]): with a hosted turn, its
    /// content as it came (server blocks and all, in order; for OpenAI
    /// Responses less what a stateless request cannot take back, see
    /// [`openai_responses`](super::openai_responses)), as the provider
    /// requires for the program to go on; without one,
    /// [`render_calls`](WireFormat::render_calls). A format without code
    /// execution ignores `hosted`.
    fn render_turn(
        &self,
        text: &str,
        calls: &[ToolCall],
        hosted: Option<&HostedTurn>,
        mapping: &CallMapping,
    ) -> Vec<Value> {
        let _ = hosted;
        self.render_calls(text, calls, mapping)
    }

    /// This provider's spelling of a [`ToolChoice`] (see [`ToolChoice::render`]):
    /// OpenAI's and Mistral's `tool_choice`, Anthropic's `tool_choice`,
    /// Gemini's `toolConfig`, Bedrock's `toolConfig.toolChoice`. Names are
    /// spelled as `mapping` sent them. A choice the provider has no way to
    /// say is [`ProviderError::UnsupportedChoice`].
    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError>;

    /// The model's turn as the conversation must repeat it: its text and
    /// its calls as it sent them ([`ReadCalls::sent`]: ids and argument
    /// text verbatim), names spelled as `mapping` sent them, ids toolreg
    /// made up left out. One assistant message (one item per call for
    /// OpenAI Responses); none for MCP.
    ///
    /// ```
    /// use toolreg::provider::{CallMapping, WireFormat, anthropic::Anthropic};
    /// use toolreg::ToolCall;
    /// use serde_json::json;
    ///
    /// let turn = Anthropic::new().render_calls("Checking.", &[ToolCall::new("t1", "find", json!({"q": "x"}))], &CallMapping::default());
    /// assert_eq!(turn[0]["content"][1], json!({"type": "tool_use", "id": "t1", "name": "find", "input": {"q": "x"}}));
    /// ```
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value>;
}

pub(crate) mod sealed {
    use serde_json::Value;

    use super::{CallMapping, ProviderError, StreamedCalls};
    use crate::exec::ToolCall;

    /// The part of a format only this crate sees: its calls as the provider
    /// wrote them, before names are mapped back, and as it streams them.
    pub trait Format {
        fn calls_in(&self, response: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError>;

        /// Take one stream event (the JSON of one server-sent event's data)
        /// into `stream`; events that carry no part of a call are ignored.
        fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError>;

        /// The whole answer a finished stream amounts to, for
        /// [`read_calls`](super::WireFormat::read_calls); `None` when the
        /// format has no streamed calls.
        fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value>;

        /// What the provider ran itself in this turn, for a format with
        /// code execution configured; `None` otherwise.
        fn hosted_in(&self, response: &Value) -> Result<Option<super::HostedTurn>, ProviderError> {
            let _ = response;
            Ok(None)
        }
    }
}

/// The calls of one response, read by [`WireFormat::read_calls`].
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ReadCalls {
    /// The calls to execute: real names, arguments mapped back
    /// ([`CallMapping::apply`]). Calls in `refused` are not among them.
    pub calls: Vec<ToolCall>,
    /// Every call as the model sent it — same ids, argument text or object
    /// untouched — with real names (a request respells them): what the
    /// history repeats to the model.
    pub sent: Vec<ToolCall>,
    /// The answers to calls of tools the request did not declare (a tool the
    /// format left out, or a name the model made up): never run, answered
    /// with [`ToolError::NotOffered`] naming tools that are offered.
    pub refused: Vec<ToolResult>,
    /// What the provider ran itself in this turn (its code execution, see
    /// [`hosted`](super::hosted)), when the format's options let it: the
    /// turn's content verbatim for the history, the container to name next,
    /// and which calls code made. `None` for every other response.
    pub hosted: Option<HostedTurn>,
}

impl ReadCalls {
    /// What made the call with this id, when code the provider ran did
    /// (`None`: the model called the tool itself).
    pub fn caller(&self, call_id: &str) -> Option<&Caller> {
        self.hosted.as_ref()?.caller(call_id)
    }
}

/// What [`WireFormat::render_results`] produced: the messages to append,
/// and every block the provider could not carry in a tool result with what
/// was done instead.
///
/// ```
/// use toolreg::exec::{Content, ToolOutput};
/// use toolreg::provider::{CallMapping, Fallback, WireFormat, openai_chat::OpenAiChat};
/// use toolreg::ToolResult;
///
/// let chart = ToolOutput::from(vec![Content::text("The chart:"), Content::image(vec![1, 2, 3], "image/png")]);
/// let result = ToolResult { id: "call_1".into(), name: "plot".into(), outcome: Ok(chart) };
/// let rendered = OpenAiChat::new().render_results(&[result], &CallMapping::default());
/// // Chat Completions' tool messages take text: the image follows in a user message.
/// assert_eq!(rendered.messages[0]["role"], "tool");
/// assert_eq!(rendered.messages[1]["role"], "user");
/// assert_eq!(rendered.messages[1]["content"][1]["image_url"]["url"], "data:image/png;base64,AQID");
/// assert_eq!(rendered.fallbacks[0].call_id, "call_1");
/// assert_eq!(rendered.fallbacks[0].block, "image");
/// assert_eq!(rendered.fallbacks[0].how, Fallback::FollowUpMessage);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RenderedResults {
    /// What to append to the conversation, in order.
    pub messages: Vec<Value>,
    /// Each block that did not go as a block of the provider's tool result,
    /// in order. Empty for text-only results.
    pub fallbacks: Vec<BlockFallback>,
}

/// A block a provider could not carry in a tool result, and what was done
/// instead.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlockFallback {
    /// The id of the call whose result holds the block.
    pub call_id: String,
    /// The block's type, as [`Content::kind`](crate::exec::Content::kind) names it.
    pub block: &'static str,
    /// What was done instead.
    pub how: Fallback,
}

/// How a format sent a block its tool results cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fallback {
    /// Sent in a user message right after the tool results (OpenAI Chat,
    /// Mistral, Ollama), with a line in the tool result saying so.
    FollowUpMessage,
    /// Sent as its [`Content::summary`](crate::exec::Content::summary) text
    /// in the tool result: a link or an embedded text resource in full, a
    /// media block as one line naming its type and size.
    Summary,
}

impl BlockFallback {
    pub(crate) fn new(call_id: &str, block: &crate::exec::Content, how: Fallback) -> Self {
        BlockFallback { call_id: call_id.to_owned(), block: block.kind(), how }
    }
}

/// The text of a result, for formats that take text.
pub(crate) fn result_text(result: &ToolResult) -> String {
    result.text().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::ToolDeclaration;
    use crate::provider::mistral;
    use serde_json::json;

    /// A response in each format with calls `(id, name)`.
    fn responses(calls: &[(&str, &str)]) -> Vec<(Provider, Value)> {
        let chat: Vec<Value> = calls
            .iter()
            .map(|(id, n)| json!({"id": id, "type": "function", "function": {"name": n, "arguments": "{}"}}))
            .collect();
        let message = json!({"choices": [{"message": {"role": "assistant", "tool_calls": chat}}]});
        let items: Vec<Value> = calls
            .iter()
            .map(|(id, n)| json!({"type": "function_call", "call_id": id, "name": n, "arguments": "{}"}))
            .collect();
        let blocks: Vec<Value> =
            calls.iter().map(|(id, n)| json!({"type": "tool_use", "id": id, "name": n, "input": {}})).collect();
        let parts: Vec<Value> =
            calls.iter().map(|(id, n)| json!({"functionCall": {"id": id, "name": n, "args": {}}})).collect();
        let uses: Vec<Value> =
            calls.iter().map(|(id, n)| json!({"toolUse": {"toolUseId": id, "name": n, "input": {}}})).collect();
        vec![
            (Provider::OpenAiChat, message.clone()),
            (Provider::Mistral, message),
            (Provider::OpenAiResponses, json!({"output": items})),
            (Provider::Anthropic, json!({"content": blocks})),
            (Provider::Gemini, json!({"candidates": [{"content": {"role": "model", "parts": parts}}]})),
            (Provider::Bedrock, json!({"output": {"message": {"role": "assistant", "content": uses}}})),
        ]
    }

    #[test]
    fn duplicate_call_ids_refuse_the_response_in_every_format() {
        let decl = ToolDeclaration::new("t", "", json!({"type": "object", "properties": {}}));
        for (provider, response) in responses(&[("call_1", "t"), ("call_1", "t")]) {
            let format = provider.wire_format();
            let declared = format.declare(&[ToolRef::from(&decl)]).unwrap();
            for mapping in [&declared.mapping, &CallMapping::default()] {
                let read = format.parse_calls(&response, mapping);
                // Mistral respells ids to its 9 characters: the id it sent.
                let id = if provider == Provider::Mistral { mistral::tool_call_id("call_1") } else { "call_1".into() };
                assert_eq!(read, Err(ProviderError::DuplicateCallId { provider, id }), "{provider}");
            }
        }
        // Distinct ids are fine.
        for (provider, response) in responses(&[("call_1", "t"), ("call_2", "t")]) {
            assert_eq!(provider.wire_format().parse_calls(&response, &CallMapping::default()).unwrap().len(), 2);
        }
    }

    #[test]
    fn calls_to_tools_the_request_did_not_declare_are_refused_in_every_format() {
        let decl = ToolDeclaration::new("t", "", json!({"type": "object", "properties": {}}));
        for (provider, response) in responses(&[("call_1", "t"), ("call_2", "delete_everything")]) {
            let format = provider.wire_format();
            let declared = format.declare(&[ToolRef::from(&decl)]).unwrap();
            assert_eq!(
                format.parse_calls(&response, &declared.mapping),
                Err(ProviderError::UndeclaredTool { provider, tool: "delete_everything".into() }),
                "{provider}"
            );
            // Read for a conversation, the call is answered, not run.
            let read = format.read_calls(&response, &declared.mapping).unwrap();
            let names = |calls: &[ToolCall]| calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&read.calls), ["t"], "{provider}");
            assert_eq!(names(&read.sent), ["t", "delete_everything"], "{provider}");
            assert_eq!(read.refused.len(), 1, "{provider}");
            assert_eq!(read.refused[0].id, read.sent[1].id);
            assert_eq!(read.refused[0].error(), Some(&ToolError::NotOffered { available: vec!["t".into()] }));
        }
        // A tool Gemini cannot take (a recursive schema) is left out by
        // `declare_partial`, and a call to it is refused.
        let recursive = ToolDeclaration::new(
            "tree",
            "",
            json!({"type": "object", "properties": {"node": {"$ref": "#/$defs/Node"}},
                   "$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}),
        );
        let gemini = Provider::Gemini.wire_format();
        let declared = gemini.declare_partial(&[ToolRef::from(&decl), ToolRef::from(&recursive)]).into_value();
        assert_eq!(declared.refused().count(), 1);
        let response = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "tree", "args": {}}}]}}]});
        assert_eq!(
            gemini.parse_calls(&response, &declared.mapping),
            Err(ProviderError::UndeclaredTool { provider: Provider::Gemini, tool: "tree".into() })
        );
    }
}
