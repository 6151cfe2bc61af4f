//! Placeholder replaced by the execute benchmark.
fn main() {}
