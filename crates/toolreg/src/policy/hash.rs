//! [`ArgumentsHash`]: a stable fingerprint of a call's arguments.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of the canonical JSON form of a call's arguments (see
/// [`canonical_json`]), shown as 64 lower-case hex digits.
///
/// The canonical form and SHA-256 are both fixed, so the same arguments give
/// the same hash on every platform and in every version: it can be stored in
/// audit logs and compared later. Two argument objects that differ only in
/// key order or whitespace hash the same.
///
/// ```
/// use toolreg::policy::ArgumentsHash;
/// use serde_json::json;
///
/// let a = ArgumentsHash::of(&json!({"path": "/tmp/x", "force": true}));
/// let b = ArgumentsHash::of(&serde_json::from_str(r#"{ "force":true, "path":"/tmp/x" }"#).unwrap());
/// assert_eq!(a, b);
/// assert_ne!(a, ArgumentsHash::of(&json!({"path": "/tmp/y", "force": true})));
/// assert_eq!(a.to_string().len(), 64);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArgumentsHash([u8; 32]);

impl ArgumentsHash {
    /// Hash these arguments.
    pub fn of(arguments: &Value) -> Self {
        let mut hasher = HashWriter { hasher: Sha256::new(), buffer: [0; 256], len: 0 };
        write_canonical(&mut hasher, arguments);
        ArgumentsHash(hasher.finish())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for ArgumentsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ArgumentsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgumentsHash({self})")
    }
}

impl Serialize for ArgumentsHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ArgumentsHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bad = || serde::de::Error::custom("expected 64 hex digits");
        if text.len() != 64 || !text.is_ascii() {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(ArgumentsHash(bytes))
    }
}

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
    let mut out = StringWriter(String::new());
    write_canonical(&mut out, value);
    out.0
}

trait Sink {
    fn put(&mut self, text: &str);
}

/// Feeds SHA-256 in chunks: the canonical form comes in many small pieces,
/// and one `update` per piece costs more than copying it.
struct HashWriter {
    hasher: Sha256,
    buffer: [u8; 256],
    len: usize,
}

impl HashWriter {
    fn flush(&mut self) {
        self.hasher.update(&self.buffer[..self.len]);
        self.len = 0;
    }

    fn finish(mut self) -> [u8; 32] {
        self.flush();
        self.hasher.finalize().into()
    }
}

impl Sink for HashWriter {
    fn put(&mut self, text: &str) {
        let bytes = text.as_bytes();
        if self.len + bytes.len() > self.buffer.len() {
            self.flush();
            if bytes.len() > self.buffer.len() {
                self.hasher.update(bytes);
                return;
            }
        }
        self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

struct StringWriter(String);

impl Sink for StringWriter {
    fn put(&mut self, text: &str) {
        self.0.push_str(text);
    }
}

fn write_string(out: &mut impl Sink, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        // Nothing to escape: the common case, written without allocating.
        out.put("\"");
        out.put(s);
        out.put("\"");
    } else {
        // serde_json escapes exactly as JSON requires; writing a &str cannot fail.
        out.put(&serde_json::to_string(s).unwrap_or_default());
    }
}

fn write_entry(out: &mut impl Sink, index: usize, key: &str, value: &Value) {
    if index > 0 {
        out.put(",");
    }
    write_string(out, key);
    out.put(":");
    write_canonical(out, value);
}

fn write_canonical(out: &mut impl Sink, value: &Value) {
    match value {
        Value::Null => out.put("null"),
        Value::Bool(true) => out.put("true"),
        Value::Bool(false) => out.put("false"),
        Value::Number(n) => {
            // As serde_json writes it in JSON text; the longest number is 24 bytes.
            let mut buf = Cursor::new([0u8; 40]);
            match serde_json::to_writer(&mut buf, n) {
                Ok(()) => {
                    let len = buf.position() as usize;
                    out.put(std::str::from_utf8(&buf.get_ref()[..len]).unwrap_or_default());
                }
                Err(_) => out.put(&serde_json::to_string(n).unwrap_or_default()),
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.put("[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put(",");
                }
                write_canonical(out, item);
            }
            out.put("]");
        }
        Value::Object(map) => {
            out.put("{");
            if map.keys().is_sorted() {
                // serde_json's default map is already sorted: no copy needed.
                for (i, (key, item)) in map.iter().enumerate() {
                    write_entry(out, i, key, item);
                }
            } else {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_unstable();
                for (i, key) in keys.into_iter().enumerate() {
                    write_entry(out, i, key, &map[key.as_str()]);
                }
            }
            out.put("}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hash_is_stable_and_round_trips() {
        // SHA-256 of the canonical text `{}`, fixed forever.
        assert_eq!(
            ArgumentsHash::of(&json!({})).to_string(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        for text in ["plain", "quote \" back \\ nl \n tab \t nul \u{0} é", ""] {
            assert_eq!(canonical_json(&json!(text)), serde_json::to_string(text).unwrap());
        }
        let array = json!([1.5, -2, 1e300, 0.1, u64::MAX, null, true]);
        assert_eq!(canonical_json(&array), serde_json::to_string(&array).unwrap());
        let h = ArgumentsHash::of(&json!({"a": "é\n"}));
        let back: ArgumentsHash = serde_json::from_value(serde_json::to_value(h).unwrap()).unwrap();
        assert_eq!(h, back);
    }
}
