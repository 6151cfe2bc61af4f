use serde::Deserialize;
use toolreg::tool;

#[derive(Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Takes a struct that does not derive `ToolArgs` as its whole arguments.
#[tool]
fn search(#[args] query: Query) -> String {
    query.text
}

fn main() {}
