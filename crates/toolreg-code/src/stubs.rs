//! TypeScript declarations of the tools a program may call, written from
//! their declarations: what the model reads to write a program against
//! them (`tools.read_file({ path: "a.txt" })`).

use std::fmt::Write as _;

use serde_json::{Map, Value};
use toolreg::ToolDeclaration;

/// How deep a schema is followed before its type is written `unknown`: a
/// hostile schema must not make the description endless.
const MAX_DEPTH: usize = 6;

/// `declare const tools: { … }` for these tools.
pub fn declarations<'a>(tools: impl IntoIterator<Item = &'a ToolDeclaration>) -> String {
    let mut out = String::from("declare const tools: {\n");
    for tool in tools {
        out.push_str(&declaration(tool));
    }
    out.push_str("};\n");
    out
}

/// One tool as a method of `tools`, with its description as a doc comment.
pub fn declaration(tool: &ToolDeclaration) -> String {
    let mut out = String::new();
    let description = tool.description.trim();
    if !description.is_empty() {
        doc(&mut out, "  ", description);
    }
    let args = ts_type(&tool.input_schema, 1, "  ");
    let optional = tool.input_schema.get("required").and_then(Value::as_array).is_none_or(Vec::is_empty);
    let returns = tool.output_schema.as_ref().map_or_else(|| "unknown".to_owned(), |s| ts_type(s, 1, "  "));
    let _ = writeln!(
        out,
        "  {}(args{}: {args}): Promise<{returns}>;",
        property_name(&tool.name),
        if optional { "?" } else { "" }
    );
    out
}

/// Whether `name` can be written bare as a property name.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn property_name(name: &str) -> String {
    if is_identifier(name) { name.to_owned() } else { Value::String(name.to_owned()).to_string() }
}

/// A doc comment; a `*/` in the text cannot end it early.
fn doc(out: &mut String, indent: &str, text: &str) {
    let text = text.replace("*/", "*\\/");
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(only), None) => {
            let _ = writeln!(out, "{indent}/** {only} */");
        }
        _ => {
            let _ = writeln!(out, "{indent}/**");
            for line in text.lines() {
                let _ = writeln!(out, "{indent} * {line}");
            }
            let _ = writeln!(out, "{indent} */");
        }
    }
}

/// The TypeScript type of a JSON Schema, as far as a model needs it.
fn ts_type(schema: &Value, depth: usize, indent: &str) -> String {
    if depth > MAX_DEPTH {
        return "unknown".to_owned();
    }
    let Some(schema) = schema.as_object() else {
        return if schema == &Value::Bool(false) { "never".to_owned() } else { "unknown".to_owned() };
    };
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return union(values.iter().map(Value::to_string));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return union(branches.iter().map(|b| ts_type(b, depth + 1, indent)));
        }
    }
    match schema.get("type") {
        Some(Value::String(kind)) => typed(kind, schema, depth, indent),
        Some(Value::Array(kinds)) => {
            union(kinds.iter().filter_map(Value::as_str).map(|k| typed(k, schema, depth, indent)))
        }
        _ if schema.contains_key("properties") => object(schema, depth, indent),
        _ => "unknown".to_owned(),
    }
}

fn typed(kind: &str, schema: &Map<String, Value>, depth: usize, indent: &str) -> String {
    match kind {
        "string" => "string".to_owned(),
        "number" | "integer" => "number".to_owned(),
        "boolean" => "boolean".to_owned(),
        "null" => "null".to_owned(),
        "array" => match schema.get("items") {
            Some(items) => {
                let item = ts_type(items, depth + 1, indent);
                if item.contains(' ') { format!("Array<{item}>") } else { format!("{item}[]") }
            }
            None => "unknown[]".to_owned(),
        },
        "object" => object(schema, depth, indent),
        _ => "unknown".to_owned(),
    }
}

fn object(schema: &Map<String, Value>, depth: usize, indent: &str) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()) else {
        return "Record<string, unknown>".to_owned();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut out = String::from("{\n");
    // Required parameters first, so the model sees what it must pass.
    let (first, rest): (Vec<_>, Vec<_>) = properties.iter().partition(|(name, _)| required.contains(&name.as_str()));
    for (name, property) in first.into_iter().chain(rest) {
        if let Some(description) = property.get("description").and_then(Value::as_str).map(str::trim)
            && !description.is_empty()
        {
            doc(&mut out, &inner, description);
        }
        let optional = if required.contains(&name.as_str()) { "" } else { "?" };
        let _ = writeln!(out, "{inner}{}{optional}: {};", property_name(name), ts_type(property, depth + 1, &inner));
    }
    out.push_str(indent);
    out.push('}');
    out
}

fn union(parts: impl Iterator<Item = String>) -> String {
    let mut parts: Vec<String> = parts.collect();
    parts.dedup();
    match parts.len() {
        0 => "never".to_owned(),
        _ => parts.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_declaration_becomes_a_typed_method() {
        let tool = ToolDeclaration::new(
            "read_file",
            "Read a file.",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": ["integer", "null"]},
                    "lines": {"type": "array", "items": {"type": "integer"}},
                    "mode": {"enum": ["text", "bytes"]},
                    "path": {"type": "string", "description": "Relative path."}
                },
                "required": ["path"]
            }),
        );
        let text = declarations([&tool]);
        assert_eq!(
            text,
            "declare const tools: {\n  /** Read a file. */\n  read_file(args: {\n    /** Relative path. */\n    path: \
             string;\n    limit?: number | null;\n    lines?: number[];\n    mode?: \"text\" | \"bytes\";\n  }): \
             Promise<unknown>;\n};\n"
        );
    }

    #[test]
    fn odd_names_are_quoted_and_comments_cannot_be_closed() {
        let tool = ToolDeclaration::new("files.read-all", "Ends */ here", json!({"type": "object"}));
        let text = declaration(&tool);
        assert!(text.contains("\"files.read-all\"(args?: Record<string, unknown>)"), "{text}");
        assert!(text.contains("Ends *\\/ here"), "{text}");
    }

    #[test]
    fn a_deep_schema_is_cut_off() {
        let mut schema = json!({"type": "string"});
        for _ in 0..50 {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let text = declaration(&ToolDeclaration::new("deep", "", schema));
        assert!(text.contains("unknown"));
        assert!(text.len() < 2_000, "{}", text.len());
    }
}
