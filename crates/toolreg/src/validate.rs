//! Arguments checked against a tool's input schema, defaults filled in, and
//! every problem worded so a model can fix its call.

use std::fmt;

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
        crate::schema::check_input_schema(schema)?;
        let validator = jsonschema::validator_for(schema).map_err(|e| format!("invalid JSON Schema: {e}"))?;
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
    let kind = match value {
        Value::Null => return "null".to_owned(),
        Value::Bool(b) => return format!("boolean {b}"),
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(a) => return format!("array of {} items", a.len()),
        Value::Object(_) => return "object".to_owned(),
    };
    let shown = value.to_string();
    if shown.len() <= 40 { format!("{kind} {shown}") } else { format!("{kind} {}…", truncate(&shown, 40)) }
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn describe(kind: &jsonschema::error::ValidationErrorKind, instance: &Value, path: &mut String) -> String {
    use jsonschema::error::{TypeKind, ValidationErrorKind as K};
    let got = describe_value(instance);
    match kind {
        K::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "),
            };
            format!("expected {expected}, got {got}")
        }
        K::Required { property } => {
            let name = property.as_str().map(str::to_owned).unwrap_or_else(|| property.to_string());
            path.push('/');
            path.push_str(&name.replace('~', "~0").replace('/', "~1"));
            "missing required field".to_owned()
        }
        K::AdditionalProperties { unexpected } => {
            format!(
                "unexpected field(s) {}; remove them",
                unexpected.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ")
            )
        }
        K::Enum { options } => format!("expected one of {options}, got {got}"),
        K::Constant { expected_value } => format!("expected {expected_value}, got {got}"),
        K::Minimum { limit } => format!("must be at least {limit}, got {got}"),
        K::Maximum { limit } => format!("must be at most {limit}, got {got}"),
        K::ExclusiveMinimum { limit } => format!("must be greater than {limit}, got {got}"),
        K::ExclusiveMaximum { limit } => format!("must be less than {limit}, got {got}"),
        K::MinLength { limit } => format!("must be at least {limit} characters long"),
        K::MaxLength { limit } => format!("must be at most {limit} characters long"),
        K::MinItems { limit } => format!("must have at least {limit} items, got {got}"),
        K::MaxItems { limit } => format!("must have at most {limit} items, got {got}"),
        K::Pattern { pattern } => format!("must match the pattern {pattern}, got {got}"),
        K::Format { format } => format!("must be a valid {format}, got {got}"),
        K::AnyOf { .. } | K::OneOfNotValid { .. } => format!("{got} matches none of the allowed shapes"),
        K::FalseSchema => "no value is allowed here".to_owned(),
        _ => format!("invalid value {got}"),
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

/// Depth of the deepest array/object nesting in a JSON text, stopping early
/// once `limit` is passed. Strings are skipped, escapes honoured.
pub(crate) fn json_depth_exceeds(text: &str, limit: usize) -> bool {
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
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ArgumentValidator {
        ArgumentValidator::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "number"},
                "b": {"type": "number"},
                "opts": {"type": "object", "properties": {"round": {"type": "boolean", "default": false}}},
                "unit": {"type": "string", "enum": ["m", "km"], "default": "m"}
            },
            "required": ["a", "b"]
        }))
        .unwrap()
    }

    #[test]
    fn reports_every_problem_with_its_path() {
        let errors = validator().errors(&json!({"b": "two", "unit": "mi"}));
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(text.contains(&"`/b`: expected number, got string \"two\"".to_owned()), "{text:?}");
        assert!(text.contains(&"`/a`: missing required field".to_owned()), "{text:?}");
        assert!(text.iter().any(|t| t.starts_with("`/unit`: expected one of [\"m\",\"km\"]")), "{text:?}");
        assert_eq!(errors.len(), 3);
    }

    #[test]
    fn fills_defaults_only_where_absent() {
        let v = validator();
        let mut args = json!({"a": 1, "b": 2, "opts": {}});
        v.fill_defaults(&mut args);
        assert_eq!(args, json!({"a": 1, "b": 2, "opts": {"round": false}, "unit": "m"}));
        let mut args = json!({"a": 1, "b": 2, "unit": "km"});
        v.fill_defaults(&mut args);
        assert_eq!(args["unit"], "km");
    }

    #[test]
    fn rejects_non_object_schemas() {
        assert!(ArgumentValidator::compile(&json!(true)).is_err());
        assert!(ArgumentValidator::compile(&json!({"type": "string"})).is_err());
        assert!(ArgumentValidator::compile(&json!({"type": "object", "properties": {"a": {"type": 5}}})).is_err());
    }

    #[test]
    fn measures_depth_outside_strings() {
        assert!(!json_depth_exceeds(r#"{"a": "[[[[[[[["}"#, 2));
        assert!(json_depth_exceeds("[[[[]]]]", 3));
        assert!(!json_depth_exceeds("[[[]]]", 3));
        assert!(!json_depth_exceeds(r#"{"a": "\"[[[["}"#, 1));
    }
}
