//! Calculator agent example.
fn main() {}
