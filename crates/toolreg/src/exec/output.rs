//! [`ToolOutput`]: what a tool returned — a JSON value, content blocks, or
//! both, and metadata only the host sees.

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value, json};

use super::content::{Content, ContentError};

/// What a tool returned on success.
///
/// The common case is one JSON value (any `Serialize` return): the model
/// reads it as text ([`value_text`]), and MCP also gets it as
/// `structuredContent` when it is an object. A tool can instead, or as
/// well, return [`Content`] blocks — images, audio, files, links,
/// resources — which the model reads in order; `value` is then the
/// structured value that goes with them (`null` for none). Its
/// [`meta`](Self::meta) is for the host alone (hooks, audit, the caller):
/// no format renders it.
///
/// A failure is never a `ToolOutput`: it is a [`ToolError`](super::ToolError).
///
/// ```
/// use toolreg::exec::{Content, ToolOutput};
/// use serde_json::json;
///
/// // A plain value: the model reads its JSON text.
/// assert_eq!(ToolOutput::new(json!({"n": 1})).text(), r#"{"n":1}"#);
///
/// // Blocks, a structured value beside them, and host-only metadata.
/// let out = ToolOutput::from(vec![Content::text("A chart:"), Content::image(vec![1, 2], "image/png")])
///     .with_value(json!({"points": 2}))
///     .with_meta("render_ms", json!(12));
/// assert_eq!(out.text(), "A chart:\n[image: image/png, 2 bytes]");
/// assert_eq!(out.structured(), Some(&json!({"points": 2})));
/// assert_eq!(out.blocks().len(), 2);
/// assert_eq!(out.meta()["render_ms"], 12);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The result's JSON value: what the model reads when there are no
    /// blocks, and the structured value either way (`null` with blocks:
    /// none).
    pub value: Value,
    /// What the model reads, in order. Empty: the model reads `value`.
    pub content: Vec<Content>,
    /// Host-only metadata, never shown to a model ([`meta`](Self::meta)).
    /// Boxed, and absent until an entry is added: few results carry any,
    /// and an inline map made every result, moved at each step of a call,
    /// twice as large.
    pub(crate) meta: Option<Box<Map<String, Value>>>,
}

impl PartialEq for ToolOutput {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value && self.content == other.content && self.meta() == other.meta()
    }
}

/// The metadata of a result that has none.
static NO_META: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl ToolOutput {
    /// A result with this value.
    pub fn new(value: Value) -> Self {
        ToolOutput { value, content: Vec::new(), meta: None }
    }

    /// With this structured value beside the blocks.
    pub fn with_value(mut self, value: Value) -> Self {
        self.value = value;
        self
    }

    /// With this block appended.
    pub fn with_block(mut self, block: impl Into<Content>) -> Self {
        self.content.push(block.into());
        self
    }

    /// With this host-only metadata entry.
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta_mut().insert(key.into(), value);
        self
    }

    /// Host-only metadata, never shown to a model: what a host keeps beside
    /// the result (timings, references), empty for most results.
    pub fn meta(&self) -> &Map<String, Value> {
        self.meta.as_deref().unwrap_or(&NO_META)
    }

    /// The metadata, to change it.
    pub fn meta_mut(&mut self) -> &mut Map<String, Value> {
        self.meta.get_or_insert_default()
    }

    /// The blocks the model reads: the content blocks, or the value as one
    /// text block when there are none.
    pub fn blocks(&self) -> Cow<'_, [Content]> {
        if self.content.is_empty() {
            Cow::Owned(vec![Content::text(value_text(&self.value).into_owned())])
        } else {
            Cow::Borrowed(&self.content)
        }
    }

    /// The structured value, if there is one: the value of a plain result,
    /// or the value beside the blocks unless it is `null`.
    pub fn structured(&self) -> Option<&Value> {
        (self.content.is_empty() || !self.value.is_null()).then_some(&self.value)
    }

    /// Whether every block the model reads is text (always, without blocks).
    pub fn is_text(&self) -> bool {
        self.content.iter().all(|block| matches!(block, Content::Text(_)))
    }

    /// The text a model sees: the value's text without blocks; with blocks,
    /// their text one per line, a block that is not text as its
    /// [summary](Content::summary).
    pub fn text(&self) -> Cow<'_, str> {
        match self.content.as_slice() {
            [] => value_text(&self.value),
            [Content::Text(only)] => Cow::Borrowed(&only.text),
            blocks => Cow::Owned(blocks.iter().map(Content::summary).collect::<Vec<_>>().join("\n")),
        }
    }

    /// The bytes the blocks hold (their text for text blocks), for size
    /// limits. A plain value counts nothing here: [`OutputBudget`](crate::engine::OutputBudget)
    /// bounds text.
    pub fn content_size(&self) -> usize {
        self.content.iter().map(Content::size).sum()
    }

    /// The output as JSON, for storing it (a suspension, a log):
    /// `{"value", "content"?, "meta"?}` with blocks as [`Content::to_json`]
    /// writes them.
    pub fn to_json(&self) -> Value {
        let mut out = json!({"value": self.value});
        if !self.content.is_empty() {
            out["content"] = Value::Array(self.content.iter().map(Content::to_json).collect());
        }
        if !self.meta().is_empty() {
            out["meta"] = Value::Object(self.meta().clone());
        }
        out
    }

    /// An output from [`to_json`](Self::to_json)'s JSON.
    pub fn from_json(json: &Value) -> Result<Self, ContentError> {
        let invalid = |reason: &str| ContentError::Invalid { kind: "output".into(), reason: reason.into() };
        let object = json.as_object().ok_or_else(|| invalid("not an object"))?;
        let content = match object.get("content") {
            None => Vec::new(),
            Some(Value::Array(blocks)) => blocks.iter().map(Content::from_json).collect::<Result<_, _>>()?,
            Some(_) => return Err(invalid("`content` must be an array")),
        };
        let meta = match object.get("meta") {
            None => None,
            Some(Value::Object(meta)) => (!meta.is_empty()).then(|| Box::new(meta.clone())),
            Some(_) => return Err(invalid("`meta` must be an object")),
        };
        Ok(ToolOutput { value: object.get("value").cloned().unwrap_or(Value::Null), content, meta })
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        ToolOutput::new(value)
    }
}

impl From<Content> for ToolOutput {
    fn from(block: Content) -> Self {
        ToolOutput { content: vec![block], ..ToolOutput::default() }
    }
}

impl From<Vec<Content>> for ToolOutput {
    fn from(content: Vec<Content>) -> Self {
        ToolOutput { content, ..ToolOutput::default() }
    }
}

impl fmt::Display for ToolOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

/// The text a model reads for a JSON value: a string as its contents,
/// anything else as compact JSON. [`ToolOutput::text`] and every place that
/// shows a value to a model use this one rule.
///
/// ```
/// use serde_json::json;
/// use toolreg::exec::value_text;
///
/// assert_eq!(value_text(&json!("plain")), "plain");
/// assert_eq!(value_text(&json!({"a": [1, "b"]})), r#"{"a":[1,"b"]}"#);
/// ```
pub fn value_text(value: &Value) -> Cow<'_, str> {
    match value {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_value_means_what_it_always_meant() {
        let out = ToolOutput::new(json!("hi"));
        assert_eq!(out.text(), "hi");
        assert_eq!(out.structured(), Some(&json!("hi")));
        assert_eq!(out.blocks().as_ref(), &[Content::text("hi")]);
        assert!(out.is_text());
        assert_eq!(out.content_size(), 0);
    }

    #[test]
    fn blocks_without_a_value_have_no_structured_value() {
        let out = ToolOutput::from(Content::image(vec![0; 10], "image/gif"));
        assert_eq!(out.structured(), None);
        assert!(!out.is_text());
        assert_eq!(out.content_size(), 10);
    }

    #[test]
    fn json_round_trip() {
        let out = ToolOutput::from(vec![Content::text("a"), Content::audio(vec![9], "audio/wav")])
            .with_value(json!({"k": 1}))
            .with_meta("m", json!(true));
        assert_eq!(ToolOutput::from_json(&out.to_json()).unwrap(), out);
        let plain = ToolOutput::new(json!([1]));
        assert_eq!(plain.to_json(), json!({"value": [1]}));
        assert_eq!(ToolOutput::from_json(&plain.to_json()).unwrap(), plain);
    }
}
