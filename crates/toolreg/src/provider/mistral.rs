//! Mistral chat completions: the OpenAI shape, with two differences:
//! `arguments` may arrive as a string or an object, and a tool call id must
//! be exactly nine letters or digits (`^[a-zA-Z0-9]{9}$`).
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

use super::openai_chat::{chat_tool_call, chat_tool_calls};
use super::{
    CallMapping, Declarations, DeclaredTools, Fnv, FormatOptions, Prepared, Provider, ProviderError, SchemaMode, Shape,
    ToolRef, WireFormat, prepare, result_text, sealed,
};
use crate::exec::{ToolCall, ToolResult};

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

    fn declare_view<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Mistral, SchemaMode::Canonical, &self.options, tools).finish(Shape::Mistral)
    }

    /// One `tool` message per result, with the nine-character id and the
    /// name respelled through `mapping`.
    fn render_results(&self, results: &[ToolResult], mapping: &CallMapping) -> Vec<Value> {
        results
            .iter()
            .map(|r| {
                json!({"role": "tool", "tool_call_id": tool_call_id(&r.id),
                       "name": mapping.provider_name(&r.name), "content": result_text(r)})
            })
            .collect()
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
}
