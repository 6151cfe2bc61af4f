//! Provider wire formats: declarations out, tool calls in, results out.
//!
//! One module per format, each implementing [`WireFormat`]:
//! [`declare`](WireFormat::declare) renders a selection of tools as the
//! provider's `tools` value (typed serde structs, never string templates)
//! with a [`CallMapping`] and a report per tool;
//! [`parse_calls`](WireFormat::parse_calls) reads the provider's response
//! into [`ToolCall`](crate::ToolCall)s for the real tools;
//! [`render_results`](WireFormat::render_results) writes what to append to
//! the conversation for a batch of [`ToolResult`](crate::ToolResult)s, their
//! content blocks (images, audio, files, resources) in the provider's own
//! shapes, and reports each block the provider could not carry in a tool
//! result with the fallback it got ([`RenderedResults::fallbacks`]).
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
//! A format with native tool search ([`WireFormat::native_search`]:
//! Anthropic, OpenAI Responses) declares tools marked [`ToolRef::deferred`] with the
//! provider's deferred loading and answers a tool search's result
//! ([`with_tool_references`]) with references the provider expands: see
//! [`native_search`].
//!
//! A format with provider-hosted code execution ([`WireFormat::code_execution`]:
//! Anthropic, OpenAI Responses) declares tools the provider's code may call when its
//! [`FormatOptions::code_execution`] says so, reads those calls with their
//! [`Caller`], and keeps the turn's server blocks ([`HostedTurn`]) for the
//! history: see [`hosted`].
//!
//! Every tool has one canonical JSON Schema. What a provider accepts is
//! derived from it by the [`lower`] transforms: OpenAI's strict mode,
//! Anthropic's strict subset, Gemini's OpenAPI subset. For a tool taken from
//! a [`FunctionRegistry`](crate::FunctionRegistry)
//! ([`ToolEntry`](crate::ToolEntry)) the lowered schema is computed once per
//! tool and provider and kept in the entry; a bare
//! [`ToolDeclaration`](crate::ToolDeclaration) is lowered each time it is
//! rendered.
//!
//! [`lint`] says, for one tool, what each provider would refuse of it
//! declared in its strictest mode; the registry runs it on every tool it
//! registers.
//!
//! A tool a provider cannot take (a name it refuses, a schema it cannot
//! express, one tool too many) is reported as [`ToolStatus::Refused`] with
//! why: [`declare`](WireFormat::declare) then fails with that error, and
//! [`declare_partial`](WireFormat::declare_partial) sends the others.
//!
//! `declare` returns the tools as a `Value`, a copy of every schema;
//! `declare_partial` as a [`DeclaredTools`] that serialises straight from
//! the schemas the entries keep (what a client puts in a request body), or
//! as a `Value` through [`Declarations::into_value`].
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
//! let declared = OpenAiChat::new().declare(&ToolRef::list(registry.list()))?;
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
//! use toolreg::{CallOptions, FunctionRegistry, ToolDeclaration, ParamType, ToolExecutor};
//! use serde_json::{json, Value};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut registry = FunctionRegistry::new();
//! let decl = ToolDeclaration::builder("double").param("x", ParamType::Number, "A number").build();
//! registry.register_sync_tool("double", |a: Value| Ok::<_, String>(a["x"].as_f64().unwrap_or(0.0) * 2.0), decl)?;
//! let tools = ToolRef::list(registry.list());
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
//!         results.push(registry.execute_call(call, CallOptions::default()).await);
//!     }
//!     answers.push(format.render_results(&results, &declared.mapping).messages);
//! }
//! assert_eq!(answers[0][0], json!({"role": "tool", "tool_call_id": "call_1", "content": "42.0"}));
//! assert_eq!(answers[1][0]["content"][0]["is_error"], true);
//! assert_eq!(answers[2][0]["parts"][0]["functionResponse"]["response"]["output"], 2.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::fmt;

pub mod anthropic;
pub mod bedrock;
mod choice;
pub mod gemini;
pub mod hosted;
mod lint;
pub mod lower;
pub mod mcp;
pub mod mistral;
pub mod names;
pub mod native_search;
pub mod ollama;
pub mod openai_chat;
pub mod openai_responses;

pub use choice::ToolChoice;
pub use hosted::{Caller, CodeExecution, HostedTurn};
pub use lint::{LintFinding, lint};
pub(crate) use lower::Dialect;
pub use lower::LoweringError;
pub use names::{NameRule, NameStyle};
pub use native_search::{TOOL_REFERENCES, tool_references, with_tool_references};
pub use stream::{CallAssembler, MAX_STREAMED_CALLS};

// What every format shares, one job per file: `kind` (which provider),
// `wire` (the trait and what it returns), `error` (its error), `blocks`
// (content blocks in results), `options` (how a format is configured),
// `prepare` (names, schemas and the lowering cache of a declaration),
// `declared` (the prepared tools written as JSON, to a `Value` or straight
// to text), `mapping` (the model's calls back to the real tools), `history`
// (pieces of the model's turn written back) and `stream` (calls put together
// from a stream). None of them names a format: each format calls them.
// Their public items are re-exported here, so `toolreg::provider::X` is the
// one path users see.
mod blocks;
mod declared;
mod error;
mod history;
mod kind;
mod mapping;
mod options;
mod prepare;
mod stream;
mod wire;

pub use declared::DeclaredTools;
pub use error::ProviderError;
pub use kind::Provider;
pub use mapping::CallMapping;
pub use options::{FormatOptions, Strictness};
pub use prepare::ToolRef;
pub use wire::{BlockFallback, Declarations, Fallback, ReadCalls, RenderedResults, ToolReport, ToolStatus, WireFormat};

pub(crate) use mapping::{Fnv, find, generated_id, invalid, object_arguments, str_field};
pub(crate) use options::format_options;
pub(crate) use prepare::{LoweredSchemas, Prepared, SchemaMode, description, prepare, to_json};
pub(crate) use stream::StreamedCalls;
pub(crate) use wire::{Registration, result_text, sealed};

/// Every format, one line each, in [`Provider::ALL`]'s order: adding a
/// format is its module, its [`Provider`] variant and its line here.
const FORMATS: [&Registration; 8] = [
    &openai_chat::REGISTRATION,
    &openai_responses::REGISTRATION,
    &anthropic::REGISTRATION,
    &gemini::REGISTRATION,
    &mcp::REGISTRATION,
    &bedrock::REGISTRATION,
    &mistral::REGISTRATION,
    &ollama::REGISTRATION,
];

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; FORMATS.len()] = {
        let mut all = [Provider::OpenAiChat; FORMATS.len()];
        let mut i = 0;
        while i < FORMATS.len() {
            all[i] = FORMATS[i].provider;
            i += 1;
        }
        all
    };

    /// What this provider's format registered.
    fn registration(self) -> &'static Registration {
        FORMATS
            .into_iter()
            .find(|format| format.provider == self)
            .expect("every provider has its format in `FORMATS` (checked by a test)")
    }

    /// A short, stable name (`"openai_chat"`, `"gemini"`, ...).
    pub fn as_str(self) -> &'static str {
        self.registration().name
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
        self.wire_format_with(FormatOptions::default())
    }

    /// This provider's wire format with `options` (see [`FormatOptions`]
    /// for an example): a format configured the same way whichever
    /// provider is picked at run time.
    pub fn wire_format_with(self, options: FormatOptions) -> Box<dyn WireFormat> {
        (self.registration().build)(options)
    }

    /// The rule tool names must follow for this provider.
    pub fn name_rule(self) -> NameRule {
        self.registration().name_rule
    }
}

/// A provider name [`Provider::from_str`](std::str::FromStr) does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider `{0}`; known: {known}", known = known_names())]
pub struct UnknownProvider(pub String);

/// The names [`Provider::from_str`](std::str::FromStr) knows, for an error:
/// each format's first alias with its own name, or its own name.
fn known_names() -> String {
    let spelled = |format: &Registration| {
        let name = format.name.replace('_', "-");
        match format.aliases.first() {
            Some(alias) => format!("{alias} ({name})"),
            None => name,
        }
    };
    FORMATS.into_iter().map(spelled).collect::<Vec<_>>().join(", ")
}

impl std::str::FromStr for Provider {
    type Err = UnknownProvider;

    /// The short name ([`Provider::as_str`]), with `-` or `_`, or an alias
    /// (`openai` for Chat Completions); any case.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let key = name.trim().to_ascii_lowercase().replace('-', "_");
        FORMATS
            .into_iter()
            .find(|format| format.name == key || format.aliases.contains(&key.as_str()))
            .map(|format| format.provider)
            .ok_or_else(|| UnknownProvider(name.to_owned()))
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.registration().title)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_is_registered_once_with_its_own_format() {
        for (i, format) in FORMATS.into_iter().enumerate() {
            assert_eq!(FORMATS.iter().filter(|f| f.provider == format.provider).count(), 1, "{}", format.name);
            assert_eq!((format.build)(FormatOptions::default()).provider(), format.provider, "{}", format.name);
            assert_eq!(Provider::ALL[i], format.provider);
            assert_eq!(format.name.parse::<Provider>(), Ok(format.provider));
        }
        assert_eq!(
            UnknownProvider("x".into()).to_string(),
            "unknown provider `x`; known: openai (openai-chat), openai-responses, anthropic, gemini, mcp, bedrock, \
             mistral, ollama"
        );
    }
}
