//! Arguments checked against a tool's input schema, defaults filled in, and
//! every problem worded so a model can fix its call.

use std::fmt::{self, Write as _};

use serde::Serialize;
use serde_json::Value;

/// One problem with a tool call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentError {
    /// JSON Pointer to the offending value (`""` is the whole argument object).
    pub path: String,
    /// What is wrong, in a sentence a model can act on.
    pub message: String,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() { "/" } else { &self.path };
        write!(f, "`{path}`: {}", self.message)
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

/// A compiled input schema plus what it takes to fill defaults.
pub(crate) struct ArgumentValidator {
    validator: jsonschema::Validator,
    schema: Value,
    has_defaults: bool,
}

impl fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentValidator").field("has_defaults", &self.has_defaults).finish_non_exhaustive()
    }
}

impl ArgumentValidator {
    /// Compile `schema`; the error says why the schema itself is unusable.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        check_input_schema(schema)?;
        // The validator checks the same values with unions of constants and
        // of tagged variants written without the union (see `plain_unions`):
        // a refusal then says what is wrong where, instead of collecting
        // every branch's error only to say "none matches".
        let mut checked = schema.clone();
        plain_unions(&mut checked);
        let validator = jsonschema::validator_for(&checked).map_err(|e| format!("invalid JSON Schema: {e}"))?;
        Ok(ArgumentValidator { validator, schema: schema.clone(), has_defaults: contains_defaults(schema) })
    }

    /// Fill absent properties that have a `default`, in nested objects too.
    pub(crate) fn fill_defaults(&self, args: &mut Value) {
        if self.has_defaults {
            fill_defaults(&self.schema, args);
        }
    }

    pub(crate) fn is_valid(&self, args: &Value) -> bool {
        #[cfg(test)]
        VALIDATIONS.with(|n| n.set(n.get() + 1));
        self.validator.is_valid(args)
    }

    /// Every problem with `args`, in document order.
    pub(crate) fn errors(&self, args: &Value) -> Vec<ArgumentError> {
        self.validator
            .iter_errors(args)
            .map(|e| {
                let mut path = e.instance_path().to_string();
                let message = describe(e.kind(), e.instance(), &mut path);
                ArgumentError { path, message }
            })
            .collect()
    }
}

/// Rewrite, in place, the unions schemars writes for Rust enums as schemas
/// that accept exactly the same values without a union:
///
/// - a `oneOf` or `anyOf` whose branches are each only a `const` (with
///   annotations, and a `type` the constant has) becomes the `enum` of those
///   constants: a unit enum with documented variants. For `oneOf` the
///   constants must be distinct strings, so at most one branch matches.
/// - a `oneOf` or `anyOf` whose branches are each an object of exactly one
///   required property (`{"type": "object", "properties": {"k": S},
///   "required": ["k"], "additionalProperties": false}`), with distinct
///   names, becomes one object of exactly one property among them, each
///   with its schema: an externally tagged enum. An object matches a
///   branch only by having that branch's one name, so at most one does.
///
/// The union is checked in one step and reported as "expected one of
/// [..]" or at the path of the wrong value inside the variant, where the
/// union collects an error per branch and reports none of them. Values
/// under `const`, `enum`, `default` and `examples` are data, not schemas,
/// and are left alone; a schema with a `$ref` into a union is left whole.
/// The walk uses its own stack: schemas can come from outside.
fn plain_unions(schema: &mut Value) {
    const DATA: [&str; 4] = ["const", "enum", "default", "examples"];
    if refers_into_union(schema) {
        return;
    }
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                for key in ["oneOf", "anyOf"] {
                    let Some(union) = map.get(key) else { continue };
                    if let Some(choices) = constant_choices(union, key == "oneOf").filter(|_| !map.contains_key("enum"))
                    {
                        map.remove(key);
                        map.insert("enum".into(), Value::Array(choices));
                    } else if let Some(variants) = tagged_variants(union).filter(|_| !has_object_keywords(map)) {
                        map.remove(key);
                        map.insert("type".into(), "object".into());
                        map.insert("minProperties".into(), 1.into());
                        map.insert("maxProperties".into(), 1.into());
                        map.insert("properties".into(), Value::Object(variants));
                        map.insert("additionalProperties".into(), false.into());
                    }
                    break;
                }
                stack.extend(map.iter_mut().filter(|(k, _)| !DATA.contains(&k.as_str())).map(|(_, v)| v));
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// Whether a `$ref` of the schema points into a `oneOf` or `anyOf`, which
/// [`plain_unions`] would move.
fn refers_into_union(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if map.get("$ref").and_then(Value::as_str).is_some_and(|r| r.contains("/oneOf") || r.contains("/anyOf"))
                {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// Whether a schema object already says something about objects, which
/// the rewrite of tagged variants would have to merge with.
fn has_object_keywords(map: &serde_json::Map<String, Value>) -> bool {
    [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "enum",
        "const",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "if",
        "$ref",
    ]
    .iter()
    .filter(|k| **k != "oneOf" && **k != "anyOf")
    .any(|k| map.contains_key(*k))
        || (map.contains_key("oneOf") && map.contains_key("anyOf"))
}

/// The variants of a union whose branches are each an object of exactly one
/// required property, not otherwise constrained, with distinct names: the
/// name of each with its schema.
fn tagged_variants(union: &Value) -> Option<serde_json::Map<String, Value>> {
    const BRANCH: [&str; 7] =
        ["type", "properties", "required", "additionalProperties", "description", "title", "$comment"];
    let branches = union.as_array().filter(|b| !b.is_empty())?;
    let mut variants = serde_json::Map::new();
    for branch in branches {
        let map = branch.as_object()?;
        let properties = map.get("properties")?.as_object().filter(|p| p.len() == 1)?;
        let (name, schema) = properties.iter().next()?;
        let closed = map.get("type").and_then(Value::as_str) == Some("object")
            && map.get("required").and_then(Value::as_array).is_some_and(|r| r.len() == 1 && r[0] == *name)
            && map.get("additionalProperties") == Some(&Value::Bool(false))
            && map.keys().all(|k| BRANCH.contains(&k.as_str()));
        if !closed || variants.contains_key(name) {
            return None;
        }
        variants.insert(name.clone(), schema.clone());
    }
    Some(variants)
}

/// The constants of a union whose branches are each only a `const` (plus
/// annotations, and a `type` the constant has); for `oneOf` (`distinct`),
/// only when they are distinct strings.
fn constant_choices(union: &Value, distinct: bool) -> Option<Vec<Value>> {
    const ANNOTATIONS: [&str; 8] =
        ["const", "type", "description", "title", "$comment", "deprecated", "readOnly", "writeOnly"];
    let branches = union.as_array().filter(|b| !b.is_empty())?;
    let mut choices = Vec::with_capacity(branches.len());
    for branch in branches {
        let map = branch.as_object()?;
        let constant = map.get("const")?;
        if !map.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) {
            return None;
        }
        let has_type = match map.get("type") {
            None => true,
            Some(Value::String(t)) => type_of(constant) == t || (t == "number" && type_of(constant) == "integer"),
            Some(_) => false,
        };
        if !has_type || (distinct && (!constant.is_string() || choices.contains(constant))) {
            return None;
        }
        choices.push(constant.clone());
    }
    Some(choices)
}

/// A JSON value's type as JSON Schema names it (an integral number is an
/// `integer`).
pub(crate) fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn contains_defaults(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| props.values().any(|p| p.get("default").is_some() || contains_defaults(p)))
}

fn fill_defaults(schema: &Value, args: &mut Value) {
    let (Some(props), Value::Object(obj)) = (schema.get("properties").and_then(Value::as_object), args) else {
        return;
    };
    for (key, prop) in props {
        match obj.get_mut(key) {
            None => {
                if let Some(default) = prop.get("default") {
                    obj.insert(key.clone(), default.clone());
                }
            }
            Some(child) => fill_defaults(prop, child),
        }
    }
}

#[cfg(test)]
thread_local! {
    /// How many validations ran on this thread: the pipeline's tests count
    /// them with it.
    pub(crate) static VALIDATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Name of a JSON value's type as JSON Schema spells it, plus the value when short.
pub(crate) fn describe_value(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Values shown in a message are cut to this many bytes, then `…`.
const SHOWN_MAX: usize = 40;

/// Append [`describe_value`]'s text to `out`. A refused call pays for its
/// report, so it is written in place: no text built only to be copied.
fn write_value(out: &mut String, value: &Value) {
    let kind = match value {
        Value::Null => return out.push_str("null"),
        Value::Bool(b) => return out.push_str(if *b { "boolean true" } else { "boolean false" }),
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(a) => {
            let _ = write!(out, "array of {} items", a.len());
            return;
        }
        Value::Object(_) => return out.push_str("object"),
    };
    out.push_str(kind);
    out.push(' ');
    let start = out.len();
    // A `Value` always writes as JSON: its keys are strings.
    let _ = write!(out, "{value}");
    if out.len() - start > SHOWN_MAX {
        let end = start + truncate(&out[start..], SHOWN_MAX).len();
        out.truncate(end);
        out.push('…');
    }
}

/// At most `max` bytes of `s`, cut on a character boundary (also used by
/// tool search to bound a query).
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The message for one schema error, written into one string; adds the
/// missing property's name to `path` for a `required` error.
fn describe(kind: &jsonschema::error::ValidationErrorKind, instance: &Value, path: &mut String) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let mut out = String::with_capacity(48);
    // `write!` to a `String` cannot fail.
    let got = |out: &mut String| {
        out.push_str(", got ");
        write_value(out, instance);
    };
    match kind {
        K::Type { kind } => {
            out.push_str("expected ");
            match kind {
                TypeKind::Single(t) => {
                    let _ = write!(out, "{t}");
                }
                TypeKind::Multiple(set) => {
                    for (i, t) in set.iter().enumerate() {
                        let _ = write!(out, "{}{t}", if i > 0 { " or " } else { "" });
                    }
                }
            }
            got(&mut out);
        }
        K::Required { property } => {
            path.push('/');
            match property.as_str() {
                Some(name) => push_pointer_token(path, name),
                None => push_pointer_token(path, &property.to_string()),
            }
            out.push_str("missing required field");
        }
        K::AdditionalProperties { unexpected } => {
            out.push_str("unexpected field(s) ");
            for (i, u) in unexpected.iter().enumerate() {
                let _ = write!(out, "{}`{u}`", if i > 0 { ", " } else { "" });
            }
            out.push_str("; remove them");
        }
        K::Enum { options } => {
            let _ = write!(out, "expected one of {options}");
            got(&mut out);
        }
        K::Constant { expected_value } => {
            let _ = write!(out, "expected {expected_value}");
            got(&mut out);
        }
        K::Minimum { limit } => bound(&mut out, "must be at least ", limit, got),
        K::Maximum { limit } => bound(&mut out, "must be at most ", limit, got),
        K::ExclusiveMinimum { limit } => bound(&mut out, "must be greater than ", limit, got),
        K::ExclusiveMaximum { limit } => bound(&mut out, "must be less than ", limit, got),
        K::MinLength { limit } => {
            let _ = write!(out, "must be at least {limit} characters long");
        }
        K::MaxLength { limit } => {
            let _ = write!(out, "must be at most {limit} characters long");
        }
        K::MinProperties { limit } => {
            let _ = write!(out, "must have at least {limit} field(s)");
        }
        K::MaxProperties { limit } => {
            let _ = write!(out, "must have at most {limit} field(s)");
        }
        K::MinItems { limit } => {
            let _ = write!(out, "must have at least {limit} items");
            got(&mut out);
        }
        K::MaxItems { limit } => {
            let _ = write!(out, "must have at most {limit} items");
            got(&mut out);
        }
        K::Pattern { pattern } => {
            let _ = write!(out, "must match the pattern {pattern}");
            got(&mut out);
        }
        K::Format { format } => {
            let _ = write!(out, "must be a valid {format}");
            got(&mut out);
        }
        K::AnyOf { .. } | K::OneOfNotValid { .. } => {
            write_value(&mut out, instance);
            out.push_str(" matches none of the allowed shapes");
        }
        K::FalseSchema => out.push_str("no value is allowed here"),
        _ => {
            out.push_str("invalid value ");
            write_value(&mut out, instance);
        }
    }
    out
}

/// `"<what><limit>, got <value>"`.
fn bound(out: &mut String, what: &str, limit: &Value, got: impl Fn(&mut String)) {
    out.push_str(what);
    let _ = write!(out, "{limit}");
    got(out);
}

/// Append `name` to a JSON Pointer as one reference token (`~` and `/` escaped).
fn push_pointer_token(path: &mut String, name: &str) {
    for c in name.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Turn a serde error (already positioned by `serde_path_to_error`) into an
/// [`ArgumentError`].
pub(crate) fn serde_error(path: &serde_path_to_error::Path, inner: &serde_json::Error) -> ArgumentError {
    let mut pointer = String::new();
    for segment in path.iter() {
        use serde_path_to_error::Segment;
        match segment {
            Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(key);
            }
            Segment::Unknown => pointer.push_str("/?"),
        }
    }
    ArgumentError { path: pointer, message: inner.to_string() }
}

/// Check a tool's example arguments against its compiled schema, as sent:
/// each must be an object the schema accepts without defaults filled in
/// (the provider checks it as it is). The first one refused, with why.
pub(crate) fn check_examples(validator: &ArgumentValidator, examples: &[Value]) -> Result<(), (usize, String)> {
    for (i, example) in examples.iter().enumerate() {
        if !example.is_object() {
            return Err((i, format!("an example is a JSON object of arguments, not a JSON {}", type_of(example))));
        }
        if !validator.is_valid(example) {
            return Err((i, render_errors(&validator.errors(example)).replace('\n', "; ")));
        }
    }
    Ok(())
}

#[cfg(feature = "providers")]
/// [`check_examples`] for a declaration not registered: its schema
/// compiled on the spot (only when it has examples).
pub(crate) fn check_declared_examples(decl: &crate::ToolDeclaration) -> Result<(), (usize, String)> {
    if decl.input_examples.is_empty() {
        return Ok(());
    }
    let validator = ArgumentValidator::compile(&decl.input_schema).map_err(|reason| (0, reason))?;
    check_examples(&validator, &decl.input_examples)
}

/// Render a list of argument errors as one block of model-readable text.
pub(crate) fn render_errors(errors: &[ArgumentError]) -> String {
    let mut out = String::new();
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("- ");
        out.push_str(&e.to_string());
    }
    out
}

/// Whether JSON `text` nests arrays and objects more than `limit` deep.
///
/// A byte scan, not a parse: it neither recurses nor allocates, so it can
/// guard text from outside before a recursive parser sees it. Strings are
/// skipped, escapes honoured; it stops as soon as `limit` is passed.
///
/// ```
/// use toolreg::validate::json_depth_exceeds;
/// assert!(json_depth_exceeds("[[[1]]]", 2));
/// assert!(!json_depth_exceeds(r#"["[[[[", {"k": "]"}]"#, 2));
/// ```
pub fn json_depth_exceeds(text: &str, limit: usize) -> bool {
    // Every level opens with `{` or `[`, so text with no more openers than the
    // limit cannot pass it. Counting bytes vectorises; the exact scan below
    // runs only for text with many brackets.
    if text.len() <= limit || text.bytes().filter(|&b| b == b'{' || b == b'[').count() <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests;
