//! Schema lowering: from a tool's one canonical JSON Schema to what each
//! provider accepts.
//!
//! Each lowering is a schemars [`Transform`] run over the whole schema:
//!
//! - [`openai_strict`]: every object closed (`additionalProperties: false`)
//!   with every property required, optional ones made nullable; `oneOf`
//!   becomes `anyOf`, `const` a one-value `enum`; keywords strict mode does not
//!   take are removed and, where they carry meaning, written into the
//!   description; OpenAI's size limits are checked. Free-form objects and
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

use schemars::Schema;

use crate::schema::Exceeded;
use schemars::transform::Transform;
use serde_json::{Map, Value};

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
pub fn mcp(schema: &Value) -> Value {
    if has_no_parameters(schema) {
        serde_json::json!({"type": "object", "additionalProperties": false})
    } else {
        schema.clone()
    }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
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
    fn keyword(self, key: &str, value: &Value) -> Keep {
        use Dialect::*;
        match key {
            "type" | "description" | "title" | "enum" | "anyOf" | "properties" | "required" | "items" => Keep::Yes,
            "$schema" | "$id" | "$comment" | "deprecated" | "readOnly" | "writeOnly" | "$anchor" => Keep::Drop,
            "additionalProperties" => Keep::Yes,
            "not" | "if" | "then" | "else" | "dependentRequired" | "dependentSchemas" | "patternProperties"
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

/// The lowering transform for one dialect. Records the first error and
/// stops there.
struct Lower {
    dialect: Dialect,
    path: String,
    error: Option<LoweringError>,
}

impl Transform for Lower {
    fn transform(&mut self, schema: &mut Schema) {
        if self.error.is_some() {
            return;
        }
        if let Some(b) = schema.as_bool() {
            match (b, self.dialect) {
                (true, Dialect::Gemini) => *schema = Schema::default(),
                (true, _) => {
                    self.fail("a schema that accepts any value cannot be strict; give it a type");
                }
                (false, _) => self.fail("a schema that accepts no value (`false`) cannot be sent"),
            }
            return;
        }
        let Some(obj) = schema.as_object_mut() else { return };
        if let Err(reason) = self.lower_node(obj) {
            self.fail(reason);
            return;
        }
        self.descend(obj);
        if self.error.is_some() {
            return;
        }
        if let Err(reason) = self.finish_node(obj) {
            self.fail(reason);
        }
    }
}

impl Lower {
    fn fail(&mut self, reason: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(unsupported(&self.path, reason));
        }
    }

    fn at<R>(&mut self, segment: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        self.path.push('/');
        self.path.push_str(&segment.replace('~', "~0").replace('/', "~1"));
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn sub(&mut self, segment: &str, value: &mut Value) {
        self.at(segment, |this| {
            if let Ok(schema) = <&mut Schema>::try_from(value) {
                this.transform(schema);
            }
        });
    }

    /// Visit the subschemas that are left once the node itself is lowered.
    fn descend(&mut self, obj: &mut Map<String, Value>) {
        for (key, value) in obj.iter_mut() {
            match key.as_str() {
                "properties" | "$defs" => {
                    if let Some(props) = value.as_object_mut() {
                        self.at(key, |this| {
                            for (name, sub) in props.iter_mut() {
                                this.sub(name, sub);
                            }
                        });
                    }
                }
                "items" => self.sub("items", value),
                "additionalProperties" if value.is_object() => self.sub("additionalProperties", value),
                "anyOf" | "allOf" => {
                    if let Some(items) = value.as_array_mut() {
                        self.at(key, |this| {
                            for (i, sub) in items.iter_mut().enumerate() {
                                this.sub(&i.to_string(), sub);
                            }
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Rewrite the node's own keywords (children are lowered afterwards).
    fn lower_node(&mut self, obj: &mut Map<String, Value>) -> Result<(), String> {
        let dialect = self.dialect;
        if self.refuse_reference(obj) {
            return Ok(());
        }
        if dialect != Dialect::OpenAiStrict && self.path.is_empty() {
            obj.remove("$defs");
        }
        // oneOf -> anyOf; Gemini's null branches -> nullable (which may
        // merge a branch that is itself a oneOf, or a reference: the
        // recursion of an `Option<Box<T>>`); a single allOf is merged.
        one_of_to_any_of(obj)?;
        if dialect == Dialect::Gemini {
            self.gemini_nulls(obj);
            if self.refuse_reference(obj) {
                return Ok(());
            }
            one_of_to_any_of(obj)?;
        }
        if let Some(Value::Array(mut all_of)) = obj.remove("allOf") {
            if all_of.len() == 1 {
                if let Value::Object(inner) = all_of.remove(0) {
                    merge_under(obj, inner);
                }
            } else if dialect == Dialect::AnthropicStrict {
                obj.insert("allOf".into(), Value::Array(all_of));
            } else {
                return Err("`allOf` with more than one schema is not supported".into());
            }
        }
        if dialect != Dialect::Gemini {
            self.merge_into_branches(obj)?;
        }
        tuple_to_items(obj);
        if let Some(examples) = obj.remove("examples")
            && let Some(first) = examples.as_array().and_then(|a| a.first())
        {
            obj.entry("example").or_insert_with(|| first.clone());
        }
        // const -> enum (Anthropic keeps const).
        if dialect != Dialect::AnthropicStrict
            && let Some(value) = obj.remove("const")
        {
            obj.insert("enum".into(), Value::Array(vec![value]));
        }
        if dialect == Dialect::AnthropicStrict {
            // As the SDK does: a primitive enum or const stands for its type.
            let enum_ok = obj.get("enum").map(|v| v.as_array().is_some_and(|a| a.iter().all(is_primitive)));
            if enum_ok == Some(false) {
                return Err("enum values must be strings, numbers, booleans or null".into());
            }
            if enum_ok == Some(true) || obj.get("const").is_some_and(is_primitive) {
                obj.remove("type");
            }
        }
        self.split_type_array(obj)?;
        if dialect == Dialect::Gemini {
            gemini_enum(obj);
        }
        // Keywords the dialect does not take.
        let mut notes: Vec<(String, Value)> = Vec::new();
        let keys: Vec<String> = obj.keys().cloned().collect();
        for key in keys {
            if dialect == Dialect::AnthropicStrict && key == "const" {
                continue;
            }
            match dialect.keyword(&key, &obj[&key]) {
                Keep::Yes => {}
                Keep::Drop => {
                    obj.remove(&key);
                }
                Keep::Describe => {
                    if let Some(v) = obj.remove(&key) {
                        notes.push((key, v));
                    }
                }
                Keep::Refuse => return Err(format!("the keyword `{key}` is not supported")),
            }
        }
        if !notes.is_empty() {
            describe(obj, &notes);
        }
        // Objects.
        let is_object = match obj.get("type") {
            Some(Value::String(t)) => t.eq_ignore_ascii_case("object"),
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => false,
        };
        if is_object && dialect != Dialect::Gemini {
            match obj.get("additionalProperties") {
                None | Some(Value::Bool(false)) => {}
                Some(_) => {
                    return Err(
                        "a map (object with `additionalProperties`) cannot be strict: its keys are not known in advance"
                            .into(),
                    );
                }
            }
            if !obj.contains_key("properties") {
                if !self.path.is_empty() || obj.contains_key("additionalProperties") {
                    return Err("a free-form object (no `properties`) cannot be strict".into());
                }
                // The root of a tool without parameters.
                obj.insert("properties".into(), Value::Object(Map::new()));
            }
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
        if is_object
            && dialect == Dialect::Gemini
            && let Some(props) = obj.get("properties").and_then(Value::as_object)
            && let Some(bad) = props.keys().find(|k| !gemini_param_name(k))
        {
            return Err(format!(
                "parameter name `{bad}` is not allowed; Gemini takes `^[A-Za-z_][A-Za-z0-9_]{{0,63}}$`"
            ));
        }
        Ok(())
    }

    /// Work that needs the lowered children: strict mode's required list.
    fn finish_node(&mut self, obj: &mut Map<String, Value>) -> Result<(), String> {
        match self.dialect {
            Dialect::OpenAiStrict => {
                if obj.get("properties").is_some_and(Value::is_object) {
                    let required: Vec<String> = match obj.get("required") {
                        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                        _ => Vec::new(),
                    };
                    let props = match obj.get_mut("properties") {
                        Some(Value::Object(p)) => p,
                        _ => unreachable!("checked above"),
                    };
                    for (name, prop) in props.iter_mut() {
                        if !required.contains(name) && !allows_null(prop) {
                            make_nullable(prop);
                        }
                    }
                    let all: Vec<Value> = props.keys().cloned().map(Value::String).collect();
                    obj.insert("required".into(), Value::Array(all));
                }
                // A `$ref` with siblings is inlined by OpenAI's SDK; keep it alone in an anyOf.
                if obj.len() > 1
                    && let Some(reference) = obj.remove("$ref")
                {
                    let mut only = Map::new();
                    only.insert("$ref".into(), reference);
                    obj.insert("anyOf".into(), Value::Array(vec![Value::Object(only)]));
                }
                if obj.get("default").is_some_and(Value::is_null) {
                    obj.remove("default");
                }
            }
            Dialect::AnthropicStrict => {
                let is_object = obj.get("type").and_then(Value::as_str) == Some("object");
                if is_object {
                    obj.entry("properties").or_insert_with(|| Value::Object(Map::new()));
                }
                if let Some(Value::Array(all_of)) = obj.get("allOf")
                    && all_of.iter().any(|s| s.get("$ref").is_some())
                {
                    return Err("`allOf` with `$ref` is not supported".into());
                }
            }
            Dialect::Gemini => {
                if let Some(Value::String(t)) = obj.get_mut("type") {
                    *t = t.to_ascii_uppercase();
                }
            }
        }
        Ok(())
    }

    /// Strict mode closes every object, so properties beside a union of
    /// objects (what `#[serde(flatten)]` of an internally tagged enum
    /// gives: `{"properties": {..}, "anyOf": [{..}, {..}]}`) would leave no
    /// value that passes both. Below the root, the properties go into each
    /// branch; at the root (which must be one object) the schema cannot be
    /// strict.
    fn merge_into_branches(&mut self, obj: &mut Map<String, Value>) -> Result<(), String> {
        if !obj.contains_key("anyOf") || !(obj.contains_key("properties") || obj.contains_key("required")) {
            return Ok(());
        }
        if self.path.is_empty() {
            return Err("properties beside a union at the root (a flattened enum) cannot be strict: \
                        the root must be a single object"
                .into());
        }
        let properties = match obj.remove("properties") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        let required = match obj.remove("required") {
            Some(Value::Array(r)) => r,
            _ => Vec::new(),
        };
        obj.remove("additionalProperties");
        if obj.get("type").is_some_and(|t| t == "object") {
            obj.remove("type");
        }
        let Some(Value::Array(branches)) = obj.get_mut("anyOf") else { return Ok(()) };
        for branch in branches.iter_mut() {
            let Value::Object(branch) = branch else {
                return Err("properties beside a union whose branches are not objects cannot be strict".into());
            };
            let is_object = branch.get("type").is_some_and(|t| t == "object") || branch.contains_key("properties");
            if !is_object || branch.contains_key("$ref") {
                return Err("properties beside a union whose branches are not objects cannot be strict".into());
            }
            let own = branch.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(own) = own {
                for (k, v) in &properties {
                    if own.contains_key(k) {
                        return Err(format!("the property `{k}` is both beside and inside a union"));
                    }
                    own.insert(k.clone(), v.clone());
                }
            }
            let wanted = branch.entry("required").or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(wanted) = wanted {
                for r in &required {
                    if !wanted.contains(r) {
                        wanted.push(r.clone());
                    }
                }
            }
            branch.entry("type").or_insert_with(|| Value::String("object".into()));
        }
        Ok(())
    }

    /// A `$ref` left in a cleaned schema is a recursive type's: only
    /// OpenAI's strict mode takes it. Records the error; returns whether it did.
    fn refuse_reference(&mut self, obj: &Map<String, Value>) -> bool {
        let Some(reference) = obj.get("$ref").and_then(Value::as_str) else { return false };
        if self.dialect == Dialect::OpenAiStrict {
            return false;
        }
        let name = reference.rsplit('/').next().unwrap_or(reference).to_owned();
        if self.error.is_none() {
            self.error = Some(LoweringError::Recursive { name, path: self.path.clone() });
        }
        true
    }

    /// Gemini: null branches of `anyOf` become `nullable: true`; a single
    /// branch left is merged into its parent.
    fn gemini_nulls(&mut self, obj: &mut Map<String, Value>) {
        let Some(Value::Array(branches)) = obj.get_mut("anyOf") else { return };
        let before = branches.len();
        branches.retain(|b| !is_null_schema(b));
        let had_null = branches.len() != before;
        if branches.len() == 1
            && let Some(Value::Array(mut branches)) = obj.remove("anyOf")
            && let Value::Object(inner) = branches.remove(0)
        {
            merge_under(obj, inner);
        }
        if had_null {
            obj.insert("nullable".into(), Value::Bool(true));
        }
    }

    /// `"type": [..]`: kept by OpenAI; Gemini takes one type plus
    /// `nullable`; otherwise each type becomes an `anyOf` branch.
    fn split_type_array(&mut self, obj: &mut Map<String, Value>) -> Result<(), String> {
        let Some(Value::Array(types)) = obj.get("type") else { return Ok(()) };
        if self.dialect.keeps_type_arrays() {
            return Ok(());
        }
        let types: Vec<String> = types.iter().filter_map(Value::as_str).map(str::to_owned).collect();
        let non_null: Vec<&String> = types.iter().filter(|t| *t != "null").collect();
        let has_null = non_null.len() != types.len();
        if self.dialect == Dialect::Gemini && non_null.len() == 1 {
            obj.insert("type".into(), Value::String(non_null[0].clone()));
            if has_null {
                obj.insert("nullable".into(), Value::Bool(true));
                strip_null_enum(obj);
            }
            return Ok(());
        }
        if self.dialect == Dialect::Gemini && non_null.is_empty() {
            obj.insert("type".into(), Value::String("null".into()));
            return Ok(());
        }
        if obj.contains_key("anyOf") {
            return Err("a type list next to `anyOf` cannot be expressed".into());
        }
        obj.remove("type");
        const SHARED: &[&str] = &["description", "title", "default", "nullable"];
        let mut rest = Map::new();
        for key in obj.keys().cloned().collect::<Vec<_>>() {
            if !SHARED.contains(&key.as_str())
                && let Some(v) = obj.remove(&key)
            {
                rest.insert(key, v);
            }
        }
        let mut branches = Vec::new();
        for t in &types {
            if self.dialect == Dialect::Gemini && t == "null" {
                obj.insert("nullable".into(), Value::Bool(true));
                continue;
            }
            let mut branch = Map::new();
            branch.insert("type".into(), Value::String(t.clone()));
            if t != "null" {
                for (k, v) in &rest {
                    if keyword_applies(k, t) {
                        branch.insert(k.clone(), v.clone());
                    }
                }
            }
            branches.push(Value::Object(branch));
        }
        obj.insert("anyOf".into(), Value::Array(branches));
        Ok(())
    }
}

/// Tuples (`prefixItems`): no provider subset takes them. The positions
/// become one `items` schema (the union of the positions' schemas), the
/// order goes into the description, and the length stays in
/// `minItems`/`maxItems` where the dialect keeps them.
fn tuple_to_items(obj: &mut Map<String, Value>) {
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

fn one_of_to_any_of(obj: &mut Map<String, Value>) -> Result<(), String> {
    if let Some(one_of) = obj.remove("oneOf") {
        if obj.contains_key("anyOf") {
            return Err("`oneOf` next to `anyOf` cannot be expressed".into());
        }
        obj.insert("anyOf".into(), one_of);
    }
    Ok(())
}

/// Whether a type-specific keyword belongs with type `t` when a type list is split.
fn keyword_applies(key: &str, t: &str) -> bool {
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
fn gemini_enum(obj: &mut Map<String, Value>) {
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
    let ty = |v: &Value| match v {
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let first = ty(values.first()?);
    values.iter().all(|v| ty(v) == first).then_some(first)
}

fn strip_null_enum(obj: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

fn gemini_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_primitive(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").is_some_and(|t| t == "null") || v.get("const").is_some_and(Value::is_null)
}

/// Copy `inner`'s keywords into `obj` where `obj` has none of its own.
fn merge_under(obj: &mut Map<String, Value>, inner: Map<String, Value>) {
    for (k, v) in inner {
        obj.entry(k).or_insert(v);
    }
}

/// Append notes to the description as `{key: value, ...}`, the form the
/// `anthropic` SDK uses.
fn describe(obj: &mut Map<String, Value>, notes: &[(String, Value)]) {
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

/// Make a (lowered, strict) property schema accept `null` too.
fn make_nullable(prop: &mut Value) {
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
