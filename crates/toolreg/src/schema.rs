//! The canonical JSON Schema of a tool: generated from Rust types with
//! schemars, or taken raw and cleaned.
//!
//! "Clean" means what every provider can read: no `$schema`, no root `title`
//! (schemars puts the Rust type name there), and every `$ref` inlined except
//! those that make a recursive type, which keep their `$defs`.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The JSON Schema of `T`, generated with schemars and [`clean`]ed.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Args {
///     /// The city to look up.
///     city: String,
///     days: Option<u8>,
/// }
/// let schema = toolreg::schema::schema_for::<Args>();
/// assert_eq!(schema["properties"]["city"]["description"], "The city to look up.");
/// assert_eq!(schema["required"], serde_json::json!(["city"]));
/// assert!(schema.get("title").is_none() && schema.get("$schema").is_none());
/// ```
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    clean(&mut value);
    value
}

/// Make a schema readable by every provider, in place: drop `$schema` and the
/// root `title`, inline local `$ref`s that do not recurse, and drop `$defs`
/// nothing refers to any more.
pub fn clean(schema: &mut Value) {
    let Value::Object(root) = schema else { return };
    root.remove("$schema");
    root.remove("title");
    let defs = take_defs(root);
    if defs.is_empty() {
        return;
    }
    let mut kept = BTreeSet::new();
    let mut stack = Vec::new();
    inline_refs(schema, &defs, &mut stack, &mut kept);
    if kept.is_empty() {
        return;
    }
    // Definitions that recurse stay, themselves inlined but for the recursive refs.
    let mut out = Map::new();
    let mut pending: Vec<String> = kept.iter().cloned().collect();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(def) = defs.get(&name) else { continue };
        let mut def = def.clone();
        let mut stack = vec![name.clone()];
        let mut more = BTreeSet::new();
        inline_refs(&mut def, &defs, &mut stack, &mut more);
        out.insert(name, def);
        pending.extend(more.into_iter().filter(|n| !out.contains_key(n)));
    }
    if let Value::Object(root) = schema {
        root.insert("$defs".into(), Value::Object(out));
    }
}

fn take_defs(root: &mut Map<String, Value>) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(d)) = root.remove(key) {
            defs.extend(d);
        }
    }
    defs
}

fn local_ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
        .filter(|name| !name.contains('/'))
}

/// Replace `{"$ref": "#/$defs/X", ...siblings}` by X's schema (siblings kept,
/// `description` of the ref winning), unless X is already being inlined, in
/// which case the reference is recursive: keep it and note X in `kept`.
fn inline_refs(value: &mut Value, defs: &Map<String, Value>, stack: &mut Vec<String>, kept: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            let target = map.get("$ref").and_then(Value::as_str).and_then(local_ref_name).map(str::to_owned);
            if let Some(name) = target {
                if stack.contains(&name) {
                    // Normalise `#/definitions/X` to `#/$defs/X`, where the def will live.
                    map.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
                    kept.insert(name);
                    return;
                }
                if let Some(Value::Object(def)) = defs.get(&name) {
                    map.remove("$ref");
                    let mut inlined = def.clone();
                    for (k, v) in std::mem::take(map) {
                        inlined.insert(k, v);
                    }
                    *map = inlined;
                    stack.push(name);
                    for v in map.values_mut() {
                        inline_refs(v, defs, stack, kept);
                    }
                    stack.pop();
                    return;
                }
            }
            for v in map.values_mut() {
                inline_refs(v, defs, stack, kept);
            }
        }
        Value::Array(items) => {
            for v in items {
                inline_refs(v, defs, stack, kept);
            }
        }
        _ => {}
    }
}

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
            if CONSTRAINTS.iter().any(|k| map.contains_key(*k)) || is_buffered_union(map) {
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

/// A union serde reads through its own buffer (untagged and internally
/// tagged enums, flattened enums), where the strict deserializer cannot
/// reach: `oneOf`, `allOf`, or an `anyOf` that is more than `Option`'s
/// "this or null".
fn is_buffered_union(map: &Map<String, Value>) -> bool {
    let not_null = |branch: &&Value| branch.get("type").and_then(Value::as_str) != Some("null");
    map.contains_key("oneOf")
        || map.contains_key("allOf")
        || map
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().filter(not_null).count() > 1)
}

/// schemars writes `minimum`/`maximum` for Rust integer types, whose bounds
/// serde enforces itself.
fn is_rust_integer_format(map: &Map<String, Value>) -> bool {
    matches!(
        map.get("format").and_then(Value::as_str),
        Some(
            "uint8"
                | "uint16"
                | "uint32"
                | "uint64"
                | "uint128"
                | "uint"
                | "int8"
                | "int16"
                | "int32"
                | "int64"
                | "int128"
                | "int"
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inlines_plain_refs_and_keeps_recursive_ones() {
        let mut schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "properties": {
                "point": {"$ref": "#/$defs/Point", "description": "where"},
                "tree": {"$ref": "#/definitions/Node"}
            },
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "definitions": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}}
        });
        clean(&mut schema);
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert_eq!(schema["properties"]["point"]["properties"]["x"]["type"], "number");
        assert_eq!(schema["properties"]["point"]["description"], "where");
        assert_eq!(schema["properties"]["tree"]["properties"]["children"]["items"]["$ref"], "#/$defs/Node");
        assert!(schema["$defs"]["Node"].is_object());
        assert!(schema["$defs"].get("Point").is_none());
    }

    #[test]
    fn finds_what_serde_accepts_and_the_schema_refuses() {
        assert!(!serde_accepts_more_than(
            &json!({"properties": {"n": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}}})
        ));
        assert!(serde_accepts_more_than(&json!({"properties": {"n": {"type": "number", "minimum": 1}}})));
        assert!(serde_accepts_more_than(&json!({"properties": {"s": {"type": "string", "maxLength": 3}}})));
        assert!(!serde_accepts_more_than(&json!({"properties": {"s": {"type": "string", "description": "pattern"}}})));
        // A field named like a keyword is a field.
        assert!(!serde_accepts_more_than(&json!({"properties": {"pattern": {"type": "string"}}})));
        // A struct below the root: the strict deserializer takes it only from
        // an object, as the schema does, so it needs no schema check.
        let point = json!({"type": "object", "properties": {"x": {"type": "number"}}});
        assert!(!serde_accepts_more_than(&json!({"properties": {"at": point}})));
        assert!(!serde_accepts_more_than(&json!({"properties": {"at": {"anyOf": [point, {"type": "null"}]}}})));
        assert!(!serde_accepts_more_than(&json!({"properties": {}, "$defs": {"Point": point}})));
        // Unions serde buffers are checked against the schema first.
        assert!(serde_accepts_more_than(&json!({"properties": {"s": {"oneOf": [point, {"type": "string"}]}}})));
        assert!(serde_accepts_more_than(&json!({"properties": {"s": {"anyOf": [point, {"type": "string"}]}}})));
        // A map is not a struct.
        assert!(!serde_accepts_more_than(
            &json!({"properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}})
        ));
    }
}

/// Check that a tool's input schema can be used: its root is an object
/// schema. The registry refuses a tool whose schema fails this with
/// [`RegistryError::InvalidSchema`](crate::RegistryError::InvalidSchema).
pub(crate) fn check_input_schema(schema: &Value) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(format!("the input schema must have \"type\": \"object\", found {other}")),
        None => Err("the input schema must have \"type\": \"object\"".to_owned()),
    }
}
