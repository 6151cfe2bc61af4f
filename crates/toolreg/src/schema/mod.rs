//! The canonical JSON Schema of a tool: generated from Rust types with
//! schemars, or taken raw and cleaned.
//!
//! "Clean" means what every provider can read: no `$schema`, no root `title`
//! (schemars puts the Rust type name there), and every `$ref` inlined except
//! those that make a recursive type, which keep their `$defs`.
//!
//! Formats are JSON Schema's own: the number formats schemars writes
//! (`uint64`, `int32`, `double`, …) are dropped, an unsigned integer has
//! `minimum: 0`, and argument validation still enforces each Rust type's
//! range.
//!
//! Inlining is bounded: a schema that would grow past [`MAX_SCHEMA_NODES`]
//! nodes or [`MAX_SCHEMA_DEPTH`] levels once its references are inlined (a
//! "`$ref` bomb", where each definition refers twice to the next) is left
//! as it is by [`clean`] and refused by [`check_bounds`].

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock, PoisonError, RwLock};

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::validate::ArgumentValidator;
// Where the registry looks for it; the check belongs to validation.
pub(crate) use crate::validate::check_input_schema;

#[cfg(any(feature = "providers", test))]
pub(crate) use bounds::{Exceeded, measure};
pub use bounds::{MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, check_bounds};
pub use inline::clean;
pub(crate) use serde_check::serde_accepts_more_than;

// One job per file: `inline` (cleaning: inlining local `$ref`s), `bounds`
// (how big a schema would grow once inlined), `formats` (standard formats
// only) and `serde_check` (what serde accepts that the schema refuses);
// generation and the per-type cache here.
mod bounds;
mod formats;
mod inline;
mod serde_check;
#[cfg(test)]
mod tests;

/// The JSON Schema of `T`, generated with schemars and [`clean`]ed, with
/// standard formats only (an unsigned integer has `minimum: 0`).
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
/// // `u8` is an integer from 0 to 255, without schemars' `"format": "uint8"`.
/// assert_eq!(schema["properties"]["days"], serde_json::json!({"type": ["integer", "null"], "minimum": 0, "maximum": 255}));
/// ```
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let mut value = generate::<T>();
    formats::standardise(&mut value);
    value
}

/// `T`'s schema as schemars writes it (its own formats kept), [`clean`]ed.
fn generate<T: JsonSchema + ?Sized>() -> Value {
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
    // Whether serde checks everything the schema does is read from the
    // formats schemars writes (they say which bounds are the Rust type's);
    // the schema keeps standard formats only.
    let mut schema = generate::<T>();
    let serde_accepts_more = serde_accepts_more_than(&schema);
    formats::standardise(&mut schema);
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
