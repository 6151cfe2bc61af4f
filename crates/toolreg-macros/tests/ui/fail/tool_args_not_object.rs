use serde::Deserialize;
use toolreg::ToolArgs;

#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
#[serde(tag = "kind")]
enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
struct Pair(u32, u32);

#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
struct Nothing;

#[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
#[serde(transparent)]
struct Wrapped {
    inner: Vec<u32>,
}

fn main() {}
