//! # toolreg
//!
//! One registry for every function an LLM agent can call. A function and its
//! declaration (name, description, JSON Schema of its input, safety level,
//! categories, scope) are registered together or not at all; calls arrive as
//! models emit them and are validated, run with panics contained, and answered
//! with a result the model can read.
//!
#![doc = include_str!("docs/quickstart.md")]
//!
//! ## Map of the crate
//! - [`declaration`]: [`ToolDeclaration`], its builder, [`SafetyLevel`], [`Scope`].
//! - [`registry`]: [`FunctionRegistry`], [`ToolRegistration`], [`RegistryError`].
//! - [`schema`]: canonical JSON Schemas from Rust types.
//! - [`exec`]: [`ToolCall`], [`ToolOutput`], [`ToolError`], [`ToolExecutor`].
//! - [`handler`]: [`ErasedTool`], for tools whose shape is known only at run time.
//! - [`policy`]: [`Selection`] of the tools offered, the [`Approver`] gate, audit events.
//! - [`engine`]: [`ToolEngine`], calls and batches through selection, approval, hooks and audit.
//! - [`provider`]: each provider's wire format: declarations out, tool calls in, results out.
//! - [`prompt`]: the plain-text list of functions for models without native tool calling.

// Lets `#[tool]`'s generated `::toolreg::...` paths resolve inside this crate's own tests.
#[allow(unused_extern_crates)]
extern crate self as toolreg;

mod args;
pub mod declaration;
pub mod engine;
pub mod exec;
pub mod handler;
pub mod policy;
pub mod prompt;
pub mod provider;
pub mod registry;
pub mod schema;
pub(crate) mod strict_de;
pub mod validate;

pub use args::ArgumentLimits;
pub use declaration::{DeclarationBuilder, ParamType, SafetyLevel, Scope, ToolDeclaration, ToolHints};
pub use engine::{BatchOptions, ToolEngine};
pub use exec::{CallContext, Extensions, ToolArguments, ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult};
/// The boxed future an [`Approver`] returns (from `futures-util`).
pub use futures_util::future::BoxFuture;
pub use handler::{ErasedTool, ToolFuture};
pub use policy::{Approver, Selection};
pub use registry::{FunctionRegistry, RegistryError, ToolEntry, ToolRegistration, validate_name};
/// The cancellation token a [`CallContext`] carries (from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use validate::ArgumentError;

/// Turn a function into a tool: generates `<fn>_tool::{NAME, declaration(),
/// execute, registration()}`. See the crate docs for the attribute's options.
#[cfg(feature = "macros")]
pub use toolreg_macros::tool;

/// Register several `#[tool]` modules at once, all or none.
///
/// ```
/// use toolreg::{tool, register_tools, FunctionRegistry};
///
/// /// Add two numbers.
/// #[tool(safety = "safe")]
/// fn add(a: f64, b: f64) -> f64 { a + b }
///
/// /// Multiply two numbers.
/// #[tool(safety = "safe")]
/// fn mul(a: f64, b: f64) -> f64 { a * b }
///
/// # fn main() -> Result<(), toolreg::RegistryError> {
/// let mut registry = FunctionRegistry::new();
/// register_tools!(registry, [add_tool, mul_tool])?;
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["add", "mul"]);
/// # Ok(())
/// # }
/// ```
#[macro_export]
macro_rules! register_tools {
    ($registry:expr, [$($($tool:ident)::+),* $(,)?]) => {
        $registry.register_all([$($($tool)::+::registration()),*])
    };
}

/// Paths used by code that `#[tool]` generates. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;

    /// Wraps a plain return value so every tool returns a `Result`.
    pub fn ok<T>(value: T) -> Result<T, std::convert::Infallible> {
        Ok(value)
    }
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
