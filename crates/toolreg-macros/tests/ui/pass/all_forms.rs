use toolreg::{tool, CallContext};

/// No arguments at all.
#[tool(safety = "safe")]
fn nothing() {}

/// A raw identifier name.
#[tool]
fn r#type(r#in: String) -> String {
    r#in
}

/// Public with context.
#[tool]
pub async fn with_context(#[context] cx: CallContext, n: u32) -> Result<u32, String> {
    let _ = cx.call_id();
    Ok(n)
}

mod inner {
    /// Visible to the parent only.
    #[toolreg::tool(crate = ::toolreg)]
    pub(super) fn parent_only(flag: bool) -> bool {
        !flag
    }
}

fn main() {
    let mut registry = toolreg::FunctionRegistry::new();
    registry.register(nothing_tool::registration()).unwrap();
    registry.register(type_tool::registration()).unwrap();
    registry.register(with_context_tool::registration()).unwrap();
    registry.register(inner::parent_only_tool::registration()).unwrap();
    assert_eq!(type_tool::NAME, "type");
    assert_eq!(registry.len(), 4);
}
