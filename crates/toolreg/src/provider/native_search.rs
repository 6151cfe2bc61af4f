//! Provider-native tool search: deferred tools sent in the request but
//! hidden from the model until a search returns them.
//!
//! A format that has it ([`WireFormat::native_search`](super::WireFormat::native_search))
//! declares a tool marked [`ToolRef::deferred`](super::ToolRef::deferred)
//! with the provider's deferred loading, and answers a search tool's result
//! that names the tools it found ([`with_tool_references`]) with the
//! provider's own references to them, which the provider expands into the
//! tools' declarations. The request's `tools` then never change as tools
//! load, so its prefix stays cached. The search itself stays ours: any
//! tool can be the search tool (toolreg-llm's agent uses its
//! `search_tools`, over the registry's own index), and the provider only
//! expands the references.
//!
//! | format | deferred tool | search result |
//! |---|---|---|
//! | [`anthropic`](super::anthropic) | `"defer_loading": true` | `tool_result` content of `{"type":"tool_reference","tool_name"}` blocks |
//! | [`openai_responses`](super::openai_responses) | `"defer_loading": true` | a `tool_search_output` item whose `tools` are the found tools' definitions; the search tool ([`ToolRef::search_tool`](super::ToolRef::search_tool)) is declared as `{"type":"tool_search","execution":"client"}` and called with `tool_search_call` items |
//! | every other | sent as any tool (use the local fallback: offer it once found) | the result as it is |
//!
//! Anthropic documents both a server-side search tool
//! (`tool_search_tool_bm25`/`_regex`, which searches on Anthropic's side
//! and answers with `server_tool_use` and `tool_search_tool_result` blocks)
//! and a custom, client-side one whose `tool_result` holds `tool_reference`
//! blocks. toolreg uses the custom one: the registry's index stays the one
//! authority on what matches (the same ranking for every provider, tools
//! an application hides stay hidden), the search works offline and in
//! tests, and the assistant turn holds only the `tool_use` blocks the
//! history already repeats verbatim.
//!
//! OpenAI Responses likewise has a server-executed `tool_search` (OpenAI
//! searches) and a client-executed one (`"execution": "client"`: the model
//! emits a `tool_search_call`, the client answers with a
//! `tool_search_output` holding the definitions of the tools to load).
//! toolreg uses the client-executed one, for the same reasons.
//!
//! ```
//! use toolreg::exec::ToolOutput;
//! use toolreg::provider::{ToolRef, WireFormat, anthropic::Anthropic, tool_references, with_tool_references};
//! use toolreg::{ParamType, ToolDeclaration, ToolResult};
//! use serde_json::json;
//!
//! let search = ToolDeclaration::builder("search_tools").param("query", ParamType::String, "What you need").build();
//! let convert = ToolDeclaration::builder("convert_currency").param("amount", ParamType::Number, "Amount").build();
//! let format = Anthropic::new();
//! assert!(format.native_search());
//! let declared = format.declare(&[ToolRef::from(&search), ToolRef::from(&convert).deferred(true)])?;
//! assert_eq!(declared.tools[1]["defer_loading"], true);
//! assert!(declared.tools[0].get("defer_loading").is_none());
//!
//! // The search tool's answer names what it found ...
//! let found = with_tool_references(ToolOutput::new(json!({"found": ["convert_currency"]})), ["convert_currency"]);
//! assert_eq!(tool_references(&found), ["convert_currency"]);
//! // ... and goes to Anthropic as references to the deferred tools.
//! let result = ToolResult { id: "toolu_1".into(), name: "search_tools".into(), outcome: Ok(found) };
//! let turn = format.render_results(&[result], &declared.mapping).messages;
//! assert_eq!(turn[0]["content"][0]["content"], json!([{"type": "tool_reference", "tool_name": "convert_currency"}]));
//! # Ok::<(), toolreg::provider::ProviderError>(())
//! ```

use serde_json::Value;

use crate::exec::ToolOutput;

/// The key of a result's host-only [`meta`](ToolOutput::meta) under which a
/// tool search lists the tools it found (real names).
pub const TOOL_REFERENCES: &str = "toolreg/tool_references";

/// `output` marked as a tool search's answer that found `tools` (real
/// names): a format with native search sends references to those of them
/// it declared deferred instead of the output.
pub fn with_tool_references<S: Into<String>>(output: ToolOutput, tools: impl IntoIterator<Item = S>) -> ToolOutput {
    let names: Vec<Value> = tools.into_iter().map(|t| Value::String(t.into())).collect();
    output.with_meta(TOOL_REFERENCES, Value::Array(names))
}

/// The tools a tool search's answer found ([`with_tool_references`]); none
/// for any other result.
pub fn tool_references(output: &ToolOutput) -> Vec<&str> {
    match output.meta().get(TOOL_REFERENCES) {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}
