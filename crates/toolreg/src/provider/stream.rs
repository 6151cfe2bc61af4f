//! [`CallAssembler`]: the tool calls of a streamed answer, put together
//! from the provider's stream events and read by its format exactly as a
//! whole answer is.
//!
//! Each provider streams calls its own way — OpenAI-style chat as indexed
//! deltas of argument text, Anthropic as content blocks with partial JSON,
//! OpenAI Responses as output items with argument deltas, Bedrock as
//! content-block deltas, Gemini as whole `functionCall` parts — and each
//! format reads its own events into a [`StreamedCalls`] and, at the end,
//! writes the answer it would have sent unstreamed, so ids, names, empty and
//! invalid arguments, duplicates and undeclared tools follow one set of
//! rules whether an answer was streamed or not. What is here is only what
//! every format shares: calls by their stream index, bounded.

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
#[derive(Debug)]
pub struct CallAssembler {
    /// The provider's format, which reads its own events.
    format: Box<dyn WireFormat>,
    stream: StreamedCalls,
}

impl Clone for CallAssembler {
    fn clone(&self) -> Self {
        let format = self.stream.provider.wire_format();
        CallAssembler { format, stream: self.stream.clone() }
    }
}

impl CallAssembler {
    /// An assembler for this provider's stream.
    pub fn new(provider: Provider) -> Self {
        CallAssembler { format: provider.wire_format(), stream: StreamedCalls::new(provider) }
    }

    /// Take one stream event (the JSON of one server-sent event's data).
    /// Events that carry no part of a call are ignored.
    pub fn push(&mut self, event: &Value) -> Result<(), ProviderError> {
        self.format.stream_event(&mut self.stream, event)
    }

    /// The calls, read by `format` from the answer the stream amounts to:
    /// the same [`ReadCalls`] (and the same errors) as an unstreamed answer.
    pub fn finish(self, format: &dyn WireFormat, mapping: &CallMapping) -> Result<ReadCalls, ProviderError> {
        match format.streamed_answer(self.stream) {
            Some(answer) => format.read_calls(&answer, mapping),
            None => Ok(ReadCalls::default()),
        }
    }
}

/// What a stream has said of its calls so far, kept by the format that
/// reads the stream (each in its own module).
#[derive(Debug, Clone)]
pub struct StreamedCalls {
    provider: Provider,
    /// Calls by the index the stream gives them.
    calls: Vec<Option<Partial>>,
    /// Whole call parts or items, in order (Gemini's parts).
    pub(crate) whole: Vec<Value>,
    /// The container Anthropic named (code execution), as it sent it.
    pub(crate) container: Option<Value>,
}

/// One call (or, for Anthropic, one content block) being streamed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Partial {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
    /// Arguments that came whole with the call's start (Anthropic's
    /// `input`, used when no delta follows).
    pub(crate) start_input: Option<Value>,
    /// Anthropic: the content block as it started (text, a call with its
    /// `caller`, server tool blocks), so that a turn in which the provider
    /// ran code is rebuilt whole.
    pub(crate) start: Option<Value>,
    /// Anthropic: the text (or thinking) the block's deltas added.
    pub(crate) text: String,
    /// Anthropic: a thinking block's signature.
    pub(crate) signature: String,
}

impl StreamedCalls {
    fn new(provider: Provider) -> Self {
        StreamedCalls { provider, calls: Vec::new(), whole: Vec::new(), container: None }
    }

    /// The call at a stream index, made when first seen.
    pub(crate) fn at(&mut self, index: u64) -> Result<&mut Partial, ProviderError> {
        let index = usize::try_from(index).unwrap_or(usize::MAX);
        if index >= MAX_STREAMED_CALLS {
            return Err(self.too_many());
        }
        if self.calls.len() <= index {
            self.calls.resize(index + 1, None);
        }
        Ok(self.calls[index].get_or_insert_with(Partial::default))
    }

    /// The index after the last one seen: where a call without one goes.
    pub(crate) fn next_index(&self) -> u64 {
        self.calls.len() as u64
    }

    /// The call at a stream index, if it has started.
    pub(crate) fn started(&mut self, index: u64) -> Option<&mut Partial> {
        self.calls.get_mut(usize::try_from(index).ok()?)?.as_mut()
    }

    /// A whole call part, kept as it came.
    pub(crate) fn push_whole(&mut self, part: &Value) -> Result<(), ProviderError> {
        if self.whole.len() >= MAX_STREAMED_CALLS {
            return Err(self.too_many());
        }
        self.whole.push(part.clone());
        Ok(())
    }

    /// The calls in stream order, each once.
    pub(crate) fn into_calls(self) -> impl Iterator<Item = Partial> {
        self.calls.into_iter().flatten()
    }

    fn too_many(&self) -> ProviderError {
        invalid(self.provider, format!("a streamed answer with more than {MAX_STREAMED_CALLS} tool calls"))
    }
}

/// The arguments text of a call whose provider sends an object unstreamed
/// (Anthropic, Bedrock): that object when the text is JSON, `{}` when it is
/// empty, and otherwise the text, kept for the engine to report as
/// malformed — what the whole answer would have given.
pub(crate) fn streamed_input(text: String) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
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
