//! Standard formats only: schemars writes OpenAPI's and its own number
//! formats (`uint64`, `int32`, `double`, …) and `ip`, none of them JSON
//! Schema's, and hosts warn about each ("unknown format ignored"). A
//! generated schema says what matters with standard keywords: the format
//! is dropped, every unsigned integer has `minimum: 0`, the 8- and 16-bit
//! ones their `maximum` too, and validation (with serde behind it) still
//! enforces each type's whole range.

use serde_json::{Map, Number, Value};

/// The range an integer format stands for, as schemars bounds it:
/// `(minimum, maximum)`. The 8- and 16-bit types are bounded both ways
/// (what a model should know); the wider ones only by `minimum: 0` when
/// unsigned, as their other bounds (±2^31 and beyond) tell a model
/// nothing and cost every description they are written into. serde
/// enforces the whole range either way.
fn integer_range(format: &str) -> Option<(Option<Number>, Option<Number>)> {
    let signed = |min: i64, max: i64| Some((Some(Number::from(min)), Some(Number::from(max))));
    let unsigned = |max: Option<u64>| Some((Some(Number::from(0u8)), max.map(Number::from)));
    match format {
        "int8" => signed(i8::MIN.into(), i8::MAX.into()),
        "int16" => signed(i16::MIN.into(), i16::MAX.into()),
        "int32" | "int64" | "int128" | "int" => Some((None, None)),
        "uint8" => unsigned(Some(u8::MAX.into())),
        "uint16" => unsigned(Some(u16::MAX.into())),
        "uint32" | "uint64" | "uint128" | "uint" => unsigned(None),
        _ => None,
    }
}

/// Formats schemars writes that JSON Schema does not define, and that
/// carry nothing a bound does not: floating-point widths and `ip` (an IPv4
/// or IPv6 address, which the type's own parsing checks).
const DROPPED: &[&str] = &["float", "double", "ip"];

/// Whether `map` has an integer format whose bounds are exactly its type's
/// own (or looser): the range serde enforces when it reads the Rust
/// integer. A tighter bound (`#[schemars(range(min = 1))]`, a `NonZero`)
/// is a constraint serde does not check.
pub(super) fn has_type_bounds_only(map: &Map<String, Value>) -> bool {
    let Some((min, max)) = map.get("format").and_then(Value::as_str).and_then(integer_range) else {
        return false;
    };
    let within = |key: &str, natural: &Option<Number>, tighter: fn(f64, f64) -> bool| match map.get(key) {
        None => true,
        Some(Value::Number(given)) => match (natural, given.as_f64()) {
            (Some(natural), Some(given)) => natural.as_f64().is_some_and(|natural| !tighter(given, natural)),
            (None, _) => false,
            (_, None) => false,
        },
        Some(_) => false,
    };
    within("minimum", &min, |given, natural| given > natural)
        && within("maximum", &max, |given, natural| given < natural)
}

/// Rewrite every non-standard format schemars writes, in place, through
/// every subschema (values of `default`, `examples`, `const` and `enum` are
/// data, and left alone).
pub(super) fn standardise(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            standardise_node(map);
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "default" | "examples" | "example" | "const" | "enum") {
                    standardise(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standardise),
        _ => {}
    }
}

fn standardise_node(map: &mut Map<String, Value>) {
    let Some(format) = map.get("format").and_then(Value::as_str) else { return };
    if let Some((min, max)) = integer_range(format) {
        map.remove("format");
        // Bounds given beside the format (schemars' own, or tighter ones)
        // stay; the type's range fills what is missing.
        if let Some(min) = min {
            map.entry("minimum").or_insert(Value::Number(min));
        }
        if let Some(max) = max {
            map.entry("maximum").or_insert(Value::Number(max));
        }
    } else if DROPPED.contains(&format) {
        map.remove("format");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_formats_become_bounds_and_others_go() {
        let mut schema = json!({"type": "object", "properties": {
            "a": {"type": "integer", "format": "uint64", "minimum": 0},
            "b": {"type": "integer", "format": "uint32", "minimum": 0},
            "c": {"type": "integer", "format": "int32"},
            "d": {"type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255},
            "e": {"type": "number", "format": "double"},
            "f": {"type": "integer", "format": "uint", "minimum": 1},
            "g": {"type": "string", "format": "date-time"},
            "h": {"type": "string", "format": "ip"},
            "i": {"type": "integer", "format": "int64", "default": {"format": "int32"}}
        }});
        standardise(&mut schema);
        let p = &schema["properties"];
        assert_eq!(p["a"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(p["b"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(p["c"], json!({"type": "integer"}));
        assert_eq!(p["d"], json!({"type": ["integer", "null"], "minimum": 0, "maximum": 255}));
        assert_eq!(p["e"], json!({"type": "number"}));
        assert_eq!(p["f"], json!({"type": "integer", "minimum": 1}));
        assert_eq!(p["g"]["format"], "date-time");
        assert_eq!(p["h"], json!({"type": "string"}));
        assert_eq!(p["i"], json!({"type": "integer", "default": {"format": "int32"}}));
    }

    #[test]
    fn only_a_types_own_range_is_left_to_serde() {
        let bounds = |v: Value| has_type_bounds_only(v.as_object().unwrap());
        assert!(bounds(json!({"format": "uint8", "minimum": 0, "maximum": 255})));
        assert!(bounds(json!({"format": "uint64", "minimum": 0})));
        assert!(bounds(json!({"format": "int32"})));
        assert!(!bounds(json!({"format": "uint32", "minimum": 0, "maximum": 10})));
        assert!(!bounds(json!({"format": "uint64", "minimum": 1})), "a NonZeroU64");
        assert!(!bounds(json!({"format": "uint8", "minimum": 0, "maximum": 9})));
        assert!(!bounds(json!({"format": "int64", "minimum": -5})));
        assert!(!bounds(json!({"minimum": 0})));
    }
}
