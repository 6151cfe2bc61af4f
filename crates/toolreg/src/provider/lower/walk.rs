//! The walk itself: one schemars [`Transform`] that visits every node of a
//! schema, rewrites it for one [`Dialect`] (what the dialect keeps, drops,
//! describes or refuses, as the tables in the parent module say), and
//! stops at the first node it cannot lower.
//!
//! Apart from the tables so that what each provider takes and how a schema
//! is walked can be read one at a time.

use schemars::Schema;
use schemars::transform::Transform;
use serde_json::{Map, Value};

use super::nodes::{
    allows_null, describe, gemini_enum, gemini_param_name, is_null_schema, is_primitive, keyword_applies,
    make_nullable, merge_under, not_note, one_of_to_any_of, strip_null_enum, tuple_to_items,
};
use super::{Dialect, Keep, LoweringError, unsupported};

/// Why a schema that accepts any value cannot be lowered for strict mode.
const ANY_VALUE: &str = "a schema that accepts any value cannot be strict; give it a type";

/// Keywords that say what a value is, one of which a strict schema needs.
const UNTYPED_OK: &[&str] = &["type", "anyOf", "allOf", "enum", "const", "$ref"];

/// The lowering transform for one dialect. Records the first error and
/// stops there.
pub(super) struct Lower {
    pub(super) dialect: Dialect,
    /// JSON Pointer to the node being lowered, for the error.
    pub(super) path: String,
    pub(super) error: Option<LoweringError>,
}

impl Transform for Lower {
    fn transform(&mut self, schema: &mut Schema) {
        if self.error.is_some() {
            return;
        }
        if let Some(b) = schema.as_bool() {
            match (b, self.dialect) {
                (true, Dialect::Gemini) => *schema = Schema::default(),
                (true, _) => self.fail(ANY_VALUE),
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
                        let v = if key == "not" { not_note(v) } else { v };
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
        // A schema with nothing that says what a value is (`{"description":
        // ..}`, what schemars writes for a documented `serde_json::Value`)
        // accepts anything, as `true` does: strict mode refuses it.
        if dialect != Dialect::Gemini && !UNTYPED_OK.iter().any(|k| obj.contains_key(*k)) {
            return Err(ANY_VALUE.into());
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
