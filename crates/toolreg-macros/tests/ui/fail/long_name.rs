use toolreg::tool;

/// Forty characters, eighty bytes.
#[tool(name = "éééééééééééééééééééééééééééééééééééééééé")]
fn accented() {}

/// An empty name.
#[tool(name = "")]
fn unnamed() {}

fn main() {}
