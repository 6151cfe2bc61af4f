//! Values on their way in ([`EncodedValue`]) and summaries on their way out
//! ([`Summary`]). Nothing here recurses over a value: nesting is walked with
//! an explicit stack, and serialisation only runs on values whose depth was
//! checked first.

use std::io;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::DEPTH_CEILING;
use super::{StoreError, StoreKey, StoreLimits, StoredValue};

/// How many object keys a summary names.
pub const SUMMARY_MAX_KEYS: usize = 50;

/// How many bytes of compact JSON a summary's preview shows.
pub const SUMMARY_PREVIEW_BYTES: usize = 240;

/// A value checked against the limits and encoded as compact JSON text,
/// ready for a backend to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedValue {
    text: String,
}

impl EncodedValue {
    /// Check `value`'s nesting and size against `limits`, then encode it.
    ///
    /// The depth is checked before any serialisation, and serialisation
    /// stops keeping bytes past the size limit, so an oversized value costs
    /// no more memory than the limit.
    pub fn encode(key: &StoreKey, value: &Value, limits: &StoreLimits) -> Result<Self, StoreError> {
        let max_depth = limits.max_depth.min(DEPTH_CEILING);
        if let Err(depth) = depth_within(value, max_depth) {
            return Err(StoreError::TooDeep { key: key.to_string(), depth, max: max_depth });
        }
        let cap = usize::try_from(limits.max_value_bytes).unwrap_or(usize::MAX);
        let mut writer = CappedWriter::new(cap, false);
        serde_json::to_writer(&mut writer, value).map_err(|e| StoreError::backend("encode a value", e))?;
        if writer.total > limits.max_value_bytes {
            return Err(StoreError::ValueTooLarge {
                key: key.to_string(),
                size: writer.total,
                max: limits.max_value_bytes,
            });
        }
        let text = String::from_utf8(writer.buf).map_err(|e| StoreError::backend("encode a value", e))?;
        Ok(EncodedValue { text })
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.text.len() as u64
    }
}

/// The nesting depth of `value` (a scalar is 0, `[]` is 1, `[[1]]` is 2), or
/// `Err(max + 1)` as soon as it is known to be deeper than `max`.
pub fn depth_within(value: &Value, max: usize) -> Result<usize, usize> {
    let mut deepest = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, level)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let level = level + 1;
        if level > max {
            return Err(max + 1);
        }
        deepest = deepest.max(level);
        stack.extend(children.filter(|c| c.is_array() || c.is_object()).map(|c| (c, level)));
    }
    Ok(deepest)
}

/// Keeps the first `cap` bytes written and counts the rest; with `stop`,
/// fails the write once full so the serialiser gives up early.
struct CappedWriter {
    buf: Vec<u8>,
    cap: usize,
    total: u64,
    stop: bool,
}

impl CappedWriter {
    fn new(cap: usize, stop: bool) -> Self {
        CappedWriter { buf: Vec::new(), cap, total: 0, stop }
    }
}

impl io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.total += data.len() as u64;
        let room = self.cap.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&data[..data.len().min(room)]);
        if self.stop && data.len() > room {
            return Err(io::Error::other("preview full"));
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The JSON type of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    /// `null`
    Null,
    /// `true` or `false`
    Boolean,
    /// A number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl JsonType {
    /// The type of `value`.
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(_) => JsonType::Number,
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }
}

/// What a stored value looks like, without the value: for a model deciding
/// whether to read it, or a sub-agent given only a handle. Bounded in size
/// whatever the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Summary {
    /// The key.
    pub key: String,
    /// The version summarised.
    pub version: u64,
    /// The value's JSON type.
    #[serde(rename = "type")]
    pub kind: JsonType,
    /// Size as compact JSON text, in bytes.
    pub size: u64,
    /// Nesting depth of arrays and objects (a scalar is 0).
    pub depth: usize,
    /// An object's first keys, in order (at most [`SUMMARY_MAX_KEYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<String>>,
    /// An object's number of keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_count: Option<u64>,
    /// An array's number of elements, or a string's number of characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// The distinct types of an array's elements, in order of first appearance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_types: Option<Vec<JsonType>>,
    /// The start of the compact JSON text (at most [`SUMMARY_PREVIEW_BYTES`]);
    /// for a stored tool output ([`OUTPUT_TAG`](super::OUTPUT_TAG)), the
    /// start of the text a model reads of it, each block that is not text
    /// as its one-line summary, instead of its base64.
    pub preview: String,
    /// Whether the preview stops before the end of the value.
    pub preview_truncated: bool,
}

impl Summary {
    /// Summarise a stored value.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolreg_store::{JsonType, StoredValue, Summary};
    ///
    /// let stored = StoredValue::new("k".into(), 1, 17, 0, json!({"a": [1, "x"], "b": null}));
    /// let summary = Summary::of(&stored);
    /// assert_eq!(summary.kind, JsonType::Object);
    /// assert_eq!(summary.keys.as_deref(), Some(&["a".to_string(), "b".to_string()][..]));
    /// assert_eq!(summary.depth, 2);
    /// ```
    pub fn of(stored: &StoredValue) -> Self {
        Self::of_value(&stored.key, stored.version, stored.size, &stored.value)
    }

    /// Summarise `value`, stored as `version` of `key` in `size` bytes.
    pub fn of_value(key: &str, version: u64, size: u64, value: &Value) -> Self {
        let depth = depth_within(value, DEPTH_CEILING).unwrap_or_else(|over| over);
        let (mut keys, mut key_count, mut length, mut element_types) = (None, None, None, None);
        match value {
            Value::Object(map) => {
                keys = Some(map.keys().take(SUMMARY_MAX_KEYS).cloned().collect());
                key_count = Some(map.len() as u64);
            }
            Value::Array(items) => {
                let mut types: Vec<JsonType> = Vec::new();
                for item in items {
                    let ty = JsonType::of(item);
                    if !types.contains(&ty) {
                        types.push(ty);
                        if types.len() == 6 {
                            break;
                        }
                    }
                }
                length = Some(items.len() as u64);
                element_types = Some(types);
            }
            Value::String(s) => length = Some(s.chars().count() as u64),
            _ => {}
        }
        let (preview, preview_truncated) = match super::output::decode(value) {
            Some(output) => cut(output.text().into_owned()),
            None => preview(value),
        };
        Summary {
            key: key.to_owned(),
            version,
            kind: JsonType::of(value),
            size,
            depth,
            keys,
            key_count,
            length,
            element_types,
            preview,
            preview_truncated,
        }
    }
}

/// The first [`SUMMARY_PREVIEW_BYTES`] of `text`, cut at a character
/// boundary, and whether anything was cut.
fn cut(mut text: String) -> (String, bool) {
    if text.len() <= SUMMARY_PREVIEW_BYTES {
        return (text, false);
    }
    let mut end = SUMMARY_PREVIEW_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

/// The first bytes of `value`'s compact JSON, cut at a character boundary.
fn preview(value: &Value) -> (String, bool) {
    let mut writer = CappedWriter::new(SUMMARY_PREVIEW_BYTES, true);
    // An error here only means the preview is full.
    let _ = serde_json::to_writer(&mut writer, value);
    let truncated = writer.total > SUMMARY_PREVIEW_BYTES as u64;
    let mut bytes = writer.buf;
    let text = match String::from_utf8(std::mem::take(&mut bytes)) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    (text, truncated)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn depth_counts_containers_without_recursing() {
        assert_eq!(depth_within(&json!(1), 10), Ok(0));
        assert_eq!(depth_within(&json!([]), 10), Ok(1));
        assert_eq!(depth_within(&json!({"a": [1, {"b": []}]}), 10), Ok(4));
        let mut deep = json!(0);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert_eq!(depth_within(&deep, 64), Err(65));
        // Drop it without the recursive destructor reaching 100,000 frames.
        let mut current = deep;
        while let Value::Array(mut items) = current {
            current = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn encode_refuses_oversized_and_too_deep() {
        let key = StoreKey::new("k").unwrap();
        let limits = StoreLimits::default().with_max_value_bytes(10).with_max_depth(2);
        let err = EncodedValue::encode(&key, &json!("0123456789"), &limits).unwrap_err();
        assert!(matches!(err, StoreError::ValueTooLarge { size: 12, max: 10, .. }), "{err}");
        let err = EncodedValue::encode(&key, &json!([[[]]]), &limits).unwrap_err();
        assert!(matches!(err, StoreError::TooDeep { depth: 3, max: 2, .. }), "{err}");
        assert_eq!(EncodedValue::encode(&key, &json!([[1]]), &limits).unwrap().as_str(), "[[1]]");
    }

    #[test]
    fn preview_is_bounded_and_cut_on_a_char_boundary() {
        let value = json!("é".repeat(1000));
        let stored = StoredValue::new("k".into(), 1, 2002, 0, value);
        let summary = Summary::of(&stored);
        assert!(summary.preview.len() <= SUMMARY_PREVIEW_BYTES);
        assert!(summary.preview_truncated);
        assert_eq!(summary.length, Some(1000));
        assert!(summary.preview.starts_with("\"éé"));
    }

    #[test]
    fn array_summary_lists_element_types_once() {
        let stored = StoredValue::new("k".into(), 4, 0, 0, json!([1, "a", 2, null, {"x": 1}, "b"]));
        let summary = Summary::of(&stored);
        assert_eq!(summary.length, Some(6));
        assert_eq!(
            summary.element_types,
            Some(vec![JsonType::Number, JsonType::String, JsonType::Null, JsonType::Object])
        );
        assert!(!summary.preview_truncated);
        assert_eq!(summary.preview, r#"[1,"a",2,null,{"x":1},"b"]"#);
    }
}
