use serde::Deserialize;
use toolreg::{tool, CallContext, ToolArgs};

/// A newtype taken as one argument.
#[derive(Deserialize, schemars::JsonSchema)]
struct OrderId(u64);

/// One newtype parameter is one argument named `id`.
#[tool]
fn one(id: OrderId) -> u64 {
    id.0
}

/// A whole argument object, generic, renamed crate path.
#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
#[toolreg(crate = ::toolreg)]
struct Page<T> {
    items: Vec<T>,
    cursor: Option<String>,
}

/// Takes the whole object, and the context by reference after it.
#[tool]
async fn page(#[args] page: Page<u32>, #[context] cx: &CallContext) -> std::io::Result<usize> {
    let _ = (cx.call_id(), &page.cursor);
    Ok(page.items.len())
}

/// Only context.
#[tool(safety = "SAFE", scope = "Agent")]
fn only_context(#[context] _cx: CallContext) {}

fn main() {
    let mut registry = toolreg::FunctionRegistry::new();
    registry.register(one_tool::registration()).unwrap();
    registry.register(page_tool::registration()).unwrap();
    registry.register(only_context_tool::registration()).unwrap();
    assert_eq!(only_context_tool::declaration().safety, toolreg::SafetyLevel::Safe);
    assert_eq!(only_context_tool::declaration().scope, toolreg::Scope::Agent);
}
