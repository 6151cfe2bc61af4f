use toolreg::tool;

struct NotArgs {
    x: i32,
}

/// Takes a struct that derives neither Deserialize nor JsonSchema.
#[tool]
fn takes(args: NotArgs) -> i32 {
    args.x
}

fn main() {}
