//! # toolreg-builtins
//!
//! The tools every agent needs, as ordinary [`toolreg`] tools: each has its
//! safety level, categories and scope, so selection, approval and audit
//! treat them like any other tool.
//!
//! - [`store`]: the context store (`store_set`, `store_get`, `store_ref`,
//!   `store_list`, `store_summarize`, `store_delete`), named JSON values kept
//!   outside the context window and handed on by reference; SQLite by default.
//!
//! [`Builtins`] registers any subset in one step, all or nothing:
//!
//! ```
//! use toolreg::FunctionRegistry;
//! use toolreg_builtins::Builtins;
//! use toolreg_builtins::store::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = SqliteStore::in_memory().await?;
//! let mut registry = FunctionRegistry::new();
//! Builtins::new().store(store.namespace("run-42")?).register(&mut registry)?;
//! assert!(registry.contains("store_get"));
//! # Ok(())
//! # }
//! ```

pub mod store;

use toolreg::{FunctionRegistry, RegistryError, ToolRegistration};

/// Chooses which built-in tools to register, then registers them together.
///
/// Each method adds one family of tools; [`Builtins::register`] adds them
/// all to a registry or, if any is refused (a name already taken), none.
#[derive(Debug, Default)]
#[must_use = "a Builtins registers nothing until `register` is called"]
pub struct Builtins {
    registrations: Vec<ToolRegistration>,
}

impl Builtins {
    /// No tools yet.
    pub fn new() -> Self {
        Builtins::default()
    }

    /// The six context-store tools, bound to `namespace`.
    pub fn store(mut self, namespace: store::Namespace) -> Self {
        self.registrations.extend(namespace.tools());
        self
    }

    /// The registrations chosen so far, for a caller that adds them itself.
    pub fn into_registrations(self) -> Vec<ToolRegistration> {
        self.registrations
    }

    /// Register every chosen tool, all or none.
    pub fn register(self, registry: &mut FunctionRegistry) -> Result<(), RegistryError> {
        registry.register_all(self.registrations)
    }
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
