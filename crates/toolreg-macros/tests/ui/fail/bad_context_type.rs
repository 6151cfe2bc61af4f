use toolreg::tool;

/// Marks a number as context.
#[tool]
fn numbered(#[context] n: u32) -> u32 {
    n
}

fn main() {}
