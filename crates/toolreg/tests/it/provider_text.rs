//! `declare_partial` writes the same declarations as its `into_value`, in every format and option, for the whole corpus at once and
//! for each tool alone, from registry entries (cached lowerings) and from
//! bare declarations.

use crate::support as common;

use serde_json::Value;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::{FormatOptions, NameStyle, Provider, Strictness, ToolRef, WireFormat};

/// Every provider with its default options, then the options that change
/// what is written (strictness, respelled names, Gemini's JSON Schema field).
fn formats() -> Vec<(String, Box<dyn WireFormat>)> {
    let mut out: Vec<(String, Box<dyn WireFormat>)> = Vec::new();
    for provider in Provider::ALL {
        for (label, options) in [
            ("default", FormatOptions::new()),
            ("strict", FormatOptions::new().strict(Strictness::IfCompatible)),
            ("strict_required", FormatOptions::new().strict(Strictness::Required)),
            ("not_strict", FormatOptions::new().strict(Strictness::Off)),
            ("respell", FormatOptions::new().name_style(NameStyle::Respell)),
        ] {
            out.push((format!("{provider:?}/{label}"), provider.wire_format_with(options)));
        }
    }
    out.push(("Gemini/json_schema".into(), Box::new(Gemini::new().json_schema(true))));
    out
}

fn assert_same(label: &str, format: &dyn WireFormat, tools: &[ToolRef<'_>]) {
    let value = format.declare_partial(tools).into_value();
    let view = format.declare_partial(tools);
    let text = serde_json::to_string(&view.tools).unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, value.tools, "{label}: text {text}");
    assert_eq!(view.tools.to_value(), value.tools, "{label}");
    assert_eq!(view.report, value.report, "{label}");
    for name in tools.iter().map(|t| t.declaration().name.as_str()) {
        let spelled = value.mapping.provider_name(name);
        assert_eq!(view.mapping.provider_name(name), spelled, "{label}");
        assert_eq!(view.mapping.real_name(spelled), value.mapping.real_name(spelled), "{label}");
    }
    // `into_value` of the view itself.
    assert_eq!(view.into_value().tools, value.tools, "{label}");
}

#[test]
fn the_text_is_the_value_written_for_every_format() {
    let registry = common::registry();
    let corpus: Vec<_> = common::corpus().into_iter().map(|(decl, _)| decl).collect();
    let entries = ToolRef::list(registry.list());
    let bare = ToolRef::list(&corpus);
    for (label, format) in formats() {
        assert_same(&format!("{label} entries"), &*format, &entries);
        assert_same(&format!("{label} declarations"), &*format, &bare);
        for (i, tool) in bare.iter().enumerate() {
            assert_same(&format!("{label} {}", corpus[i].name), &*format, std::slice::from_ref(tool));
        }
        assert_same(&format!("{label} none"), &*format, &[]);
    }
}

#[test]
fn refused_tools_are_left_out_of_the_text() {
    let bad = toolreg::ToolDeclaration::new("no spaces allowed", "", serde_json::json!({"type": "object"}));
    let good = toolreg::ToolDeclaration::new("ok", "", serde_json::json!({"type": "object"}));
    let declared = Provider::OpenAiChat.wire_format().declare_partial(&[ToolRef::from(&bad), ToolRef::from(&good)]);
    assert_eq!(declared.refused().count(), 1);
    assert_eq!(declared.tools.len(), 1);
    let text = serde_json::to_string(&declared.tools).unwrap();
    assert!(text.contains(r#""name":"ok""#) && !text.contains("no spaces"), "{text}");
}
