//! The canonical JSON text of arguments: object keys sorted by their UTF-8
//! bytes, no whitespace, strings and numbers as serde_json writes them.
//! [`ArgumentsHash`](super::ArgumentsHash) hashes it.
//!
//! Argument text is brought to that form without building a [`Value`] when
//! possible, on the fastest of three paths:
//!
//! 1. [`simple_canonical`] (`simple`): text of objects, arrays, strings without escapes,
//!    integers, floats as serde_json writes them, `true`, `false` and `null`
//!    is canonical once the whitespace is gone and each object's members are
//!    sorted (most arguments models send);
//! 2. [`transcode`] (`transcode`): anything else with sorted keys is parsed by serde_json
//!    and written back token by token;
//! 3. otherwise the caller parses a [`Value`] and writes it with [`write_canonical`].

use serde::Serialize;
use serde_json::Value;

use simple::{SimpleCheck, simple_canonical};
use transcode::transcode;

mod simple;
#[cfg(test)]
mod tests;
mod transcode;

/// The canonical JSON text of a value: object keys sorted by their UTF-8
/// bytes, no whitespace, strings and numbers as `serde_json` writes them in
/// JSON text (shortest round-trip form for floats).
///
/// ```
/// use serde_json::json;
/// assert_eq!(toolreg::policy::canonical_json(&json!({"b": [1, {"d": 2, "c": null}], "a": "x"})),
///            r#"{"a":"x","b":[1,{"c":null,"d":2}]}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    // Writing a `Value` to a string cannot fail: its keys are strings.
    serde_json::to_string(&Canonical(value)).unwrap_or_default()
}

/// Append the canonical text of `value` to `out`.
pub(crate) fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` to memory cannot fail: its keys are strings.
    let _ = serde_json::to_writer(out, &Canonical(value));
}

/// Call `f` with the canonical text of JSON `text`, built without a
/// [`Value`]. `None` when that cannot be done: the text is not JSON, or an
/// object's keys repeat, or are out of order where the fast path does not
/// sort them; only a parsed [`Value`] can (and keeps the last of two equal
/// keys).
pub(crate) fn with_canonical_text<R>(text: &str, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    match SimpleCheck::of(text.as_bytes()) {
        Some(shape) => simple_canonical(text.as_bytes(), shape, f),
        None => with_buffer(|out| transcode(text, out).then(|| f(out))),
    }
}

/// Run `f` on an empty byte buffer, reused between calls on a thread.
pub(crate) fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    TEXT.with(|text| match text.try_borrow_mut() {
        Ok(mut text) => {
            text.clear();
            let result = f(&mut text);
            if text.capacity() > 64 * 1024 {
                *text = Vec::new(); // do not keep a large argument's buffer for ever
            }
            result
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// A value serialised with its object keys in sorted order; serde_json's
/// compact writer does the rest (escapes, shortest float form).
struct Canonical<'a>(&'a Value);

impl Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(items) => serializer.collect_seq(items.iter().map(Canonical)),
            // serde_json's default map is already sorted: no copy needed.
            Value::Object(map) if map.keys().is_sorted() => {
                serializer.collect_map(map.iter().map(|(key, item)| (key, Canonical(item))))
            }
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                serializer.collect_map(entries.into_iter().map(|(key, item)| (key, Canonical(item))))
            }
            scalar => scalar.serialize(serializer),
        }
    }
}
