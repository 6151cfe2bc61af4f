//! Mistral chat completions: the OpenAI shape, with two differences:
//! `arguments` may arrive as a string or an object, and a tool call id must
//! be exactly nine letters or digits (`^[a-zA-Z0-9]{9}$`).
//!
//! Results out: one `tool` message per result. Like OpenAI Chat (and
//! Mistral's tokenizers before v15, which take text only in tool messages),
//! images (`image_url`) and WAV or MP3 audio (`input_audio`) go in one user
//! message after the tool messages, named in the tool message
//! ([`Fallback::FollowUpMessage`](super::Fallback::FollowUpMessage)).
//! Mistral has no chunk for inline files, so a file, like a link or an
//! embedded text resource, is its summary text
//! ([`Fallback::Summary`](super::Fallback::Summary)). Annotations are left out.
//!
//! ```
//! use toolreg::provider::mistral::tool_call_id;
//! assert_eq!(tool_call_id("D681PevKs"), "D681PevKs");
//! let id = tool_call_id("call_1");
//! assert_eq!(id.len(), 9);
//! assert_eq!(id, tool_call_id("call_1"));
//! ```

use serde::Serialize;
use serde_json::{Value, json};

use super::choice::{spelled, unsupported, unsupported_validated};
use super::declared::Entries;
use super::openai_chat::{
    chat_stream_event, chat_streamed_answer, chat_tool_call, chat_tool_calls, chat_turn, user_message, user_part,
};
use super::{
    CallMapping, Declarations, DeclaredTools, Fnv, FormatOptions, NameRule, Prepared, Provider, ProviderError,
    Registration, RenderedResults, SchemaMode, StreamedCalls, ToolChoice, ToolRef, WireFormat, blocks, prepare, sealed,
};
use crate::exec::{ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Mistral,
    name: "mistral",
    aliases: &[],
    title: "Mistral",
    name_rule: NameRule::OPENAI,
    build: |options| Box::new(Mistral::with_options(options)),
};

/// Mistral's wire format.
#[derive(Debug, Clone, Default)]
pub struct Mistral {
    options: FormatOptions,
}

/// One entry of Mistral's `tools`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MistralTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: MistralFunction<'a>,
}

/// The `function` of a [`MistralTool`].
#[derive(Debug, Clone, Serialize)]
struct MistralFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// A Mistral tool call id for `id`: the id itself when it already is nine
/// letters or digits, otherwise nine characters derived from it, the same
/// every time (so a call and its result agree).
pub fn tool_call_id(id: &str) -> String {
    if id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return id.to_owned();
    }
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut h = Fnv::new();
    h.write(id.as_bytes());
    let mut n = h.finish();
    (0..9)
        .map(|_| {
            let c = ALPHABET[(n % 62) as usize] as char;
            n /= 62;
            c
        })
        .collect()
}

/// A prepared tool as an entry of `tools`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> MistralTool<'b> {
    MistralTool {
        kind: "function",
        function: MistralFunction {
            name: &p.name,
            description: &p.tool.declaration().description,
            parameters: &p.schema,
        },
    }
}

impl Mistral {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Mistral);

impl WireFormat for Mistral {
    fn provider(&self) -> Provider {
        Provider::Mistral
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Mistral, SchemaMode::Canonical, &self.options, tools)
            .finish(|tools, _| Box::new(Entries(tools, entry)))
    }

    /// OpenAI's spelling, but `any` for a required call and no list of
    /// allowed tools.
    fn tool_choice(&self, choice: &ToolChoice, mapping: &CallMapping) -> Result<Value, ProviderError> {
        let provider = Provider::Mistral;
        Ok(match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("any"),
            ToolChoice::None => json!("none"),
            ToolChoice::Tool(n) => json!({"type": "function", "function": {"name": spelled(mapping, n)}}),
            ToolChoice::Validated => return Err(unsupported_validated(provider)),
            ToolChoice::Allowed { .. } => return Err(unsupported(provider, "list of allowed tools")),
        })
    }

    /// OpenAI's assistant message, the arguments as the text the model wrote.
    fn render_calls(&self, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
        chat_turn(text, calls, mapping, |arguments| json!(arguments.to_string()))
    }

    /// One `tool` message per result, with the nine-character id and the
    /// name respelled through `mapping`.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> RenderedResults {
        blocks::follow_up(
            results,
            |r, content| {
                json!({"role": "tool", "tool_call_id": tool_call_id(&r.id),
                       "name": mapping.provider_name(&r.name), "content": content})
            },
            |media| user_part(media, false),
            |moved| user_message(moved.into_iter().map(|(r, parts)| (tool_call_id(&r.id), parts))),
        )
    }
}

impl sealed::Format for Mistral {
    /// The tool calls of a Mistral response, message or `tool_calls` list;
    /// ids are made valid with [`tool_call_id`].
    fn calls_in(&self, body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        chat_tool_calls(Provider::Mistral, body)?
            .into_iter()
            .map(|(i, call)| {
                let mut call = chat_tool_call(Provider::Mistral, i, call, mapping)?;
                call.id = tool_call_id(&call.id);
                Ok(call)
            })
            .collect()
    }

    /// OpenAI's stream chunks.
    fn stream_event(&self, stream: &mut StreamedCalls, event: &Value) -> Result<(), ProviderError> {
        chat_stream_event(stream, event)
    }

    fn streamed_answer(&self, stream: StreamedCalls) -> Option<Value> {
        Some(chat_streamed_answer(stream))
    }
}
