//! The tests of `#[tool]`, `#[tools]` and `#[derive(ToolArgs)]` as one test
//! program: the compile-time cases in `tests/ui`, what the macros accept
//! and how they refuse misuse, built against the core's default features.

mod ui;
