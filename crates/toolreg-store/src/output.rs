//! Tool outputs in the store: a result with content blocks (an image, a
//! PDF, audio) kept whole under a key, so that a small handle can stand for
//! it and `store_get` of that handle gives the blocks back.
//!
//! The store holds JSON, so an output is kept as a JSON object with the
//! single key [`OUTPUT_TAG`], holding [`ToolOutput::to_json`]'s form (blocks
//! in MCP's shape, bytes in base64) without the host-only metadata, which a
//! model could otherwise read back.

use serde_json::{Value, json};
use toolreg::exec::ToolOutput;

/// The one key of the JSON object a stored tool output is kept as:
/// `{"$tool_output": {"value": …, "content": [blocks]}}`. A value of exactly
/// this shape, however it was stored (even by a model through `store_set`),
/// is read back as an output; any other value is plain JSON.
pub const OUTPUT_TAG: &str = "$tool_output";

/// The JSON a tool output is stored as: its value and blocks, not its
/// metadata (host-only: never kept where a model can read it).
pub(crate) fn encode(output: &ToolOutput) -> Value {
    let mut inner = output.to_json();
    if let Some(object) = inner.as_object_mut() {
        object.remove("meta");
    }
    json!({ OUTPUT_TAG: inner })
}

/// The tool output a stored value holds, when it is one whose blocks all
/// read back (bad base64, an unknown block type: plain JSON instead).
pub(crate) fn decode(value: &Value) -> Option<ToolOutput> {
    let object = value.as_object().filter(|object| object.len() == 1)?;
    ToolOutput::from_json(object.get(OUTPUT_TAG)?).ok()
}

#[cfg(test)]
mod tests {
    use toolreg::exec::Content;

    use super::*;

    #[test]
    fn an_output_survives_its_json_without_its_metadata() {
        let output = ToolOutput::from(vec![Content::text("see"), Content::image(vec![1, 2, 3], "image/png")])
            .with_value(json!({"n": 1}))
            .with_meta("secret", json!("host only"));
        let stored = encode(&output);
        assert!(!stored.to_string().contains("host only"));
        let mut expected = output.clone();
        expected.meta_mut().clear();
        assert_eq!(decode(&stored), Some(expected));
    }

    #[test]
    fn anything_else_is_plain_json() {
        assert_eq!(decode(&json!({"a": 1})), None);
        assert_eq!(decode(&json!({OUTPUT_TAG: {"value": 1}, "other": 2})), None);
        let bad = json!({OUTPUT_TAG: {"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]}});
        assert_eq!(decode(&bad), None);
        assert_eq!(decode(&json!([OUTPUT_TAG])), None);
    }
}
