//! From the calls a model wrote back to the real tools: the
//! [`CallMapping`] a declaration leaves behind (provider spellings of names,
//! the `null`s strict mode made up for absent arguments, ids toolreg
//! generated), and the small readers every format's `calls_in` shares.
//!
//! Apart from preparation because it runs on the other half of a turn: a
//! mapping outlives the declaration that made it and is read on every
//! response.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::{Provider, ProviderError, ToolRef, lower};
use crate::declaration::ToolDeclaration;
use crate::exec::{ToolArguments, ToolCall};

/// Sets and maps keyed by tool names. The keys are the application's tool
/// names (a model's names are only looked up), so a fast unkeyed hash is
/// safe, as in the registry's own table.
type Names<V> = HashMap<String, V, foldhash::fast::RandomState>;
type NameSet = HashSet<String, foldhash::fast::RandomState>;

/// How to get the model's calls back to the real tools: provider spellings
/// of names, for strict tools the optional arguments strict mode made
/// nullable (a `null` there means "absent"), and the call ids toolreg made
/// up for calls that came without one.
#[derive(Debug, Clone, Default)]
pub struct CallMapping {
    pub(super) real: Names<String>,
    spelled: Names<String>,
    nullable: Names<Arc<ToolDeclaration>>,
    generated: Arc<Mutex<HashSet<String>>>,
    /// The names (as the provider spells them) a declaration sent; `None`
    /// for a mapping not made by one, which accepts any name.
    pub(super) declared: Option<NameSet>,
    /// The real names of the tools a declaration sent deferred
    /// ([`ToolRef::deferred`]).
    pub(super) deferred: NameSet,
    /// The real name of the tool a declaration sent as the provider's tool
    /// search entry point ([`ToolRef::search_tool`]).
    pub(super) search: Option<String>,
    /// What a tool search's answer sends for each deferred tool (real
    /// name), for a format that sends found tools' definitions (OpenAI
    /// Responses' `tool_search_output`): the tool's entry as declared.
    pub(super) loadable: Names<Value>,
    /// The namespace and bare name each namespaced tool (real name) was
    /// declared with (OpenAI Responses' `namespace` entries).
    pub(super) namespaced: Names<(String, String)>,
}

impl CallMapping {
    /// The real tool name for a name the model used.
    pub fn real_name<'a>(&'a self, spelled: &'a str) -> &'a str {
        self.real.get(spelled).map_or(spelled, String::as_str)
    }

    /// The provider's spelling of a real tool name.
    pub fn provider_name<'a>(&'a self, real: &'a str) -> &'a str {
        self.spelled.get(real).map_or(real, String::as_str)
    }

    /// Whether the declaration sent this tool (real name) with deferred
    /// loading: a tool search result may then refer to it.
    pub fn is_deferred(&self, real: &str) -> bool {
        self.deferred.contains(real)
    }

    /// The real name of the tool the declaration sent as the provider's
    /// tool search entry point ([`ToolRef::search_tool`]), if one.
    pub fn search_tool(&self) -> Option<&str> {
        self.search.as_deref()
    }

    /// Whether any name is spelled differently for the provider.
    pub fn renames(&self) -> bool {
        !self.real.is_empty()
    }

    /// Whether toolreg made up this call id because the provider sent none
    /// (such an id is not sent back). Ids are recorded by
    /// [`WireFormat::parse_calls`](super::WireFormat::parse_calls) with this
    /// mapping (and its clones).
    pub fn is_generated_id(&self, id: &str) -> bool {
        self.generated.lock().unwrap_or_else(PoisonError::into_inner).contains(id)
    }

    /// Accept calls to any name, declared or not: for a caller that answers
    /// a call to an unknown tool itself (the engine's unknown-tool error
    /// result), and knows the tools it did not declare cannot be reached.
    #[must_use]
    pub fn accept_undeclared(mut self) -> Self {
        self.declared = None;
        self
    }

    /// Record that toolreg made up this call id: the next request's mapping
    /// learns it from the conversation's own record (the assistant message
    /// that carried the call), so that it is not sent back.
    pub fn note_generated_id(&self, id: &str) {
        self.generated.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned());
    }

    /// Map calls as the model wrote them back to the real tools: restore
    /// names, and drop the `null`s strict mode sent for absent optional
    /// arguments (so defaults apply). Argument text that does not parse is
    /// left as it is, for execution to report.
    pub fn apply(&self, calls: &mut [ToolCall]) {
        for call in calls {
            if let Some(real) = self.real.get(&call.name) {
                call.name.clone_from(real);
            }
            let Some(decl) = self.nullable.get(&call.name) else { continue };
            let schema = &decl.input_schema;
            match &mut call.arguments {
                ToolArguments::Json(value) => {
                    drop_absent_nulls(schema, value);
                }
                ToolArguments::Raw(text) => {
                    if let Ok(mut value) = serde_json::from_str::<Value>(text)
                        && drop_absent_nulls(schema, &mut value)
                    {
                        call.arguments = ToolArguments::Json(value);
                    }
                }
            }
        }
    }

    pub(crate) fn add_name(&mut self, real: &str, spelled: String) {
        if spelled != real {
            self.spelled.insert(real.to_owned(), spelled.clone());
            self.real.insert(spelled, real.to_owned());
        }
    }

    pub(crate) fn add_strict(&mut self, tool: &ToolRef<'_>) {
        if tool.strict_nulls() {
            let decl = match tool.shared {
                Some(shared) => Arc::clone(shared),
                None => Arc::new(tool.declaration().clone()),
            };
            self.nullable.insert(decl.name.clone(), decl);
        }
    }
}

/// Remove `null` values of properties that the canonical schema makes
/// optional and does not allow to be `null`. Returns whether anything changed.
fn drop_absent_nulls(schema: &Value, value: &mut Value) -> bool {
    let mut changed = false;
    match value {
        Value::Object(args) => {
            // A union (maybe beside properties, as a flattened enum gives):
            // the first object branch that knows every other key given.
            let outer = schema.get("properties").and_then(Value::as_object);
            let branch =
                ["anyOf", "oneOf"].iter().filter_map(|k| schema.get(*k).and_then(Value::as_array)).flatten().find(
                    |b| {
                        b.get("properties").and_then(Value::as_object).is_some_and(|p| {
                            args.keys().all(|k| p.contains_key(k) || outer.is_some_and(|o| o.contains_key(k)))
                        })
                    },
                );
            if let Some(branch) = branch {
                changed |= drop_absent_nulls(branch, value);
            }
            let Value::Object(args) = value else { return changed };
            let Some(props) = outer else { return changed };
            let required = schema.get("required").and_then(Value::as_array);
            let is_required = |k: &str| required.is_some_and(|r| r.iter().any(|x| x == k));
            args.retain(|k, v| {
                let drop = v.is_null() && !is_required(k) && props.get(k).is_some_and(|p| !lower::allows_null(p));
                changed |= drop;
                !drop
            });
            for (k, v) in args.iter_mut() {
                if let Some(p) = props.get(k) {
                    changed |= drop_absent_nulls(p, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for v in items {
                    changed |= drop_absent_nulls(item, v);
                }
            }
        }
        _ => {}
    }
    changed
}

/// A stable id for a call that arrived without one: the same call in the
/// same position always gets the same id.
/// The id is noted in `mapping` ([`CallMapping::is_generated_id`]).
pub(crate) fn generated_id(prefix: &str, index: usize, name: &str, args: &Value, mapping: &CallMapping) -> String {
    let mut h = Fnv::new();
    h.write(name.as_bytes());
    h.write(&[0]);
    h.write(args.to_string().as_bytes());
    h.write(&index.to_le_bytes());
    let id = format!("{prefix}{index}_{:012x}", h.finish() & 0xffff_ffff_ffff);
    mapping.note_generated_id(&id);
    id
}

/// FNV-1a, 64 bits: small, fast and identical on every platform.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub(crate) fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// Arguments that arrive as an object (Anthropic, Gemini, Bedrock): an
/// object or `null` is parsed JSON, a string is text still to parse (some
/// compatible servers send one), anything else is passed on for execution
/// to report.
pub(crate) fn object_arguments(value: Option<&Value>) -> ToolArguments {
    match value {
        None | Some(Value::Null) => ToolArguments::Json(Value::Object(Map::new())),
        Some(Value::String(text)) => ToolArguments::Raw(text.clone()),
        Some(other) => ToolArguments::Json(other.clone()),
    }
}

/// The value at the first of `paths` (JSON Pointers) that exists in `body`.
pub(crate) fn find<'v>(body: &'v Value, paths: &[&str]) -> Option<&'v Value> {
    paths.iter().find_map(|p| body.pointer(p))
}

pub(crate) fn invalid(provider: Provider, reason: impl Into<String>) -> ProviderError {
    ProviderError::InvalidResponse { provider, reason: reason.into() }
}

pub(crate) fn str_field<'v>(
    provider: Provider,
    value: &'v Value,
    key: &str,
    what: &str,
) -> Result<&'v str, ProviderError> {
    value.get(key).and_then(Value::as_str).ok_or_else(|| invalid(provider, format!("{what} has no string `{key}`")))
}
