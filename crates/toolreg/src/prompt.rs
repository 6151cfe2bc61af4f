//! The "available functions" section of a prompt, for models without native
//! tool calling.
//!
//! A header line `Available functions:`, then one line per function,
//! `- name(p: type? - desc, ...): description`, with `?` only on optional
//! parameters. An empty selection renders as nothing at all.
//!
//! ```
//! use toolreg::{ToolDeclaration, ParamType, prompt};
//!
//! let decl = ToolDeclaration::builder("get_weather")
//!     .description("Current weather in a city")
//!     .param("city", ParamType::String, "City name")
//!     .optional_param("days", ParamType::Integer, "Forecast days")
//!     .build();
//! assert_eq!(
//!     prompt::available_functions([&decl]),
//!     "Available functions:\n\
//!      - get_weather(city: string - City name, days: integer? - Forecast days): Current weather in a city"
//! );
//! assert_eq!(prompt::available_functions(std::iter::empty::<&ToolDeclaration>()), "");
//! ```

use std::fmt::Write;

use serde_json::Value;

use crate::declaration::ToolDeclaration;

/// Render the declarations as a plain-text list, in the order given.
pub fn available_functions<'a>(declarations: impl IntoIterator<Item = &'a ToolDeclaration>) -> String {
    let mut out = String::new();
    for decl in declarations {
        if out.is_empty() {
            out.push_str("Available functions:");
        }
        out.push_str("\n- ");
        write_function(&mut out, decl);
    }
    out
}

fn write_function(out: &mut String, decl: &ToolDeclaration) {
    let schema = &decl.input_schema;
    let required = schema.get("required").and_then(Value::as_array);
    out.push_str(&decl.name);
    out.push('(');
    let props = schema.get("properties").and_then(Value::as_object);
    for (i, (name, prop)) in props.into_iter().flatten().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let optional = !required.is_some_and(|r| r.iter().any(|x| x == name.as_str()));
        let _ = write!(out, "{name}: {}", type_name(prop));
        if optional {
            out.push('?');
        }
        if let Some(desc) = prop.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()) {
            let _ = write!(out, " - {}", one_line(desc));
        }
    }
    out.push(')');
    if !decl.description.is_empty() {
        let _ = write!(out, ": {}", one_line(&decl.description));
    }
}

/// The type of a parameter in a word: `string`, `integer`, `array`, ...;
/// unions joined with `|`, `null` left out (optionality is the `?`).
fn type_name(schema: &Value) -> String {
    let mut names: Vec<String> = Vec::new();
    match schema.get("type") {
        Some(Value::String(t)) => names.push(t.clone()),
        Some(Value::Array(ts)) => names.extend(ts.iter().filter_map(Value::as_str).map(str::to_owned)),
        _ => {
            for key in ["anyOf", "oneOf"] {
                for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
                    let name = type_name(branch);
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            if names.is_empty() {
                if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                    if values.iter().all(Value::is_string) {
                        names.push("string".to_owned());
                    }
                } else if schema.get("const").is_some_and(Value::is_string) {
                    names.push("string".to_owned());
                }
            }
        }
    }
    names.retain(|n| n != "null" && n != "any");
    if names.is_empty() { "any".to_owned() } else { names.join("|") }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
