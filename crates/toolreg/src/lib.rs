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
//! - [`provider`] (feature `providers`): each provider's wire format: declarations out, tool calls in, results out.
//! - [`prompt`]: the plain-text list of functions for models without native tool calling.
//!
//! ## Features
//! The default build is the registry, `#[tool]` (feature `macros`),
//! validation and the engine. The rest is opt-in, and the crates above turn
//! on what they use (`toolreg-mcp`, `toolreg-llm` and the CLI all three):
//! - `providers`: [`provider`], each provider's wire format, and
//!   [`FunctionRegistry::lint`];
//! - `search`: [`search`], [`FunctionRegistry::search`] and deferred
//!   loading ([`engine::Deferral`]);
//! - `embeddings`: hybrid search's sentence encoder
//!   ([`search::SentenceEncoder`], a BERT-family model on the CPU with
//!   candle), for [`FunctionRegistry::use_embeddings`];
//! - `seal`: [`seal`], HMAC sealing of state that leaves the process.

// Lets `#[tool]`'s generated `::toolreg::...` paths resolve inside this crate's own tests.
#[allow(unused_extern_crates)]
extern crate self as toolreg;

mod args;
pub mod declaration;
pub mod engine;
pub mod exec;
pub mod handler;
mod name_rule;
pub mod policy;
pub mod principal;
pub mod prompt;
#[cfg(feature = "providers")]
pub mod provider;
pub mod registry;
pub mod schema;
#[cfg(feature = "seal")]
pub mod seal;
#[cfg(feature = "search")]
pub mod search;
pub(crate) mod strict_de;
pub mod transform;
pub mod validate;

pub use args::ArgumentLimits;
pub use declaration::{DeclarationBuilder, ParamType, SafetyLevel, Scope, TaskSupport, ToolDeclaration, ToolHints};
pub use engine::{BatchOptions, ToolEngine};
pub use exec::{
    CallContext, CallOptions, Checkpoints, Content, Extensions, Finish, Progress, ProgressReporter, ToolArguments,
    ToolCall, ToolError, ToolExecutor, ToolOutput, ToolResult,
};
/// The boxed future an [`Approver`] returns (from `futures-util`).
pub use futures_util::future::BoxFuture;
pub use handler::{ErasedTool, Outcome, ToolFuture, ToolHandler};
pub use policy::{Approver, Selection};
pub use principal::{Principal, PrincipalSource};
pub use registry::{ApprovalPreview, FunctionRegistry, RegistryError, ToolEntry, ToolRegistration, validate_name};
/// The cancellation token a [`CallContext`] carries (from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use validate::ArgumentError;

#[doc = include_str!("docs/tool.md")]
#[cfg(feature = "macros")]
pub use toolreg_macros::tool;

#[doc = include_str!("docs/tools.md")]
#[cfg(feature = "macros")]
pub use toolreg_macros::tools;

/// Mark a struct with named fields as a tool's whole argument object, for
/// an `#[args]` parameter of a [`tool`] function; refuse, at compile time,
/// any type whose JSON is not an object. See [`tool`].
///
/// Takes `#[toolreg(crate = path)]` when toolreg is renamed.
#[cfg(feature = "macros")]
pub use toolreg_macros::ToolArgs;

/// Register several tools at once, all or none: `#[tool]` modules by
/// name, or any list of [`ToolRegistration`]s (what `#[tools]` and the
/// built-ins hand out). If one is refused, the registry is unchanged.
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
/// assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["add", "mul"]);
///
/// // A list made at run time, the same way.
/// let mut again = FunctionRegistry::new();
/// register_tools!(again, vec![add_tool::registration(), mul_tool::registration()])?;
/// assert_eq!(again.len(), 2);
/// # Ok(())
/// # }
/// ```
#[macro_export]
macro_rules! register_tools {
    ($registry:expr, [$($($tool:ident)::+),* $(,)?]) => {
        $registry.register_all([$($($tool)::+::registration()),*])
    };
    ($registry:expr, $registrations:expr $(,)?) => {
        $registry.register_all($registrations)
    };
}

/// Paths used by code that `#[tool]` generates. Not public API.
#[doc(hidden)]
pub mod __private {
    use std::convert::Infallible;
    use std::marker::PhantomData;

    pub use schemars;
    pub use serde;
    pub use serde_json;

    use crate::{CallContext, SafetyLevel, Scope};

    /// The tool name, checked by the one name rule; in a constant, a bad
    /// name is a compile-time error.
    pub const fn tool_name(name: &'static str) -> &'static str {
        crate::name_rule::assert_tool_name(name);
        name
    }

    /// `#[tool(safety = "...")]`, parsed by [`SafetyLevel::parse`].
    pub const fn safety(text: &str) -> SafetyLevel {
        match SafetyLevel::parse(text) {
            Some(level) => level,
            None => panic!("invalid safety level: use \"safe\", \"cautious\" (or \"moderate\") or \"dangerous\""),
        }
    }

    /// `#[tool(scope = "...")]`, parsed by [`Scope::parse`].
    pub const fn scope(text: &str) -> Scope {
        match Scope::parse(text) {
            Some(scope) => scope,
            None => panic!("invalid scope: use \"core\", \"agent\", \"user\" or \"custom\""),
        }
    }

    /// `#[tool(example = "..")]`: the macro has checked that the text is a
    /// JSON object, so this parses. Were it not, the `null` it gives would
    /// be refused when the tool is registered, never sent.
    pub fn example(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
    }

    /// A parameter without an attribute is one JSON argument; `#[tool]`
    /// names each one's type through this trait, spanned on the parameter.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool argument: it must implement `Deserialize` and `JsonSchema`",
        label = "each parameter without an attribute is one JSON argument",
        note = "if it is the whole argument object, mark it `#[args]` and derive `toolreg::ToolArgs` on its type"
    )]
    pub trait ToolArgument: Sized {
        /// The type the arguments struct holds.
        type Type;
        /// Evaluated by the generated code; fails the build for a type that
        /// is never an argument.
        const CHECK: () = ();
        /// The parameter's value from the field.
        fn into_param(field: Self::Type) -> Self;
    }

    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolArgument for T {
        type Type = T;
        #[inline]
        fn into_param(field: T) -> T {
            field
        }
    }

    /// The one mistake worth its own message: the context without its marker.
    impl ToolArgument for CallContext {
        type Type = ();
        const CHECK: () = panic!(
            "a `CallContext` parameter is not a JSON argument: mark it `#[context]`, as in `#[context] cx: CallContext`"
        );
        fn into_param(_: ()) -> Self {
            // Not reached: `CHECK` stops the build first.
            CallContext::default()
        }
    }

    /// A type `#[args]` may take as the whole argument object: a struct with
    /// named fields, as `#[derive(ToolArgs)]` checks.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not known to be an argument object",
        label = "`#[args]` takes a struct that derives `toolreg::ToolArgs`",
        note = "add `#[derive(toolreg::ToolArgs)]` to the struct, beside `Deserialize` and `JsonSchema`",
        note = "a type whose schema is not an object (an enum, a number, a list) is one argument: drop `#[args]`"
    )]
    pub trait ArgsObject: serde::de::DeserializeOwned + schemars::JsonSchema {}

    /// How a `#[context]` parameter is taken from the call's context.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be taken from the call context",
        label = "this parameter is marked `#[context]`",
        note = "a `#[context]` parameter is `CallContext` or `&CallContext`; JSON arguments carry no attribute"
    )]
    pub trait FromCallContext<'a>: Sized {
        /// Take the value from the context.
        fn from_call_context(cx: &'a CallContext) -> Self;
    }

    impl FromCallContext<'_> for CallContext {
        fn from_call_context(cx: &CallContext) -> Self {
            cx.clone()
        }
    }

    impl<'a> FromCallContext<'a> for &'a CallContext {
        fn from_call_context(cx: &'a CallContext) -> Self {
            cx
        }
    }

    /// Whether a lone parameter of type `T` is the whole argument object:
    /// [`crate::schema::is_argument_object`].
    pub fn is_argument_object<T: schemars::JsonSchema + 'static>() -> bool {
        crate::schema::is_argument_object::<T>()
    }

    /// Drops the root `description` of the arguments struct `#[tool]`
    /// writes: its rustdoc is for Rust readers, the tool's description is
    /// what the model reads.
    pub fn without_description(schema: &mut schemars::Schema) {
        schema.remove("description");
    }

    /// Sorts a tool function's return type by trait, not by name: a
    /// `Result<T, E>` is the tool's success or failure, any other type is a
    /// success. `(&ReturnKind::of(&out)).kind()` finds the `Result` impl at
    /// the first step of method lookup and the general one only after an
    /// autoref, so the choice is made once, at compile time, by the type.
    pub struct ReturnKind<R>(PhantomData<fn() -> R>);

    impl<R> ReturnKind<R> {
        /// The kind of `R`, named by a value of it.
        pub fn of(_: &R) -> Self {
            ReturnKind(PhantomData)
        }
    }

    /// A function returning `Result<T, E>`.
    pub struct ResultReturn;

    /// A function returning a plain value.
    pub struct PlainReturn;

    /// Picked first: the return type is a `Result`.
    pub trait IsResult {
        /// [`ResultReturn`].
        fn kind(&self) -> ResultReturn {
            ResultReturn
        }
    }

    impl<T, E> IsResult for ReturnKind<Result<T, E>> {}

    /// Picked otherwise: any other return type.
    pub trait IsPlain {
        /// [`PlainReturn`].
        fn kind(&self) -> PlainReturn {
            PlainReturn
        }
    }

    impl<R> IsPlain for &ReturnKind<R> {}

    impl ResultReturn {
        /// The function's own success or failure.
        pub fn wrap<T, E>(self, out: Result<T, E>) -> Result<T, E> {
            out
        }
    }

    impl PlainReturn {
        /// A plain value is a success.
        pub fn wrap<T>(self, out: T) -> Result<T, Infallible> {
            Ok(out)
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{IsPlain as _, IsResult as _, ReturnKind};

        // The borrow is the dispatch: it is what the general case needs.
        #[allow(clippy::needless_borrow)]
        #[test]
        fn return_kind_is_chosen_by_type() {
            let out: Result<u8, String> = Err("no".into());
            let wrapped = (&ReturnKind::of(&out)).kind().wrap(out);
            assert_eq!(wrapped, Err("no".to_owned()));

            type Alias = std::io::Result<u8>;
            let out: Alias = Ok(3);
            assert_eq!((&ReturnKind::of(&out)).kind().wrap(out).unwrap(), 3);

            let out: Option<u8> = None;
            assert_eq!((&ReturnKind::of(&out)).kind().wrap(out), Ok(None));
        }
    }
}
