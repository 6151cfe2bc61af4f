//! The canonical JSON Schema of a tool: generated from Rust types with
//! schemars, or taken raw and cleaned.
//!
//! "Clean" means what every provider can read: no `$schema`, no root `title`
//! (schemars puts the Rust type name there), and every `$ref` inlined except
//! those that make a recursive type, which keep their `$defs`.
//!
//! Inlining is bounded: a schema that would grow past [`MAX_SCHEMA_NODES`]
//! nodes or [`MAX_SCHEMA_DEPTH`] levels once its references are inlined (a
//! "`$ref` bomb", where each definition refers twice to the next) is left
//! as it is by [`clean`] and refused by [`check_bounds`].

use std::any::TypeId;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, OnceLock, PoisonError, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::validate::ArgumentValidator;

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

/// The schema of a type, generated once per type and shared: registering
/// many tools with one argument type (or one type twice: once for the
/// declaration, once to see whether serde is the whole check) costs one
/// generation. What the cache holds is bounded by the number of argument
/// types in the program.
pub(crate) fn cached_schema<T: JsonSchema + ?Sized + 'static>() -> Arc<CachedSchema> {
    static CACHE: LazyLock<RwLock<HashMap<TypeId, Arc<CachedSchema>>>> = LazyLock::new(Default::default);
    let id = TypeId::of::<T>();
    if let Some(found) = CACHE.read().unwrap_or_else(PoisonError::into_inner).get(&id) {
        return Arc::clone(found);
    }
    let schema = schema_for::<T>();
    let serde_accepts_more = serde_accepts_more_than(&schema);
    // What `ToolDeclaration::new` makes of it (a second clean inlines one
    // more level of a recursive type), so declarations stay as they were.
    let mut declared = schema.clone();
    clean(&mut declared);
    let argument_object = is_object_with_properties(&schema);
    let entry =
        Arc::new(CachedSchema { schema, declared, serde_accepts_more, argument_object, validator: OnceLock::new() });
    Arc::clone(CACHE.write().unwrap_or_else(PoisonError::into_inner).entry(id).or_insert(entry))
}

/// A type's generated schema, and whether serde takes more than it says.
#[derive(Debug)]
pub(crate) struct CachedSchema {
    /// As [`schema_for`] makes it.
    pub(crate) schema: Value,
    /// As a declaration holds it.
    pub(crate) declared: Value,
    pub(crate) serde_accepts_more: bool,
    /// See [`is_argument_object`].
    pub(crate) argument_object: bool,
    /// The schema's validator, compiled when a tool with this argument
    /// type is first registered, and shared by every such tool.
    validator: OnceLock<Result<Arc<ArgumentValidator>, String>>,
}

impl CachedSchema {
    /// The validator of [`schema`](Self::schema), or why the schema
    /// cannot be compiled; compiled once per type.
    pub(crate) fn validator(&self) -> Result<Arc<ArgumentValidator>, String> {
        self.validator.get_or_init(|| ArgumentValidator::compile(&self.schema).map(Arc::new)).clone()
    }
}

/// Whether `T`'s schema is an object with named properties (`"type":
/// "object"` and a `properties` map): what a struct with named fields
/// generates, and what every provider takes as a tool's whole argument
/// object.
///
/// This is how `#[tool]` decides a function's lone parameter (see
/// [`tool`](crate::tool), "Parameters"): such a type is the whole argument
/// object, any other (a string, a list, a map, a newtype, a tuple or unit
/// struct, an enum, an `Option`) is one named argument. It reads the schema,
/// never the type's name, and is computed once per type.
///
/// ```
/// use std::collections::HashMap;
///
/// #[derive(schemars::JsonSchema)]
/// struct Query { text: String, limit: Option<u32> }
/// #[derive(schemars::JsonSchema)]
/// struct Id(u64);
/// #[derive(schemars::JsonSchema)]
/// enum Mode { Fast, Thorough }
///
/// use toolreg::schema::is_argument_object;
/// assert!(is_argument_object::<Query>());
/// assert!(!is_argument_object::<Option<Query>>());
/// assert!(!is_argument_object::<Id>());
/// assert!(!is_argument_object::<Mode>());
/// assert!(!is_argument_object::<String>());
/// assert!(!is_argument_object::<Vec<Query>>());
/// assert!(!is_argument_object::<HashMap<String, u32>>());
/// ```
pub fn is_argument_object<T: JsonSchema + ?Sized + 'static>() -> bool {
    cached_schema::<T>().argument_object
}

fn is_object_with_properties(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
        && schema.get("properties").is_some_and(Value::is_object)
}

/// Make a schema readable by every provider, in place: drop `$schema` and the
/// root `title`, inline local `$ref`s that do not recurse, and drop `$defs`
/// nothing refers to any more. A schema over the bounds of [`check_bounds`]
/// keeps its references (and is refused at registration).
pub fn clean(schema: &mut Value) {
    let within_bounds = measure(schema).is_ok();
    let Value::Object(root) = schema else { return };
    root.remove("$schema");
    root.remove("title");
    if !within_bounds {
        return;
    }
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

/// Most JSON nodes a schema may have once its local `$ref`s are inlined.
pub const MAX_SCHEMA_NODES: usize = 50_000;
/// Deepest nesting a schema may have once its local `$ref`s are inlined.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// Check that a schema stays within [`MAX_SCHEMA_NODES`] and
/// [`MAX_SCHEMA_DEPTH`] once its local `$ref`s are inlined (recursive
/// references count once). The work is bounded by the size of the schema
/// as written, whatever it would expand to, and uses no recursion.
///
/// ```
/// use serde_json::json;
/// // Each definition refers twice to the next: 2^40 copies once inlined.
/// let mut defs = serde_json::Map::new();
/// for i in 0..40 {
///     let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
///     defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next, "b": next}}));
/// }
/// defs.insert("D40".into(), json!({"type": "string"}));
/// let bomb = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs});
/// let err = toolreg::schema::check_bounds(&bomb).unwrap_err();
/// assert!(err.contains("more than 50000 nodes"), "{err}");
/// ```
pub fn check_bounds(schema: &Value) -> Result<(), String> {
    measure(schema).map(|_| ()).map_err(|e| e.to_string())
}

/// A bound [`measure`] found exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Nodes(usize),
    Depth(usize),
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Nodes(n) => write!(
                f,
                "the schema has more than {MAX_SCHEMA_NODES} nodes once its `$ref`s are inlined (at least {n}); \
                 refer to fewer copies of its definitions"
            ),
            Exceeded::Depth(d) => write!(
                f,
                "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels once its `$ref`s are inlined (at least {d})"
            ),
        }
    }
}

/// What one schema (a definition, or the root without its definitions)
/// holds as written: its nodes, its depth, and its local references with
/// the depth at which each sits.
struct Local<'a> {
    nodes: usize,
    depth: usize,
    refs: Vec<(&'a str, usize)>,
}

fn local<'a>(schema: &'a Value, skip_defs: bool) -> Local<'a> {
    let mut out = Local { nodes: 0, depth: 0, refs: Vec::new() };
    let mut stack: Vec<(&'a Value, usize, bool)> = vec![(schema, 1, skip_defs)];
    while let Some((value, depth, is_root)) = stack.pop() {
        out.nodes += 1;
        out.depth = out.depth.max(depth);
        match value {
            Value::Object(map) => {
                if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(local_ref_name) {
                    out.refs.push((name, depth));
                }
                for (key, child) in map {
                    if is_root && (key == "$defs" || key == "definitions") {
                        continue;
                    }
                    stack.push((child, depth + 1, false));
                }
            }
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1, false))),
            _ => {}
        }
    }
    out
}

/// Nodes and depth of a schema once its references are inlined, or the
/// first bound it exceeds. Each definition is expanded once (memoised), in
/// a depth-first walk over definitions with an explicit stack.
pub(crate) fn measure(schema: &Value) -> Result<(usize, usize), Exceeded> {
    let mut defs: HashMap<&str, &Value> = HashMap::new();
    if let Value::Object(root) = schema {
        for key in ["definitions", "$defs"] {
            if let Some(Value::Object(d)) = root.get(key) {
                defs.extend(d.iter().map(|(k, v)| (k.as_str(), v)));
            }
        }
    }
    let check = |nodes: usize, depth: usize| {
        if nodes > MAX_SCHEMA_NODES {
            Err(Exceeded::Nodes(nodes))
        } else if depth > MAX_SCHEMA_DEPTH {
            Err(Exceeded::Depth(depth))
        } else {
            Ok(())
        }
    };
    let locals: HashMap<&str, Local<'_>> = defs.iter().map(|(name, def)| (*name, local(def, false))).collect();
    // Expanded (nodes, depth) per definition; `None` while being expanded
    // (a reference to it then is recursive and counts as one node).
    let mut done: HashMap<&str, Option<(usize, usize)>> = HashMap::new();
    let root = local(schema, true);
    // Frames: (definition or None for the root, next reference, nodes, depth).
    let mut frames: Vec<(Option<&str>, usize, usize, usize)> = vec![(None, 0, root.nodes, root.depth)];
    while let Some(frame) = frames.last_mut() {
        let (name, next, nodes, depth) = *frame;
        let refs = match name {
            None => &root.refs,
            Some(n) => &locals[n].refs,
        };
        if let Some(&(target, at)) = refs.get(next) {
            frame.1 += 1;
            if !locals.contains_key(target) {
                continue;
            }
            match done.get(target) {
                Some(Some((n, d))) => {
                    frame.2 = nodes.saturating_add(*n);
                    frame.3 = depth.max(at.saturating_add(*d));
                    check(frame.2, frame.3)?;
                }
                Some(None) => {}
                None => {
                    done.insert(target, None);
                    let l = &locals[target];
                    frames.push((Some(target), 0, l.nodes, l.depth));
                }
            }
            continue;
        }
        // Every reference of this frame is counted: hand its size to the parent.
        frames.pop();
        let Some(name) = name else { return check(nodes, depth).map(|()| (nodes, depth)) };
        done.insert(name, Some((nodes, depth)));
        if let Some(parent) = frames.last_mut() {
            let parent_refs = match parent.0 {
                None => &root.refs,
                Some(n) => &locals[n].refs,
            };
            let at = parent_refs[parent.1 - 1].1;
            parent.2 = parent.2.saturating_add(nodes);
            parent.3 = parent.3.max(at.saturating_add(depth));
            check(parent.2, parent.3)?;
        }
    }
    Ok((root.nodes, root.depth))
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
            // A string `const` is how schemars writes an enum's unit variant,
            // whose name serde checks like `enum`'s.
            let string_const = map.get("const").is_some_and(Value::is_string);
            let constrained = CONSTRAINTS.iter().any(|k| map.contains_key(*k) && !(*k == "const" && string_const));
            if constrained || is_buffered_union(map) {
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

/// A union serde reads through its own buffer (untagged, internally and
/// adjacently tagged enums, flattened enums), where the strict deserializer
/// cannot reach. An externally tagged enum — serde's default, whose schema
/// is a union of unit-variant strings and one-key objects — is read through
/// the deserializer's own enum access and is not one; nor is `Option`'s
/// "this or null".
fn is_buffered_union(map: &Map<String, Value>) -> bool {
    if map.contains_key("allOf") {
        return true;
    }
    let not_null = |branch: &&Value| branch.get("type").and_then(Value::as_str) != Some("null");
    let branches: Vec<&Value> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_array))
        .flatten()
        .filter(not_null)
        .collect();
    branches.len() > 1 && !branches.iter().all(|branch| is_external_variant(branch))
}

/// A branch of an externally tagged enum: a unit variant's string, or an
/// object with exactly one property, required, and nothing else allowed.
fn is_external_variant(branch: &Value) -> bool {
    let is_string_const = branch.get("type").and_then(Value::as_str) == Some("string")
        && (branch.get("const").is_some_and(Value::is_string)
            || branch.get("enum").and_then(Value::as_array).is_some_and(|e| e.iter().all(Value::is_string)));
    if is_string_const {
        return true;
    }
    let one_key = branch.get("properties").and_then(Value::as_object).filter(|p| p.len() == 1);
    let required = branch.get("required").and_then(Value::as_array);
    match (one_key, required) {
        (Some(props), Some(required)) => {
            branch.get("additionalProperties") == Some(&Value::Bool(false))
                && required.len() == 1
                && props.keys().next().is_some_and(|k| required[0] == *k)
        }
        _ => false,
    }
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

    /// `levels` definitions, each referring twice to the next.
    fn ref_bomb(levels: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..levels {
            let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
            defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next, "b": next}}));
        }
        defs.insert(format!("D{levels}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    }

    #[test]
    fn a_ref_bomb_is_left_alone_and_refused() {
        let bomb = ref_bomb(40);
        let size = bomb.to_string().len();
        assert!((3_000..4_000).contains(&size), "{size} bytes");
        assert!(matches!(measure(&bomb), Err(Exceeded::Nodes(_))));
        let err = check_bounds(&bomb).unwrap_err();
        assert!(err.starts_with("the schema has more than 50000 nodes once its `$ref`s are inlined"), "{err}");
        // Cleaning returns at once and keeps the references.
        let decl = crate::ToolDeclaration::new("bomb", "", bomb);
        assert_eq!(decl.input_schema["properties"]["x"]["$ref"], "#/$defs/D0");
        assert!(check_bounds(&decl.input_schema).is_err());
        // A small one is inlined as before, and passes.
        let mut small = ref_bomb(3);
        assert_eq!(measure(&small).map(|(_, d)| d > 0), Ok(true));
        clean(&mut small);
        assert!(small.get("$defs").is_none());
        assert_eq!(small["properties"]["x"]["properties"]["b"]["properties"]["a"]["properties"]["b"]["type"], "string");
        assert_eq!(check_bounds(&small), Ok(()));
    }

    #[test]
    fn bounds_count_recursion_once_and_refuse_deep_chains() {
        let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}});
        assert_eq!(check_bounds(&tree), Ok(()));
        // A chain of 200 definitions, each one level below the last: no
        // doubling, but too deep once inlined (and measured without recursion).
        let mut defs = Map::new();
        for i in 0..200 {
            defs.insert(format!("C{i}"), json!({"type": "array", "items": {"$ref": format!("#/$defs/C{}", i + 1)}}));
        }
        defs.insert("C200".into(), json!({"type": "integer"}));
        let chain = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/C0"}}, "$defs": defs});
        assert!(matches!(measure(&chain), Err(Exceeded::Depth(_))), "{:?}", measure(&chain));
        let mut cleaned = chain.clone();
        clean(&mut cleaned);
        assert_eq!(cleaned["properties"]["x"]["$ref"], "#/$defs/C0", "left as it is");
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
        // An externally tagged enum is read by the strict deserializer.
        let unit = json!({"type": "string", "const": "Km", "description": "kilometres"});
        let data =
            json!({"type": "object", "properties": {"At": point}, "required": ["At"], "additionalProperties": false});
        assert!(!serde_accepts_more_than(&json!({"properties": {"u": {"oneOf": [unit, data]}}})));
        // Unions serde buffers are checked against the schema first.
        assert!(serde_accepts_more_than(&json!({"properties": {"s": {"oneOf": [point, {"type": "string"}]}}})));
        assert!(serde_accepts_more_than(&json!({"properties": {"s": {"anyOf": [point, {"type": "string"}]}}})));
        // A map is not a struct.
        assert!(!serde_accepts_more_than(
            &json!({"properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}})
        ));
    }
}
