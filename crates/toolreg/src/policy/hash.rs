//! [`ArgumentsHash`]: a stable fingerprint of a call's arguments.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::policy::canonical::{self, with_buffer};

/// SHA-256 of the canonical JSON form of a call's arguments (see
/// [`canonical_json`](super::canonical_json)), shown as 64 lower-case hex digits.
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
        with_buffer(|text| {
            // Writing a `Value` to memory cannot fail: its keys are strings.
            canonical::write_canonical(text, arguments);
            ArgumentsHash(Sha256::digest(text.as_slice()).into())
        })
    }

    /// Hash argument text as a model sends it: the same hash [`of`](Self::of)
    /// gives for the parsed value, or the parse error.
    ///
    /// Most argument text (strings without escapes, integers, nesting, in
    /// any key order) is brought to canonical form in one scan, and other
    /// text with sorted keys as serde_json parses it, without building a
    /// [`Value`]; only the rest is parsed into one first.
    ///
    /// ```
    /// use toolreg::policy::ArgumentsHash;
    /// use serde_json::json;
    ///
    /// let parsed = ArgumentsHash::of(&json!({"a": 2, "b": [1.5, "x"]}));
    /// assert_eq!(ArgumentsHash::of_json(r#"{"a": 2, "b": [1.5, "x"]}"#)?, parsed);
    /// assert_eq!(ArgumentsHash::of_json(r#"{"b": [1.5, "x"], "a": 2}"#)?, parsed);
    /// assert!(ArgumentsHash::of_json("{").is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn of_json(text: &str) -> Result<Self, serde_json::Error> {
        match canonical::with_canonical_text(text, |canonical| ArgumentsHash(Sha256::digest(canonical).into())) {
            Some(hash) => Ok(hash),
            None => serde_json::from_str::<Value>(text).map(|value| Self::of(&value)),
        }
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl ArgumentsHash {
    /// The 64 lowercase hex digits, written in one pass: an audit record
    /// writes one per call, and formatting byte by byte through `fmt` cost
    /// more than the SHA-256 itself.
    fn hex(&self) -> [u8; 64] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 64];
        for (i, byte) in self.0.iter().enumerate() {
            out[2 * i] = DIGITS[usize::from(byte >> 4)];
            out[2 * i + 1] = DIGITS[usize::from(byte & 0x0f)];
        }
        out
    }
}

impl fmt::Display for ArgumentsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.hex();
        // Only ASCII hex digits were written.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for ArgumentsHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ArgumentsHash({self})")
    }
}

impl Serialize for ArgumentsHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hex = self.hex();
        match std::str::from_utf8(&hex) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => Err(serde::ser::Error::custom("hex digits are ASCII")),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::canonical_json;
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

    #[test]
    fn hash_is_sha256_of_the_canonical_text() {
        let value = json!({"z": [1, {"y": "two", "b": null}], "a": {"k": 1.5e-7, "c": "\u{1}"}});
        let text = canonical_json(&value);
        assert_eq!(text, r#"{"a":{"c":"\u0001","k":1.5e-7},"z":[1,{"b":null,"y":"two"}]}"#);
        let expected: [u8; 32] = Sha256::digest(text.as_bytes()).into();
        assert_eq!(ArgumentsHash::of(&value).as_bytes(), &expected);
        // The reused buffer does not leak one call's text into the next.
        assert_eq!(ArgumentsHash::of(&json!({})), ArgumentsHash::of(&json!({})));
    }
}
