//! Declarations not yet written: [`DeclaredTools`], the `tools` of a
//! request as a serde view over the prepared tools, which borrow the
//! canonical or cached lowered schemas.
//!
//! Apart from the formats because every format writes through it: a
//! format prepares its tools (`prepare`), names its [`Shape`], and the
//! view writes each tool in that format's serde structs, into a `Value`
//! ([`DeclaredTools::to_value`], what [`WireFormat::declare_partial`]
//! returns) or straight into the request text (`serde_json::to_writer`), so
//! both come from the same code.
//!
//! [`WireFormat::declare_partial`]: super::WireFormat::declare_partial

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::CodeExecution;
use super::prepare::Prepared;
use super::{anthropic, bedrock, gemini, mcp, mistral, ollama, openai_chat, openai_responses};

/// Which format's structs the tools are written in (and, for Gemini, which
/// of its two schema fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
    Gemini { json_schema: bool },
    Mcp,
    Bedrock,
    Mistral,
    Ollama,
}

/// The provider's `tools`, ready to be written: what
/// [`WireFormat::declare_view`](super::WireFormat::declare_view) returns in
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
/// let declared = Anthropic::new().declare_view(&ToolRef::list(registry.list()));
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
/// // The same JSON as the `Value` that `declare_partial` returns.
/// let text = serde_json::to_string(&declared.tools)?;
/// assert_eq!(serde_json::from_str::<Value>(&text)?, declared.tools.to_value());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct DeclaredTools<'a> {
    shape: Shape,
    tools: Vec<Prepared<'a>>,
    /// The provider's code execution that may call the tools (Anthropic),
    /// written after them.
    code: Option<CodeExecution>,
}

impl<'a> DeclaredTools<'a> {
    pub(crate) fn new(shape: Shape, tools: Vec<Prepared<'a>>) -> Self {
        DeclaredTools { shape, tools, code: None }
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
    /// [`WireFormat::declare_partial`](super::WireFormat::declare_partial)
    /// returns): a copy of every schema, for a caller that edits it.
    pub fn to_value(&self) -> Value {
        super::to_json(self)
    }
}

impl Serialize for DeclaredTools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tools = self.tools.iter();
        match self.shape {
            Shape::OpenAiChat => serializer.collect_seq(tools.map(openai_chat::entry)),
            Shape::OpenAiResponses => openai_responses::serialize(&self.tools, self.code.as_ref(), serializer),
            Shape::Anthropic => anthropic::serialize(&self.tools, self.code.as_ref(), serializer),
            Shape::Gemini { json_schema } => gemini::serialize(&self.tools, json_schema, serializer),
            Shape::Mcp => serializer.collect_seq(tools.map(mcp::entry)),
            Shape::Bedrock => serializer.collect_seq(tools.map(bedrock::entry)),
            Shape::Mistral => serializer.collect_seq(tools.map(mistral::entry)),
            Shape::Ollama => serializer.collect_seq(tools.map(ollama::entry)),
        }
    }
}
