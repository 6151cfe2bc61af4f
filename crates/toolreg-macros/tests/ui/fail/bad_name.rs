use toolreg::tool;

/// Has a dot in its name.
#[tool(name = "server.tool")]
fn dotted(x: i32) -> i32 {
    x
}

fn main() {}
