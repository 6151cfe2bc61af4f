//! The canonical JSON text of arguments: object keys sorted by their UTF-8
//! bytes, no whitespace, strings and numbers as serde_json writes them.
//! [`ArgumentsHash`](super::ArgumentsHash) hashes it.
//!
//! Argument text is brought to that form without building a [`Value`] when
//! possible, on the fastest of three paths:
//!
//! 1. [`simple_canonical`]: text of objects, arrays, strings without escapes,
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

/// Containers nested deeper than this take the serde path.
const SIMPLE_MAX_DEPTH: usize = 32;

/// Objects with more members than this take the serde path.
const SIMPLE_MAX_MEMBERS: usize = 16;

/// Text up to this long is made canonical on the stack: most arguments are
/// short, and a buffer on the stack costs nothing to find or to give back.
const SIMPLE_STACK_TEXT: usize = 256;

/// The fast path: call `f` with `text` without its whitespace, each object's
/// members sorted by key, when [`SimpleCheck`] found it made only of objects
/// of at most [`SIMPLE_MAX_MEMBERS`] members, arrays, strings without escapes,
/// integers of at most 18 digits (other than `-0`), `true`, `false` and
/// `null`. That is what serde_json writes for its parsed value: JSON forbids
/// a bare quote, backslash or control character in a string, which are all
/// the characters serde_json escapes, and an integer that fits in an `i64`
/// is written back digit for digit. `None` when an object repeats a key.
///
/// Text that is canonical already (compact, keys in order) is not copied;
/// other text is copied without whitespace, then, only when some keys are
/// out of order, the copy's members are sorted.
fn simple_canonical<R>(text: &[u8], shape: SimpleShape, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
    if !shape.whitespace && !shape.unsorted {
        return Some(f(text));
    }
    // The compact text; then, if keys need sorting, room to sort an object's members in.
    let mut stack = [0u8; SIMPLE_STACK_TEXT];
    let mut heap = Vec::new();
    let buf = stack_or_heap(&mut stack, &mut heap, text.len());
    let len = strip_whitespace(text, buf);
    let compact = &mut buf[..len];
    if shape.unsorted {
        let mut stack = [0u8; SIMPLE_STACK_TEXT];
        let mut heap = Vec::new();
        sort_members(compact, stack_or_heap(&mut stack, &mut heap, len), 0)?;
    }
    Some(f(compact))
}

/// `len` bytes of `stack` if it is long enough, else of `heap`.
fn stack_or_heap<'b>(stack: &'b mut [u8], heap: &'b mut Vec<u8>, len: usize) -> &'b mut [u8] {
    match stack.get_mut(..len) {
        Some(buf) => buf,
        None => {
            heap.resize(len, 0);
            heap
        }
    }
}

/// What [`SimpleCheck`] found out about simple text.
#[derive(Clone, Copy)]
struct SimpleShape {
    /// There is whitespace between tokens.
    whitespace: bool,
    /// Some object's keys are not in strictly increasing order.
    unsorted: bool,
}

/// The check pass of [`simple_canonical`]: a recursive-descent reader of the
/// simple subset. Each step takes the position to read from and returns the
/// position after what it read, or `None` when the text is not simple.
struct SimpleCheck<'t> {
    text: &'t [u8],
    shape: SimpleShape,
}

impl<'t> SimpleCheck<'t> {
    /// Check that `text` is simple, and say what it is like.
    fn of(text: &'t [u8]) -> Option<SimpleShape> {
        let mut check = SimpleCheck { text, shape: SimpleShape { whitespace: false, unsorted: false } };
        let end = check.value(0, 0)?;
        (check.skip_whitespace(end) == text.len()).then_some(check.shape)
    }

    fn skip_whitespace(&mut self, from: usize) -> usize {
        let mut at = from;
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(at) {
            at += 1;
        }
        self.shape.whitespace |= at != from;
        at
    }

    fn value(&mut self, at: usize, depth: usize) -> Option<usize> {
        let at = self.skip_whitespace(at);
        match *self.text.get(at)? {
            b'{' if depth < SIMPLE_MAX_DEPTH => self.object(at + 1, depth + 1),
            b'[' if depth < SIMPLE_MAX_DEPTH => self.array(at + 1, depth + 1),
            b'"' => self.string(at).map(|(_, end)| end),
            b't' => self.literal(at, b"true"),
            b'f' => self.literal(at, b"false"),
            b'n' => self.literal(at, b"null"),
            b'-' | b'0'..=b'9' => self.integer(at),
            _ => None,
        }
    }

    /// The members of an object, from just after its `{`.
    fn object(&mut self, at: usize, depth: usize) -> Option<usize> {
        let mut at = self.skip_whitespace(at);
        if self.text.get(at) == Some(&b'}') {
            return Some(at + 1);
        }
        let mut previous: Option<&[u8]> = None;
        for _ in 0..SIMPLE_MAX_MEMBERS {
            let (key, after_key) = self.string(at)?;
            // Raw bytes compare as the keys do: neither has an escape. An
            // equal key counts as out of order; the sort pass refuses it.
            self.shape.unsorted |= previous.is_some_and(|previous| previous >= key);
            previous = Some(key);
            at = self.skip_whitespace(after_key);
            if self.text.get(at) != Some(&b':') {
                return None;
            }
            at = self.value(at + 1, depth)?;
            at = self.skip_whitespace(at);
            match self.text.get(at) {
                Some(b'}') => return Some(at + 1),
                Some(b',') => at = self.skip_whitespace(at + 1),
                _ => return None,
            }
        }
        None
    }

    /// The items of an array, from just after its `[`.
    fn array(&mut self, at: usize, depth: usize) -> Option<usize> {
        let mut at = self.skip_whitespace(at);
        if self.text.get(at) == Some(&b']') {
            return Some(at + 1);
        }
        loop {
            at = self.value(at, depth)?;
            at = self.skip_whitespace(at);
            match self.text.get(at) {
                Some(b']') => return Some(at + 1),
                Some(b',') => at += 1,
                _ => return None,
            }
        }
    }

    /// A string with no escape and no control character: its content, and
    /// the position after its closing quote.
    fn string(&self, at: usize) -> Option<(&'t [u8], usize)> {
        let text: &'t [u8] = self.text;
        if text.get(at) != Some(&b'"') {
            return None;
        }
        let content = &text[at + 1..];
        let length = content.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        (content[length] == b'"').then(|| (&content[..length], at + 1 + length + 1))
    }

    fn literal(&self, at: usize, word: &[u8]) -> Option<usize> {
        self.text[at..].starts_with(word).then_some(at + word.len())
    }

    /// `-?(0|[1-9][0-9]*)` of at most 18 digits, not `-0`, not followed by a
    /// fraction or an exponent.
    fn integer(&self, at: usize) -> Option<usize> {
        let negative = self.text[at] == b'-';
        let digits_start = at + usize::from(negative);
        let digits = self.text[digits_start..].iter().take_while(|b| b.is_ascii_digit()).count();
        let end = digits_start + digits;
        let leading_zero = self.text.get(digits_start) == Some(&b'0');
        let simple = (1..=18).contains(&digits)
            && !(leading_zero && (digits > 1 || negative))
            && !matches!(self.text.get(end), Some(b'.' | b'e' | b'E'));
        simple.then_some(end)
    }
}

/// Copy simple text without the whitespace between its tokens to the start
/// of `out` (as long as `text`), and return how long the copy is. A simple
/// string has no escape, so each quote opens or closes one.
fn strip_whitespace(text: &[u8], out: &mut [u8]) -> usize {
    let mut kept = 0;
    let mut in_string = false;
    for &byte in text {
        if in_string | !is_whitespace(byte) {
            if let Some(slot) = out.get_mut(kept) {
                *slot = byte;
            }
            kept += 1;
        }
        in_string ^= byte == b'"';
    }
    kept
}

/// JSON's whitespace, tested without a branch.
fn is_whitespace(byte: u8) -> bool {
    const WHITESPACE: u64 = 1 << b' ' | 1 << b'\t' | 1 << b'\n' | 1 << b'\r';
    // The shift wraps for bytes past 63, which the first test rules out.
    (byte <= b' ') & (WHITESPACE.wrapping_shr(u32::from(byte)) & 1 == 1)
}

/// The sort pass of [`simple_canonical`]: sort the members of every object
/// in the compact simple value at `text[at..]` by key, and return where the
/// value ends; `None` when an object repeats a key (a `Value` keeps the last
/// one). `scratch`, as long as `text`, is where an object's members are put
/// in order.
///
/// The text has been checked, so it is read without checking again; any
/// surprise is answered `None` too, which only sends the text down the
/// serde path.
fn sort_members(text: &mut [u8], scratch: &mut [u8], at: usize) -> Option<usize> {
    match *text.get(at)? {
        b'{' => {
            let open = at;
            let mut at = at + 1;
            if *text.get(at)? == b'}' {
                return Some(at + 1);
            }
            // Each member's span, and where its key ends (the key is
            // `text[start + 1..key_end]`).
            let mut members = [(0usize, 0usize, 0usize); SIMPLE_MAX_MEMBERS];
            let mut count = 0;
            let close = loop {
                let key_end = closing_quote(text, at + 1)?;
                let end = sort_members(text, scratch, key_end + 2)?; // after `":`
                *members.get_mut(count)? = (at, key_end, end);
                count += 1;
                at = end + 1;
                if *text.get(end)? == b'}' {
                    break at;
                }
            };
            let members = &mut members[..count];
            members.sort_unstable_by(|a, b| key(text, *a).cmp(key(text, *b)));
            if members.windows(2).any(|pair| key(text, pair[0]) == key(text, pair[1])) {
                return None;
            }
            // Put the members in order in the scratch space, then back in place.
            let mut written = 0;
            for (index, &(start, _, end)) in members.iter().enumerate() {
                if index > 0 {
                    *scratch.get_mut(written)? = b',';
                    written += 1;
                }
                scratch.get_mut(written..written + end - start)?.copy_from_slice(&text[start..end]);
                written += end - start;
            }
            text.get_mut(open + 1..open + 1 + written)?.copy_from_slice(&scratch[..written]);
            Some(close)
        }
        b'[' => {
            let mut at = at + 1;
            if *text.get(at)? == b']' {
                return Some(at + 1);
            }
            loop {
                let end = sort_members(text, scratch, at)?;
                at = end + 1;
                if *text.get(end)? == b']' {
                    return Some(at);
                }
            }
        }
        b'"' => closing_quote(text, at + 1).map(|end| end + 1),
        _ => {
            let rest = &text[at..];
            Some(at + rest.iter().position(|b| matches!(b, b',' | b']' | b'}')).unwrap_or(rest.len()))
        }
    }
}

/// The key of a member found by [`sort_members`].
fn key(buf: &[u8], (start, key_end, _): (usize, usize, usize)) -> &[u8] {
    &buf[start + 1..key_end]
}

/// The position of the first quote at or after `from`.
fn closing_quote(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.iter().position(|&b| b == b'"').map(|length| from + length)
}

/// The serde path of [`with_canonical_text`]: write the canonical form of
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
        let shape = SimpleCheck::of(text.as_bytes())?;
        simple_canonical(text.as_bytes(), shape, |canonical| String::from_utf8(canonical.to_vec()).unwrap())
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
        // Past the stack buffer: the same passes, on the heap.
        let long = format!(r#"{{"z": "{}", "a": [3, 2, {{"y": 1, "x": 0}}]}}"#, "w ".repeat(SIMPLE_STACK_TEXT));
        let long_expected = format!(r#"{{"a":[3,2,{{"x":0,"y":1}}],"z":"{}"}}"#, "w ".repeat(SIMPLE_STACK_TEXT));
        let taken = taken.into_iter().chain([(long.as_str(), long_expected.as_str())]);
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
