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
mod name_rule;
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
pub use exec::{
    CallContext, CallOptions, Extensions, Finish, Progress, ProgressReporter, ToolArguments, ToolCall, ToolError,
    ToolExecutor, ToolOutput, ToolResult,
};
/// The boxed future an [`Approver`] returns (from `futures-util`).
pub use futures_util::future::BoxFuture;
pub use handler::{ErasedTool, Outcome, ToolFuture, ToolHandler};
pub use policy::{Approver, Selection};
pub use registry::{ApprovalPreview, FunctionRegistry, RegistryError, ToolEntry, ToolRegistration, validate_name};
/// The cancellation token a [`CallContext`] carries (from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use validate::ArgumentError;

/// Turn a function into a tool: generates `<fn>_tool::{NAME, declaration(),
/// execute, registration()}`.
///
/// `#[tool]` goes on a free `fn` or `async fn` at module level (the
/// generated module reaches the function through `super::`), or on a
/// method of an impl block marked [`tools`], for a tool that holds state.
/// The function
/// stays as written; the macro adds a module `<fn>_tool` with `NAME`,
/// `DESCRIPTION`, `declaration()`, `execute` (the function itself),
/// `registration()` and, unless an `#[args]` parameter is the argument
/// object, the `Args` struct it writes.
///
/// # Parameters: the rule
///
/// **Every parameter is one JSON argument, named after the parameter** —
/// with one exception, the lone struct below. The input schema is an object
/// with one property per parameter; `Option<T>` parameters are optional, a
/// parameter's doc comment is its description, and `#[serde(..)]` /
/// `#[schemars(..)]` attributes on a parameter apply to its property.
///
/// ```
/// use serde::Deserialize;
/// use serde_json::json;
/// use toolreg::tool;
///
/// /// An order number.
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct OrderId(u64);
///
/// /// Look an order up.
/// #[tool(safety = "safe")]
/// fn order_status(
///     /// The order to look up.
///     id: OrderId,
///     /// Include the shipping history.
///     #[serde(default)]
///     history: bool,
///     note: Option<String>,
/// ) -> String {
///     format!("order {} is on its way", id.0)
/// }
///
/// # fn main() {
/// let schema = order_status_tool::declaration().input_schema;
/// assert_eq!(schema["properties"]["id"]["description"], "The order to look up.");
/// assert_eq!(schema["properties"]["id"]["type"], "integer");
/// assert_eq!(schema["required"], json!(["id"]));
/// // The model reads the tool's description, not the Rust docs of `Args`.
/// assert!(schema.get("description").is_none());
/// # }
/// ```
///
/// **The lone struct.** When the function has exactly one parameter that
/// is not `#[context]`, carries no attribute (no `#[arg]`, doc comment,
/// `#[serde]` or `#[schemars]`), and its type's schema is an object with
/// properties — a struct with named fields — that struct *is* the argument
/// object: its fields are the arguments, and the declaration is its schema
/// (`schema_for!(CalculatorArgs)`). This is the form of the seed's example:
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use serde_json::json;
/// use toolreg::tool;
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct CalculatorArgs {
///     /// `add`, `sub`, `mul` or `div`.
///     op: String,
///     a: f64,
///     b: f64,
/// }
///
/// #[derive(Serialize)]
/// struct CalculatorResult {
///     value: f64,
/// }
///
/// #[tool(description = "Perform basic arithmetic operations")]
/// async fn calculator(args: CalculatorArgs) -> Result<CalculatorResult, String> {
///     match args.op.as_str() {
///         "add" => Ok(CalculatorResult { value: args.a + args.b }),
///         other => Err(format!("unknown operation {other}")),
///     }
/// }
///
/// # fn main() {
/// let schema = calculator_tool::declaration().input_schema;
/// assert_eq!(schema["required"], json!(["op", "a", "b"]));
/// // The model calls it as `{"op": "add", "a": 2, "b": 3}`.
/// # }
/// ```
///
/// The decision is made from the type's schema
/// ([`schema::is_argument_object`]), never from its name, once per type when
/// the declaration and registration are built. Any other lone type is one
/// named argument, as before: a `String`, a `Vec<T>`, a map, a newtype or
/// other tuple struct, a unit struct, an enum, and `Option<Struct>` (an
/// optional argument: the whole argument object cannot be absent).
///
/// To keep a lone struct as one named argument, mark it `#[arg]` (or give
/// it a doc comment, which describes one argument):
///
/// ```
/// use serde::Deserialize;
/// use serde_json::json;
/// use toolreg::tool;
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct Point {
///     x: f64,
///     y: f64,
/// }
///
/// /// The distance of a point from the origin.
/// #[tool(safety = "safe")]
/// fn norm(#[arg] point: Point) -> f64 {
///     point.x.hypot(point.y)
/// }
///
/// # fn main() {
/// // The arguments are `{"point": {"x": 3, "y": 4}}`.
/// assert_eq!(norm_tool::declaration().input_schema["required"], json!(["point"]));
/// # }
/// ```
///
/// An enum, a list or any other type is one argument the same way (an enum
/// as the whole argument object cannot be expressed for every provider; see
/// below).
///
/// # The whole argument object: `#[args]`
///
/// To say at compile time that a struct is the whole argument object (the
/// lone struct above is decided from its schema), mark its parameter
/// `#[args]` and derive [`ToolArgs`] on the struct, which refuses any type
/// whose JSON is not an object. The struct's fields are then the arguments;
/// no other parameter may be a JSON argument (`#[context]` parameters may
/// sit beside it). The parameter may be a pattern.
///
/// ```
/// use serde::Deserialize;
/// use toolreg::{tool, ToolArgs};
///
/// #[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
/// struct Transfer {
///     /// Account to take the money from.
///     from: String,
///     /// Account to pay it into.
///     to: String,
///     cents: u64,
/// }
///
/// /// Move money between two accounts.
/// #[tool(safety = "dangerous")]
/// fn transfer(#[args] Transfer { from, to, cents }: Transfer) -> String {
///     format!("moved {cents} from {from} to {to}")
/// }
///
/// # fn main() {
/// let schema = transfer_tool::declaration().input_schema;
/// assert_eq!(schema["required"], serde_json::json!(["from", "to", "cents"]));
/// # }
/// ```
///
/// Every provider needs a JSON object at the root of a tool's input schema,
/// so [`ToolArgs`] accepts only structs with named fields: an enum, a tuple
/// or unit struct, or a struct under `#[serde(transparent)]` (or `from`,
/// `try_from`, `into`, `with`) is refused at compile time. Take such a type
/// as one argument instead.
///
/// ```compile_fail
/// use serde::Deserialize;
/// use toolreg::ToolArgs;
///
/// // error: an enum cannot be a tool's whole argument object
/// #[derive(Deserialize, schemars::JsonSchema, ToolArgs)]
/// enum Shape {
///     Circle { radius: f64 },
///     Square { side: f64 },
/// }
/// ```
///
/// ```
/// use serde::Deserialize;
/// use toolreg::tool;
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// #[serde(tag = "kind", rename_all = "lowercase")]
/// enum Shape {
///     Circle { radius: f64 },
///     Square { side: f64 },
/// }
///
/// /// The area of a shape.
/// #[tool(safety = "safe")]
/// fn area(shape: Shape) -> f64 {
///     match shape {
///         Shape::Circle { radius } => std::f64::consts::PI * radius * radius,
///         Shape::Square { side } => side * side,
///     }
/// }
///
/// # fn main() {
/// // The arguments are `{"shape": {"kind": "square", "side": 2}}`.
/// assert_eq!(area_tool::declaration().input_schema["required"], serde_json::json!(["shape"]));
/// # }
/// ```
///
/// # The call's context: `#[context]`
///
/// A parameter marked `#[context]` is not an argument: it is taken from the
/// call's [`CallContext`] (call id, cancellation), as `CallContext` or
/// `&CallContext`, in any position.
///
/// ```
/// use toolreg::{tool, CallContext};
///
/// /// Wait, unless the call is cancelled first.
/// #[tool(safety = "safe")]
/// async fn wait(#[context] cx: &CallContext, millis: u64) -> bool {
///     tokio::select! {
///         _ = tokio::time::sleep(std::time::Duration::from_millis(millis)) => true,
///         _ = cx.cancelled() => false,
///     }
/// }
/// # fn main() {}
/// ```
///
/// A `CallContext` parameter without `#[context]` would be a JSON argument,
/// and is refused with a message that says to mark it.
///
/// # Return type
///
/// A function returning `Result<T, E>` (under any name or alias, such as
/// `std::io::Result<T>`) succeeds with `T` or fails with `E`, whose
/// `Display` text reaches the model verbatim; a function returning any other
/// `T: Serialize` always succeeds with it. The choice is made by the type,
/// through a trait, not by the name written in the signature: generated code
/// asks `(&ReturnKind::of(&out)).kind()`, which method lookup resolves to the
/// `Result` case before it tries the general one, at compile time.
///
/// # Options
///
/// `#[tool(...)]` takes `name = "..."` (default: the function's name),
/// `description = "..."` (default: the doc comment, which a tool must have
/// one way or the other), `safety = "safe" | "cautious" | "dangerous"`
/// (`moderate` means cautious; default `dangerous`), `category = "..."`
/// (repeatable), `scope = "core" | "agent" | "user" | "custom"` (default
/// `custom`), `exclusive = "arg"` (calls of a batch with the same value of
/// that argument run one at a time; see [`engine`]), `title = "..."`,
/// `idempotent = true | false` and `open_world = true | false` (shown to MCP
/// clients as the tool's title and hints), and `crate = path` when
/// toolreg is renamed. The name, safety level and scope are checked at
/// compile time by the same `const fn`s the registry uses at run time
/// ([`validate_name`], [`SafetyLevel::parse`], [`Scope::parse`]), so a bad
/// one stops the build with the rule's own message:
///
/// ```compile_fail
/// /// Dots are not allowed in tool names.
/// #[toolreg::tool(name = "server.tool")]
/// fn dotted() {}
/// # fn main() {}
/// ```
#[cfg(feature = "macros")]
pub use toolreg_macros::tool;

/// Turn the `#[tool]` methods of an impl block into tools that hold `self`
/// as their state: generates `TOOL_NAMES`, `tool_declarations()` and
/// `tool_registrations(&self)` for the block, and per method `m`
/// `M_TOOL_NAME`, `m_tool_declaration()` and `m_tool(&self)`.
///
/// A tool that needs something to work with (a database handle, a root
/// directory, a client) is a method taking `&self`. Mark the inherent impl
/// block `#[tools]` and each method that is a tool `#[tool(..)]`; other
/// methods are left alone. A `#[tool]` method is read exactly as a free
/// [`tool`] function is: sync or async, `#[context]` parameters, the
/// parameter rule with the lone struct, `#[arg]` and `#[args]`, the doc
/// comment as the description, and every option (`name`, `safety`,
/// `category`, `scope`, `exclusive`, ...). The tool's name is the method's
/// name unless `name = ".."` says otherwise.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolreg::{tools, FunctionRegistry};
///
/// #[derive(Clone, Default)]
/// struct Notes {
///     lines: Arc<Mutex<Vec<String>>>,
/// }
///
/// #[tools]
/// impl Notes {
///     /// Add a line to the notes; returns how many there are.
///     #[tool(safety = "cautious", category = "notes")]
///     fn add_note(&self, line: String) -> usize {
///         let mut lines = self.lines.lock().unwrap();
///         lines.push(line);
///         lines.len()
///     }
///
///     /// Read the notes.
///     #[tool(safety = "safe", category = "notes")]
///     async fn read_notes(&self) -> Vec<String> {
///         self.lines.lock().unwrap().clone()
///     }
///
///     /// Not a tool: no `#[tool]`.
///     pub fn count(&self) -> usize {
///         self.lines.lock().unwrap().len()
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let notes = Notes::default();
/// let mut registry = FunctionRegistry::new();
/// registry.register_all(notes.tool_registrations())?;
/// assert_eq!(Notes::TOOL_NAMES, ["add_note", "read_notes"]);
/// assert_eq!(Notes::ADD_NOTE_TOOL_NAME, "add_note");
///
/// registry.execute("add_note", serde_json::json!({"line": "buy milk"})).await?;
/// // The tools hold a clone of `notes`, which shares its `Arc`.
/// assert_eq!(notes.count(), 1);
/// # Ok(())
/// # }
/// ```
///
/// **The state.** `Self` must be `Clone + Send + Sync + 'static`. A
/// registration holds a clone of `self` in an `Arc` and lends it to every
/// call as `&self`; `tool_registrations` makes one clone that all the
/// block's tools share, and `m_tool(&self)` one for its tool alone. So keep
/// what the tools change, and what the caller wants to see change, behind
/// an `Arc` (a `Mutex`, an atomic, a pool), as above: calls may run at the
/// same time, which is also why a tool method takes `&self`, never `&mut
/// self` or `self` (either is a compile error).
///
/// **Where the generated API is.** The per-method items take the method's
/// visibility; `TOOL_NAMES`, `tool_declarations` and `tool_registrations`
/// that of the block's most visible tool method. Register with
/// `registry.register_all(state.tool_registrations())` (all or none), or
/// one tool at a time with `registry.register(state.m_tool())` (to adjust
/// one first, for example with
/// [`ToolRegistration::with_approval_preview`]). One `#[tools]` block per
/// type: a second would define the same names again. Like `#[tool]`, it
/// goes at module level, on an inherent impl without generic parameters;
/// a tool argument's type must name the type, not `Self`. It takes
/// `crate = path` when toolreg is renamed.
///
/// ```compile_fail
/// #[derive(Clone)]
/// struct Counter(std::sync::Arc<std::sync::atomic::AtomicU64>);
///
/// #[toolreg::tools]
/// impl Counter {
///     /// error: a #[tool] method takes `&self`, not `&mut self`
///     #[tool]
///     fn bump(&mut self) {}
/// }
/// # fn main() {}
/// ```
#[cfg(feature = "macros")]
pub use toolreg_macros::tools;

/// Mark a struct with named fields as a tool's whole argument object, for
/// an `#[args]` parameter of a [`tool`] function; refuse, at compile time,
/// any type whose JSON is not an object. See [`tool`].
///
/// Takes `#[toolreg(crate = path)]` when toolreg is renamed.
#[cfg(feature = "macros")]
pub use toolreg_macros::ToolArgs;

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
