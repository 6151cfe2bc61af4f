//! Provider wire formats: declarations out, tool calls in, results out.
//!
//! One module per format. Each renders a selection of tools as the
//! provider's `tools` JSON (typed serde structs, never string templates),
//! parses the provider's response into [`ToolCall`]s, and renders a
//! [`ToolResult`] as the provider's tool-result message or part.
//!
//! | format | declarations | calls in | results out |
//! |---|---|---|---|
//! | [`openai_chat`] (also vLLM, llama.cpp, Ollama `/v1`) | `{"type":"function","function":{..}}` | `message.tool_calls` | `{"role":"tool",..}` |
//! | [`openai_responses`] | `{"type":"function","name",..}` | `function_call` items | `function_call_output` items |
//! | [`anthropic`] | `{"name","input_schema",..}` | `tool_use` blocks | `tool_result` blocks |
//! | [`gemini`] | `[{"functionDeclarations":[..]}]` | `functionCall` parts | `functionResponse` parts |
//! | [`mcp`] | `tools/list` tools | `tools/call` requests | `CallToolResult` |
//! | [`bedrock`] | `[{"toolSpec":{..}}]` | `toolUse` blocks | `toolResult` blocks |
//! | [`mistral`] | OpenAI shape | OpenAI shape, 9-character ids | `{"role":"tool",..}` |
//! | [`ollama`] (native `/api/chat`) | OpenAI shape | calls without ids | `{"role":"tool","tool_name",..}` |
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
//! ```
//! use toolreg::{FunctionRegistry, ToolDeclaration, ParamType, provider::openai_chat};
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
//! let tools = openai_chat::OpenAiChat::new().declare(registry.entries())?;
//! let body = tools.to_value();
//! assert_eq!(body[0]["function"]["strict"], true);
//! // Strict mode: every property required, the optional one nullable.
//! assert_eq!(body[0]["function"]["parameters"]["required"], json!(["city", "unit"]));
//! assert_eq!(body[0]["function"]["parameters"]["properties"]["unit"]["type"], json!(["string", "null"]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A whole turn, for OpenAI, Anthropic and Gemini alike: declare, read the
//! calls (names mapped back), run them, answer.
//!
//! ```
//! use toolreg::provider::{anthropic::Anthropic, gemini::Gemini, openai_chat::OpenAiChat};
//! use toolreg::{FunctionRegistry, ToolDeclaration, ParamType, ToolExecutor};
//! use serde_json::{json, Value};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mut registry = FunctionRegistry::new();
//! let decl = ToolDeclaration::builder("double").param("x", ParamType::Number, "A number").build();
//! registry.register_sync_tool("double", |a: Value| Ok::<_, String>(a["x"].as_f64().unwrap_or(0.0) * 2.0), decl)?;
//!
//! // OpenAI Chat Completions
//! let tools = OpenAiChat::new().declare(registry.entries())?;
//! let response = json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
//!     {"id": "call_1", "type": "function", "function": {"name": "double", "arguments": "{\"x\": 21}"}}]}}]});
//! let calls = OpenAiChat::parse_calls_mapped(&response, &tools.mapping)?;
//! let result = registry.execute_call(calls[0].clone()).await;
//! let message = serde_json::to_value(OpenAiChat::result_message(&result))?;
//! assert_eq!(message, json!({"role": "tool", "tool_call_id": "call_1", "content": "42.0"}));
//!
//! // Anthropic Messages
//! let tools = Anthropic::new().declare(registry.entries())?;
//! let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "double", "input": {"x": "a"}}]});
//! let calls = Anthropic::parse_calls_mapped(&response, &tools.mapping)?;
//! let results = vec![registry.execute_call(calls[0].clone()).await];
//! let turn = Anthropic::results_message(&results);
//! assert_eq!(turn["content"][0]["is_error"], true);
//!
//! // Google Gemini
//! let tools = Gemini::new().declare(registry.entries())?;
//! assert_eq!(tools.to_value()[0]["functionDeclarations"][0]["parameters"]["properties"]["x"]["type"], "NUMBER");
//! let response = json!({"candidates": [{"content": {"role": "model", "parts": [
//!     {"functionCall": {"name": "double", "args": {"x": 1}}}]}}]});
//! let calls = Gemini::parse_calls_mapped(&response, &tools.mapping)?;
//! let results = vec![registry.execute_call(calls[0].clone()).await];
//! let content = Gemini::results_content(&results, &tools.mapping);
//! assert_eq!(content["parts"][0]["functionResponse"]["response"]["output"], 2.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::declaration::ToolDeclaration;
use crate::exec::{ToolArguments, ToolCall, ToolResult};
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
    /// and listed in [`Declarations::not_strict`].
    #[default]
    IfCompatible,
    /// Strict, or an error naming the tool and what stands in the way.
    Required,
}

/// A tool that was asked to be strict "if compatible" and could not be.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NotStrict {
    /// The tool.
    pub tool: String,
    /// Why its schema cannot be strict.
    pub reason: LoweringError,
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

/// Tools rendered for one provider: the provider's `tools` JSON, the name
/// mapping for the calls that come back, and the tools that could not be
/// declared strict.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Declarations<T> {
    /// One entry per tool (for Gemini, one `Tool` holding every declaration).
    pub tools: Vec<T>,
    /// Maps the provider's spelling of names back to the real tools.
    pub mapping: CallMapping,
    /// Tools sent non-strict because their schema cannot be strict.
    pub not_strict: Vec<NotStrict>,
}

impl<T: Serialize> Declarations<T> {
    /// The provider's `tools` JSON array.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(&self.tools).expect("tool declarations serialise to JSON")
    }
}

impl<T: Serialize> Serialize for Declarations<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.tools.serialize(serializer)
    }
}

/// How to get the model's calls back to the real tools: provider spellings
/// of names, and, for strict tools, the optional arguments strict mode made
/// nullable (a `null` there means "absent").
#[derive(Debug, Clone, Default)]
pub struct CallMapping {
    real: HashMap<String, String>,
    spelled: HashMap<String, String>,
    nullable: HashMap<String, Arc<ToolDeclaration>>,
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
                    if let Ok(mut value) = serde_json::from_str::<Value>(text) {
                        if drop_absent_nulls(schema, &mut value) {
                            call.arguments = ToolArguments::Json(value);
                        }
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
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                // A union: the first object branch that knows every key given.
                let branch =
                    ["anyOf", "oneOf"].iter().filter_map(|k| schema.get(*k).and_then(Value::as_array)).flatten().find(
                        |b| {
                            b.get("properties")
                                .and_then(Value::as_object)
                                .is_some_and(|p| args.keys().all(|k| p.contains_key(k)))
                        },
                    );
                return branch.is_some_and(|b| drop_absent_nulls(b, value));
            };
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

/// Names checked (or respelled) for `provider`, collisions refused.
pub(crate) fn spell_names<'a>(
    provider: Provider,
    style: NameStyle,
    tools: &[ToolRef<'a>],
) -> Result<(Vec<Cow<'a, str>>, CallMapping), ProviderError> {
    let rule = provider.name_rule();
    let mut mapping = CallMapping::default();
    let mut seen: HashMap<Cow<'a, str>, &'a str> = HashMap::with_capacity(tools.len());
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let real = tool.declaration.name.as_str();
        let spelled: Cow<'a, str> = match rule.check(real) {
            Ok(()) => Cow::Borrowed(real),
            Err(reason) => match style {
                NameStyle::Reject => {
                    return Err(ProviderError::InvalidName {
                        provider,
                        tool: real.to_owned(),
                        rule: rule.pattern,
                        reason,
                    });
                }
                NameStyle::Respell => Cow::Owned(rule.respell(real)),
            },
        };
        if let Some(first) = seen.insert(spelled.clone(), real) {
            return Err(ProviderError::NameCollision {
                provider,
                first: first.to_owned(),
                second: real.to_owned(),
                spelled: spelled.into_owned(),
            });
        }
        if let Cow::Owned(respelled) = &spelled {
            mapping.add_name(real, respelled.clone());
        }
        out.push(spelled);
    }
    Ok((out, mapping))
}

/// The description, or `None` when it is empty (some providers refuse "").
pub(crate) fn description(decl: &ToolDeclaration) -> Option<&str> {
    Some(decl.description.as_str()).filter(|d| !d.is_empty())
}

/// A stable id for a call that arrived without one: the same call in the
/// same position always gets the same id.
pub(crate) fn generated_id(prefix: &str, index: usize, name: &str, args: &Value) -> String {
    let mut h = Fnv::new();
    h.write(name.as_bytes());
    h.write(&[0]);
    h.write(args.to_string().as_bytes());
    h.write(&index.to_le_bytes());
    format!("{prefix}{index}_{:012x}", h.finish() & 0xffff_ffff_ffff)
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

/// A tool ready to be written in an OpenAI-like shape: name as the provider
/// spells it, the schema to send, and whether it is strict.
pub(crate) struct Prepared<'a> {
    pub(crate) tool: ToolRef<'a>,
    pub(crate) name: Cow<'a, str>,
    pub(crate) schema: Cow<'a, Value>,
    pub(crate) strict: bool,
}

/// Names and schemas for formats with a strict mode. `lowering` is the
/// strict lowering; non-strict tools send the canonical schema.
pub(crate) fn prepare<'a>(
    provider: Provider,
    lowering: Option<Lowering>,
    strict: &StrictOptions,
    style: NameStyle,
    tools: impl IntoIterator<Item = impl Into<ToolRef<'a>>>,
) -> Result<(Vec<Prepared<'a>>, CallMapping, Vec<NotStrict>), ProviderError> {
    let tools: Vec<ToolRef<'a>> = tools.into_iter().map(Into::into).collect();
    let (names, mut mapping) = spell_names(provider, style, &tools)?;
    let mut not_strict = Vec::new();
    let mut out = Vec::with_capacity(tools.len());
    for (tool, name) in tools.into_iter().zip(names) {
        let decl = tool.declaration;
        let wanted = match lowering {
            Some(_) => strict.for_tool(&decl.name),
            None => Strictness::Off,
        };
        let lowered = match (lowering, wanted) {
            (Some(lowering), Strictness::IfCompatible | Strictness::Required) => Some(tool.lowered(lowering)),
            _ => None,
        };
        let (schema, is_strict) = match lowered {
            Some(Ok(schema)) => (schema, true),
            Some(Err(reason)) if wanted == Strictness::Required => {
                return Err(ProviderError::UnsupportedSchema { provider, tool: decl.name.clone(), reason });
            }
            Some(Err(reason)) => {
                tracing::debug!(tool = %decl.name, %provider, %reason, "tool sent without strict mode");
                not_strict.push(NotStrict { tool: decl.name.clone(), reason });
                (Cow::Borrowed(&decl.input_schema), false)
            }
            None => (Cow::Borrowed(&decl.input_schema), false),
        };
        if is_strict && lowering == Some(Lowering::OpenAiStrict) {
            mapping.add_strict(&tool);
        }
        out.push(Prepared { tool, name, schema, strict: is_strict });
    }
    Ok((out, mapping, not_strict))
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
pub(crate) fn chat_tool_call(provider: Provider, index: usize, call: &Value) -> Result<ToolCall, ProviderError> {
    let function = call.get("function").ok_or_else(|| invalid(provider, "a tool call has no `function`"))?;
    let name = str_field(provider, function, "name", "a tool call's function")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
        other => object_arguments(other),
    };
    let id = match call.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => generated_id("call_", index, name, function.get("arguments").unwrap_or(&Value::Null)),
    };
    Ok(ToolCall { id, name: name.to_owned(), arguments })
}
