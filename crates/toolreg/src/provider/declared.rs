//! Declarations not yet written: [`DeclaredTools`], the `tools` of a
//! request as a serde view over the prepared tools, which borrow the
//! canonical or cached lowered schemas.
//!
//! Apart from the formats because every format writes through it: a
//! format prepares its tools (`prepare`) and hands over its own writer
//! ([`WriteTools`]), and the view writes each tool in that format's serde
//! structs, into a `Value` ([`DeclaredTools::to_value`], what
//! [`WireFormat::declare`] returns) or straight into the request text
//! (`serde_json::to_writer`), so both come from the same code.
//!
//! [`WireFormat::declare`]: super::WireFormat::declare

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::CodeExecution;
use super::Declarations;
use super::prepare::{Preparation, Prepared};

/// How a format writes its prepared tools (and the code execution that may
/// call them): its own serde structs, behind one erased `Serialize`, so the
/// view writes any format's tools without knowing which.
pub(crate) type WriteTools =
    for<'b, 'a> fn(&'b [Prepared<'a>], Option<&'b CodeExecution>) -> Box<dyn erased_serde::Serialize + 'b>;

/// Tools written one entry each, by the format's `entry`: the shape of
/// every format whose `tools` is a plain list.
pub(crate) struct Entries<'b, 'a, E>(pub(crate) &'b [Prepared<'a>], pub(crate) fn(&'b Prepared<'a>) -> E);

impl<E: Serialize> Serialize for Entries<'_, '_, E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(self.1))
    }
}

/// The provider's `tools`, ready to be written: what
/// [`WireFormat::declare_partial`](super::WireFormat::declare_partial) returns in
/// [`Declarations::tools`](super::Declarations::tools).
///
/// It implements [`Serialize`]: put it in a request body (or write it with
/// `serde_json::to_writer`) and each tool is written from the schema the
/// registry entry keeps, with no `Value` copy of it in between.
/// [`to_value`](DeclaredTools::to_value) gives the same JSON as a `Value`.
///
/// ```
/// use toolreg::provider::{DeclaredTools, ToolRef, WireFormat, anthropic::Anthropic};
/// use toolreg::{FunctionRegistry, ParamType, ToolDeclaration};
/// use serde_json::Value;
///
/// let mut registry = FunctionRegistry::new();
/// let decl = ToolDeclaration::builder("echo").param("text", ParamType::String, "What to say").build();
/// registry.register_sync_tool("echo", |a: Value| Ok::<_, String>(a), decl)?;
///
/// let declared = Anthropic::new().declare_partial(&ToolRef::list(registry.list()));
/// assert_eq!(declared.tools.len(), 1);
///
/// // The request body, written in one pass.
/// #[derive(serde::Serialize)]
/// struct Request<'a> {
///     model: &'a str,
///     tools: &'a DeclaredTools<'a>,
/// }
/// let body = serde_json::to_string(&Request { model: "m", tools: &declared.tools })?;
/// assert!(body.starts_with(r#"{"model":"m","tools":[{"name":"echo","input_schema":{"#));
/// // The same JSON as the `Value` that `declare` returns.
/// let text = serde_json::to_string(&declared.tools)?;
/// assert_eq!(serde_json::from_str::<Value>(&text)?, declared.tools.to_value());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct DeclaredTools<'a> {
    write: WriteTools,
    tools: Vec<Prepared<'a>>,
    /// The provider's code execution that may call the tools (Anthropic),
    /// written after them.
    code: Option<CodeExecution>,
}

impl<'a> DeclaredTools<'a> {
    pub(crate) fn new(write: WriteTools, tools: Vec<Prepared<'a>>) -> Self {
        DeclaredTools { write, tools, code: None }
    }

    /// The same tools, callable from the provider's code execution.
    pub(crate) fn with_code_execution(mut self, code: Option<CodeExecution>) -> Self {
        self.code = code;
        self
    }

    /// How many of our tools are declared (refused tools are not; the
    /// provider's code execution tool, when declared, is not counted).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is declared.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The same JSON as a `Value` (what
    /// [`WireFormat::declare`](super::WireFormat::declare)
    /// returns): a copy of every schema, for a caller that edits it.
    pub fn to_value(&self) -> Value {
        super::to_json(self)
    }
}

impl fmt::Debug for DeclaredTools<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeclaredTools").field("tools", &self.tools).field("code", &self.code).finish_non_exhaustive()
    }
}

impl Serialize for DeclaredTools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tools = (self.write)(&self.tools, self.code.as_ref());
        erased_serde::serialize(&*tools, serializer)
    }
}

impl<'a> Preparation<'a> {
    /// The declarations, with the tools to be written by the format's `write`.
    pub(crate) fn finish(self, write: WriteTools) -> Declarations<DeclaredTools<'a>> {
        let mut mapping = self.mapping;
        mapping.declared = Some(self.tools.iter().map(|p| p.name.clone().into_owned()).collect());
        mapping.deferred =
            self.tools.iter().filter(|p| p.tool.is_deferred()).map(|p| p.tool.declaration().name.clone()).collect();
        mapping.search = self.tools.iter().find(|p| p.tool.is_search_tool()).map(|p| p.tool.declaration().name.clone());
        Declarations { tools: DeclaredTools::new(write, self.tools), mapping, report: self.report }
    }
}
