//! The per-provider lint: what each provider would refuse of a tool
//! declared in its strictest mode (OpenAI's and Anthropic's strict schemas,
//! Gemini's OpenAPI subset, every provider's name rule).
//!
//! It asks the formats themselves, through the same declaration path a
//! request takes, so it says exactly what a request would meet: a host that
//! sends a tool with `strict: true` gets a schema strict mode takes, or the
//! lint has said why not. The registry runs it on each tool it registers
//! (the findings go to the `toolreg::lint` tracing target at debug level);
//! [`FunctionRegistry::lint`](crate::FunctionRegistry::lint) lists them.

use std::fmt;

use super::{FormatOptions, Provider, ProviderError, Strictness, ToolRef, ToolStatus};

/// One provider's objection to one tool.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LintFinding {
    /// The tool's name.
    pub tool: String,
    /// The provider that would refuse it.
    pub provider: Provider,
    /// Why: the error a strict declaration for that provider fails with.
    pub reason: ProviderError,
}

/// The reason, which names the provider and the tool.
impl fmt::Display for LintFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.fmt(f)
    }
}

/// What every provider would refuse of `tool` declared strictly: empty
/// when each one takes it as it is, strict where the provider has a strict
/// mode. A registered tool ([`ToolEntry`](crate::ToolEntry)) keeps the
/// schemas lowered here for its later declarations.
///
/// ```
/// use serde_json::json;
/// use toolreg::ToolDeclaration;
/// use toolreg::provider::{Provider, ToolRef, lint};
///
/// let typed = ToolDeclaration::new("note", "Keep a note.", json!({
///     "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]
/// }));
/// assert!(lint(ToolRef::from(&typed)).is_empty());
///
/// // A value of any type: no strict mode can say that.
/// let untyped = ToolDeclaration::new("keep", "Keep a value.", json!({
///     "type": "object", "properties": {"value": {"description": "Any JSON value."}}, "required": ["value"]
/// }));
/// let findings = lint(ToolRef::from(&untyped));
/// assert!(findings.iter().any(|f| f.provider == Provider::OpenAiChat));
/// assert!(findings.iter().any(|f| f.provider == Provider::Anthropic));
/// ```
pub fn lint(tool: ToolRef<'_>) -> Vec<LintFinding> {
    let options = FormatOptions::new().strict(Strictness::Required);
    let mut findings = Vec::new();
    for provider in Provider::ALL {
        let declared = provider.wire_format_with(options.clone()).declare_partial(&[tool]);
        for report in declared.report {
            if let ToolStatus::Refused { reason } = report.status {
                findings.push(LintFinding { tool: report.tool, provider, reason });
            }
        }
    }
    findings
}
