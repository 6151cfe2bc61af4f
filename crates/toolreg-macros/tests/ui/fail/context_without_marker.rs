use toolreg::{tool, CallContext};

/// Forgets to mark its context.
#[tool]
fn unmarked(cx: CallContext, n: u32) -> u32 {
    let _ = cx;
    n
}

fn main() {}
