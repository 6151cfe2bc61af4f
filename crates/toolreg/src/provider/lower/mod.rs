//! Schema lowering: from a tool's one canonical JSON Schema to what each
//! provider accepts.
//!
//! Each lowering is a schemars [`Transform`] run over the whole schema:
//!
//! - [`openai_strict`]: every object closed (`additionalProperties: false`)
//!   with every property required, optional ones made nullable; `oneOf`
//!   becomes `anyOf`, `const` a one-value `enum`; keywords strict mode does not
//!   take are removed and, where they carry meaning, written into the
//!   description (`not` too: `{not: 0}`), still enforced by argument
//!   validation; OpenAI's size limits are checked. Free-form objects and
//!   "any value" schemas cannot be strict.
//! - [`anthropic_strict`]: Anthropic's strict subset, shaped as the
//!   `anthropic` SDK's own `transform_schema` shapes it (so the result is a
//!   fixed point of it); recursion is refused.
//! - [`gemini`]: Gemini's OpenAPI subset: upper-case types, `nullable`
//!   instead of type arrays and null branches, string-only enums, no `$ref`
//!   (a recursive type is a [`LoweringError::Recursive`]).
//! - [`mcp`]: the canonical schema, with the closed empty object MCP asks
//!   for when a tool has no parameters.
//!
//! ```
//! use serde_json::json;
//! use toolreg::provider::lower;
//!
//! let canonical = json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"], "minimum": 1}},
//!     "required": ["city"]
//! });
//! let gemini = lower::gemini(&canonical)?;
//! assert_eq!(gemini["properties"]["days"], json!({"type": "INTEGER", "nullable": true, "minimum": 1}));
//! let strict = lower::openai_strict(&canonical)?;
//! assert_eq!(strict["required"], json!(["city", "days"]));
//! assert_eq!(strict["additionalProperties"], false);
//! # Ok::<(), toolreg::provider::LoweringError>(())
//! ```

use std::sync::LazyLock;

use schemars::Schema;
use schemars::transform::Transform;
use serde_json::{Map, Value};

use crate::schema::Exceeded;

mod nodes;
mod walk;

pub(crate) use nodes::{allows_null, has_optional_non_null};
use walk::Lower;

/// Why a schema cannot be lowered for a provider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoweringError {
    /// A recursive type: its `$ref` cannot be inlined, and the provider
    /// (or mode) does not take references.
    #[error("the recursive type `{name}` (at `{path}`) cannot be inlined; this provider does not take `$ref`")]
    Recursive {
        /// The definition that refers to itself.
        name: String,
        /// JSON Pointer to the reference in the schema.
        path: String,
    },
    /// A construct the provider (or mode) does not take.
    #[error("at `{path}`: {reason}")]
    Unsupported {
        /// JSON Pointer into the schema (`""` for the root).
        path: String,
        /// What is not supported.
        reason: String,
    },
    /// The schema is larger than the provider allows.
    #[error("{what}: {count}, more than the limit of {limit}")]
    Limit {
        /// What was counted.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The provider's limit.
        limit: usize,
    },
}

/// OpenAI's strict-mode schema for a canonical schema.
pub fn openai_strict(schema: &Value) -> Result<Value, LoweringError> {
    let out = run(Dialect::OpenAiStrict, schema)?;
    check_openai_limits(&out)?;
    Ok(out)
}

/// Anthropic's strict-mode schema for a canonical schema.
pub fn anthropic_strict(schema: &Value) -> Result<Value, LoweringError> {
    run(Dialect::AnthropicStrict, schema)
}

/// Gemini's `parameters` (OpenAPI 3.0 subset) for a canonical schema.
pub fn gemini(schema: &Value) -> Result<Value, LoweringError> {
    run(Dialect::Gemini, schema)
}

/// MCP's `inputSchema`: the canonical schema, except that a tool without
/// parameters gets `{"type":"object","additionalProperties":false}`.
///
/// ```
/// use serde_json::json;
/// use toolreg::provider::lower;
///
/// assert_eq!(lower::mcp(&json!({"type": "object"})), json!({"type": "object", "additionalProperties": false}));
/// let some = json!({"type": "object", "properties": {"city": {"type": "string"}}});
/// assert_eq!(lower::mcp(&some), some);
/// ```
pub fn mcp(schema: &Value) -> Value {
    mcp_input(schema).clone()
}

/// [`mcp`], borrowed either way: what the MCP format sends.
pub(crate) fn mcp_input(schema: &Value) -> &Value {
    if has_no_parameters(schema) { closed_empty() } else { schema }
}

/// The closed empty object schema, `{"type": "object", "additionalProperties": false}`.
pub(crate) fn closed_empty() -> &'static Value {
    static CLOSED_EMPTY: LazyLock<Value> =
        LazyLock::new(|| serde_json::json!({"type": "object", "additionalProperties": false}));
    &CLOSED_EMPTY
}

/// Whether an object schema declares no parameters at all.
pub(crate) fn has_no_parameters(schema: &Value) -> bool {
    schema.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
        && schema.get("additionalProperties").is_none_or(|a| a == false)
        && !["anyOf", "oneOf", "allOf", "$ref", "patternProperties"].iter().any(|k| schema.get(*k).is_some())
}

fn run(dialect: Dialect, schema: &Value) -> Result<Value, LoweringError> {
    // A schema that would blow up once its references are inlined (which
    // registration refuses) is not walked at all.
    match crate::schema::measure(schema) {
        Ok(_) => {}
        Err(Exceeded::Nodes(count)) => {
            let what = "schema nodes once `$ref`s are inlined";
            return Err(LoweringError::Limit { what, count, limit: crate::schema::MAX_SCHEMA_NODES });
        }
        Err(Exceeded::Depth(count)) => {
            let what = "levels of schema nesting once `$ref`s are inlined";
            return Err(LoweringError::Limit { what, count, limit: crate::schema::MAX_SCHEMA_DEPTH });
        }
    }
    let mut value = schema.clone();
    let mut lower = Lower { dialect, path: String::new(), error: None };
    match <&mut Schema>::try_from(&mut value) {
        Ok(root) => lower.transform(root),
        Err(_) => return Err(unsupported("", "the input schema is not a JSON object")),
    }
    if let Some(error) = lower.error {
        return Err(error);
    }
    if value.get("type").and_then(Value::as_str).is_none_or(|t| !t.eq_ignore_ascii_case("object")) {
        return Err(unsupported("", "the root must be a single object schema (`\"type\": \"object\"`)"));
    }
    Ok(value)
}

fn unsupported(path: &str, reason: impl Into<String>) -> LoweringError {
    LoweringError::Unsupported { path: path.to_owned(), reason: reason.into() }
}

/// Which provider subset a schema is lowered to: the formats name one in
/// their schema mode, and the walk follows its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    OpenAiStrict,
    AnthropicStrict,
    Gemini,
}

/// What a dialect does with a keyword.
enum Keep {
    /// Kept as is.
    Yes,
    /// Removed without a word (annotations, formats implied by bounds).
    Drop,
    /// Removed, and written into the description.
    Describe,
    /// Cannot be expressed: an error.
    Refuse,
}

const OPENAI_FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
const ANTHROPIC_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"];
const GEMINI_FORMATS: &[&str] = &["date-time", "enum", "int32", "int64", "float", "double"];
/// Formats schemars writes for Rust numbers; their bounds are kept as `minimum`/`maximum`.
const NUMBER_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32", "uint64", "uint128",
    "float", "double",
];

impl Dialect {
    /// `schema` lowered to this dialect: [`openai_strict`],
    /// [`anthropic_strict`] or [`gemini`].
    pub(crate) fn lower(self, schema: &Value) -> Result<Value, LoweringError> {
        match self {
            Dialect::OpenAiStrict => openai_strict(schema),
            Dialect::AnthropicStrict => anthropic_strict(schema),
            Dialect::Gemini => gemini(schema),
        }
    }

    fn keyword(self, key: &str, value: &Value) -> Keep {
        use Dialect::*;
        match key {
            "type" | "description" | "title" | "enum" | "anyOf" | "properties" | "required" | "items" => Keep::Yes,
            "$schema" | "$id" | "$comment" | "deprecated" | "readOnly" | "writeOnly" | "$anchor" => Keep::Drop,
            "additionalProperties" => Keep::Yes,
            // What a value must not be (a `NonZeroI8`'s `{"not": {"const": 0}}`):
            // no provider subset takes it, validation still enforces it.
            "not" => Keep::Describe,
            "if" | "then" | "else" | "dependentRequired" | "dependentSchemas" | "patternProperties"
            | "propertyNames" | "contains" | "$dynamicRef" => Keep::Refuse,
            "unevaluatedProperties" | "unevaluatedItems" if value == false => Keep::Drop,
            "unevaluatedProperties" | "unevaluatedItems" => Keep::Refuse,
            "format" => {
                let f = value.as_str().unwrap_or_default();
                let allowed = match self {
                    OpenAiStrict => OPENAI_FORMATS,
                    AnthropicStrict => ANTHROPIC_FORMATS,
                    Gemini => GEMINI_FORMATS,
                };
                if allowed.contains(&f) {
                    Keep::Yes
                } else if NUMBER_FORMATS.contains(&f) {
                    Keep::Drop
                } else {
                    Keep::Describe
                }
            }
            "$defs" | "$ref" => match self {
                OpenAiStrict => Keep::Yes,
                _ => Keep::Refuse,
            },
            "pattern" | "minimum" | "maximum" => match self {
                AnthropicStrict => Keep::Describe,
                _ => Keep::Yes,
            },
            "minItems" => match self {
                AnthropicStrict if !(value == 0 || value == 1) => Keep::Describe,
                _ => Keep::Yes,
            },
            "maxItems" => match self {
                AnthropicStrict => Keep::Describe,
                _ => Keep::Yes,
            },
            "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => match self {
                OpenAiStrict => Keep::Yes,
                _ => Keep::Describe,
            },
            "minLength" | "maxLength" | "minProperties" | "maxProperties" => match self {
                Gemini => Keep::Yes,
                _ => Keep::Describe,
            },
            "default" => match self {
                Gemini => Keep::Yes,
                _ => Keep::Describe,
            },
            "nullable" => match self {
                Gemini => Keep::Yes,
                _ => Keep::Drop,
            },
            "example" => match self {
                Gemini => Keep::Yes,
                _ => Keep::Describe,
            },
            _ => Keep::Describe,
        }
    }

    fn keeps_type_arrays(self) -> bool {
        self == Dialect::OpenAiStrict
    }
}

/// OpenAI's strict-mode limits: 5,000 properties, 10 levels of nesting,
/// 1,000 enum values, 120,000 characters of names and enum values.
fn check_openai_limits(schema: &Value) -> Result<(), LoweringError> {
    #[derive(Default)]
    struct Count {
        properties: usize,
        depth: usize,
        enums: usize,
        chars: usize,
    }
    fn walk(v: &Value, depth: usize, c: &mut Count) {
        let Value::Object(obj) = v else { return };
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            c.properties += props.len();
            c.depth = c.depth.max(depth + 1);
            for (k, p) in props {
                c.chars += k.len();
                walk(p, depth + 1, c);
            }
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            c.enums += values.len();
            c.chars += values.iter().map(|v| v.as_str().map_or(v.to_string().len(), str::len)).sum::<usize>();
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub) = obj.get(key) {
                walk(sub, depth, c);
            }
        }
        for key in ["anyOf", "allOf"] {
            for sub in obj.get(key).and_then(Value::as_array).into_iter().flatten() {
                walk(sub, depth, c);
            }
        }
        for sub in obj.get("$defs").and_then(Value::as_object).into_iter().flat_map(|d| d.values()) {
            walk(sub, 0, c);
        }
    }
    let mut c = Count::default();
    walk(schema, 0, &mut c);
    let checks = [
        ("properties in all", c.properties, 5_000),
        ("levels of object nesting", c.depth, 10),
        ("enum values in all", c.enums, 1_000),
        ("characters of property names and enum values", c.chars, 120_000),
    ];
    for (what, count, limit) in checks {
        if count > limit {
            return Err(LoweringError::Limit { what, count, limit });
        }
    }
    Ok(())
}
