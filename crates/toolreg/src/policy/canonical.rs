//! The canonical JSON text of arguments: object keys sorted by their UTF-8
//! bytes, no whitespace, strings and numbers as serde_json writes them.
//! [`ArgumentsHash`](super::ArgumentsHash) hashes it.
//!
//! Argument text is brought to that form without building a [`Value`] when
//! possible, on the fastest of three paths:
//!
//! 1. [`compact_simple`]: text of objects, arrays, strings without escapes,
//!    integers, `true`, `false` and `null` is canonical once the whitespace
//!    is gone and each object's members are sorted (most arguments models send);
//! 2. [`transcode`]: anything else with sorted keys is parsed by serde_json
//!    and written back token by token;
//! 3. otherwise the caller parses a [`Value`] and writes it with [`write_canonical`].

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

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

/// Write the canonical text of JSON `text` into the empty `out`, without
/// building a [`Value`], and say whether that worked. It does not when the
/// text is not JSON, or when an object's keys are out of order or repeat:
/// only a parsed [`Value`] can sort them (and keep the last of two equal keys).
pub(crate) fn write_canonical_text(text: &str, out: &mut Vec<u8>) -> bool {
    if compact_simple(text.as_bytes(), out) {
        return true;
    }
    out.clear();
    transcode(text, out)
}

/// Containers nested deeper than this take the serde path.
const SIMPLE_MAX_DEPTH: usize = 32;

/// Objects with more members than this take the serde path.
const SIMPLE_MAX_MEMBERS: usize = 16;

/// The fast path: write `text` without its whitespace, each object's members
/// sorted by key, when it is made only of objects of at most
/// [`SIMPLE_MAX_MEMBERS`] members with distinct keys, arrays, strings without
/// escapes, integers of at most 18 digits (other than `-0`), `true`, `false`
/// and `null`. That is what serde_json writes for its parsed value: JSON forbids a bare quote, backslash or control character in a
/// string, which are all the characters serde_json escapes, and an integer
/// that fits in an `i64` is written back digit for digit. Anything else,
/// valid JSON or not, returns `false`.
fn compact_simple(text: &[u8], out: &mut Vec<u8>) -> bool {
    let mut scanner = Simple { text, pos: 0, copied: 0, out };
    let simple = scanner.value(0) && {
        scanner.skip_whitespace();
        scanner.pos == text.len()
    };
    if simple {
        scanner.out.extend_from_slice(&text[scanner.copied..]);
    }
    simple
}

/// The state of [`compact_simple`]: a recursive-descent reader of the simple
/// subset. It only checks; the text between runs of whitespace is copied to
/// `out` as whitespace is skipped.
struct Simple<'t, 'o> {
    text: &'t [u8],
    pos: usize,
    /// The text before this has been copied to `out`, less its whitespace.
    copied: usize,
    out: &'o mut Vec<u8>,
}

impl<'t> Simple<'t, '_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        if let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.out.extend_from_slice(&self.text[self.copied..self.pos]);
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
                self.pos += 1;
            }
            self.copied = self.pos;
        }
    }

    /// Step over the next byte when it is `byte`.
    fn punctuation(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    fn value(&mut self, depth: usize) -> bool {
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') if depth < SIMPLE_MAX_DEPTH => self.object(depth + 1),
            Some(b'[') if depth < SIMPLE_MAX_DEPTH => self.array(depth + 1),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            _ => false,
        }
    }

    /// Copy the text read so far to `out`, so that `out.len()` marks the
    /// current position.
    fn flush(&mut self) {
        self.out.extend_from_slice(&self.text[self.copied..self.pos]);
        self.copied = self.pos;
    }

    /// An object; members whose keys are out of order (models often follow
    /// the schema's order) are sorted in `out` once the object is read.
    fn object(&mut self, depth: usize) -> bool {
        self.pos += 1; // `{`
        if self.punctuation(b'}') {
            return true;
        }
        self.flush();
        let open = self.out.len() - 1;
        // Each member's key and where `"key":value` is in `out`.
        let mut members: [(&[u8], usize, usize); SIMPLE_MAX_MEMBERS] = [(&[], 0, 0); SIMPLE_MAX_MEMBERS];
        let mut count = 0;
        let mut sorted = true;
        loop {
            self.skip_whitespace();
            self.flush();
            let start = self.out.len();
            let Some(key) = self.string() else { return false };
            if count == SIMPLE_MAX_MEMBERS || !(self.punctuation(b':') && self.value(depth)) {
                return false;
            }
            self.flush();
            // Raw bytes compare as the keys do: neither has an escape.
            sorted &= count == 0 || members[count - 1].0 < key;
            members[count] = (key, start, self.out.len());
            count += 1;
            if self.punctuation(b'}') {
                break;
            }
            if !self.punctuation(b',') {
                return false;
            }
        }
        if sorted {
            return true;
        }
        let members = &mut members[..count];
        members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return false; // a repeated key: a `Value` keeps the last one
        }
        // Write the sorted members after the text, then move them into place.
        self.flush();
        let end = self.out.len();
        for (index, &(_, start, stop)) in members.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_within(start..stop);
        }
        self.out.push(b'}');
        self.out.copy_within(end.., open + 1);
        self.out.truncate(open + 1 + (self.out.len() - end));
        true
    }

    fn array(&mut self, depth: usize) -> bool {
        self.pos += 1; // `[`
        if self.punctuation(b']') {
            return true;
        }
        loop {
            if !self.value(depth) {
                return false;
            }
            if self.punctuation(b']') {
                return true;
            }
            if !self.punctuation(b',') {
                return false;
            }
        }
    }

    /// A string with no escape and no control character; returns its content.
    fn string(&mut self) -> Option<&'t [u8]> {
        let text: &'t [u8] = self.text;
        if text.get(self.pos) != Some(&b'"') {
            return None;
        }
        let start = self.pos + 1;
        let length = text[start..].iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        let end = start + length;
        if text[end] != b'"' {
            return None;
        }
        self.pos = end + 1;
        Some(&text[start..end])
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let found = self.text[self.pos..].starts_with(word);
        self.pos += if found { word.len() } else { 0 };
        found
    }

    /// `-?(0|[1-9][0-9]*)` of at most 18 digits, not `-0`, not followed by a
    /// fraction or an exponent.
    fn integer(&mut self) -> bool {
        let negative = self.peek() == Some(b'-');
        let digits_start = self.pos + usize::from(negative);
        let digits = self.text[digits_start..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = digits_start + digits;
        let leading_zero = self.text.get(digits_start) == Some(&b'0');
        let simple = (1..=18).contains(&digits)
            && !(leading_zero && (digits > 1 || negative))
            && !matches!(self.text.get(end), Some(b'.' | b'e' | b'E'));
        if simple {
            self.pos = end;
        }
        simple
    }
}

/// The serde path of [`write_canonical_text`]: write the canonical form of
/// JSON `text` into `out` as serde_json parses it.
///
/// Each scalar goes through the same serde_json visitor call, then the same
/// serde_json writer, as a `Value` would, so the text is byte for byte what
/// [`canonical_json`] writes for the parsed value.
fn transcode(text: &str, out: &mut Vec<u8>) -> bool {
    let mut parser = serde_json::Deserializer::from_str(text);
    CanonicalText(out).deserialize(&mut parser).and_then(|()| parser.end()).is_ok()
}

/// Writes what it is deserialised from as canonical JSON; see [`transcode`].
struct CanonicalText<'o>(&'o mut Vec<u8>);

impl CanonicalText<'_> {
    fn write<T: Serialize + ?Sized>(self, scalar: &T) {
        // Writing a string or a number to memory cannot fail.
        let _ = serde_json::to_writer(self.0, scalar);
    }

    /// Write a string; `verbatim` when it was borrowed from the text, which
    /// means it had no escape there. JSON text cannot hold a bare quote,
    /// backslash or control character in a string (serde_json refuses
    /// them), and those are all serde_json escapes: the text is already
    /// written as serde_json would write it.
    fn string(self, v: &str, verbatim: bool) {
        if verbatim {
            self.0.reserve(v.len() + 2);
            self.0.push(b'"');
            self.0.extend_from_slice(v.as_bytes());
            self.0.push(b'"');
        } else {
            self.write(v);
        }
    }
}

impl<'de> DeserializeSeed<'de> for CanonicalText<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CanonicalText<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.write(&v);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.write(v);
        Ok(())
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.string(v, true);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            let mark = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(CanonicalText(&mut *self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        let mut previous: Option<Cow<'de, str>> = None;
        while let Some(Key(key)) = map.next_key_seed(KeySeed)? {
            match &previous {
                Some(previous) if previous.as_bytes() >= key.as_bytes() => {
                    return Err(serde::de::Error::custom("object keys out of order"));
                }
                Some(_) => self.0.push(b','),
                // With serde_json's `arbitrary_precision`, a number comes as
                // a map with this one key: leave it to `Value`.
                None if key.starts_with("$serde_json::private::") => {
                    return Err(serde::de::Error::custom("a serde_json private value"));
                }
                None => {}
            }
            CanonicalText(&mut *self.0).string(&key, matches!(key, Cow::Borrowed(_)));
            self.0.push(b':');
            map.next_value_seed(CanonicalText(&mut *self.0))?;
            previous = Some(key);
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v)))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ArgumentsHash;

    /// `of_json` must agree with `of` on the parsed value for every text,
    /// whether it takes the one-pass path or falls back to parsing.
    #[test]
    fn hash_of_text_matches_hash_of_value() {
        let texts = [
            r#"{"a": 2, "b": 40}"#,
            r#"{"b": 40, "a": 2}"#,
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": {"z": 1, "y": [true, false, null]}, "b": []}"#,
            r#"{"\u0061b": 1, "a": 2, "é": "\u00e9\n\"", "\ud83d\ude00": "😀"}"#,
            r#"{"n": [-0, 0, -0.0, 1e2, 1.0, 1.5e-7, 18446744073709551615, -9223372036854775808, 0.1]}"#,
            r#"{"big": 18446744073709551616, "tiny": 5e-324, "exp": 1E+2}"#,
            r#"  [ "x" , { } , [ ] , {"b": {}, "a": []} ]  "#,
            "null",
            "\"text\"",
            "12",
            r#"{"$serde_json::private::Number": "1"}"#,
            "{}",
        ];
        for text in texts {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ArgumentsHash::of_json(text).unwrap(), ArgumentsHash::of(&value), "{text}");
        }
        for bad in ["", "{", r#"{"a": 1} x"#, r#"{"a": 1e400}"#, "[1,]", r#"{"a" 1}"#, "nul"] {
            assert!(ArgumentsHash::of_json(bad).is_err(), "{bad}");
        }
    }

    /// The one-pass path writes exactly the canonical text (checked on the
    /// buffer, not only through the hash).
    #[test]
    fn one_pass_text_is_the_canonical_text() {
        let text = r#"{"a": [1, 2.50, "\u00e9"], "b": {"c": null, "d": -3}}"#;
        let mut out = Vec::new();
        assert!(transcode(text, &mut out));
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), canonical_json(&value));
        let mut out = Vec::new();
        assert!(!transcode(r#"{"b": 1, "a": 2}"#, &mut out), "unsorted keys take the parsed path");
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            ".{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::btree_map("[a-c\"\\\\é\\n]{0,3}", inner, 0..5)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// JSON text for `value` with every object's keys in reverse order when
    /// `reverse`, and a space after each separator.
    fn text_in_order(value: &Value, reverse: bool) -> String {
        match value {
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|item| text_in_order(item, reverse)).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Object(map) => {
                let mut entries: Vec<String> = map
                    .iter()
                    .map(|(key, item)| format!("{}: {}", Value::from(key.as_str()), text_in_order(item, reverse)))
                    .collect();
                if reverse {
                    entries.reverse();
                }
                format!("{{{}}}", entries.join(", "))
            }
            scalar => scalar.to_string(),
        }
    }

    proptest::proptest! {
        #[test]
        fn any_json_text_hashes_like_its_value(value in json_value(), reverse in proptest::bool::ANY) {
            let text = text_in_order(&value, reverse);
            let parsed: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(ArgumentsHash::of_json(&text).unwrap(), ArgumentsHash::of(&parsed));
            proptest::prop_assert_eq!(ArgumentsHash::of(&parsed), ArgumentsHash::of(&value));
        }
    }

    fn simple(text: &str) -> Option<String> {
        let mut out = Vec::new();
        compact_simple(text.as_bytes(), &mut out).then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_simple_path_takes_common_arguments_and_leaves_the_rest() {
        let taken = [
            (r#"{"a": 2, "b": 40}"#, r#"{"a":2,"b":40}"#),
            (" {\n\t\"path\" : \"/tmp/é x\", \"force\"\r: true} ", r#"{"force":true,"path":"/tmp/é x"}"#),
            (r#"{"b": 1, "a": 2}"#, r#"{"a":2,"b":1}"#),
            (
                r#"{"z": {"y": [1, {"b": 0, "a": 0}], "x": null}, "a": []}"#,
                r#"{"a":[],"z":{"x":null,"y":[1,{"a":0,"b":0}]}}"#,
            ),
            (
                r#"{"a": [], "b": {}, "c": [null, false, -12, 0, "", {"x": "y"}]}"#,
                r#"{"a":[],"b":{},"c":[null,false,-12,0,"",{"x":"y"}]}"#,
            ),
            ("123456789012345678", "123456789012345678"),
            ("\"\u{7f} ünï\"", "\"\u{7f} ünï\""),
        ];
        for (text, expected) in taken {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(simple(text).as_deref(), Some(expected), "{text}");
            assert_eq!(expected, canonical_json(&value), "{text}");
        }
        let nested = format!("{}1{}", "[".repeat(SIMPLE_MAX_DEPTH + 1), "]".repeat(SIMPLE_MAX_DEPTH + 1));
        let many = format!(
            "{{{}}}",
            (0..=SIMPLE_MAX_MEMBERS).map(|i| format!(r#""k{i:02}": {i}"#)).collect::<Vec<_>>().join(", ")
        );
        let left = [
            r#"{"a": 1, "a": 2}"#,
            r#"{"b": 1, "a": 2, "b": 3}"#,
            many.as_str(),
            r#"{"a": "x\ny"}"#,
            r#"{"a\u0062": 1}"#,
            "-0",
            "1.0",
            "1e2",
            "1234567890123456789",
            nested.as_str(),
            // Not JSON at all: the serde path reports it.
            "01",
            "-",
            "[1,]",
            r#"{"a":1,}"#,
            "{,}",
            "[,1]",
            r#"{"a" 1}"#,
            r#"{"a":1} x"#,
            "tru",
            "nulls",
            "\"open",
            "\"tab\tinside\"",
            "",
        ];
        for text in left {
            assert_eq!(simple(text), None, "{text}");
            if let Ok(value) = serde_json::from_str::<Value>(text) {
                assert_eq!(ArgumentsHash::of_json(text).unwrap(), ArgumentsHash::of(&value), "{text}");
            }
        }
    }

    proptest::proptest! {
        /// Whatever the simple path accepts is JSON, and it writes exactly
        /// the canonical text of it: checked on text made of JSON's
        /// characters in any order, mostly not JSON at all.
        #[test]
        fn the_simple_path_accepts_only_json_and_writes_its_canonical_text(
            text in "[{}\\[\\],:\" \\n ab01\\-.etrunlfs\\\\]{0,20}"
        ) {
            if let Some(out) = simple(&text) {
                let value: Value = serde_json::from_str(&text).map_err(|e| {
                    proptest::test_runner::TestCaseError::fail(format!("{text:?} was taken but is not JSON: {e}"))
                })?;
                proptest::prop_assert_eq!(out, canonical_json(&value));
            }
        }
    }
}
