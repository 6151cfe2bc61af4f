//! The model's own turn, written back into the conversation: what
//! [`WireFormat::render_calls`](super::WireFormat::render_calls) produces.
//!
//! A model must see its calls again exactly as it sent them — the ids, and
//! for providers that send arguments as text (OpenAI, Mistral) the very
//! text, `null`s and spacing included — whatever toolreg did to them on
//! their way to the tool. Ids toolreg made up (the provider sent none) are
//! left out, as the provider never knew them.

use serde_json::{Map, Value, json};

use super::{CallMapping, Provider};
use crate::exec::{ToolArguments, ToolCall};

/// The assistant turn with `text` and `calls` (as the model sent them,
/// [`ReadCalls::sent`](super::ReadCalls::sent)) in `provider`'s
/// conversation format; names spelled as `mapping` sent them.
pub(crate) fn render_calls(provider: Provider, text: &str, calls: &[ToolCall], mapping: &CallMapping) -> Vec<Value> {
    let name = |call: &ToolCall| mapping.provider_name(&call.name).to_owned();
    match provider {
        Provider::OpenAiChat | Provider::Mistral | Provider::Ollama => {
            let mut message = Map::new();
            message.insert("role".into(), json!("assistant"));
            message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
            if !calls.is_empty() {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|c| {
                        // Ollama's own API takes the arguments as an object;
                        // OpenAI's and Mistral's as the text the model wrote.
                        let arguments = match provider {
                            Provider::Ollama => as_object(&c.arguments),
                            _ => json!(c.arguments.to_string()),
                        };
                        json!({"id": c.id, "type": "function", "function": {"name": name(c), "arguments": arguments}})
                    })
                    .collect();
                message.insert("tool_calls".into(), Value::Array(calls));
            }
            vec![Value::Object(message)]
        }
        Provider::OpenAiResponses => {
            let mut items = Vec::with_capacity(calls.len() + 1);
            if !text.is_empty() {
                items.push(json!({"role": "assistant", "content": text}));
            }
            items.extend(calls.iter().map(|c| match mapping.search_tool() == Some(c.name.as_str()) {
                // A call of the `tool_search` tool was a `tool_search_call`
                // item, and goes back as one (see `openai_responses`).
                true => json!({"type": "tool_search_call", "call_id": c.id, "execution": "client",
                    "arguments": as_object(&c.arguments), "status": "completed"}),
                // A namespaced tool's call goes back as it came: its
                // namespace and its bare name.
                false => match mapping.namespaced.get(&c.name) {
                    Some((space, bare)) => json!({"type": "function_call", "call_id": c.id, "namespace": space,
                        "name": bare, "arguments": c.arguments.to_string()}),
                    None => json!({"type": "function_call", "call_id": c.id, "name": name(c),
                        "arguments": c.arguments.to_string()}),
                },
            }));
            items
        }
        Provider::Anthropic => {
            let mut blocks = text_block(text, |t| json!({"type": "text", "text": t}));
            blocks.extend(
                calls.iter().map(
                    |c| json!({"type": "tool_use", "id": c.id, "name": name(c), "input": as_object(&c.arguments)}),
                ),
            );
            vec![json!({"role": "assistant", "content": blocks})]
        }
        Provider::Bedrock => {
            let mut blocks = text_block(text, |t| json!({"text": t}));
            blocks.extend(
                calls.iter().map(
                    |c| json!({"toolUse": {"toolUseId": c.id, "name": name(c), "input": as_object(&c.arguments)}}),
                ),
            );
            vec![json!({"role": "assistant", "content": blocks})]
        }
        Provider::Gemini => {
            let mut parts = text_block(text, |t| json!({"text": t}));
            parts.extend(calls.iter().map(|c| {
                let mut call = json!({"name": name(c), "args": as_object(&c.arguments)});
                if !mapping.is_generated_id(&c.id) {
                    call["id"] = json!(c.id);
                }
                json!({"functionCall": call})
            }));
            vec![json!({"role": "model", "parts": parts})]
        }
        // An MCP conversation has no assistant turn: calls are requests.
        Provider::Mcp => Vec::new(),
    }
}

fn text_block(text: &str, block: impl Fn(&str) -> Value) -> Vec<Value> {
    if text.is_empty() { Vec::new() } else { vec![block(text)] }
}

/// Arguments for a provider that takes an object: the object the model
/// sent, or `{}` for text that never parsed (the provider takes nothing
/// else, and the call was answered as malformed).
fn as_object(arguments: &ToolArguments) -> Value {
    match arguments {
        ToolArguments::Json(value) => value.clone(),
        ToolArguments::Raw(text) => serde_json::from_str(text).unwrap_or_else(|_| json!({})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_text_is_echoed_verbatim_where_the_provider_sent_text() {
        let text = r#"{"limit": null,  "q":"x"}"#;
        let calls = [ToolCall::new("c1", "find", text)];
        let mapping = CallMapping::default();
        let chat = render_calls(Provider::OpenAiChat, "", &calls, &mapping);
        assert_eq!(chat[0]["tool_calls"][0]["function"]["arguments"], text);
        assert_eq!(chat[0]["content"], Value::Null);
        let responses = render_calls(Provider::OpenAiResponses, "Looking.", &calls, &mapping);
        assert_eq!(responses[0], json!({"role": "assistant", "content": "Looking."}));
        assert_eq!(responses[1]["arguments"], text);
        let anthropic = render_calls(Provider::Anthropic, "", &calls, &mapping);
        assert_eq!(anthropic[0]["content"][0]["input"], json!({"limit": null, "q": "x"}));
        assert_eq!(render_calls(Provider::Mcp, "x", &calls, &mapping), Vec::<Value>::new());
    }

    #[test]
    fn gemini_leaves_out_ids_it_never_sent() {
        let mapping = CallMapping::default();
        mapping.note_generated_id("made_up");
        let calls = [ToolCall::new("made_up", "t", json!({})), ToolCall::new("real", "t", json!({}))];
        let parts = &render_calls(Provider::Gemini, "", &calls, &mapping)[0]["parts"];
        assert!(parts[0]["functionCall"].get("id").is_none());
        assert_eq!(parts[1]["functionCall"]["id"], "real");
    }
}
