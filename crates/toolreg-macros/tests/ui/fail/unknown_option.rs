use toolreg::tool;

/// Unknown option and bad safety level.
#[tool(safety = "risky", timeout = 5)]
fn opts(x: i32) -> i32 {
    x
}

fn main() {}
