//! [`ArgumentsHash`]: a stable fingerprint of a call's arguments.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
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
        with_buffer(|text| {
            // Writing a `Value` to memory cannot fail: its keys are strings.
            let _ = serde_json::to_writer(&mut *text, &Canonical(arguments));
            ArgumentsHash(Sha256::digest(text.as_slice()).into())
        })
    }

    /// Hash argument text as a model sends it: the same hash [`of`](Self::of)
    /// gives for the parsed value, or the parse error.
    ///
    /// Text whose objects list their keys in sorted order (as serde_json and
    /// most models write them) is hashed in one pass, without building a
    /// [`Value`]; other text is parsed first.
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
        match with_buffer(|canonical| {
            transcode_canonical(text, canonical).then(|| ArgumentsHash(Sha256::digest(canonical.as_slice()).into()))
        }) {
            Some(hash) => Ok(hash),
            None => serde_json::from_str::<Value>(text).map(|value| Self::of(&value)),
        }
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
    // Writing a `Value` to a string cannot fail: its keys are strings.
    serde_json::to_string(&Canonical(value)).unwrap_or_default()
}

/// Run `f` on an empty byte buffer, reused between calls on a thread: the
/// canonical text is built, hashed and dropped.
fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
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

/// Write the canonical form of JSON `text` into `out` as it is parsed, and
/// say whether that worked. It does not when the text is not JSON, or when an
/// object's keys are out of order or repeat: only a parsed [`Value`] can
/// sort them (and keep the last of two equal keys).
///
/// Each scalar goes through the same serde_json visitor call, then the same
/// serde_json writer, as a `Value` would, so the text is byte for byte what
/// [`canonical_json`] writes for the parsed value.
fn transcode_canonical(text: &str, out: &mut Vec<u8>) -> bool {
    let mut parser = serde_json::Deserializer::from_str(text);
    CanonicalText(out).deserialize(&mut parser).and_then(|()| parser.end()).is_ok()
}

/// Writes what it is deserialised from as canonical JSON; see [`transcode_canonical`].
struct CanonicalText<'o>(&'o mut Vec<u8>);

impl CanonicalText<'_> {
    fn write<T: Serialize + ?Sized>(self, scalar: &T) {
        // Writing a string or a number to memory cannot fail.
        let _ = serde_json::to_writer(self.0, scalar);
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
            CanonicalText(&mut *self.0).write(&*key);
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
        assert!(transcode_canonical(text, &mut out));
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), canonical_json(&value));
        let mut out = Vec::new();
        assert!(!transcode_canonical(r#"{"b": 1, "a": 2}"#, &mut out), "unsorted keys take the parsed path");
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
}
