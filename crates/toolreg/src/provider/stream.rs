//! [`CallAssembler`]: the tool calls of a streamed answer, put together
//! from the provider's stream events and read by its format exactly as a
//! whole answer is.
//!
//! Each provider streams calls its own way — OpenAI-style chat as indexed
//! deltas of argument text, Anthropic as content blocks with partial JSON,
//! OpenAI Responses as output items with argument deltas, Bedrock as
//! content-block deltas, Gemini as whole `functionCall` parts. The
//! assembler keeps what each sends and, at the end, hands the format the
//! answer it would have sent unstreamed, so ids, names, empty and invalid
//! arguments, duplicates and undeclared tools follow one set of rules
//! whether an answer was streamed or not.

use serde_json::{Value, json};

use super::{CallMapping, Provider, ProviderError, ReadCalls, WireFormat, invalid};

/// Most calls one streamed answer may carry (the index a provider gives a
/// call is checked against it, so a hostile stream cannot make the
/// assembler allocate without bound).
pub const MAX_STREAMED_CALLS: usize = 1024;

/// Collects a streamed answer's tool calls from the provider's stream events
/// and hands the format the answer they amount to, so a streamed answer is
/// read with the same rules as a whole one.
///
/// ```
/// use serde_json::json;
/// use toolreg::provider::{CallAssembler, CallMapping, Provider, openai_chat::OpenAiChat};
///
/// let mut calls = CallAssembler::new(Provider::OpenAiChat);
/// for chunk in [
///     json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "find", "arguments": "{\"q\""}}]}}]}),
///     json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": \"x\"}"}}]}}]}),
/// ] {
///     calls.push(&chunk)?;
/// }
/// let read = calls.finish(&OpenAiChat::new(), &CallMapping::default())?;
/// assert_eq!(read.calls[0].name, "find");
/// assert_eq!(read.calls[0].arguments.to_string(), r#"{"q": "x"}"#);
/// # Ok::<(), toolreg::provider::ProviderError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CallAssembler {
    provider: Provider,
    /// Calls by the index the stream gives them.
    calls: Vec<Option<Partial>>,
    /// Whole call parts or items, in order (Gemini parts, finished
    /// Responses items).
    whole: Vec<Value>,
    /// The container Anthropic named (code execution), as it sent it.
    container: Option<Value>,
}

/// One call being streamed.
#[derive(Debug, Clone, Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
    /// Arguments that came whole with the call's start (Anthropic's
    /// `input`, used when no delta follows).
    start_input: Option<Value>,
    /// Anthropic: the content block as it started (text, a call with its
    /// `caller`, server tool blocks), so that a turn in which the provider
    /// ran code is rebuilt whole.
    start: Option<Value>,
    /// Anthropic: the text (or thinking) the block's deltas added.
    text: String,
    /// Anthropic: a thinking block's signature.
    signature: String,
}

impl CallAssembler {
    /// An assembler for this provider's stream.
    pub fn new(provider: Provider) -> Self {
        CallAssembler { provider, calls: Vec::new(), whole: Vec::new(), container: None }
    }

    /// Take one stream event (the JSON of one server-sent event's data).
    /// Events that carry no part of a call are ignored.
    pub fn push(&mut self, event: &Value) -> Result<(), ProviderError> {
        match self.provider {
            Provider::OpenAiChat | Provider::Mistral | Provider::Ollama => {
                let deltas = event.pointer("/choices/0/delta/tool_calls").and_then(Value::as_array);
                for delta in deltas.into_iter().flatten() {
                    let next = self.calls.len() as u64;
                    let call = self.at(delta.get("index").and_then(Value::as_u64).unwrap_or(next))?;
                    if let Some(id) = delta.get("id").and_then(Value::as_str) {
                        id.clone_into(&mut call.id);
                    }
                    if let Some(name) = delta.pointer("/function/name").and_then(Value::as_str) {
                        call.name.push_str(name);
                    }
                    if let Some(text) = delta.pointer("/function/arguments").and_then(Value::as_str) {
                        call.arguments.push_str(text);
                    }
                }
            }
            Provider::Anthropic => match event.get("type").and_then(Value::as_str) {
                Some("content_block_start") => {
                    let block = &event["content_block"];
                    let part = self.at(index(event))?;
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
                    let Some(Some(part)) = self.calls.get_mut(index(event) as usize) else { return Ok(()) };
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
                        self.container = Some(container.clone());
                    }
                }
                Some("message_delta") => {
                    if let Some(container) = event.pointer("/delta/container").filter(|c| !c.is_null()) {
                        self.container = Some(container.clone());
                    }
                }
                _ => {}
            },
            Provider::OpenAiResponses => match event.get("type").and_then(Value::as_str) {
                Some("response.output_item.added") if event.pointer("/item/type") == Some(&json!("function_call")) => {
                    let item = &event["item"];
                    let call = self.at(event.get("output_index").and_then(Value::as_u64).unwrap_or(0))?;
                    call.id = item["call_id"].as_str().unwrap_or_default().to_owned();
                    let name = item["name"].as_str().unwrap_or_default();
                    // A namespaced tool's call: our name joins the two
                    // (as `calls_in` reads a whole `function_call`).
                    call.name = match item.get("namespace").and_then(Value::as_str) {
                        Some(space) if !space.is_empty() => format!("{space}__{name}"),
                        _ => name.to_owned(),
                    };
                }
                Some("response.function_call_arguments.delta") => {
                    let at = event.get("output_index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    if let (Some(Some(call)), Some(text)) =
                        (self.calls.get_mut(at), event.get("delta").and_then(Value::as_str))
                    {
                        call.arguments.push_str(text);
                    }
                }
                _ => {}
            },
            Provider::Bedrock => {
                let at = event.get("contentBlockIndex").and_then(Value::as_u64).unwrap_or(0);
                if let Some(start) = event.pointer("/start/toolUse") {
                    let call = self.at(at)?;
                    call.id = start["toolUseId"].as_str().unwrap_or_default().to_owned();
                    call.name = start["name"].as_str().unwrap_or_default().to_owned();
                } else if let Some(text) = event.pointer("/delta/toolUse/input").and_then(Value::as_str)
                    && let Some(Some(call)) = self.calls.get_mut(at as usize)
                {
                    call.arguments.push_str(text);
                }
            }
            Provider::Gemini => {
                let parts = event.pointer("/candidates/0/content/parts").and_then(Value::as_array);
                for part in parts.into_iter().flatten().filter(|p| p.get("functionCall").is_some()) {
                    if self.whole.len() >= MAX_STREAMED_CALLS {
                        return Err(too_many(self.provider));
                    }
                    self.whole.push(part.clone());
                }
            }
            // MCP calls are requests, never streamed.
            Provider::Mcp => {}
        }
        Ok(())
    }

    /// The calls, read by `format` from the answer the stream amounts to:
    /// the same [`ReadCalls`] (and the same errors) as an unstreamed answer.
    pub fn finish(self, format: &dyn WireFormat, mapping: &CallMapping) -> Result<ReadCalls, ProviderError> {
        let calls = self.calls.into_iter().flatten();
        let answer = match self.provider {
            Provider::OpenAiChat | Provider::Mistral | Provider::Ollama => {
                let calls: Vec<Value> = calls
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
                json!({"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]})
            }
            Provider::Anthropic => {
                let blocks: Vec<Value> = calls.map(anthropic_block).collect();
                match self.container {
                    Some(container) => json!({"content": blocks, "container": container}),
                    None => json!({"content": blocks}),
                }
            }
            Provider::OpenAiResponses => {
                let items: Vec<Value> = calls
                    .map(
                        |c| json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}),
                    )
                    .collect();
                json!({"output": items})
            }
            Provider::Bedrock => {
                let blocks: Vec<Value> = calls
                    .map(|c| {
                        let input = streamed_input(c.arguments);
                        json!({"toolUse": {"toolUseId": c.id, "name": c.name, "input": input}})
                    })
                    .collect();
                json!({"output": {"message": {"role": "assistant", "content": blocks}}})
            }
            Provider::Gemini => json!({"candidates": [{"content": {"role": "model", "parts": self.whole}}]}),
            Provider::Mcp => return Ok(ReadCalls::default()),
        };
        format.read_calls(&answer, mapping)
    }

    /// The call at a stream index, made when first seen.
    fn at(&mut self, index: u64) -> Result<&mut Partial, ProviderError> {
        let index = usize::try_from(index).unwrap_or(usize::MAX);
        if index >= MAX_STREAMED_CALLS {
            return Err(too_many(self.provider));
        }
        if self.calls.len() <= index {
            self.calls.resize(index + 1, None);
        }
        Ok(self.calls[index].get_or_insert_with(Partial::default))
    }
}

/// An Anthropic content block from its start and its deltas: a call
/// rebuilt from its parts (with its `caller`, when code made it); any other
/// block as it started, with the text, thinking or input its deltas added.
fn anthropic_block(part: Partial) -> Value {
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

/// The arguments text of a call whose provider sends an object unstreamed
/// (Anthropic, Bedrock): that object when the text is JSON, `{}` when it is
/// empty, and otherwise the text, kept for the engine to report as
/// malformed — what the whole answer would have given.
fn streamed_input(text: String) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

fn index(event: &Value) -> u64 {
    event.get("index").and_then(Value::as_u64).unwrap_or(0)
}

fn too_many(provider: Provider) -> ProviderError {
    invalid(provider, format!("a streamed answer with more than {MAX_STREAMED_CALLS} tool calls"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ToolArguments;
    use crate::provider::{anthropic::Anthropic, bedrock::Bedrock, gemini::Gemini, openai_responses::OpenAiResponses};

    #[test]
    fn anthropic_blocks_without_deltas_take_their_start_input() {
        let mut calls = CallAssembler::new(Provider::Anthropic);
        let start = |i: u64, id: &str| {
            json!({"type": "content_block_start", "index": i,
                "content_block": {"type": "tool_use", "id": id, "name": "t", "input": {}}})
        };
        calls.push(&start(1, "a")).unwrap();
        calls.push(&start(2, "b")).unwrap();
        let delta = |i: u64, text: &str| json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": text}});
        calls.push(&delta(2, "{\"x\": ")).unwrap();
        calls.push(&delta(2, "1}")).unwrap();
        let read = calls.finish(&Anthropic::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].arguments, ToolArguments::Json(json!({})));
        assert_eq!(read.calls[1].arguments, ToolArguments::Json(json!({"x": 1})));
    }

    #[test]
    fn a_truncated_argument_text_stays_text_for_the_engine_to_report() {
        let mut calls = CallAssembler::new(Provider::OpenAiChat);
        let chunk = json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{\"x\": "}}]}}]});
        calls.push(&chunk).unwrap();
        let read = calls.finish(&crate::provider::openai_chat::OpenAiChat::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].arguments, ToolArguments::Raw("{\"x\": ".into()));
    }

    #[test]
    fn hostile_indices_are_refused_not_allocated() {
        let mut calls = CallAssembler::new(Provider::OpenAiChat);
        let chunk = json!({"choices": [{"delta": {"tool_calls": [{"index": 4_000_000_000u64, "id": "c"}]}}]});
        assert!(matches!(calls.push(&chunk), Err(ProviderError::InvalidResponse { .. })));
        let mut gemini = CallAssembler::new(Provider::Gemini);
        let part = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "t", "args": {}}}]}}]});
        for _ in 0..MAX_STREAMED_CALLS {
            gemini.push(&part).unwrap();
        }
        assert!(gemini.push(&part).is_err());
    }

    #[test]
    fn duplicate_ids_in_a_stream_are_refused_like_in_a_whole_answer() {
        let mut calls = CallAssembler::new(Provider::OpenAiResponses);
        for i in 0..2u64 {
            let added = json!({"type": "response.output_item.added", "output_index": i,
                "item": {"type": "function_call", "call_id": "same", "name": "t", "arguments": ""}});
            calls.push(&added).unwrap();
        }
        let error = calls.finish(&OpenAiResponses::new(), &CallMapping::default()).unwrap_err();
        assert!(matches!(error, ProviderError::DuplicateCallId { .. }), "{error}");
    }

    #[test]
    fn a_streamed_namespaced_call_reads_as_its_one_name() {
        let mut calls = CallAssembler::new(Provider::OpenAiResponses);
        let added = json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call",
            "call_id": "c", "namespace": "github", "name": "create_issue", "arguments": ""}});
        calls.push(&added).unwrap();
        let read = calls.finish(&OpenAiResponses::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].name, "github__create_issue");
    }

    #[test]
    fn gemini_and_bedrock_streams_read_like_whole_answers() {
        let mut gemini = CallAssembler::new(Provider::Gemini);
        let part = json!({"candidates": [{"content": {"parts": [{"functionCall": {"id": "g1", "name": "t", "args": {"a": 1}}}]}}]});
        gemini.push(&part).unwrap();
        let read = gemini.finish(&Gemini::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].arguments, ToolArguments::Json(json!({"a": 1})));

        let mut bedrock = CallAssembler::new(Provider::Bedrock);
        bedrock.push(&json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "b1", "name": "t"}}})).unwrap();
        bedrock.push(&json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"a\":"}}})).unwrap();
        bedrock.push(&json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "2}"}}})).unwrap();
        let read = bedrock.finish(&Bedrock::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].id, "b1");
        assert_eq!(read.calls[0].arguments, ToolArguments::Json(json!({"a": 2})));
        // Cut short: the text, for the engine to answer as malformed.
        let mut cut = CallAssembler::new(Provider::Anthropic);
        cut.push(&json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "tool_use", "id": "a", "name": "t", "input": {}}}))
            .unwrap();
        cut.push(&json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{\"x\""}}))
            .unwrap();
        let read = cut.finish(&Anthropic::new(), &CallMapping::default()).unwrap();
        assert_eq!(read.calls[0].arguments, ToolArguments::Raw("{\"x\"".into()));
    }
}
