//! Provider wire formats: declarations out, tool calls in, results out.
//!
//! One module per format, each implementing [`WireFormat`]:
//! [`declare`](WireFormat::declare) renders a selection of tools as the
//! provider's `tools` value (typed serde structs, never string templates)
//! with a [`CallMapping`] and a report per tool;
//! [`parse_calls`](WireFormat::parse_calls) reads the provider's response
//! into [`ToolCall`]s for the real tools; [`render_results`](WireFormat::render_results)
//! writes what to append to the conversation for a batch of [`ToolResult`]s.
//!
//! | format | declarations | calls in | results out |
//! |---|---|---|---|
//! | [`openai_chat`] (also vLLM, llama.cpp, Ollama `/v1`) | `{"type":"function","function":{..}}` | `message.tool_calls` | a `{"role":"tool",..}` message per result |
//! | [`openai_responses`] | `{"type":"function","name",..}` | `function_call` items | a `function_call_output` item per result |
//! | [`anthropic`] | `{"name","input_schema",..}` | `tool_use` blocks | one user turn of `tool_result` blocks |
//! | [`gemini`] | `[{"functionDeclarations":[..]}]` | `functionCall` parts | one user `Content` of `functionResponse` parts |
//! | [`mcp`] | `tools/list` tools | `tools/call` requests | a `CallToolResult` per result |
//! | [`bedrock`] | `[{"toolSpec":{..}}]` | `toolUse` blocks | one user message of `toolResult` blocks |
//! | [`mistral`] | OpenAI shape | OpenAI shape, 9-character ids | a `{"role":"tool",..}` message per result |
//! | [`ollama`] (native `/api/chat`) | OpenAI shape | calls without ids | a `{"role":"tool","tool_name",..}` message per result |
//!
//! [`ToolChoice`] says which tools the model may or must call, in each
//! provider's spelling.
//!
//! Every tool has one canonical JSON Schema. What a provider accepts is
//! derived from it by the [`lower`] transforms: OpenAI's strict mode,
//! Anthropic's strict subset, Gemini's OpenAPI subset. For a tool taken from
//! a [`FunctionRegistry`](crate::FunctionRegistry) ([`ToolEntry`]) the
//! lowered schema is computed once per tool and provider and kept in the
//! entry; a bare [`ToolDeclaration`] is lowered each time it is rendered.
//!
//! A tool a provider cannot take (a name it refuses, a schema it cannot
//! express, one tool too many) is reported as [`ToolStatus::Refused`] with
//! why: [`declare`](WireFormat::declare) then fails with that error, and
//! [`declare_partial`](WireFormat::declare_partial) sends the others.
//!
//! ```
//! use toolreg::{FunctionRegistry, ToolDeclaration, ParamType};
//! use toolreg::provider::{ToolRef, WireFormat, openai_chat::OpenAiChat};
//! use serde_json::{json, Value};
//!
//! let mut registry = FunctionRegistry::new();
//! let decl = ToolDeclaration::builder("get_weather")
//!     .description("Current weather in a city")
//!     .param("city", ParamType::String, "City name")
//!     .optional_param("unit", ParamType::String, "celsius or fahrenheit")
//!     .build();
//! registry.register_sync_tool("get_weather", |_: Value| Ok::<_, String>("sunny"), decl)?;
//!
//! let declared = OpenAiChat::new().declare(&ToolRef::list(registry.entries()))?;
//! let tools = &declared.tools;
//! assert_eq!(tools[0]["function"]["strict"], true);
//! // Strict mode: every property required, the optional one nullable.
//! assert_eq!(tools[0]["function"]["parameters"]["required"], json!(["city", "unit"]));
//! assert_eq!(tools[0]["function"]["parameters"]["properties"]["unit"]["type"], json!(["string", "null"]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A whole turn, for any provider chosen at run time: declare, read the
//! calls (names mapped back), run them, answer.
//!
//! ```
//! use toolreg::provider::{ToolRef, WireFormat, anthropic::Anthropic, gemini::Gemini, openai_chat::OpenAiChat};
//! use toolreg::{FunctionRegistry, ToolDeclaration, ParamType, ToolExecutor};
//! use serde_json::{json, Value};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut registry = FunctionRegistry::new();
//! let decl = ToolDeclaration::builder("double").param("x", ParamType::Number, "A number").build();
//! registry.register_sync_tool("double", |a: Value| Ok::<_, String>(a["x"].as_f64().unwrap_or(0.0) * 2.0), decl)?;
//! let tools = ToolRef::list(registry.entries());
//!
//! let turns: [(Box<dyn WireFormat>, Value); 3] = [
//!     (Box::new(OpenAiChat::new()), json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
//!         {"id": "call_1", "type": "function", "function": {"name": "double", "arguments": "{\"x\": 21}"}}]}}]})),
//!     (Box::new(Anthropic::new()), json!({"content": [
//!         {"type": "tool_use", "id": "toolu_1", "name": "double", "input": {"x": "a"}}]})),
//!     (Box::new(Gemini::new()), json!({"candidates": [{"content": {"role": "model", "parts": [
//!         {"functionCall": {"name": "double", "args": {"x": 1}}}]}}]})),
//! ];
//! let mut answers = Vec::new();
//! for (format, response) in &turns {
//!     let declared = format.declare(&tools)?;          // request["tools"] = declared.tools
//!     let mut results = Vec::new();
//!     for call in format.parse_calls(response, &declared.mapping)? {
//!         results.push(registry.execute_call(call).await);
//!     }
//!     answers.push(format.render_results(&results, &declared.mapping));
//! }
//! assert_eq!(answers[0][0], json!({"role": "tool", "tool_call_id": "call_1", "content": "42.0"}));
//! assert_eq!(answers[1][0]["content"][0]["is_error"], true);
//! assert_eq!(answers[2][0]["parts"][0]["functionResponse"]["response"]["output"], 2.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::declaration::ToolDeclaration;
use crate::exec::{ToolArguments, ToolCall, ToolError, ToolResult};
use crate::registry::ToolEntry;

pub mod anthropic;
pub mod bedrock;
mod choice;
pub mod gemini;
pub mod lower;
pub mod mcp;
pub mod mistral;
pub mod names;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;

pub use choice::ToolChoice;
pub use lower::LoweringError;
pub use names::{NameRule, NameStyle};

/// The wire formats toolreg renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions and the servers that copy it.
    OpenAiChat,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini (`generateContent`).
    Gemini,
    /// Model Context Protocol.
    Mcp,
    /// AWS Bedrock Converse.
    Bedrock,
    /// Mistral chat completions.
    Mistral,
    /// Ollama's native `/api/chat`.
    Ollama,
}

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; 8] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Mcp,
        Provider::Bedrock,
        Provider::Mistral,
        Provider::Ollama,
    ];

    /// A short, stable name (`"openai_chat"`, `"gemini"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAiChat => "openai_chat",
            Provider::OpenAiResponses => "openai_responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Mcp => "mcp",
            Provider::Bedrock => "bedrock",
            Provider::Mistral => "mistral",
            Provider::Ollama => "ollama",
        }
    }

    /// This provider's wire format with its default options.
    ///
    /// ```
    /// use toolreg::provider::Provider;
    ///
    /// let provider: Provider = "openai-responses".parse()?;
    /// assert_eq!(provider.wire_format().provider(), Provider::OpenAiResponses);
    /// # Ok::<(), toolreg::provider::UnknownProvider>(())
    /// ```
    pub fn wire_format(self) -> Box<dyn WireFormat> {
        match self {
            Provider::OpenAiChat => Box::new(openai_chat::OpenAiChat::new()),
            Provider::OpenAiResponses => Box::new(openai_responses::OpenAiResponses::new()),
            Provider::Anthropic => Box::new(anthropic::Anthropic::new()),
            Provider::Gemini => Box::new(gemini::Gemini::new()),
            Provider::Mcp => Box::new(mcp::Mcp::new()),
            Provider::Bedrock => Box::new(bedrock::Bedrock::new()),
            Provider::Mistral => Box::new(mistral::Mistral::new()),
            Provider::Ollama => Box::new(ollama::Ollama::new()),
        }
    }

    /// The rule tool names must follow for this provider.
    pub fn name_rule(self) -> NameRule {
        match self {
            Provider::OpenAiChat
            | Provider::OpenAiResponses
            | Provider::Bedrock
            | Provider::Mistral
            | Provider::Ollama => NameRule::OPENAI,
            Provider::Anthropic => NameRule::ANTHROPIC,
            Provider::Gemini => NameRule::GEMINI,
            Provider::Mcp => NameRule::MCP,
        }
    }
}

/// A provider name [`Provider::from_str`](std::str::FromStr) does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown provider `{0}`; known: openai (openai-chat), openai-responses, anthropic, gemini, mcp, bedrock, mistral, ollama"
)]
pub struct UnknownProvider(pub String);

impl std::str::FromStr for Provider {
    type Err = UnknownProvider;

    /// The short name ([`Provider::as_str`]), with `-` or `_`, or `openai`
    /// for Chat Completions; any case.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let key = name.trim().to_ascii_lowercase().replace('-', "_");
        if key == "openai" {
            return Ok(Provider::OpenAiChat);
        }
        Provider::ALL.into_iter().find(|p| p.as_str() == key).ok_or_else(|| UnknownProvider(name.to_owned()))
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::OpenAiChat => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic Messages",
            Provider::Gemini => "Google Gemini",
            Provider::Mcp => "MCP",
            Provider::Bedrock => "AWS Bedrock Converse",
            Provider::Mistral => "Mistral",
            Provider::Ollama => "Ollama",
        })
    }
}

/// Why tools could not be rendered for a provider, or a response not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider cannot take this tool name (and renaming was not asked for).
    #[error("{provider} cannot take the tool name `{tool}`: {reason} (names must match {rule})")]
    InvalidName {
        /// The provider.
        provider: Provider,
        /// The tool's name.
        tool: String,
        /// The provider's rule, as a pattern.
        rule: &'static str,
        /// Which part of the rule the name breaks.
        reason: String,
    },
    /// Two tools would reach the provider under the same name.
    #[error("{provider}: tools `{first}` and `{second}` would both be sent as `{spelled}`")]
    NameCollision {
        /// The provider.
        provider: Provider,
        /// The first tool.
        first: String,
        /// The second tool.
        second: String,
        /// The name both would have.
        spelled: String,
    },
    /// The tool's schema cannot be lowered to what the provider accepts.
    #[error("{provider} cannot take the input schema of `{tool}`: {reason}")]
    UnsupportedSchema {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// What the provider cannot take.
        reason: LoweringError,
    },
    /// More tools (or strict tools) than the provider accepts in one request.
    #[error("{provider} accepts at most {limit} {what} per request, got {count}")]
    TooMany {
        /// The provider.
        provider: Provider,
        /// What was counted (`"tools"`, `"strict tools"`).
        what: &'static str,
        /// How many there were.
        count: usize,
        /// The provider's limit.
        limit: usize,
    },
    /// The provider has no way to say this [`ToolChoice`].
    #[error("{reason}")]
    UnsupportedChoice {
        /// The provider.
        provider: Provider,
        /// What it cannot say.
        reason: String,
    },
    /// Two calls of one response carry the same id, so their results could
    /// not be told apart. The response is refused whole.
    #[error("{provider}: two tool calls in one response share the id `{id}`")]
    DuplicateCallId {
        /// The provider.
        provider: Provider,
        /// The id given twice.
        id: String,
    },
    /// The model called a tool the request did not declare (one left out
    /// as [`ToolStatus::Refused`], or a name it made up). The response is
    /// refused whole: the tool was never offered, so it never runs.
    #[error("{provider}: the model called `{tool}`, which the request did not declare")]
    UndeclaredTool {
        /// The provider.
        provider: Provider,
        /// The name as the model wrote it.
        tool: String,
    },
    /// The JSON is not a response (or message) of this provider.
    #[error("not a {provider} response: {reason}")]
    InvalidResponse {
        /// The provider.
        provider: Provider,
        /// What was expected and not found.
        reason: String,
    },
}

/// Whether a tool is declared in the provider's strict mode (OpenAI's and
/// Anthropic's constrained decoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Strictness {
    /// Never strict.
    Off,
    /// Strict when the schema can be made strict; otherwise sent non-strict
    /// and reported as [`ToolStatus::NotStrict`].
    #[default]
    IfCompatible,
    /// Strict, or the tool is refused ([`ToolStatus::Refused`]) with what
    /// stands in the way.
    Required,
}

/// Per-tool options shared by the formats with a strict mode.
#[derive(Debug, Clone, Default)]
pub(crate) struct StrictOptions {
    pub(crate) default: Strictness,
    pub(crate) per_tool: HashMap<String, Strictness>,
}

impl StrictOptions {
    pub(crate) fn for_tool(&self, name: &str) -> Strictness {
        self.per_tool.get(name).copied().unwrap_or(self.default)
    }
}

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

/// Tools declared for one provider: the request's `tools` value, the name
/// mapping for the calls that come back, and a report per tool.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Declarations {
    /// The provider's `tools` value, ready to put in a request (for Bedrock,
    /// `toolConfig.tools`; for MCP, the tools of a `tools/list` result).
    pub tools: Value,
    /// Maps the provider's spelling of names back to the real tools.
    pub mapping: CallMapping,
    /// One entry per tool asked for, in order.
    pub report: Vec<ToolReport>,
}

impl Declarations {
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

impl Serialize for Declarations {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.tools.serialize(serializer)
    }
}

/// One provider's wire format: declarations out, tool calls in, results out.
///
/// Every format in this module implements it with the same three jobs, so
/// a client or agent loop can hold a `Box<dyn WireFormat>` chosen at run
/// time. The trait is sealed: the formats live here.
///
/// ```
/// use toolreg::provider::{WireFormat, ToolRef, anthropic::Anthropic, openai_chat::OpenAiChat};
/// use toolreg::{FunctionRegistry, ToolDeclaration, ParamType, ToolExecutor};
/// use serde_json::{json, Value};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut registry = FunctionRegistry::new();
/// let decl = ToolDeclaration::builder("double").param("x", ParamType::Number, "A number").build();
/// registry.register_sync_tool("double", |a: Value| Ok::<_, String>(a["x"].as_f64().unwrap_or(0.0) * 2.0), decl)?;
///
/// let format: Box<dyn WireFormat> = Box::new(Anthropic::new());
/// let declared = format.declare(&ToolRef::list(registry.entries()))?;
/// let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "double", "input": {"x": 21}}]});
/// let mut results = Vec::new();
/// for call in format.parse_calls(&response, &declared.mapping)? {
///     results.push(registry.execute_call(call).await);
/// }
/// let messages = format.render_results(&results, &declared.mapping);
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
    fn declare_partial(&self, tools: &[ToolRef<'_>]) -> Declarations;

    /// Declare tools, all or nothing: the first refused tool is the error.
    fn declare(&self, tools: &[ToolRef<'_>]) -> Result<Declarations, ProviderError> {
        let declared = self.declare_partial(tools);
        let refused = declared.refused().next().map(|(_, reason)| reason.clone());
        match refused {
            Some(reason) => Err(reason),
            None => Ok(declared),
        }
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
        Ok(ReadCalls { calls, sent, refused })
    }

    /// What to append to the conversation to answer a batch of calls: one
    /// message per result (OpenAI Chat, Mistral, Ollama), one item per result
    /// (OpenAI Responses), one `CallToolResult` per result (MCP), or a single
    /// user turn holding every result (Anthropic, Bedrock, Gemini). Names
    /// are spelled as `mapping` sent them. No results, no messages.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> Vec<Value>;

    /// This provider's spelling of a [`ToolChoice`] (see [`ToolChoice::render`]).
    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        choice.render(self.provider(), mapping)
    }
}

pub(crate) mod sealed {
    use serde_json::Value;

    use super::{CallMapping, ProviderError};
    use crate::exec::ToolCall;

    /// The part of a format only this crate sees: its calls as the provider
    /// wrote them, before names are mapped back.
    pub trait Format {
        fn calls_in(&self, response: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError>;
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
}

/// How to get the model's calls back to the real tools: provider spellings
/// of names, for strict tools the optional arguments strict mode made
/// nullable (a `null` there means "absent"), and the call ids toolreg made
/// up for calls that came without one.
#[derive(Debug, Clone, Default)]
pub struct CallMapping {
    real: HashMap<String, String>,
    spelled: HashMap<String, String>,
    nullable: HashMap<String, Arc<ToolDeclaration>>,
    generated: Arc<Mutex<HashSet<String>>>,
    /// The names (as the provider spells them) a declaration sent; `None`
    /// for a mapping not made by one, which accepts any name.
    declared: Option<HashSet<String>>,
}

impl CallMapping {
    /// The real tool name for a name the model used.
    pub fn real_name<'a>(&'a self, spelled: &'a str) -> &'a str {
        self.real.get(spelled).map_or(spelled, String::as_str)
    }

    /// The provider's spelling of a real tool name.
    pub fn provider_name<'a>(&'a self, real: &'a str) -> &'a str {
        self.spelled.get(real).map_or(real, String::as_str)
    }

    /// Whether any name is spelled differently for the provider.
    pub fn renames(&self) -> bool {
        !self.real.is_empty()
    }

    /// Whether toolreg made up this call id because the provider sent none
    /// (such an id is not sent back). Ids are recorded by
    /// [`WireFormat::parse_calls`] with this mapping (and its clones).
    pub fn is_generated_id(&self, id: &str) -> bool {
        self.generated.lock().unwrap_or_else(PoisonError::into_inner).contains(id)
    }

    /// Accept calls to any name, declared or not: for a caller that answers
    /// a call to an unknown tool itself (the engine's unknown-tool error
    /// result), and knows the tools it did not declare cannot be reached.
    #[must_use]
    pub fn accept_undeclared(mut self) -> Self {
        self.declared = None;
        self
    }

    pub(crate) fn note_generated_id(&self, id: &str) {
        self.generated.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned());
    }

    /// Map calls as the model wrote them back to the real tools: restore
    /// names, and drop the `null`s strict mode sent for absent optional
    /// arguments (so defaults apply). Argument text that does not parse is
    /// left as it is, for execution to report.
    pub fn apply(&self, calls: &mut [ToolCall]) {
        for call in calls {
            if let Some(real) = self.real.get(&call.name) {
                call.name.clone_from(real);
            }
            let Some(decl) = self.nullable.get(&call.name) else { continue };
            let schema = &decl.input_schema;
            match &mut call.arguments {
                ToolArguments::Json(value) => {
                    drop_absent_nulls(schema, value);
                }
                ToolArguments::Raw(text) => {
                    if let Ok(mut value) = serde_json::from_str::<Value>(text)
                        && drop_absent_nulls(schema, &mut value)
                    {
                        call.arguments = ToolArguments::Json(value);
                    }
                }
            }
        }
    }

    pub(crate) fn add_name(&mut self, real: &str, spelled: String) {
        if spelled != real {
            self.spelled.insert(real.to_owned(), spelled.clone());
            self.real.insert(spelled, real.to_owned());
        }
    }

    pub(crate) fn add_strict(&mut self, tool: &ToolRef<'_>) {
        if tool.strict_nulls() {
            let decl = match tool.shared {
                Some(shared) => Arc::clone(shared),
                None => Arc::new(tool.declaration.clone()),
            };
            self.nullable.insert(decl.name.clone(), decl);
        }
    }
}

/// Remove `null` values of properties that the canonical schema makes
/// optional and does not allow to be `null`. Returns whether anything changed.
fn drop_absent_nulls(schema: &Value, value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(args) => {
            // A union (maybe beside properties, as a flattened enum gives):
            // the first object branch that knows every other key given.
            let outer = schema.get("properties").and_then(Value::as_object);
            let branch =
                ["anyOf", "oneOf"].iter().filter_map(|k| schema.get(*k).and_then(Value::as_array)).flatten().find(
                    |b| {
                        b.get("properties").and_then(Value::as_object).is_some_and(|p| {
                            args.keys().all(|k| p.contains_key(k) || outer.is_some_and(|o| o.contains_key(k)))
                        })
                    },
                );
            if let Some(branch) = branch {
                changed |= drop_absent_nulls(branch, value);
            }
            let Value::Object(args) = value else { return changed };
            let Some(props) = outer else { return changed };
            let required = schema.get("required").and_then(Value::as_array);
            let is_required = |k: &str| required.is_some_and(|r| r.iter().any(|x| x == k));
            args.retain(|k, v| {
                let drop = v.is_null() && !is_required(k) && props.get(k).is_some_and(|p| !lower::allows_null(p));
                changed |= drop;
                !drop
            });
            for (k, v) in args.iter_mut() {
                if let Some(p) = props.get(k) {
                    changed |= drop_absent_nulls(p, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for v in items {
                    changed |= drop_absent_nulls(item, v);
                }
            }
        }
        _ => {}
    }
    changed
}

/// Lowered schemas of one registered tool, computed on first use per
/// provider and kept for the life of the entry.
#[derive(Debug, Default)]
pub(crate) struct LoweredSchemas {
    openai_strict: OnceLock<Result<Value, LoweringError>>,
    anthropic_strict: OnceLock<Result<Value, LoweringError>>,
    gemini: OnceLock<Result<Value, LoweringError>>,
    strict_nulls: OnceLock<bool>,
}

/// Which lowering of the canonical schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lowering {
    OpenAiStrict,
    AnthropicStrict,
    Gemini,
}

/// A tool to render: a registered [`ToolEntry`] (whose lowered schemas are
/// cached) or a bare [`ToolDeclaration`] (lowered on each use).
#[derive(Debug, Clone, Copy)]
pub struct ToolRef<'a> {
    declaration: &'a ToolDeclaration,
    shared: Option<&'a Arc<ToolDeclaration>>,
    cache: Option<&'a LoweredSchemas>,
}

impl<'a> ToolRef<'a> {
    /// Tools to declare, from registry entries (`registry.entries()`),
    /// declarations or shared declarations.
    pub fn list<I>(tools: I) -> Vec<ToolRef<'a>>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        tools.into_iter().map(Into::into).collect()
    }

    /// The declaration.
    pub fn declaration(&self) -> &'a ToolDeclaration {
        self.declaration
    }

    pub(crate) fn lowered(&self, lowering: Lowering) -> Result<Cow<'a, Value>, LoweringError> {
        let schema = &self.declaration.input_schema;
        let run = move || match lowering {
            Lowering::OpenAiStrict => lower::openai_strict(schema),
            Lowering::AnthropicStrict => lower::anthropic_strict(schema),
            Lowering::Gemini => lower::gemini(schema),
        };
        match self.cache {
            Some(cache) => {
                let cell = match lowering {
                    Lowering::OpenAiStrict => &cache.openai_strict,
                    Lowering::AnthropicStrict => &cache.anthropic_strict,
                    Lowering::Gemini => &cache.gemini,
                };
                match cell.get_or_init(run) {
                    Ok(v) => Ok(Cow::Borrowed(v)),
                    Err(e) => Err(e.clone()),
                }
            }
            None => run().map(Cow::Owned),
        }
    }

    /// Whether strict mode makes some optional argument nullable, so that
    /// `null` must be read back as "absent".
    pub(crate) fn strict_nulls(&self) -> bool {
        let schema = &self.declaration.input_schema;
        match self.cache {
            Some(cache) => *cache.strict_nulls.get_or_init(|| lower::has_optional_non_null(schema)),
            None => lower::has_optional_non_null(schema),
        }
    }

    /// MCP's input schema: the canonical one, or the closed empty object
    /// for a tool without parameters. Borrowed either way.
    pub(crate) fn mcp_input(&self) -> &'a Value {
        static CLOSED_EMPTY: LazyLock<Value> =
            LazyLock::new(|| serde_json::json!({"type": "object", "additionalProperties": false}));
        let schema = &self.declaration.input_schema;
        if lower::has_no_parameters(schema) { &CLOSED_EMPTY } else { schema }
    }
}

impl<'a> From<&'a ToolEntry> for ToolRef<'a> {
    fn from(entry: &'a ToolEntry) -> Self {
        ToolRef {
            declaration: entry.declaration(),
            shared: Some(entry.declaration_arc()),
            cache: entry.derived(LoweredSchemas::default),
        }
    }
}

impl<'a> From<&'a ToolDeclaration> for ToolRef<'a> {
    fn from(declaration: &'a ToolDeclaration) -> Self {
        ToolRef { declaration, shared: None, cache: None }
    }
}

impl<'a> From<&'a Arc<ToolDeclaration>> for ToolRef<'a> {
    fn from(declaration: &'a Arc<ToolDeclaration>) -> Self {
        ToolRef { declaration, shared: Some(declaration), cache: None }
    }
}

/// The description, or `None` when it is empty (some providers refuse "").
pub(crate) fn description(decl: &ToolDeclaration) -> Option<&str> {
    Some(decl.description.as_str()).filter(|d| !d.is_empty())
}

/// A stable id for a call that arrived without one: the same call in the
/// same position always gets the same id.
/// The id is noted in `mapping` ([`CallMapping::is_generated_id`]).
pub(crate) fn generated_id(prefix: &str, index: usize, name: &str, args: &Value, mapping: &CallMapping) -> String {
    let mut h = Fnv::new();
    h.write(name.as_bytes());
    h.write(&[0]);
    h.write(args.to_string().as_bytes());
    h.write(&index.to_le_bytes());
    let id = format!("{prefix}{index}_{:012x}", h.finish() & 0xffff_ffff_ffff);
    mapping.note_generated_id(&id);
    id
}

/// FNV-1a, 64 bits: small, fast and identical on every platform.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// Arguments that arrive as an object (Anthropic, Gemini, Bedrock): an
/// object or `null` is parsed JSON, a string is text still to parse (some
/// compatible servers send one), anything else is passed on for execution
/// to report.
pub(crate) fn object_arguments(value: Option<&Value>) -> ToolArguments {
    match value {
        None | Some(Value::Null) => ToolArguments::Json(Value::Object(Map::new())),
        Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
        Some(other) => ToolArguments::Json(other.clone()),
    }
}

/// The text of a result, for formats that take text.
pub(crate) fn result_text(result: &ToolResult) -> String {
    result.text().into_owned()
}

/// The value at the first of `paths` (JSON Pointers) that exists in `body`.
pub(crate) fn find<'v>(body: &'v Value, paths: &[&str]) -> Option<&'v Value> {
    paths.iter().find_map(|p| body.pointer(p))
}

pub(crate) fn invalid(provider: Provider, reason: impl Into<String>) -> ProviderError {
    ProviderError::InvalidResponse { provider, reason: reason.into() }
}

pub(crate) fn str_field<'v>(
    provider: Provider,
    value: &'v Value,
    key: &str,
    what: &str,
) -> Result<&'v str, ProviderError> {
    value.get(key).and_then(Value::as_str).ok_or_else(|| invalid(provider, format!("{what} has no string `{key}`")))
}

/// Which schema a format sends for each tool.
#[derive(Clone, Copy)]
pub(crate) enum SchemaMode<'o> {
    /// The canonical schema.
    Canonical,
    /// Strict where the options ask for it, with this lowering; the
    /// canonical schema otherwise.
    Strict(Lowering, &'o StrictOptions),
    /// Always this lowering; a schema it cannot take refuses the tool.
    Lowered(Lowering),
    /// MCP's `inputSchema`.
    Mcp,
}

/// A tool ready to be written: name as the provider spells it, the schema
/// to send, whether it is strict, and its line in the report.
pub(crate) struct Prepared<'a> {
    pub(crate) tool: ToolRef<'a>,
    pub(crate) name: Cow<'a, str>,
    pub(crate) schema: Cow<'a, Value>,
    pub(crate) strict: bool,
    pub(crate) report: usize,
}

/// The tools of one declaration in progress.
pub(crate) struct Preparation<'a> {
    pub(crate) provider: Provider,
    pub(crate) tools: Vec<Prepared<'a>>,
    pub(crate) mapping: CallMapping,
    pub(crate) report: Vec<ToolReport>,
}

impl<'a> Preparation<'a> {
    /// Leave out the `i`th prepared tool, saying why.
    pub(crate) fn refuse(&mut self, i: usize, reason: ProviderError) {
        let p = self.tools.remove(i);
        self.report[p.report].status = ToolStatus::Refused { reason };
    }

    /// Refuse every tool past the provider's per-request limit.
    pub(crate) fn limit(&mut self, limit: usize) {
        let count = self.tools.len();
        while self.tools.len() > limit {
            let provider = self.provider;
            self.refuse(limit, ProviderError::TooMany { provider, what: "tools", count, limit });
        }
    }

    /// The declarations, with the provider's `tools` value.
    pub(crate) fn finish(self, tools: Value) -> Declarations {
        let mut mapping = self.mapping;
        mapping.declared = Some(self.tools.iter().map(|p| p.name.clone().into_owned()).collect());
        Declarations { tools, mapping, report: self.report }
    }
}

/// A format's serialisation types as JSON. They hold only strings, numbers,
/// booleans and JSON values, which always serialise.
pub(crate) fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("tool declarations serialise to JSON")
}

/// Check (or respell) names, refusing collisions, and pick each tool's
/// schema. Tools that cannot be sent are reported as refused.
pub(crate) fn prepare<'a>(
    provider: Provider,
    mode: SchemaMode<'_>,
    style: NameStyle,
    tools: &[ToolRef<'a>],
) -> Preparation<'a> {
    let rule = provider.name_rule();
    let mut mapping = CallMapping::default();
    let mut seen: HashMap<Cow<'a, str>, &'a str> = HashMap::with_capacity(tools.len());
    let mut report = Vec::with_capacity(tools.len());
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let decl = tool.declaration;
        let real = decl.name.as_str();
        let index = report.len();
        let mut refuse = |reason: ProviderError| {
            report.push(ToolReport { tool: real.to_owned(), status: ToolStatus::Refused { reason } });
        };
        let name: Cow<'a, str> = match rule.check(real) {
            Ok(()) => Cow::Borrowed(real),
            Err(_) if style == NameStyle::Respell => Cow::Owned(rule.respell(real)),
            Err(reason) => {
                refuse(ProviderError::InvalidName { provider, tool: real.to_owned(), rule: rule.pattern, reason });
                continue;
            }
        };
        if let Some(first) = seen.get(&name) {
            refuse(ProviderError::NameCollision {
                provider,
                first: (*first).to_owned(),
                second: real.to_owned(),
                spelled: name.into_owned(),
            });
            continue;
        }
        let unsupported = |reason| ProviderError::UnsupportedSchema { provider, tool: real.to_owned(), reason };
        let (schema, strict, status) = match mode {
            SchemaMode::Canonical => (Cow::Borrowed(&decl.input_schema), false, ToolStatus::Declared),
            SchemaMode::Mcp => (Cow::Borrowed(tool.mcp_input()), false, ToolStatus::Declared),
            SchemaMode::Lowered(lowering) => match tool.lowered(lowering) {
                Ok(schema) => (schema, false, ToolStatus::Lowered { strict: false }),
                Err(reason) => {
                    refuse(unsupported(reason));
                    continue;
                }
            },
            SchemaMode::Strict(lowering, options) => match options.for_tool(real) {
                Strictness::Off => (Cow::Borrowed(&decl.input_schema), false, ToolStatus::Declared),
                wanted => match tool.lowered(lowering) {
                    Ok(schema) => (schema, true, ToolStatus::Lowered { strict: true }),
                    Err(reason) if wanted == Strictness::Required => {
                        refuse(unsupported(reason));
                        continue;
                    }
                    Err(reason) => {
                        tracing::debug!(tool = %real, %provider, %reason, "tool sent without strict mode");
                        (Cow::Borrowed(&decl.input_schema), false, ToolStatus::NotStrict { reason })
                    }
                },
            },
        };
        seen.insert(name.clone(), real);
        if let Cow::Owned(respelled) = &name {
            mapping.add_name(real, respelled.clone());
        }
        if strict && matches!(mode, SchemaMode::Strict(Lowering::OpenAiStrict, _)) {
            mapping.add_strict(tool);
        }
        report.push(ToolReport { tool: real.to_owned(), status });
        out.push(Prepared { tool: *tool, name, schema, strict, report: index });
    }
    Preparation { provider, tools: out, mapping, report }
}

/// The OpenAI-shaped `tool_calls` of a chat response, message or bare list.
pub(crate) fn chat_tool_calls(provider: Provider, body: &Value) -> Result<Vec<(usize, &Value)>, ProviderError> {
    let list = if body.is_array() {
        Some(body)
    } else {
        find(body, &["/choices/0/message/tool_calls", "/message/tool_calls", "/tool_calls"])
    };
    match list {
        Some(Value::Array(calls)) => Ok(calls.iter().enumerate().collect()),
        Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(invalid(provider, "`tool_calls` is not an array")),
        None if body.pointer("/choices/0/message").is_some() || body.get("message").is_some() => Ok(Vec::new()),
        None if body.get("role").is_some() => Ok(Vec::new()),
        None => Err(invalid(provider, "expected a chat completion, a message or a `tool_calls` array")),
    }
}

/// One OpenAI-shaped tool call: `{"id","type":"function","function":{"name","arguments"}}`.
pub(crate) fn chat_tool_call(
    provider: Provider,
    index: usize,
    call: &Value,
    mapping: &CallMapping,
) -> Result<ToolCall, ProviderError> {
    let function = call.get("function").ok_or_else(|| invalid(provider, "a tool call has no `function`"))?;
    let name = str_field(provider, function, "name", "a tool call's function")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
        other => object_arguments(other),
    };
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => generated_id("call_", index, name, function.get("arguments").unwrap_or(&Value::Null), mapping),
    };
    Ok(ToolCall { id, name: name.to_owned(), arguments })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FunctionRegistry;
    use serde_json::json;

    #[test]
    fn lowering_is_computed_once_per_tool_and_provider() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
                            "required": ["n"]});
        let decl = ToolDeclaration::new("t", "", schema);
        let mut registry = FunctionRegistry::new();
        registry.register_sync_tool("t", |_: Value| Ok::<_, String>(()), decl.clone()).unwrap();
        let entry = registry.get("t").unwrap();
        let cached = ToolRef::from(entry);
        let (a, b) = (cached.lowered(Lowering::OpenAiStrict).unwrap(), cached.lowered(Lowering::OpenAiStrict).unwrap());
        assert!(matches!((&a, &b), (Cow::Borrowed(_), Cow::Borrowed(_))));
        assert!(std::ptr::eq(a.as_ref(), b.as_ref()), "one cached strict schema for both OpenAI formats");
        // A bare declaration is lowered on the spot.
        assert!(matches!(ToolRef::from(&decl).lowered(Lowering::Gemini).unwrap(), Cow::Owned(_)));
    }

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
        let declared = gemini.declare_partial(&[ToolRef::from(&decl), ToolRef::from(&recursive)]);
        assert_eq!(declared.refused().count(), 1);
        let response = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "tree", "args": {}}}]}}]});
        assert_eq!(
            gemini.parse_calls(&response, &declared.mapping),
            Err(ProviderError::UndeclaredTool { provider: Provider::Gemini, tool: "tree".into() })
        );
    }
}
