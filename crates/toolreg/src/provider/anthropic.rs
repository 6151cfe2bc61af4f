//! Anthropic Messages.
//!
//! - Declarations: `{"name","description","input_schema","strict"?}`; strict
//!   tools get Anthropic's strict subset ([`lower::anthropic_strict`](super::lower::anthropic_strict)).
//! - Calls in: `tool_use` content blocks, whose `input` is an object.
//! - Results out: `tool_result` blocks with `is_error`, sent in a user turn.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{
    CallMapping, Declarations, Lowering, LoweringError, NameStyle, NotStrict, Provider, ProviderError, StrictOptions,
    Strictness, ToolRef, find, generated_id, invalid, object_arguments, prepare, result_text, str_field,
};
use crate::exec::{ToolCall, ToolResult};

/// Anthropic's limit on strict tools in one request.
pub const MAX_STRICT_TOOLS: usize = 20;
/// Anthropic's limit on optional parameters across the strict tools of a request.
pub const MAX_OPTIONAL_PARAMS: usize = 24;
/// Anthropic's limit on parameters with a union type (`anyOf`) across the strict tools of a request.
pub const MAX_UNION_PARAMS: usize = 16;

/// Renders tools for Anthropic Messages and reads its `tool_use` blocks.
///
/// Strict mode defaults to [`Strictness::Off`], Anthropic's own default.
#[derive(Debug, Clone)]
pub struct Anthropic {
    strict: StrictOptions,
    names: NameStyle,
}

impl Default for Anthropic {
    fn default() -> Self {
        Anthropic {
            strict: StrictOptions { default: Strictness::Off, ..StrictOptions::default() },
            names: NameStyle::default(),
        }
    }
}

/// One entry of Anthropic's `tools`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct AnthropicTool<'a> {
    /// The name as sent.
    pub name: Cow<'a, str>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// JSON Schema of the input.
    pub input_schema: Cow<'a, Value>,
    /// Present (and `true`) for strict tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// A tool result as a `tool_result` content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolResultBlock {
    /// Always `"tool_result"`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The id of the `tool_use` block this answers.
    pub tool_use_id: String,
    /// The result's text.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
}

impl Anthropic {
    /// Default options: not strict, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Strict mode for every tool without its own setting.
    pub fn strict(mut self, strictness: Strictness) -> Self {
        self.strict.default = strictness;
        self
    }

    /// Strict mode for one tool.
    pub fn strict_for(mut self, tool: impl Into<String>, strictness: Strictness) -> Self {
        self.strict.per_tool.insert(tool.into(), strictness);
        self
    }

    /// What to do with names Anthropic cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.names = style;
        self
    }

    /// Render tools as Anthropic's `tools`.
    pub fn declare<'a, I>(&self, tools: I) -> Result<Declarations<AnthropicTool<'a>>, ProviderError>
    where
        I: IntoIterator,
        I::Item: Into<ToolRef<'a>>,
    {
        let (mut prepared, mapping, mut not_strict) =
            prepare(Provider::Anthropic, Some(Lowering::AnthropicStrict), &self.strict, self.names, tools)?;
        // Per-request budgets of strict mode: a tool that would go over is
        // sent plain when strictness was "if compatible", refused when required.
        let mut used = [0usize; 3];
        for p in prepared.iter_mut().filter(|p| p.strict) {
            let (optional, unions) = count_params(&p.schema);
            let wanted = [used[0] + 1, used[1] + optional, used[2] + unions];
            let limits = [MAX_STRICT_TOOLS, MAX_OPTIONAL_PARAMS, MAX_UNION_PARAMS];
            let what = ["strict tools", "optional parameters in strict tools", "union parameters in strict tools"];
            match (0..3).find(|&i| wanted[i] > limits[i]) {
                None => used = wanted,
                Some(i) => {
                    let decl = p.tool.declaration();
                    if self.strict.for_tool(&decl.name) == Strictness::Required {
                        return Err(ProviderError::TooMany {
                            provider: Provider::Anthropic,
                            what: what[i],
                            count: wanted[i],
                            limit: limits[i],
                        });
                    }
                    let reason = LoweringError::Limit { what: what[i], count: wanted[i], limit: limits[i] };
                    not_strict.push(NotStrict { tool: decl.name.clone(), reason });
                    p.strict = false;
                    p.schema = Cow::Borrowed(&decl.input_schema);
                }
            }
        }
        let tools = prepared
            .into_iter()
            .map(|p| AnthropicTool {
                name: p.name,
                description: super::description(p.tool.declaration()),
                input_schema: p.schema,
                strict: p.strict.then_some(true),
            })
            .collect();
        Ok(Declarations { tools, mapping, not_strict })
    }

    /// The `tool_use` blocks of a response or message (its `content`), or of
    /// a content-block list.
    pub fn parse_calls(body: &Value) -> Result<Vec<ToolCall>, ProviderError> {
        let p = Provider::Anthropic;
        let blocks = match body {
            Value::Array(blocks) => blocks,
            _ => match find(body, &["/content"]) {
                Some(Value::Array(blocks)) => blocks,
                Some(Value::String(_)) => return Ok(Vec::new()),
                _ => return Err(invalid(p, "expected a message with `content` or a list of content blocks")),
            },
        };
        blocks
            .iter()
            .filter(|b| b.get("type").is_some_and(|t| t == "tool_use"))
            .enumerate()
            .map(|(i, block)| {
                let name = str_field(p, block, "name", "a tool_use block")?;
                let id = match block.get("id").and_then(Value::as_str) {
                    Some(id) => id.to_owned(),
                    None => generated_id("toolu_", i, name, block.get("input").unwrap_or(&Value::Null)),
                };
                Ok(ToolCall { id, name: name.to_owned(), arguments: object_arguments(block.get("input")) })
            })
            .collect()
    }

    /// [`parse_calls`](Self::parse_calls), then [`CallMapping::apply`].
    pub fn parse_calls_mapped(body: &Value, mapping: &CallMapping) -> Result<Vec<ToolCall>, ProviderError> {
        let mut calls = Self::parse_calls(body)?;
        mapping.apply(&mut calls);
        Ok(calls)
    }

    /// A result as a `tool_result` block.
    pub fn result_block(result: &ToolResult) -> ToolResultBlock {
        ToolResultBlock {
            kind: "tool_result",
            tool_use_id: result.id.clone(),
            content: result_text(result),
            is_error: result.is_error(),
        }
    }

    /// The user turn that answers a batch of calls.
    pub fn results_message(results: &[ToolResult]) -> Value {
        let blocks: Vec<ToolResultBlock> = results.iter().map(Self::result_block).collect();
        serde_json::json!({"role": "user", "content": blocks})
    }
}

/// Optional parameters and union-typed parameters in a (strict) schema,
/// nested objects included.
fn count_params(schema: &Value) -> (usize, usize) {
    let mut optional = 0;
    let mut unions = 0;
    let mut stack = vec![schema];
    while let Some(s) = stack.pop() {
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let required = s.get("required").and_then(Value::as_array);
            for (k, p) in props {
                if !required.is_some_and(|r| r.iter().any(|x| x == k)) {
                    optional += 1;
                }
                if p.get("anyOf").is_some() {
                    unions += 1;
                }
            }
            stack.extend(props.values());
        }
        if let Some(items) = s.get("items") {
            stack.push(items);
        }
        for branch in s.get("anyOf").and_then(Value::as_array).into_iter().flatten() {
            stack.push(branch);
        }
    }
    (optional, unions)
}
