//! Rewrites and questions about one schema node that the walk and the
//! call mapping share: tuples to `items`, `oneOf` to `anyOf`, Gemini's
//! enums and nullability, notes written into a description, and whether a
//! schema allows `null` or has an optional argument strict mode makes
//! nullable.
//!
//! Apart from the walk because none of these recurse through the walk's
//! state: each looks at one node (and, for the nullability questions, its
//! branches).

use serde_json::{Map, Value};

use crate::validate::type_of;

/// Tuples (`prefixItems`): no provider subset takes them. The positions
/// become one `items` schema (the union of the positions' schemas), the
/// order goes into the description, and the length stays in
/// `minItems`/`maxItems` where the dialect keeps them.
pub(super) fn tuple_to_items(obj: &mut Map<String, Value>) {
    let Some(Value::Array(positions)) = obj.remove("prefixItems") else { return };
    let mut unique: Vec<Value> = Vec::new();
    for p in &positions {
        if !unique.contains(p) {
            unique.push(p.clone());
        }
    }
    let kind = |p: &Value| match p.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => "any".to_owned(),
    };
    let order: Vec<String> = positions.iter().map(kind).collect();
    let items = match unique.len() {
        0 => None,
        1 => unique.pop(),
        _ => Some(serde_json::json!({"anyOf": unique})),
    };
    match obj.get("items") {
        Some(Value::Bool(false)) | None => {
            if let Some(items) = items {
                obj.insert("items".into(), items);
            }
        }
        Some(_) => {}
    }
    if unique.len() > 1 || positions.len() > 1 {
        describe(obj, &[("items in order".to_owned(), Value::String(order.join(", ")))]);
    }
}

pub(super) fn one_of_to_any_of(obj: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(one_of) = obj.remove("oneOf") {
        if obj.contains_key("anyOf") {
            return Err("`oneOf` next to `anyOf` cannot be expressed".into());
        }
        obj.insert("anyOf".into(), one_of);
    }
    Ok(())
}

/// Whether a type-specific keyword belongs with type `t` when a type list is split.
pub(super) fn keyword_applies(key: &str, t: &str) -> bool {
    match key {
        "properties" | "required" | "additionalProperties" | "minProperties" | "maxProperties" => t == "object",
        "items" | "minItems" | "maxItems" | "uniqueItems" => t == "array",
        "minLength" | "maxLength" | "pattern" => t == "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
            t == "number" || t == "integer"
        }
        "format" => t != "boolean",
        "enum" | "const" => true,
        _ => true,
    }
}

/// Gemini takes string enums only: drop `null` (nullable), and move any
/// other non-string enum into the description.
pub(super) fn gemini_enum(obj: &mut Map<String, Value>) {
    let Some(Value::Array(values)) = obj.get("enum") else { return };
    if values.iter().any(Value::is_null) {
        obj.insert("nullable".into(), Value::Bool(true));
        strip_null_enum(obj);
    }
    let Some(Value::Array(values)) = obj.get("enum") else { return };
    if values.iter().all(Value::is_string) {
        if values.is_empty() {
            obj.remove("enum");
        } else {
            obj.entry("type").or_insert_with(|| Value::String("string".into()));
        }
        return;
    }
    let Some(Value::Array(values)) = obj.remove("enum") else { return };
    if !obj.contains_key("type")
        && let Some(t) = common_type(&values)
    {
        obj.insert("type".into(), Value::String(t.into()));
    }
    let shown: Vec<String> = values.iter().map(Value::to_string).collect();
    describe(obj, &[("one of".to_owned(), Value::String(shown.join(", ")))]);
}

fn common_type(values: &[Value]) -> Option<&'static str> {
    let first = type_of(values.first()?);
    values.iter().all(|v| type_of(v) == first).then_some(first)
}

pub(super) fn strip_null_enum(obj: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

pub(super) fn gemini_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(super) fn is_primitive(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

pub(super) fn is_null_schema(v: &Value) -> bool {
    v.get("type").is_some_and(|t| t == "null") || v.get("const").is_some_and(Value::is_null)
}

/// Copy `inner`'s keywords into `obj` where `obj` has none of its own.
pub(super) fn merge_under(obj: &mut Map<String, Value>, inner: Map<String, Value>) {
    for (k, v) in inner {
        obj.entry(k).or_insert(v);
    }
}

/// Append notes to the description as `{key: value, ...}`, the form the
/// `anthropic` SDK uses.
pub(super) fn describe(obj: &mut Map<String, Value>, notes: &[(String, Value)]) {
    let rendered: Vec<String> = notes
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}: {s}"),
            other => format!("{k}: {other}"),
        })
        .collect();
    let note = format!("{{{}}}", rendered.join(", "));
    let text = match obj.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n\n{note}"),
        _ => note,
    };
    obj.insert("description".into(), Value::String(text));
}

/// What a `not` says in a description: the value it excludes (`{"not":
/// {"const": 0}}` reads `not: 0`), the values (`not: [1,2]`), or else the
/// schema a value must not match.
pub(super) fn not_note(not: Value) -> Value {
    match not {
        Value::Object(mut only) if only.len() == 1 => match only.remove("const").or_else(|| only.remove("enum")) {
            Some(excluded) => excluded,
            None => Value::Object(only),
        },
        other => other,
    }
}

/// Make a (lowered, strict) property schema accept `null` too.
pub(super) fn make_nullable(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.push(Value::Null);
    }
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = std::mem::take(t);
            obj.insert("type".into(), Value::Array(vec![Value::String(t), Value::String("null".into())]));
            return;
        }
        Some(Value::Array(types)) => {
            types.push(Value::String("null".into()));
            return;
        }
        _ => {}
    }
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        branches.push(serde_json::json!({"type": "null"}));
        return;
    }
    if obj.contains_key("enum") {
        return;
    }
    let inner = std::mem::take(obj);
    obj.insert("anyOf".into(), Value::Array(vec![Value::Object(inner), serde_json::json!({"type": "null"})]));
}

/// Whether a schema accepts `null`.
pub(crate) fn allows_null(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(obj) => {
            if obj.is_empty() || obj.get("nullable") == Some(&Value::Bool(true)) {
                return true;
            }
            if let Some(values) = obj.get("enum").and_then(Value::as_array) {
                return values.iter().any(Value::is_null);
            }
            if let Some(c) = obj.get("const") {
                return c.is_null();
            }
            match obj.get("type") {
                Some(Value::String(t)) => return t == "null",
                Some(Value::Array(ts)) => return ts.iter().any(|t| t == "null"),
                _ => {}
            }
            ["anyOf", "oneOf"]
                .iter()
                .any(|k| obj.get(*k).and_then(Value::as_array).is_some_and(|bs| bs.iter().any(allows_null)))
        }
        _ => false,
    }
}

/// Whether some object in the schema has an optional property that does not
/// accept `null`: strict mode makes it nullable, so a `null` sent for it
/// means "absent".
pub(crate) fn has_optional_non_null(schema: &Value) -> bool {
    let Value::Object(obj) = schema else { return false };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        let required = obj.get("required").and_then(Value::as_array);
        for (k, p) in props {
            if !required.is_some_and(|r| r.iter().any(|x| x == k)) && !allows_null(p) {
                return true;
            }
            if has_optional_non_null(p) {
                return true;
            }
        }
    }
    obj.get("items").is_some_and(has_optional_non_null)
        || ["anyOf", "oneOf"]
            .iter()
            .any(|k| obj.get(*k).and_then(Value::as_array).is_some_and(|bs| bs.iter().any(has_optional_non_null)))
}
