//! Model Context Protocol tool and result formats.
//!
//! - Declarations: `tools/list` tools `{name, description, inputSchema,
//!   outputSchema?, annotations}`; the input schema is the canonical one (a
//!   tool without parameters gets `{"type":"object","additionalProperties":false}`),
//!   annotations come from the tool's safety level.
//! - Calls in: `tools/call` requests (or their `params`); the call id is the
//!   JSON-RPC id as text.
//! - Results out: one `CallToolResult` per result: every block of the
//!   output in order as MCP's content blocks, annotations kept
//!   ([`Content::to_json`](crate::exec::Content::to_json)); the structured
//!   value as `structuredContent` when it is an object; `isError` for
//!   failures (argument errors included), whose content is the error's text.
//!   A plain value is one text block with its text, as it always was. MCP
//!   has no `file` block: a file goes as an embedded resource holding its
//!   bytes (`blob`), at the URI `file:///<name>` (the name percent-encoded,
//!   `/` included, so it stays one segment; `file:///attachment` without
//!   a name). That URI names the file, not a path on any disk.
//!
//! Only the formats live here. JSON-RPC envelopes, paging of `tools/list`
//! and protocol revisions belong to the MCP server and client (the
//! `toolreg-mcp` crate).

use serde::Serialize;
use serde_json::{Value, json};

use super::choice::unsupported;
use super::declared::Entries;
use super::{
    CallMapping, Declarations, DeclaredTools, FormatOptions, NameRule, Prepared, Provider, ProviderError, Registration,
    SchemaMode, StreamedCalls, ToolChoice, ToolRef, WireFormat, invalid, object_arguments, prepare, result_text,
    sealed, str_field,
};
use crate::declaration::{SafetyLevel, ToolDeclaration};
use crate::exec::{Content, EmbeddedResource, Media, ResourceContents, ToolCall, ToolResult};

/// This format in the list of formats.
pub(crate) const REGISTRATION: Registration = Registration {
    provider: Provider::Mcp,
    name: "mcp",
    aliases: &[],
    title: "MCP",
    name_rule: NameRule::MCP,
    build: |options| Box::new(Mcp::with_options(options)),
};

/// MCP's tool and result formats.
#[derive(Debug, Clone, Default)]
pub struct Mcp {
    options: FormatOptions,
}

/// An MCP `Tool`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    annotations: ToolAnnotations,
    /// The tasks extension's `execution.taskSupport`, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<Execution>,
}

/// MCP's `execution` of a tool (the tasks extension).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Execution {
    task_support: crate::declaration::TaskSupport,
}

/// MCP tool annotations, from [`SafetyLevel`]: `safe` is read-only,
/// `cautious` changes things but destroys nothing, `dangerous` may destroy;
/// the title and the idempotent and open-world hints when the declaration
/// says them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// The tool's human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    pub read_only_hint: bool,
    /// The tool may destroy or overwrite.
    pub destructive_hint: bool,
    /// Repeating a call has no further effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside systems.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl From<SafetyLevel> for ToolAnnotations {
    fn from(safety: SafetyLevel) -> Self {
        ToolAnnotations {
            title: None,
            read_only_hint: safety == SafetyLevel::Safe,
            destructive_hint: safety == SafetyLevel::Dangerous,
            idempotent_hint: None,
            open_world_hint: None,
        }
    }
}

impl From<&ToolDeclaration> for ToolAnnotations {
    fn from(decl: &ToolDeclaration) -> Self {
        ToolAnnotations {
            title: decl.title.clone(),
            idempotent_hint: decl.idempotent,
            open_world_hint: decl.open_world,
            ..ToolAnnotations::from(decl.safety)
        }
    }
}

/// An MCP `CallToolResult`.
///
/// ```
/// use serde_json::json;
/// use toolreg::exec::{Content, ToolOutput, ToolResult};
/// use toolreg::provider::mcp::CallToolResult;
///
/// // A plain value: one text block, and the object as `structuredContent`.
/// let plain = ToolResult { id: "1".into(), name: "count".into(), outcome: Ok(ToolOutput::new(json!({"n": 2}))) };
/// let rendered = CallToolResult::new(&plain);
/// assert_eq!(rendered.content, [json!({"type": "text", "text": r#"{"n":2}"#})]);
/// assert_eq!(rendered.structured_content, Some(json!({"n": 2})));
///
/// // Blocks: each one in MCP's shape, a file as an embedded resource.
/// let out = ToolOutput::from(vec![
///     Content::image(vec![1, 2, 3], "image/png"),
///     Content::file(b"%PDF".to_vec(), "application/pdf", "q3 report.pdf"),
/// ]);
/// let rendered = CallToolResult::new(&ToolResult { id: "2".into(), name: "chart".into(), outcome: Ok(out) });
/// assert_eq!(rendered.content[0], json!({"type": "image", "data": "AQID", "mimeType": "image/png"}));
/// assert_eq!(
///     rendered.content[1],
///     json!({"type": "resource", "resource": {
///         "uri": "file:///q3%20report.pdf", "mimeType": "application/pdf", "blob": "JVBERg=="}})
/// );
/// assert_eq!(rendered.structured_content, None);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// The output's blocks as MCP content blocks (a plain value: one text
    /// block with its text; a failure: one text block with the error's text).
    pub content: Vec<Value>,
    /// The structured value, when it is a JSON object and not an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed.
    pub is_error: bool,
}

impl CallToolResult {
    /// The `CallToolResult` of a result.
    pub fn new(result: &ToolResult) -> Self {
        match &result.outcome {
            Ok(output) => CallToolResult {
                content: output.blocks().iter().map(block).collect(),
                structured_content: output.structured().filter(|v| v.is_object()).cloned(),
                is_error: false,
            },
            Err(_) => CallToolResult {
                content: vec![json!({"type": "text", "text": result_text(result)})],
                structured_content: None,
                is_error: true,
            },
        }
    }
}

/// One block as MCP's content block: [`Content::to_json`], except a file,
/// which MCP lacks, goes as an embedded resource with its bytes.
fn block(content: &Content) -> Value {
    match content {
        Content::File(file) => Content::Resource(file_resource(file)).to_json(),
        other => other.to_json(),
    }
}

/// A file as an embedded resource at `file:///<name>` (see the module docs).
fn file_resource(file: &Media) -> EmbeddedResource {
    let name = file.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("attachment");
    EmbeddedResource {
        uri: format!("file:///{}", percent_encode(name)),
        mime_type: Some(file.mime_type.clone()),
        contents: ResourceContents::Blob(file.data.clone()),
        annotations: file.annotations.clone(),
    }
}

/// `text` with every byte but RFC 3986's unreserved characters
/// percent-encoded, so a file name is one segment of a URI path.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A prepared tool as an MCP `Tool`.
pub(crate) fn entry<'b>(p: &'b Prepared<'_>) -> McpTool<'b> {
    let decl = p.tool.declaration();
    let output_schema = decl.output_schema.as_ref().filter(|s| s.get("type").is_some_and(|t| t == "object"));
    McpTool {
        name: &p.name,
        title: decl.title.as_deref(),
        description: super::description(decl),
        input_schema: &p.schema,
        output_schema,
        annotations: ToolAnnotations::from(decl),
        execution: decl.task_support.map(|task_support| Execution { task_support }),
    }
}

impl Mcp {
    /// Default options: names checked.
    pub fn new() -> Self {
        Self::default()
    }
}

super::format_options!(Mcp);

impl WireFormat for Mcp {
    fn provider(&self) -> Provider {
        Provider::Mcp
    }

    fn declare_partial<'a>(&self, tools: &[ToolRef<'a>]) -> Declarations<DeclaredTools<'a>> {
        prepare(Provider::Mcp, SchemaMode::Mcp, &self.options, tools).finish(|tools, _| Box::new(Entries(tools, entry)))
    }

    fn render_results(&self, results: &[ToolResult], _mapping: &CallMapping) -> super::RenderedResults {
        let messages = results.iter().map(|r| super::to_json(&CallToolResult::new(r))).collect();
        super::RenderedResults { messages, fallbacks: Vec::new() }
    }

    /// The client decides: MCP has no tool choice.
    fn tool_choice(&self, _choice: &ToolChoice, _mapping: &CallMapping) -> Result<Value, ProviderError> {
        Err(unsupported(Provider::Mcp, "tool choice: the client decides"))
    }

    /// An MCP conversation has no assistant turn: calls are requests.
    fn render_calls(&self, _text: &str, _calls: &[ToolCall], _mapping: &CallMapping) -> Vec<Value> {
        Vec::new()
    }
}

impl sealed::Format for Mcp {
    /// The call in a `tools/call` request (or its `params`).
    fn calls_in(&self, request: &Value, _mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Mcp;
        let params = match request.get("params") {
            Some(params) => {
                if request.get("method").is_some_and(|m| m != "tools/call") {
                    return Err(invalid(p, "the request is not `tools/call`"));
                }
                params
            }
            None => request,
        };
        let name = str_field(p, params, "name", "tools/call params")?;
        let id = match request.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        Ok(vec![ToolCall { id, name: name.to_owned(), arguments: object_arguments(params.get("arguments")) }])
    }

    /// MCP calls are requests, never streamed.
    fn stream_event(&self, _stream: &mut StreamedCalls, _event: &Value) -> Result<(), ProviderError> {
        Ok(())
    }

    fn streamed_answer(&self, _stream: StreamedCalls) -> Option<Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::{Annotations, Role, ToolError, ToolOutput};

    fn result(outcome: Result<ToolOutput, ToolError>) -> ToolResult {
        ToolResult { id: "1".into(), name: "t".into(), outcome }
    }

    #[test]
    fn task_support_renders_as_execution() {
        use crate::declaration::TaskSupport;
        use crate::provider::{ToolRef, WireFormat};
        let plain = ToolDeclaration::new("plain", "p", json!({"type": "object"}));
        let long =
            ToolDeclaration::new("long", "l", json!({"type": "object"})).with_task_support(TaskSupport::Optional);
        let only =
            ToolDeclaration::new("only", "o", json!({"type": "object"})).with_task_support(TaskSupport::Required);
        let tools = Mcp::new().declare(&[ToolRef::from(&plain), ToolRef::from(&long), ToolRef::from(&only)]).unwrap();
        assert!(tools.tools[0].get("execution").is_none());
        assert_eq!(tools.tools[1]["execution"], json!({"taskSupport": "optional"}));
        assert_eq!(tools.tools[2]["execution"], json!({"taskSupport": "required"}));
        // And back: a declaration keeps it through serde.
        let text = serde_json::to_value(&only).unwrap();
        assert_eq!(text["task_support"], "required");
        assert_eq!(serde_json::from_value::<ToolDeclaration>(text).unwrap(), only);
    }

    #[test]
    fn a_text_result_renders_as_it_always_did() {
        for value in [json!("plain"), json!({"a": [1, "b"]}), json!([1, 2]), json!(null)] {
            let rendered = CallToolResult::new(&result(Ok(ToolOutput::new(value.clone()))));
            let text = crate::exec::value_text(&value).into_owned();
            assert_eq!(rendered.content, [json!({"type": "text", "text": text})]);
            assert_eq!(rendered.structured_content, value.is_object().then_some(value));
            assert!(!rendered.is_error);
        }
        let failed = CallToolResult::new(&result(Err(ToolError::failed("disk full"))));
        assert_eq!(failed.content, [json!({"type": "text", "text": "disk full"})]);
        assert_eq!((failed.structured_content, failed.is_error), (None, true));
    }

    #[test]
    fn every_block_renders_in_mcp_shape_with_annotations() {
        let for_user = Annotations::for_audience([Role::User]).priority(0.5);
        let out = ToolOutput::from(vec![
            Content::text("caption").annotated(for_user.clone()),
            Content::image(vec![1, 2, 3], "image/png").annotated(for_user.clone()),
            Content::audio(vec![4], "audio/wav"),
            Content::resource_link("file:///a.txt", "a.txt"),
            Content::resource_text("mem://b", "bee", Some("text/plain".into())),
            Content::resource_blob("mem://c", vec![0, 255], None),
            Content::file(vec![5], "application/pdf", "../etc/a b.pdf").annotated(for_user),
            Content::file(vec![6], "text/csv", ""),
        ])
        .with_value(json!({"points": 3}));
        let rendered = CallToolResult::new(&result(Ok(out)));
        let annotations = json!({"audience": ["user"], "priority": 0.5});
        assert_eq!(
            rendered.content,
            [
                json!({"type": "text", "text": "caption", "annotations": annotations}),
                json!({"type": "image", "data": "AQID", "mimeType": "image/png", "annotations": annotations}),
                json!({"type": "audio", "data": "BA==", "mimeType": "audio/wav"}),
                json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"}),
                json!({"type": "resource", "resource": {"uri": "mem://b", "mimeType": "text/plain", "text": "bee"}}),
                json!({"type": "resource", "resource": {"uri": "mem://c", "blob": "AP8="}}),
                json!({"type": "resource", "annotations": annotations, "resource": {
                    "uri": "file:///..%2Fetc%2Fa%20b.pdf", "mimeType": "application/pdf", "blob": "BQ=="}}),
                json!({"type": "resource", "resource": {
                    "uri": "file:///attachment", "mimeType": "text/csv", "blob": "Bg=="}}),
            ]
        );
        assert_eq!(rendered.structured_content, Some(json!({"points": 3})));
        // Every block reads back (the files as the embedded resources they became).
        for block in &rendered.content {
            Content::from_json(block).unwrap();
        }
    }

    #[test]
    fn only_an_object_is_structured_content() {
        let blocks = || ToolOutput::from(Content::text("x"));
        assert_eq!(CallToolResult::new(&result(Ok(blocks()))).structured_content, None);
        let array = blocks().with_value(json!([1]));
        assert_eq!(CallToolResult::new(&result(Ok(array))).structured_content, None);
    }
}
