//! Each tool shape with the argument JSON every side receives: one good
//! object, and one bad object whose wrong value sits as deep as the shape
//! allows.

use serde_json::{Map, Value};

/// One tool shape and its arguments.
#[derive(Debug, Clone)]
pub struct Case {
    /// The bench label: `flat`, `nested`, `enum`, `tagged_enum`, `collections`.
    pub shape: &'static str,
    /// The tool's name, the same on every side.
    pub tool: &'static str,
    /// Good arguments as text.
    pub good_text: &'static str,
    /// Bad arguments as text.
    pub bad_text: &'static str,
    /// What the tool answers for the good arguments.
    pub expected: f64,
    /// A piece of the JSON path toolreg must name for the bad arguments.
    pub bad_path: &'static str,
}

impl Case {
    /// The good arguments, parsed.
    pub fn good(&self) -> Value {
        parse(self.good_text)
    }

    /// The bad arguments, parsed.
    pub fn bad(&self) -> Value {
        parse(self.bad_text)
    }

    /// The good arguments as the JSON object rmcp takes.
    pub fn good_object(&self) -> Map<String, Value> {
        object(self.good_text)
    }

    /// The bad arguments as the JSON object rmcp takes.
    pub fn bad_object(&self) -> Map<String, Value> {
        object(self.bad_text)
    }
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("case arguments must be JSON: {e}"))
}

fn object(text: &str) -> Map<String, Value> {
    match parse(text) {
        Value::Object(map) => map,
        other => panic!("case arguments must be an object, got {other}"),
    }
}

/// The five shapes.
pub fn all() -> Vec<Case> {
    vec![
        Case {
            shape: "flat",
            tool: "add",
            good_text: r#"{"a": 2.5, "b": 40}"#,
            bad_text: r#"{"a": 2.5, "b": "forty"}"#,
            expected: 42.5,
            bad_path: "b",
        },
        Case {
            shape: "nested",
            tool: "ship",
            good_text: r#"{"customer": {"name": "Ada Lovelace", "address": {"street": "1 Rue de Rivoli", "city": "Paris", "zip": "75001"}}, "weight_kg": 2.0}"#,
            bad_text: r#"{"customer": {"name": "Ada Lovelace", "address": {"street": "1 Rue de Rivoli", "city": "Paris", "zip": 75001}}, "weight_kg": 2.0}"#,
            expected: 8.0,
            bad_path: "zip",
        },
        Case {
            shape: "enum",
            tool: "convert",
            good_text: r#"{"value": 100, "from": "celsius", "to": "fahrenheit"}"#,
            bad_text: r#"{"value": 100, "from": "celsius", "to": 451}"#,
            expected: 212.0,
            bad_path: "to",
        },
        Case {
            shape: "tagged_enum",
            tool: "area",
            good_text: r#"{"shape": {"rect": {"width": 2, "height": 3}}, "scale": 1.5}"#,
            bad_text: r#"{"shape": {"rect": {"width": 2, "height": "tall"}}, "scale": 1.5}"#,
            expected: 13.5,
            bad_path: "shape",
        },
        Case {
            shape: "collections",
            tool: "stats",
            good_text: r#"{"values": [1, 2, 3, 4, 5, 6, 7, 8], "weights": {"low": 0.25, "mid": 0.5, "high": 1.25}}"#,
            bad_text: r#"{"values": [1, 2, 3, 4, 5, "six", 7, 8], "weights": {"low": 0.25, "mid": 0.5, "high": 1.25}}"#,
            expected: 38.0,
            bad_path: "values",
        },
    ]
}
