//! The `toolreg` command.
fn main() {}
