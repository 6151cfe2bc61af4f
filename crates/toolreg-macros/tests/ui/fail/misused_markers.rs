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

/// `#[arg]` is a plain argument: not beside `#[args]`, not with options,
/// not on a context parameter.
#[tool]
fn arg_misused(#[args] query: Query, #[arg] extra: Query, #[arg(named)] more: u32, #[arg] #[context] cx: CallContext) {
    let _ = (query, extra, more, cx);
}

fn main() {}
