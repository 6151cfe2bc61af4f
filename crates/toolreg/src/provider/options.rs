//! How a format declares tools: [`FormatOptions`], one set of options for
//! all eight formats, and the [`Strictness`] a tool asks for.
//!
//! Apart from the formats so the options are written once: every format
//! holds a `FormatOptions`, its builder methods are generated from one
//! definition (`format_options!`), and a provider chosen at run time takes
//! the same options as one named in code
//! ([`Provider::wire_format_with`](super::Provider::wire_format_with)).

use std::collections::HashMap;

use super::{CodeExecution, NameStyle};

/// Whether a tool is declared in the provider's strict mode (OpenAI's and
/// Anthropic's constrained decoding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Strictness {
    /// Never strict.
    Off,
    /// Strict when the schema can be made strict; otherwise sent non-strict
    /// and reported as [`ToolStatus::NotStrict`](super::ToolStatus::NotStrict).
    #[default]
    IfCompatible,
    /// Strict, or the tool is refused ([`ToolStatus::Refused`](super::ToolStatus::Refused))
    /// with what stands in the way.
    Required,
}

/// How a format declares tools, the same for every format. A format uses
/// what applies to it: only OpenAI's two formats and Anthropic have a strict
/// mode, so the others read just [`name_style`](FormatOptions::name_style).
///
/// ```
/// use toolreg::ToolDeclaration;
/// use toolreg::provider::{FormatOptions, NameStyle, Provider, Strictness, ToolRef};
///
/// let decl = ToolDeclaration::builder("files.read").build();
/// let options = FormatOptions::new().name_style(NameStyle::Respell).strict(Strictness::Off);
/// for provider in Provider::ALL {
///     // Gemini and MCP take a dot; the others get the name respelled.
///     let declared = provider.wire_format_with(options.clone()).declare(&[ToolRef::from(&decl)])?;
///     assert_eq!(declared.mapping.renames(), !matches!(provider, Provider::Gemini | Provider::Mcp));
/// }
/// # Ok::<(), toolreg::provider::ProviderError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct FormatOptions {
    /// Strict mode for every tool without its own setting; `None` keeps the
    /// provider's default ([`Strictness::IfCompatible`] for OpenAI,
    /// [`Strictness::Off`] for Anthropic, as each provider itself defaults).
    pub strict: Option<Strictness>,
    /// Strict mode for single tools, by real name.
    pub strict_for: HashMap<String, Strictness>,
    /// What to do with names the provider cannot take.
    pub name_style: NameStyle,
    /// Tools the provider's own code execution may call (see
    /// [`hosted`](super::hosted)); `None` (the default): none. Anthropic
    /// and OpenAI Responses have it ([`WireFormat::code_execution`](super::WireFormat::code_execution));
    /// the other formats declare the tools as usual.
    pub code_execution: Option<CodeExecution>,
}

impl FormatOptions {
    /// The defaults: each provider's own strictness, names checked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Strict mode for every tool without its own setting.
    pub fn strict(mut self, strictness: Strictness) -> Self {
        self.strict = Some(strictness);
        self
    }

    /// Strict mode for one tool.
    pub fn strict_for(mut self, tool: impl Into<String>, strictness: Strictness) -> Self {
        self.strict_for.insert(tool.into(), strictness);
        self
    }

    /// What to do with names the provider cannot take.
    pub fn name_style(mut self, style: NameStyle) -> Self {
        self.name_style = style;
        self
    }

    /// Let the provider's own code execution call the tools (see [`hosted`](super::hosted)).
    pub fn code_execution(mut self, code: CodeExecution) -> Self {
        self.code_execution = Some(code);
        self
    }

    /// The strictness `tool` asks for: its own setting, else the one for
    /// every tool, else the provider's `default`.
    pub(crate) fn strictness(&self, tool: &str, default: Strictness) -> Strictness {
        self.strict_for.get(tool).copied().or(self.strict).unwrap_or(default)
    }
}

/// The builder methods every format shares, defined once over its
/// `options: FormatOptions` field: `with_options`, `options` and
/// `name_style`; with `strict`, also `strict` and `strict_for` (only the
/// formats with a strict mode have those, so no method does nothing).
macro_rules! format_options {
    ($format:ident) => {
        impl $format {
            /// This format with `options`; `new()` is this with the defaults.
            pub fn with_options(options: $crate::provider::FormatOptions) -> Self {
                let mut format = Self::default();
                format.options = options;
                format
            }

            /// The options this format declares tools with.
            pub fn options(&self) -> &$crate::provider::FormatOptions {
                &self.options
            }

            /// What to do with names this provider cannot take.
            pub fn name_style(mut self, style: $crate::provider::NameStyle) -> Self {
                self.options.name_style = style;
                self
            }
        }
    };
    ($format:ident, strict) => {
        $crate::provider::format_options!($format);

        impl $format {
            /// Strict mode for every tool without its own setting.
            pub fn strict(mut self, strictness: $crate::provider::Strictness) -> Self {
                self.options.strict = Some(strictness);
                self
            }

            /// Strict mode for one tool.
            pub fn strict_for(mut self, tool: impl Into<String>, strictness: $crate::provider::Strictness) -> Self {
                self.options.strict_for.insert(tool.into(), strictness);
                self
            }
        }
    };
}
pub(crate) use format_options;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ToolDeclaration;
    use crate::provider::{Provider, ToolRef, ToolStatus, anthropic::Anthropic, openai_chat::OpenAiChat};

    fn status(format: &dyn crate::provider::WireFormat, decl: &ToolDeclaration) -> ToolStatus {
        format.declare_partial(&[ToolRef::from(decl)]).into_value().report.remove(0).status
    }

    #[test]
    fn options_given_at_run_time_configure_a_format_as_its_builder_does() {
        let decl = ToolDeclaration::new("t", "", json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        let strict = ToolStatus::Lowered { strict: true };
        // Each provider keeps its own default: OpenAI strict if compatible, Anthropic not.
        assert_eq!(status(&*Provider::OpenAiChat.wire_format_with(FormatOptions::new()), &decl), strict);
        assert_eq!(status(&*Provider::Anthropic.wire_format_with(FormatOptions::new()), &decl), ToolStatus::Declared);
        // One setting for every tool, overridden per tool.
        let off = FormatOptions::new().strict(Strictness::Off);
        assert_eq!(status(&*Provider::OpenAiResponses.wire_format_with(off.clone()), &decl), ToolStatus::Declared);
        let on_for_t = off.strict_for("t", Strictness::IfCompatible);
        assert_eq!(status(&*Provider::Anthropic.wire_format_with(on_for_t.clone()), &decl), strict);
        // The builder methods write the same options.
        let built = Anthropic::new().strict(Strictness::Off).strict_for("t", Strictness::IfCompatible);
        assert_eq!(built.options(), &on_for_t);
        assert_eq!(OpenAiChat::with_options(on_for_t.clone()).options(), &on_for_t);
    }
}
