use toolreg::tool;

/// An unknown safety level.
#[tool(safety = "risky")]
fn risky() {}

/// An unknown scope.
#[tool(scope = "everyone")]
fn everyone() {}

fn main() {}
