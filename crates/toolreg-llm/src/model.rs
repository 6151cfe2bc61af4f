//! The contract between the agent loop and a model: a provider-neutral,
//! serialisable conversation, one request and one response shape, and the
//! [`LlmClient`] trait every provider client implements.
//!
//! A client owns everything provider-specific: it declares the tools in its
//! provider's wire format ([`toolreg::provider::WireFormat`]), sends the
//! request, and parses the tool calls back with the format's name mapping,
//! so the calls it returns carry the tools' *real* names and go straight to
//! [`ToolEngine::execute_batch`](toolreg::ToolEngine::execute_batch).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashSet;

use toolreg::provider::{
    CallMapping, Caller, CodeExecution, HostedTurn, ReadCalls, ToolChoice, ToolRef, tool_references,
    with_tool_references,
};
use toolreg::{BoxFuture, Content, ToolCall, ToolDeclaration, ToolEntry, ToolError, ToolOutput, ToolResult};

/// One entry of a conversation, in no provider's format.
///
/// It serialises with serde, so a whole conversation can be stored (for
/// example in the context store) and picked up in another process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Message {
    /// What the user (or the parent agent) said.
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text part (may be empty).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        text: String,
        /// The tool calls, with the tools' real names.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The ids among them that toolreg made up because the provider
        /// sent none: the provider must not see them again.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        generated_ids: Vec<String>,
        /// What the provider ran itself in this turn (its code execution
        /// calling the tools, see [`toolreg::provider::hosted`]): the turn
        /// verbatim, which later requests repeat instead of `text` and
        /// `tool_calls`, and its container.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hosted: Option<HostedTurn>,
    },
    /// The answers to the previous assistant message's tool calls, in its order.
    Tool {
        /// One per call.
        results: Vec<ToolResultMessage>,
    },
}

impl Message {
    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant { text: text.into(), tool_calls, generated_ids: Vec::new(), hosted: None }
    }

    /// The tool results of one turn.
    pub fn tool_results(results: &[ToolResult]) -> Self {
        Message::Tool { results: results.iter().map(ToolResultMessage::from).collect() }
    }
}

/// A tool result as the conversation keeps it: the whole result, so that
/// every later request renders it in its provider's format (images and
/// files included), and the text the model reads where only text fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's real name.
    pub name: String,
    /// The text the model reads (the output, or the error's model text).
    pub content: String,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The output's JSON value (absent for a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// The output's content blocks, in order (none for a plain value).
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "blocks")]
    pub blocks: Vec<Content>,
    /// For a tool search's answer, the tools it found
    /// ([`tool_references`]): a format
    /// with native search sends references to them in every later request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_references: Vec<String>,
}

impl From<&ToolResult> for ToolResultMessage {
    fn from(result: &ToolResult) -> Self {
        let output = result.outcome.as_ref().ok();
        ToolResultMessage {
            call_id: result.id.clone(),
            name: result.name.clone(),
            content: result.text().into_owned(),
            is_error: result.is_error(),
            value: output.map(|o| o.value.clone()),
            blocks: output.map(|o| o.content.clone()).unwrap_or_default(),
            tool_references: output
                .map(|o| tool_references(o).into_iter().map(str::to_owned).collect())
                .unwrap_or_default(),
        }
    }
}

impl ToolResultMessage {
    /// The result again, for a [`WireFormat`](toolreg::provider::WireFormat)
    /// to render: a failure's text is its message.
    pub fn to_result(&self) -> ToolResult {
        let outcome = if self.is_error {
            Err(ToolError::failed(self.content.clone()))
        } else {
            let value = self.value.clone().unwrap_or_else(|| Value::String(self.content.clone()));
            let mut output = ToolOutput::new(value);
            output.content.clone_from(&self.blocks);
            if !self.tool_references.is_empty() {
                output = with_tool_references(output, self.tool_references.iter().cloned());
            }
            Ok(output)
        };
        ToolResult { id: self.call_id.clone(), name: self.name.clone(), outcome }
    }
}

/// Content blocks as their JSON ([`Content::to_json`]), for serde.
mod blocks {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;
    use toolreg::Content;

    pub(super) fn serialize<S: Serializer>(blocks: &[Content], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(blocks.iter().map(Content::to_json))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Content>, D::Error> {
        Vec::<Value>::deserialize(deserializer)?
            .iter()
            .map(|b| Content::from_json(b).map_err(D::Error::custom))
            .collect()
    }
}

/// One request to a model.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The model's name (`gpt-4.1`, `claude-sonnet-4-5`, `llama3.2`, …).
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools offered (shared, so a loop offering the same tools every
    /// step does not copy them; registered entries also keep each
    /// provider's schema lowering from one request to the next).
    pub tools: Vec<OfferedTool>,
    /// Which tools the model may or must call.
    pub tool_choice: ToolChoice,
    /// The tools among `tools` (real names) to declare with the provider's
    /// deferred loading: in the request, seen by the model only once a tool
    /// search returned them. Honoured by a client with native tool search
    /// ([`LlmClient::native_tool_search`]); any other client sends them as
    /// the rest, so leave it empty for those (the agent does).
    pub deferred_tools: HashSet<String>,
    /// The tool among `tools` (real name) that searches the deferred ones,
    /// for a client whose provider has a tool search entry point the client
    /// executes (OpenAI Responses' `tool_search`): declared as that entry
    /// point, its calls come back as calls of this tool and its answer
    /// loads the deferred tools it found
    /// ([`ToolRef::search_tool`](toolreg::provider::ToolRef::search_tool)).
    /// Any other client sends it as an ordinary tool. The agent sets it to
    /// its `search_tools` when it defers tools and the client searches
    /// natively.
    pub search_tool: Option<String>,
    /// Let the provider's own code execution call the tools (Anthropic's
    /// programmatic tool calling; see [`toolreg::provider::hosted`]).
    /// Honoured by a client whose format has it
    /// ([`LlmClient::code_execution`]); any other client declares the tools
    /// as usual. The agent sets it from
    /// [`AgentBuilder::code_execution`](crate::agent::AgentBuilder::code_execution).
    pub code_execution: Option<CodeExecution>,
    /// A cap on the answer's tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
}

impl ModelRequest {
    /// A request to `model` with this conversation and no tools.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        ModelRequest { model: model.into(), messages, ..ModelRequest::default() }
    }

    /// Set the system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Offer these tools: registry entries (`registry.list().cloned()`)
    /// or declarations.
    pub fn tools<T: Into<OfferedTool>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Say which tools the model may or must call.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Cap the answer's tokens.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}

/// A tool offered to a model: a registered entry, whose schema lowered for
/// each provider is computed once and cached on the entry (what the agent
/// offers), or a bare declaration, lowered on every request. It reads as
/// its declaration (`tool.name`).
#[derive(Debug, Clone)]
pub enum OfferedTool {
    /// A registered tool.
    Entry(ToolEntry),
    /// A declaration alone.
    Declaration(Arc<ToolDeclaration>),
}

impl Deref for OfferedTool {
    type Target = ToolDeclaration;

    fn deref(&self) -> &ToolDeclaration {
        match self {
            OfferedTool::Entry(entry) => entry.declaration(),
            OfferedTool::Declaration(declaration) => declaration,
        }
    }
}

impl From<ToolEntry> for OfferedTool {
    fn from(entry: ToolEntry) -> Self {
        OfferedTool::Entry(entry)
    }
}

impl From<&ToolEntry> for OfferedTool {
    fn from(entry: &ToolEntry) -> Self {
        OfferedTool::Entry(entry.clone())
    }
}

impl From<Arc<ToolDeclaration>> for OfferedTool {
    fn from(declaration: Arc<ToolDeclaration>) -> Self {
        OfferedTool::Declaration(declaration)
    }
}

impl From<ToolDeclaration> for OfferedTool {
    fn from(declaration: ToolDeclaration) -> Self {
        OfferedTool::Declaration(Arc::new(declaration))
    }
}

impl<'a> From<&'a OfferedTool> for ToolRef<'a> {
    fn from(tool: &'a OfferedTool) -> Self {
        match tool {
            OfferedTool::Entry(entry) => ToolRef::from(entry),
            OfferedTool::Declaration(declaration) => ToolRef::from(declaration),
        }
    }
}

/// Tokens a request used, as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It wants its tool calls run.
    ToolCalls,
    /// It hit the token cap.
    Length,
    /// The provider filtered the answer.
    ContentFilter,
    /// Anything else the provider said, verbatim.
    Other(String),
}

/// One model answer.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct ModelResponse {
    /// The text part (may be empty).
    pub text: String,
    /// The tool calls, with real names. A call whose arguments are not valid
    /// JSON is kept with [`ToolArguments::Raw`](toolreg::ToolArguments::Raw)
    /// text, so executing it answers with an error the model can correct.
    pub tool_calls: Vec<ToolCall>,
    /// The same calls exactly as the model sent them (ids, argument text
    /// untouched), with real names: what [`to_message`](Self::to_message)
    /// puts in the history, since the model must see its own calls again,
    /// not toolreg's reading of them (strict mode's `null`s dropped, text
    /// reformatted). Empty when a client gives none: `tool_calls` then.
    pub sent_calls: Vec<ToolCall>,
    /// The answers to calls of tools the request did not declare (a tool
    /// the provider's format left out, or a name the model made up). They
    /// are not in `tool_calls` and must not run; the agent sends these
    /// answers back so the model can pick a tool it was offered.
    pub refused: Vec<ToolResult>,
    /// Tokens used.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish: FinishReason,
    /// The call ids toolreg made up because the provider sent none (see
    /// [`CallMapping::is_generated_id`]); kept in the history's assistant
    /// message so later requests leave them out.
    pub generated_ids: Vec<String>,
    /// What the provider ran itself in this turn ([`ReadCalls::hosted`]):
    /// kept in the history's assistant message, with which calls code made.
    pub hosted: Option<HostedTurn>,
}

impl ModelResponse {
    /// An answer: its text, the calls its wire format read
    /// ([`WireFormat::read_calls`](toolreg::provider::WireFormat::read_calls)),
    /// the tokens it used and why the model stopped.
    pub fn new(text: String, read: ReadCalls, usage: Usage, finish: FinishReason) -> Self {
        ModelResponse {
            text,
            tool_calls: read.calls,
            sent_calls: read.sent,
            refused: read.refused,
            usage,
            finish,
            generated_ids: Vec::new(),
            hosted: read.hosted,
        }
    }

    /// What made the call with this id, when code the provider ran did
    /// (`None`: the model called the tool itself).
    pub fn caller(&self, call_id: &str) -> Option<&Caller> {
        self.hosted.as_ref()?.caller(call_id)
    }

    /// With the ids of its calls that `mapping` (the request's) made up.
    pub fn generated_by(mut self, mapping: &CallMapping) -> Self {
        let calls = self.sent_calls.iter().chain(&self.tool_calls);
        let mut ids: Vec<String> = calls.filter(|c| mapping.is_generated_id(&c.id)).map(|c| c.id.clone()).collect();
        ids.dedup();
        self.generated_ids = ids;
        self
    }

    /// The assistant message to append to the conversation: the calls as
    /// the model sent them ([`sent_calls`](Self::sent_calls)).
    pub fn to_message(&self) -> Message {
        let calls = if self.sent_calls.is_empty() { &self.tool_calls } else { &self.sent_calls };
        Message::Assistant {
            text: self.text.clone(),
            tool_calls: calls.clone(),
            generated_ids: self.generated_ids.clone(),
            hosted: self.hosted.clone(),
        }
    }
}

/// Something a streaming client reports while an answer arrives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A tool call is complete (its argument deltas assembled).
    ToolCall(ToolCall),
    /// The request is being retried after `delay` (attempt counts from 1).
    Retrying {
        /// The retry's number.
        attempt: u32,
        /// How long the client waits first.
        delay: Duration,
    },
}

/// Where a client reports [`StreamEvent`]s; `&|_| {}` ignores them.
pub type OnEvent<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// Why a model request failed. No variant ever carries an API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The client is not configured (no key, bad base URL, …).
    #[error("model client not configured: {0}")]
    Config(String),
    /// The provider answered with an error status (after retries, for 429 and 5xx).
    #[error("the model provider answered HTTP {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The provider's message, shortened.
        message: String,
    },
    /// No answer in time.
    #[error("the model request timed out after {0:?}")]
    Timeout(Duration),
    /// The connection failed or broke.
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The provider answered something this client cannot read (a
    /// truncated stream, an unexpected shape).
    #[error("unreadable answer from the model provider: {0}")]
    Protocol(String),
    /// The request was cancelled.
    #[error("the model request was cancelled")]
    Cancelled,
    /// The provider reported an error inside a streamed answer (an `error`
    /// chunk or event): the answer is not complete, whatever came after.
    #[error("the model provider reported an error in the stream: {0}")]
    Stream(String),
    /// The answer (a body, a streamed answer, or one line of a stream) is
    /// larger than [`ClientConfig::max_response_bytes`](crate::client::ClientConfig::max_response_bytes).
    #[error("the model provider's answer is larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The provider redirected the request to another origin (scheme, host
    /// or port). The request carries the API key, so it is not followed:
    /// set the base URL to the final address instead.
    #[error(
        "the model provider redirected to another origin ({location}); not followed, since the request carries the API key"
    )]
    Redirect {
        /// The origin (`scheme://host:port`) it pointed to.
        location: String,
    },
}

impl LlmError {
    /// Whether trying again may help (429, 5xx, timeouts, broken connections).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout(_) | LlmError::Transport(_) => true,
            _ => false,
        }
    }
}

/// A model: takes a request, answers with text and tool calls.
///
/// Dropping the returned future cancels the request. Implementations report
/// streamed text and completed tool calls to `on_event` as they arrive (a
/// non-streaming client reports nothing, or everything at the end).
pub trait LlmClient: Send + Sync {
    /// Send one request.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_event: OnEvent<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, LlmError>>;

    /// A short name for events and logs (`openai-chat`, `anthropic`, …).
    fn name(&self) -> &str;

    /// Whether this client's wire format has the provider's own tool
    /// search ([`WireFormat::native_search`](toolreg::provider::WireFormat::native_search)):
    /// it then declares [`ModelRequest::deferred_tools`] with deferred
    /// loading, and a tool search's answer as the provider's references to
    /// them (Anthropic's `tool_reference` blocks; OpenAI Responses'
    /// `tool_search_output` with their definitions, the search tool being
    /// [`ModelRequest::search_tool`]). The agent then offers every tool from the first request on,
    /// the deferred ones deferred, instead of adding tools as they are
    /// found. `false` unless a client says otherwise.
    fn native_tool_search(&self) -> bool {
        false
    }

    /// Whether this client's wire format has the provider's code execution
    /// calling the tools ([`WireFormat::code_execution`](toolreg::provider::WireFormat::code_execution)):
    /// it then honours [`ModelRequest::code_execution`], keeps each turn
    /// the provider ran code in, and names its container in the next
    /// request. `false` unless a client says otherwise (the Anthropic and
    /// OpenAI Responses clients do).
    fn code_execution(&self) -> bool {
        false
    }
}

impl<C: LlmClient + ?Sized> LlmClient for Arc<C> {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_event: OnEvent<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, LlmError>> {
        (**self).complete(request, on_event)
    }

    fn name(&self) -> &str {
        (**self).name()
    }

    fn native_tool_search(&self) -> bool {
        (**self).native_tool_search()
    }

    fn code_execution(&self) -> bool {
        (**self).code_execution()
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::User { text } => write!(f, "user: {text}"),
            Message::Assistant { text, tool_calls, .. } => {
                write!(f, "assistant: {text}")?;
                for call in tool_calls {
                    write!(f, " [{}({})]", call.name, call.arguments)?;
                }
                Ok(())
            }
            Message::Tool { results } => {
                for (i, r) in results.iter().enumerate() {
                    if i > 0 {
                        f.write_str("\n")?;
                    }
                    write!(f, "tool {}: {}", r.name, r.content)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolreg::exec::Annotations;

    use super::*;

    #[test]
    fn a_conversation_keeps_whole_results_through_serde() {
        let output = ToolOutput::from(vec![
            Content::text("The chart:"),
            Content::image(vec![137, 80, 78, 71], "image/png").annotated(Annotations::default().priority(1.0)),
        ])
        .with_value(json!({"points": 3}));
        let result = ToolResult { id: "c1".into(), name: "chart".into(), outcome: Ok(output) };
        let failed = ToolResult { id: "c2".into(), name: "chart".into(), outcome: Err(ToolError::failed("no data")) };
        let message = Message::tool_results(&[result.clone(), failed]);
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(json["results"][0]["blocks"][1]["type"], "image");
        let back: Message = serde_json::from_value(json).unwrap();
        assert_eq!(back, message);
        let Message::Tool { results } = back else { panic!("not a tool message") };
        assert_eq!(results[0].to_result(), result);
        assert_eq!(results[1].to_result().outcome, Err(ToolError::failed("no data")));
    }

    #[test]
    fn a_tool_search_answer_keeps_what_it_found_through_serde() {
        let found = with_tool_references(ToolOutput::new(json!({"found": 1})), ["convert_currency"]);
        let result = ToolResult { id: "c1".into(), name: "search_tools".into(), outcome: Ok(found) };
        let message = Message::tool_results(&[result]);
        let back: Message = serde_json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
        let Message::Tool { results } = back else { panic!("not a tool message") };
        assert_eq!(results[0].tool_references, ["convert_currency"]);
        let again = results[0].to_result();
        assert_eq!(tool_references(again.outcome.as_ref().unwrap()), ["convert_currency"]);
    }

    #[test]
    fn bad_blocks_in_a_stored_conversation_are_refused() {
        let stored = json!({"role": "tool", "results": [{"call_id": "c", "name": "t", "content": "x",
            "blocks": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]}]});
        let error = serde_json::from_value::<Message>(stored).unwrap_err();
        assert!(error.to_string().contains("invalid base64"), "{error}");
    }

    #[test]
    fn generated_ids_are_part_of_the_record() {
        let message = Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall::new("gemini_call_0_x", "t", json!({}))],
            generated_ids: vec!["gemini_call_0_x".into()],
            hosted: None,
        };
        let back: Message = serde_json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
        assert_eq!(back, message);
    }
}
