//! Every path of the canonical text against the `Value` writer.

use super::simple::{SIMPLE_MAX_DEPTH, SIMPLE_MAX_MEMBERS, SIMPLE_STACK_TEXT};
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
        // Floats written as serde_json writes them are kept as they are.
        (r#"{"w": 2.0, "c": {"z": 0.5, "a": -1.25}}"#, r#"{"c":{"a":-1.25,"z":0.5},"w":2.0}"#),
        ("[1.0, -0.0, 1.5e-7, 1e+20, 0.1]", "[1.0,-0.0,1.5e-7,1e+20,0.1]"),
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
        // Floats serde_json writes otherwise.
        "1e2",
        "2.50",
        "1.0e0",
        "1E+2",
        "1e20",
        "100000000000000000000.0",
        "01.5",
        "1.",
        "1.5-",
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
        text in "[{}\\[\\],:\" \\n ab015\\-+.eEtrunlfs\\\\]{0,20}"
    ) {
        if let Some(out) = simple(&text) {
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{text:?} was taken but is not JSON: {e}"))
            })?;
            proptest::prop_assert_eq!(out, canonical_json(&value));
        }
    }
}

proptest::proptest! {
    /// Numbers in every form JSON allows hash as their parsed value does,
    /// whichever path takes them.
    #[test]
    fn numbers_in_any_form_hash_like_their_value(
        number in "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?",
        unsorted in proptest::bool::ANY,
    ) {
        let text = if unsorted { format!(r#"{{"b": {number}, "a": [{number}]}}"#) } else { format!("[{number}]") };
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            proptest::prop_assert_eq!(ArgumentsHash::of_json(&text).unwrap(), ArgumentsHash::of(&value));
            if let Some(out) = simple(&text) {
                proptest::prop_assert_eq!(out, canonical_json(&value));
            }
        }
    }
}
