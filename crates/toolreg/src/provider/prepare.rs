//! Getting tools ready to declare, shared by every format: the [`ToolRef`]
//! that points at a tool and keeps its lowered schemas (computed once per
//! registered tool and provider, then borrowed), and `prepare`, which checks
//! or respells names, refuses collisions and picks each tool's schema.
//!
//! Apart from the trait because a format only calls into it: each format
//! prepares its tools here, then writes them in its own serde structs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Dialect, FormatOptions, LoweringError, NameStyle, Provider, ProviderError, Strictness, ToolReport,
    ToolStatus, lower,
};
use crate::declaration::ToolDeclaration;

/// Lowered schemas of one registered tool, computed on first use per
/// provider and kept for the life of the entry, in its typed `lowered` field
/// (the lowering depends on nothing but the entry's declaration).
#[derive(Debug, Default)]
pub(crate) struct LoweredSchemas {
    openai_strict: OnceLock<Result<Value, LoweringError>>,
    anthropic_strict: OnceLock<Result<Value, LoweringError>>,
    gemini: OnceLock<Result<Value, LoweringError>>,
    strict_nulls: OnceLock<bool>,
    /// Whether MCP gets the closed empty object instead of the schema.
    mcp_empty: OnceLock<bool>,
}

/// A tool to render: a registered [`ToolEntry`](crate::ToolEntry) (whose lowered schemas are
/// cached) or a bare [`ToolDeclaration`] (lowered on each use).
#[derive(Debug, Clone, Copy)]
pub struct ToolRef<'a> {
    declaration: &'a ToolDeclaration,
    pub(super) shared: Option<&'a Arc<ToolDeclaration>>,
    cache: Option<&'a LoweredSchemas>,
    deferred: bool,
    search: bool,
}

impl<'a> ToolRef<'a> {
    /// Tools to declare, from registry entries (`registry.list()`),
    /// declarations or shared declarations.
    pub fn list<I>(tools: I) -> Vec<ToolRef<'a>>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        tools.into_iter().map(Into::into).collect()
    }

    /// The declaration.
    pub fn declaration(&self) -> &'a ToolDeclaration {
        self.declaration
    }

    /// Declare the tool with the provider's deferred loading, for a format
    /// with native tool search ([`WireFormat::native_search`](super::WireFormat::native_search)):
    /// it is in the request, but the model sees it only once a tool search
    /// has returned it. A format without native search ignores this.
    pub fn deferred(mut self, yes: bool) -> Self {
        self.deferred = yes;
        self
    }

    /// Whether the tool is declared deferred ([`deferred`](ToolRef::deferred)).
    pub fn is_deferred(&self) -> bool {
        self.deferred
    }

    /// Declare the tool as the provider's own tool search entry point, for
    /// a format whose provider has one the client executes (OpenAI
    /// Responses: `{"type":"tool_search","execution":"client"}` with this
    /// tool's description and parameters; its calls come back as
    /// `tool_search_call` items, read as calls of this tool, and its answer
    /// goes back as a `tool_search_output` item holding the definitions of
    /// the deferred tools it found). A format whose search tool is an
    /// ordinary tool (Anthropic) or that has none ignores this. Mark at most
    /// one tool (a later one is then declared as an ordinary tool).
    pub fn search_tool(mut self, yes: bool) -> Self {
        self.search = yes;
        self
    }

    /// Whether the tool is the tool search entry point ([`search_tool`](ToolRef::search_tool)).
    pub fn is_search_tool(&self) -> bool {
        self.search
    }

    /// A registered tool: its shared declaration and the cache of its
    /// lowered schemas, kept by its registry entry.
    pub(crate) fn registered(declaration: &'a Arc<ToolDeclaration>, cache: &'a LoweredSchemas) -> Self {
        ToolRef { declaration, shared: Some(declaration), cache: Some(cache), deferred: false, search: false }
    }

    pub(crate) fn lowered(&self, dialect: Dialect) -> Result<Cow<'a, Value>, LoweringError> {
        let schema = &self.declaration.input_schema;
        let run = move || dialect.lower(schema);
        match self.cache {
            Some(cache) => {
                let cell = match dialect {
                    Dialect::OpenAiStrict => &cache.openai_strict,
                    Dialect::AnthropicStrict => &cache.anthropic_strict,
                    Dialect::Gemini => &cache.gemini,
                };
                match cell.get_or_init(run) {
                    Ok(v) => Ok(Cow::Borrowed(v)),
                    Err(e) => Err(e.clone()),
                }
            }
            None => run().map(Cow::Owned),
        }
    }

    /// Whether the tool was registered, so its examples were checked then.
    pub(crate) fn is_registered(&self) -> bool {
        self.cache.is_some()
    }

    /// Whether strict mode makes some optional argument nullable, so that
    /// `null` must be read back as "absent".
    pub(crate) fn strict_nulls(&self) -> bool {
        let schema = &self.declaration.input_schema;
        match self.cache {
            Some(cache) => *cache.strict_nulls.get_or_init(|| lower::has_optional_non_null(schema)),
            None => lower::has_optional_non_null(schema),
        }
    }

    /// MCP's input schema: the canonical one, or the closed empty object
    /// for a tool without parameters. Borrowed either way.
    pub(crate) fn mcp_input(&self) -> &'a Value {
        let schema = &self.declaration.input_schema;
        match self.cache {
            Some(cache) => match cache.mcp_empty.get_or_init(|| lower::has_no_parameters(schema)) {
                true => lower::closed_empty(),
                false => schema,
            },
            None => lower::mcp_input(schema),
        }
    }
}

impl<'a> From<&'a ToolDeclaration> for ToolRef<'a> {
    fn from(declaration: &'a ToolDeclaration) -> Self {
        ToolRef { declaration, shared: None, cache: None, deferred: false, search: false }
    }
}

impl<'a> From<&'a Arc<ToolDeclaration>> for ToolRef<'a> {
    fn from(declaration: &'a Arc<ToolDeclaration>) -> Self {
        ToolRef { declaration, shared: Some(declaration), cache: None, deferred: false, search: false }
    }
}

/// The description, or `None` when it is empty (some providers refuse "").
pub(crate) fn description(decl: &ToolDeclaration) -> Option<&str> {
    Some(decl.description.as_str()).filter(|d| !d.is_empty())
}

/// Which schema a format sends for each tool.
#[derive(Clone, Copy)]
pub(crate) enum SchemaMode {
    /// The canonical schema.
    Canonical,
    /// Strict where the options ask for it (the provider's default
    /// strictness second), with this lowering; the canonical schema otherwise.
    Strict(Dialect, Strictness),
    /// Always this lowering; a schema it cannot take refuses the tool.
    Lowered(Dialect),
    /// MCP's `inputSchema`.
    Mcp,
}

/// A tool ready to be written: name as the provider spells it, the schema
/// to send, whether it is strict, and its line in the report.
#[derive(Debug, Clone)]
pub(crate) struct Prepared<'a> {
    pub(crate) tool: ToolRef<'a>,
    pub(crate) name: Cow<'a, str>,
    pub(crate) schema: Cow<'a, Value>,
    pub(crate) strict: bool,
    pub(crate) report: usize,
}

/// The tools of one declaration in progress.
pub(crate) struct Preparation<'a> {
    pub(crate) provider: Provider,
    pub(crate) tools: Vec<Prepared<'a>>,
    pub(crate) mapping: CallMapping,
    pub(crate) report: Vec<ToolReport>,
}

impl<'a> Preparation<'a> {
    /// Leave out the `i`th prepared tool, saying why.
    pub(crate) fn refuse(&mut self, i: usize, reason: ProviderError) {
        let p = self.tools.remove(i);
        self.report[p.report].status = ToolStatus::Refused { reason };
    }

    /// Refuse every tool past the provider's per-request limit.
    pub(crate) fn limit(&mut self, limit: usize) {
        let count = self.tools.len();
        while self.tools.len() > limit {
            let provider = self.provider;
            self.refuse(limit, ProviderError::TooMany { provider, what: "tools", count, limit });
        }
    }
}

/// A format's serialisation types as JSON. They hold only strings, numbers,
/// booleans and JSON values, which always serialise.
pub(crate) fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("tool declarations serialise to JSON")
}

/// Check (or respell) names, refusing collisions, and pick each tool's
/// schema. Tools that cannot be sent are reported as refused.
pub(crate) fn prepare<'a>(
    provider: Provider,
    mode: SchemaMode,
    options: &FormatOptions,
    tools: &[ToolRef<'a>],
) -> Preparation<'a> {
    let rule = provider.name_rule();
    let mut mapping = CallMapping::default();
    // Names come from the application's registry, not from a model: a fast
    // unkeyed hash is safe here (as in the registry's own table).
    let mut seen: HashMap<Cow<'a, str>, &'a str, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(tools.len(), Default::default());
    let mut report = Vec::with_capacity(tools.len());
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let decl = tool.declaration;
        let real = decl.name.as_str();
        let index = report.len();
        let mut refuse = |reason: ProviderError| {
            report.push(ToolReport { tool: real.to_owned(), status: ToolStatus::Refused { reason } });
        };
        let name: Cow<'a, str> = match rule.check(real) {
            Ok(()) => Cow::Borrowed(real),
            Err(_) if options.name_style == NameStyle::Respell => Cow::Owned(rule.respell(real)),
            Err(reason) => {
                refuse(ProviderError::InvalidName { provider, tool: real.to_owned(), rule: rule.pattern, reason });
                continue;
            }
        };
        if let Some(first) = seen.get(&name) {
            refuse(ProviderError::NameCollision {
                provider,
                first: (*first).to_owned(),
                second: real.to_owned(),
                spelled: name.into_owned(),
            });
            continue;
        }
        let unsupported = |reason| ProviderError::UnsupportedSchema { provider, tool: real.to_owned(), reason };
        let (schema, strict, status) = match mode {
            SchemaMode::Canonical => (Cow::Borrowed(&decl.input_schema), false, ToolStatus::Declared),
            SchemaMode::Mcp => (Cow::Borrowed(tool.mcp_input()), false, ToolStatus::Declared),
            SchemaMode::Lowered(lowering) => match tool.lowered(lowering) {
                Ok(schema) => (schema, false, ToolStatus::Lowered { strict: false }),
                Err(reason) => {
                    refuse(unsupported(reason));
                    continue;
                }
            },
            SchemaMode::Strict(lowering, default) => match options.strictness(real, default) {
                Strictness::Off => (Cow::Borrowed(&decl.input_schema), false, ToolStatus::Declared),
                wanted => match tool.lowered(lowering) {
                    Ok(schema) => (schema, true, ToolStatus::Lowered { strict: true }),
                    Err(reason) if wanted == Strictness::Required => {
                        refuse(unsupported(reason));
                        continue;
                    }
                    Err(reason) => {
                        tracing::debug!(tool = %real, %provider, %reason, "tool sent without strict mode");
                        (Cow::Borrowed(&decl.input_schema), false, ToolStatus::NotStrict { reason })
                    }
                },
            },
        };
        seen.insert(name.clone(), real);
        if let Cow::Owned(respelled) = &name {
            mapping.add_name(real, respelled.clone());
        }
        if strict && matches!(mode, SchemaMode::Strict(Dialect::OpenAiStrict, _)) {
            mapping.add_strict(tool);
        }
        report.push(ToolReport { tool: real.to_owned(), status });
        out.push(Prepared { tool: *tool, name, schema, strict, report: index });
    }
    Preparation { provider, tools: out, mapping, report }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lowering_is_computed_once_per_tool_and_provider() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
                            "required": ["n"]});
        let decl = ToolDeclaration::new("t", "", schema);
        // As a registry entry keeps it: the declaration and its cache.
        let (shared, cache) = (Arc::new(decl.clone()), LoweredSchemas::default());
        let cached = ToolRef::registered(&shared, &cache);
        let (a, b) = (cached.lowered(Dialect::OpenAiStrict).unwrap(), cached.lowered(Dialect::OpenAiStrict).unwrap());
        assert!(matches!((&a, &b), (Cow::Borrowed(_), Cow::Borrowed(_))));
        assert!(std::ptr::eq(a.as_ref(), b.as_ref()), "one cached strict schema for both OpenAI formats");
        // A bare declaration is lowered on the spot.
        assert!(matches!(ToolRef::from(&decl).lowered(Dialect::Gemini).unwrap(), Cow::Owned(_)));
    }
}
