use std::sync::Arc;
use toolreg::{tools, CallContext, ToolArgs};

/// A type called `Args`, which the generated code must not confuse with its own.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    n: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
pub struct Whole {
    a: u32,
}

#[derive(Clone)]
pub struct Service {
    base: Arc<u32>,
}

#[tools(crate = ::toolreg)]
impl Service {
    /// Sync, one argument of a user type called `Args`.
    #[tool(safety = "safe")]
    fn with_args(&self, args: Args) -> u32 {
        *self.base + args.n
    }

    /// Async with the context by value and a `#[args]` object.
    #[tool]
    pub async fn whole(&self, #[context] cx: CallContext, #[args] w: Whole) -> std::io::Result<u32> {
        let _ = cx.call_id();
        Ok(w.a)
    }

    /// No arguments, a raw identifier, and a renamed tool.
    #[toolreg::tool(name = "kind-of")]
    pub(crate) fn r#type(&self) {}

    fn helper(&self) -> u32 {
        1
    }

    const LIMIT: u32 = 3;
}

fn main() {
    let service = Service { base: Arc::new(Service::LIMIT) };
    let _ = service.helper();
    let mut registry = toolreg::FunctionRegistry::new();
    toolreg::register_tools!(registry, service.tool_registrations()).unwrap();
    assert_eq!(Service::TOOL_NAMES, ["with_args", "whole", "kind-of"]);
    assert_eq!(Service::TYPE_TOOL_NAME, "kind-of");
    let _: toolreg::ToolRegistration = service.r#type_tool();
    let _: toolreg::ToolDeclaration = Service::whole_tool_declaration();
}
