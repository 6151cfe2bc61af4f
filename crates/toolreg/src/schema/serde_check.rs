//! Where serde and a schema disagree: whether a typed tool's schema refuses
//! arguments serde accepts, so that its arguments must be validated against
//! the schema before serde reads them.

use serde_json::{Map, Value};

/// Whether serde accepts arguments this schema refuses, so that a typed tool
/// with it is validated against the schema before serde sees the arguments:
/// keywords that restrict values beyond their type, which serde does not
/// enforce. (Structs nested in the arguments need no such check: the typed
/// call path deserialises through [`strict_de`](crate::strict_de), which
/// takes a struct only from an object, as the schema does.)
pub(crate) fn serde_accepts_more_than(schema: &Value) -> bool {
    accepts_more(schema)
}

fn accepts_more(schema: &Value) -> bool {
    const CONSTRAINTS: &[&str] = &[
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minProperties",
        "maxProperties",
        "const",
        "not",
        "if",
        "contains",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
    ];
    match schema {
        Value::Object(map) => {
            // A string `const` is how schemars writes an enum's unit variant,
            // whose name serde checks like `enum`'s.
            let string_const = map.get("const").is_some_and(Value::is_string);
            let constrained = CONSTRAINTS.iter().any(|k| map.contains_key(*k) && !(*k == "const" && string_const));
            if constrained || is_buffered_union(map) {
                return true;
            }
            if (map.contains_key("minimum") || map.contains_key("maximum")) && !is_rust_integer_format(map) {
                return true;
            }
            map.iter().any(|(keyword, value)| match (keyword.as_str(), value) {
                ("default" | "examples" | "enum" | "description", _) => false,
                // Maps of named schemas, not schemas themselves.
                ("properties" | "patternProperties" | "$defs" | "definitions", Value::Object(schemas)) => {
                    schemas.values().any(accepts_more)
                }
                _ => accepts_more(value),
            })
        }
        Value::Array(schemas) => schemas.iter().any(accepts_more),
        _ => false,
    }
}

/// A union serde reads through its own buffer (untagged, internally and
/// adjacently tagged enums, flattened enums), where the strict deserializer
/// cannot reach. An externally tagged enum — serde's default, whose schema
/// is a union of unit-variant strings and one-key objects — is read through
/// the deserializer's own enum access and is not one; nor is `Option`'s
/// "this or null".
fn is_buffered_union(map: &Map<String, Value>) -> bool {
    if map.contains_key("allOf") {
        return true;
    }
    let not_null = |branch: &&Value| branch.get("type").and_then(Value::as_str) != Some("null");
    let branches: Vec<&Value> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_array))
        .flatten()
        .filter(not_null)
        .collect();
    branches.len() > 1 && !branches.iter().all(|branch| is_external_variant(branch))
}

/// A branch of an externally tagged enum: a unit variant's string, or an
/// object with exactly one property, required, and nothing else allowed.
fn is_external_variant(branch: &Value) -> bool {
    let is_string_const = branch.get("type").and_then(Value::as_str) == Some("string")
        && (branch.get("const").is_some_and(Value::is_string)
            || branch.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_string)));
    if is_string_const {
        return true;
    }
    let one_key = branch.get("properties").and_then(Value::as_object).filter(|p| p.len() == 1);
    let required = branch.get("required").and_then(Value::as_array);
    match (one_key, required) {
        (Some(props), Some(required)) => {
            branch.get("additionalProperties") == Some(&Value::Bool(false))
                && required.len() == 1
                && props.keys().next().is_some_and(|k| required[0] == *k)
        }
        _ => false,
    }
}

/// schemars writes `minimum`/`maximum` for Rust integer types, whose range
/// serde enforces itself; a tighter bound is a constraint.
fn is_rust_integer_format(map: &Map<String, Value>) -> bool {
    super::formats::has_type_bounds_only(map)
}
