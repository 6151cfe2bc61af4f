use serde::Deserialize;
use toolreg::{tool, CallContext, ToolArgs};

#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
struct Query {
    text: String,
}

/// An `#[args]` object beside a plain argument.
#[tool]
fn mixed(#[args] query: Query, limit: u32) -> String {
    format!("{}{limit}", query.text)
}

/// Two markers on one parameter, and a marker with options.
#[tool]
fn doubled(#[context] #[args] cx: CallContext, #[context(owned)] other: CallContext) {
    let _ = (cx, other);
}

/// A doc comment on a context parameter goes nowhere.
#[tool]
fn documented(
    /// The context.
    #[context]
    cx: CallContext,
) {
    let _ = cx;
}

fn main() {}
