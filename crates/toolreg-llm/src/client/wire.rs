//! Between a request and the core's wire format, the same for every client:
//! the request's tools declared in the provider's format, the tool choice
//! when one must be sent, and the calls of an answer read back. What a
//! provider's JSON looks like is the format's (`toolreg::provider`); what
//! its HTTP answer looks like around the calls is its client's.

use serde_json::Value;
use toolreg::provider::{
    CallMapping, Declarations, DeclaredTools, ProviderError, ReadCalls, ToolChoice, ToolRef, WireFormat,
};

use crate::model::{LlmError, ModelRequest};

/// The tools in a provider's format, with the name mapping to read calls
/// back; the tools are written straight into the request's text ([`Body`]).
pub(crate) fn declare<'a>(format: &dyn WireFormat, request: &'a ModelRequest) -> Declarations<DeclaredTools<'a>> {
    let deferred = |name: &str| request.deferred_tools.contains(name);
    let search = |name: &str| request.search_tool.as_deref() == Some(name);
    let refs: Vec<ToolRef<'a>> = request
        .tools
        .iter()
        .map(|t| ToolRef::from(t).deferred(deferred(&t.name)).search_tool(search(&t.name)))
        .collect();
    let declared = format.declare_partial(&refs);
    for (tool, reason) in declared.refused() {
        tracing::warn!(tool, %reason, "tool not offered to the model");
    }
    declared
}

/// The `tool_choice` value, when one must be sent.
pub(crate) fn choice(format: &dyn WireFormat, request: &ModelRequest, mapping: &CallMapping) -> Option<Value> {
    if request.tools.is_empty() || request.tool_choice == ToolChoice::Auto {
        return None;
    }
    match format.tool_choice(&request.tool_choice, mapping) {
        Ok(choice) => Some(choice),
        // The provider's default (the model decides) is sent instead: say so.
        Err(reason) => {
            tracing::warn!(%reason, "tool choice not sent");
            None
        }
    }
}

/// The calls of an answer (a whole one, or one assembled from a stream:
/// both go through the same checks), a refused answer being
/// [`LlmError::Protocol`].
pub(crate) fn read_calls(
    format: &dyn WireFormat,
    answer: &Value,
    mapping: &CallMapping,
) -> Result<ReadCalls, LlmError> {
    format.read_calls(answer, mapping).map_err(refused)
}

/// A response the format refused, as the client's error.
pub(crate) fn refused(error: ProviderError) -> LlmError {
    LlmError::Protocol(error.to_string())
}
