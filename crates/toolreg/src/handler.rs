//! Type erasure: any Rust function with typed arguments becomes an
//! [`ErasedTool`] that takes JSON and returns JSON.
//!
//! Erasure happens once, when a [`crate::ToolRegistration`] is built; a call
//! then allocates only its boxed future (none for a synchronous tool) and its
//! output.

use std::fmt::{self, Display};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::declaration::ToolDeclaration;
use crate::exec::{CallContext, Content, ToolError, ToolOutput};
use crate::schema::{self, CachedSchema};

/// The future a tool call runs as: a result that was ready when the call
/// started (synchronous tools, refusals), or a boxed future.
///
/// Kept hand-written for one measured reason: a ready result costs no
/// allocation, which is what keeps a synchronous tool called through the
/// registry within 2x of calling it by hand (see `benches/execute.rs`; a
/// boxed `async` block adds an allocation and ~40 ns to every call).
///
/// ```
/// use toolreg::ToolFuture;
/// use serde_json::json;
///
/// # futures_util::FutureExt::now_or_never(async {
/// assert_eq!(ToolFuture::ready(Ok(json!(1).into())).await.unwrap().value, json!(1));
/// assert_eq!(ToolFuture::new(async { Ok(json!(2).into()) }).await.unwrap().value, json!(2));
/// # });
/// ```
#[must_use = "a tool future does nothing unless awaited"]
pub struct ToolFuture {
    state: FutureState,
}

enum FutureState {
    Ready(Option<Result<ToolOutput, ToolError>>),
    Boxed(Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'static>>),
}

impl ToolFuture {
    /// A call that runs as this future.
    pub fn new(future: impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'static) -> Self {
        ToolFuture { state: FutureState::Boxed(Box::pin(future)) }
    }

    /// A call whose result is already known.
    pub fn ready(result: Result<ToolOutput, ToolError>) -> Self {
        ToolFuture { state: FutureState::Ready(Some(result)) }
    }

    /// Whether the result was known when the call started.
    pub(crate) fn is_ready(&self) -> bool {
        matches!(self.state, FutureState::Ready(Some(_)))
    }

    /// The result, if it was known when the call started.
    pub(crate) fn into_ready(self) -> Result<Result<ToolOutput, ToolError>, Self> {
        match self.state {
            FutureState::Ready(Some(result)) => Ok(result),
            state => Err(ToolFuture { state }),
        }
    }
}

impl fmt::Debug for ToolFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            FutureState::Ready(Some(_)) => "ready",
            FutureState::Ready(None) => "done",
            FutureState::Boxed(_) => "pending",
        };
        f.debug_tuple("ToolFuture").field(&state).finish()
    }
}

impl Future for ToolFuture {
    type Output = Result<ToolOutput, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            FutureState::Ready(result) => Poll::Ready(result.take().unwrap_or_else(|| {
                Err(ToolError::Panicked { message: "a tool future was polled after it completed".into() })
            })),
            FutureState::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

/// A tool with its types erased: JSON arguments in, a future of JSON out.
///
/// Implement it for tools whose shape is only known at run time (remote
/// servers, scripts); typed Rust functions get one from
/// [`crate::ToolRegistration`]'s constructors. Failures are [`ToolError`]s:
/// a tool's own error is [`ToolError::Failed`].
///
/// ```
/// use toolreg::{CallContext, ErasedTool, ToolFuture};
/// use serde_json::Value;
///
/// struct Echo;
/// impl ErasedTool for Echo {
///     fn call(&self, _cx: CallContext, args: Value) -> ToolFuture {
///         ToolFuture::new(async move { Ok(args.into()) })
///     }
/// }
/// ```
pub trait ErasedTool: Send + Sync + 'static {
    /// Start a call. `args` has already been checked against the declaration's
    /// input schema unless the tool's own deserialisation is the check.
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture;

    /// Optional fast path: start a call straight from argument text, skipping
    /// the intermediate [`Value`]. Used only when the tool's own
    /// deserialisation is the schema check. Return the context back (the
    /// default) to have the text parsed, validated and passed to
    /// [`call`](Self::call), which is also what happens when the text does
    /// not deserialise.
    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        let _ = text;
        Err(cx)
    }

    /// Optional fast path: start a call from borrowed arguments without
    /// validating them first; as [`call_text`](Self::call_text), for parsed
    /// arguments.
    fn call_value(&self, cx: CallContext, args: &Value) -> Result<ToolFuture, CallContext> {
        let _ = args;
        Err(cx)
    }

    /// Whether the tool does its work inline, on the thread that starts the
    /// call (a synchronous function). Such a tool cannot be interrupted, so
    /// the engine moves it to the blocking thread pool when a timeout applies.
    fn runs_inline(&self) -> bool {
        false
    }
}

fn failed<E: Display>(error: E) -> ToolError {
    ToolError::Failed { message: error.to_string() }
}

/// A result as JSON. serde_json writes a non-finite float as `null`; a tool
/// that returned one gets an error instead of a silent `null`.
pub(crate) fn to_json<R: Serialize + ?Sized>(result: &R) -> Result<Value, ToolError> {
    let value = serde_json::to_value(result).map_err(|e| ToolError::ResultSerialization { message: e.to_string() })?;
    if contains_null(&value) && result.serialize(finite::Check).is_err() {
        return Err(ToolError::ResultSerialization {
            message: "the result contains a number that is not finite (infinity or NaN), which JSON cannot carry"
                .into(),
        });
    }
    Ok(value)
}

/// Whether a `null` appears anywhere in `value`. The value was just built
/// by `serde_json::to_value`, which recursed as deep already.
fn contains_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(contains_null),
        Value::Object(map) => map.values().any(contains_null),
        _ => false,
    }
}

/// A Rust function that can be a tool, axum-`Handler`-style: synchronous or
/// `async`, taking its typed arguments alone or after the call's
/// [`CallContext`], returning `Result<R, E>` with `R: Serialize` and
/// `E: Display`. [`ToolRegistration::new`](crate::ToolRegistration::new)
/// takes any of them; `M` only tells the four forms apart (it is inferred).
///
/// ```
/// use toolreg::{CallContext, ToolDeclaration, ToolRegistration};
/// use serde_json::{json, Value};
///
/// let decl = |name: &str| ToolDeclaration::new(name, "t", json!({"type": "object"}));
/// ToolRegistration::new(decl("sync"), |_: Value| Ok::<_, String>(1));
/// ToolRegistration::new(decl("sync_cx"), |_: CallContext, _: Value| Ok::<_, String>(1));
/// ToolRegistration::new(decl("async"), |_: Value| async { Ok::<_, String>(1) });
/// ToolRegistration::new(decl("async_cx"), |_: CallContext, _: Value| async { Ok::<_, String>(1) });
/// ```
pub trait ToolHandler<M>: Send + Sync + 'static {
    /// The tool made of it.
    #[doc(hidden)]
    fn into_tool(self, declaration: &ToolDeclaration) -> Erasure;
}

/// A [`ToolHandler`] made into a tool: the tool with its types erased, and
/// the argument type's schema when the declaration says exactly what serde
/// enforces for it.
#[doc(hidden)]
pub struct Erasure {
    pub(crate) tool: Arc<dyn ErasedTool>,
    pub(crate) serde_checked: Option<Arc<CachedSchema>>,
}

/// Which form a [`ToolHandler`] has (a type-level tag, never a value).
#[doc(hidden)]
pub enum Async {}
/// Which form a [`ToolHandler`] has (a type-level tag, never a value).
#[doc(hidden)]
pub enum Blocking {}
/// A hand-written [`ErasedTool`] (a type-level tag, never a value).
#[doc(hidden)]
pub enum Erased {}

impl<T: ErasedTool> ToolHandler<Erased> for T {
    fn into_tool(self, _: &ToolDeclaration) -> Erasure {
        Erasure { tool: Arc::new(self), serde_checked: None }
    }
}

impl<T: ErasedTool> ToolHandler<Erased> for Arc<T> {
    fn into_tool(self, _: &ToolDeclaration) -> Erasure {
        Erasure { tool: self, serde_checked: None }
    }
}

impl ToolHandler<Erased> for Arc<dyn ErasedTool> {
    fn into_tool(self, _: &ToolDeclaration) -> Erasure {
        Erasure { tool: self, serde_checked: None }
    }
}

/// The argument type's cached schema, when the declaration is exactly it
/// (so a clean deserialisation needs no schema validation).
fn serde_checked<A: schemars::JsonSchema + 'static>(declaration: &ToolDeclaration) -> Option<Arc<CachedSchema>> {
    let cached = schema::cached_schema::<A>();
    (!cached.serde_accepts_more && declaration.input_schema == cached.schema).then_some(cached)
}

/// A typed Rust function as an [`ErasedTool`]; `M` is its form.
pub(crate) struct FnTool<F, M> {
    f: F,
    _form: PhantomData<fn() -> M>,
}

/// One form of [`ToolHandler`]: `$form` is `Async` or `Blocking`, `$cx` the
/// context parameter if any. Each form calls the function directly (no
/// adapter closure in between).
macro_rules! handler_form {
    ($form:ident, ($($cx:ident)?), returns: [$($out:tt)*], |$f:ident, $c:ident, $a:ident| $start:expr, inline: $inline:expr) => {
        impl<F, A, Out> ToolHandler<($form, $($cx,)? A)> for F
        where
            F: Fn($($cx,)? A) -> Out + Send + Sync + 'static,
            A: DeserializeOwned + schemars::JsonSchema + 'static,
            FnTool<F, ($form, $($cx,)? A)>: ErasedTool,
        {
            fn into_tool(self, declaration: &ToolDeclaration) -> Erasure {
                Erasure {
                    tool: Arc::new(FnTool::<F, ($form, $($cx,)? A)> { f: self, _form: PhantomData }),
                    serde_checked: serde_checked::<A>(declaration),
                }
            }
        }

        impl<F, A, Out> ErasedTool for FnTool<F, ($form, $($cx,)? A)>
        where
            F: Fn($($cx,)? A) -> Out + Send + Sync + 'static,
            A: DeserializeOwned + 'static,
            Out: $($out)*,
        {
            fn call(&self, $c: CallContext, args: Value) -> ToolFuture {
                match crate::args::from_value::<A>(&args) {
                    Ok($a) => { let $f = &self.f; $start }
                    Err(error) => ToolFuture::ready(Err(error)),
                }
            }

            fn call_text(&self, $c: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
                match crate::args::from_str::<A>(text) {
                    Ok($a) => { let $f = &self.f; Ok($start) }
                    Err(_) => Err($c),
                }
            }

            fn call_value(&self, $c: CallContext, args: &Value) -> Result<ToolFuture, CallContext> {
                // A refusal hands the call back to be validated and reported
                // with its JSON path there: no path-tracking pass here.
                match crate::strict_de::from_value::<A>(args) {
                    Ok($a) => { let $f = &self.f; Ok($start) }
                    Err(_) => Err($c),
                }
            }

            fn runs_inline(&self) -> bool {
                $inline
            }
        }
    };
}

/// What a tool function returns: `Result<R, E>` with a displayable error
/// and, as `R`, a serialisable value (the model reads its JSON), one
/// [`Content`] block, or a whole [`ToolOutput`] (blocks, a structured value,
/// metadata). `Content` and `ToolOutput` are not `Serialize`, so the three
/// never overlap.
pub trait Outcome {
    /// The result as a tool output, or the tool's failure.
    #[doc(hidden)]
    fn into_output(self) -> Result<ToolOutput, ToolError>;
}

impl<R: Serialize, E: Display> Outcome for Result<R, E> {
    fn into_output(self) -> Result<ToolOutput, ToolError> {
        to_json(&self.map_err(failed)?).map(ToolOutput::new)
    }
}

impl<E: Display> Outcome for Result<ToolOutput, E> {
    fn into_output(self) -> Result<ToolOutput, ToolError> {
        self.map_err(failed)
    }
}

impl<E: Display> Outcome for Result<Content, E> {
    fn into_output(self) -> Result<ToolOutput, ToolError> {
        self.map(ToolOutput::from).map_err(failed)
    }
}

handler_form!(Async, (), returns: [Future<Output: Outcome> + Send + 'static], |f, cx, a| { let _ = cx; let running = f(a); ToolFuture::new(async move { running.await.into_output() }) }, inline: false);
handler_form!(Async, (CallContext), returns: [Future<Output: Outcome> + Send + 'static], |f, cx, a| { let running = f(cx, a); ToolFuture::new(async move { running.await.into_output() }) }, inline: false);
handler_form!(Blocking, (), returns: [Outcome], |f, cx, a| { let _ = cx; ToolFuture::ready(f(a).into_output()) }, inline: true);
handler_form!(Blocking, (CallContext), returns: [Outcome], |f, cx, a| ToolFuture::ready(f(cx, a).into_output()), inline: true);

/// A serializer that writes nothing and fails on a non-finite float: run
/// only when a result's JSON holds a `null`, to tell a real `null` from an
/// infinity or NaN that serde_json turned into one.
mod finite {
    use serde::ser::{self, Serialize};
    use std::fmt;

    #[derive(Debug)]
    pub(super) struct NotFinite;

    impl fmt::Display for NotFinite {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number is not finite")
        }
    }

    impl std::error::Error for NotFinite {}

    impl ser::Error for NotFinite {
        fn custom<T: fmt::Display>(_msg: T) -> Self {
            NotFinite
        }
    }

    #[derive(Clone, Copy)]
    pub(super) struct Check;

    type R = Result<(), NotFinite>;

    macro_rules! ok {
        ($($name:ident: $ty:ty),*) => { $(fn $name(self, _v: $ty) -> R { Ok(()) })* };
    }

    impl ser::Serializer for Check {
        type Ok = ();
        type Error = NotFinite;
        type SerializeSeq = Self;
        type SerializeTuple = Self;
        type SerializeTupleStruct = Self;
        type SerializeTupleVariant = Self;
        type SerializeMap = Self;
        type SerializeStruct = Self;
        type SerializeStructVariant = Self;

        ok!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
            serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64,
            serialize_u128: u128, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
            serialize_unit_struct: &'static str);

        fn serialize_f32(self, v: f32) -> R {
            if v.is_finite() { Ok(()) } else { Err(NotFinite) }
        }
        fn serialize_f64(self, v: f64) -> R {
            if v.is_finite() { Ok(()) } else { Err(NotFinite) }
        }
        fn serialize_none(self) -> R {
            Ok(())
        }
        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
            value.serialize(self)
        }
        fn serialize_unit(self) -> R {
            Ok(())
        }
        fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> R {
            Ok(())
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> R {
            value.serialize(self)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            value: &T,
        ) -> R {
            value.serialize(self)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, NotFinite> {
            Ok(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self, NotFinite> {
            Ok(self)
        }
    }

    macro_rules! compound {
        ($($trait:ident :: $method:ident),*) => {$(
            impl ser::$trait for Check {
                type Ok = ();
                type Error = NotFinite;
                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
                    value.serialize(*self)
                }
                fn end(self) -> R {
                    Ok(())
                }
            }
        )*};
    }
    compound!(
        SerializeSeq::serialize_element,
        SerializeTuple::serialize_element,
        SerializeTupleStruct::serialize_field,
        SerializeTupleVariant::serialize_field
    );

    impl ser::SerializeMap for Check {
        type Ok = ();
        type Error = NotFinite;
        fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
            key.serialize(*self)
        }
        fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> R {
            value.serialize(*self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }

    impl ser::SerializeStruct for Check {
        type Ok = ();
        type Error = NotFinite;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
            value.serialize(*self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }

    impl ser::SerializeStructVariant for Check {
        type Ok = ();
        type Error = NotFinite;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> R {
            value.serialize(*self)
        }
        fn end(self) -> R {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn non_finite_floats_are_errors_not_null() {
        assert!(matches!(to_json(&f64::INFINITY), Err(ToolError::ResultSerialization { .. })));
        assert!(matches!(to_json(&vec![Some(1.0), Some(f64::NAN)]), Err(ToolError::ResultSerialization { .. })));
        assert_eq!(to_json(&Option::<f64>::None).unwrap(), Value::Null);
        assert_eq!(to_json(&json!({"a": null, "b": 1.5})).unwrap(), json!({"a": null, "b": 1.5}));
    }
}
