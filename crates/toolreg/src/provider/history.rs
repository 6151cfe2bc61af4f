//! The model's own turn, written back into the conversation: the pieces
//! every format's [`WireFormat::render_calls`](super::WireFormat::render_calls)
//! is made of. Each format writes its own turn in its own module.
//!
//! A model must see its calls again exactly as it sent them — the ids, and
//! for providers that send arguments as text (OpenAI, Mistral) the very
//! text, `null`s and spacing included — whatever toolreg did to them on
//! their way to the tool. Ids toolreg made up (the provider sent none) are
//! left out, as the provider never knew them.

use serde_json::{Value, json};

use crate::exec::ToolArguments;

/// The text of an OpenAI-shaped assistant message: `null` when there is none.
pub(crate) fn assistant_text(text: &str) -> Value {
    if text.is_empty() { Value::Null } else { json!(text) }
}

/// The turn's text as one block, none when it is empty.
pub(crate) fn text_block(text: &str, block: impl Fn(&str) -> Value) -> Vec<Value> {
    if text.is_empty() { Vec::new() } else { vec![block(text)] }
}

/// Arguments for a provider that takes an object: the object the model
/// sent, or `{}` for text that never parsed (the provider takes nothing
/// else, and the call was answered as malformed).
pub(crate) fn as_object(arguments: &ToolArguments) -> Value {
    match arguments {
        ToolArguments::Json(value) => value.clone(),
        ToolArguments::Raw(text) => serde_json::from_str(text).unwrap_or_else(|_| json!({})),
    }
}
