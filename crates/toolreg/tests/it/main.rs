//! The integration tests of `toolreg`, as one test program: one module per
//! area, linked once. Fixtures live in `tests/fixtures`; the `#[tool]`
//! compile-time cases are the macro crate's (`toolreg-macros/tests/ui`).
//! They cover every feature, so they build with all of them (`cargo test --workspace --all-features`, as CI
//! runs them).
#![cfg(all(feature = "providers", feature = "search", feature = "seal"))]

mod agreement;
mod approval_props;
mod engine;
mod hostile;
mod official_validators;
mod policy;
mod provider_blocks;
mod provider_corpus;
mod provider_hosted;
mod provider_props;
mod provider_roundtrip;
mod provider_snapshots;
mod provider_text;
mod registry;
mod search_model;
mod support;
mod tool_macro;
mod tool_methods;
