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
use std::task::{Context, Poll};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::exec::{CallContext, ToolError};

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
/// assert_eq!(ToolFuture::ready(Ok(json!(1))).await.unwrap(), json!(1));
/// assert_eq!(ToolFuture::new(async { Ok(json!(2)) }).await.unwrap(), json!(2));
/// # });
/// ```
#[must_use = "a tool future does nothing unless awaited"]
pub struct ToolFuture {
    state: FutureState,
}

enum FutureState {
    Ready(Option<Result<Value, ToolError>>),
    Boxed(Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'static>>),
}

impl ToolFuture {
    /// A call that runs as this future.
    pub fn new(future: impl Future<Output = Result<Value, ToolError>> + Send + 'static) -> Self {
        ToolFuture { state: FutureState::Boxed(Box::pin(future)) }
    }

    /// A call whose result is already known.
    pub fn ready(result: Result<Value, ToolError>) -> Self {
        ToolFuture { state: FutureState::Ready(Some(result)) }
    }

    /// The result, if it was known when the call started.
    pub(crate) fn into_ready(self) -> Result<Result<Value, ToolError>, Self> {
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
    type Output = Result<Value, ToolError>;

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
///         ToolFuture::new(async move { Ok(args) })
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

fn finish<R: Serialize, E: Display>(result: Result<R, E>) -> Result<Value, ToolError> {
    match result {
        Ok(r) => to_json(&r),
        Err(e) => Err(ToolError::Failed { message: e.to_string() }),
    }
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

/// An async Rust function `Fn(CallContext, A) -> impl Future<Output = Result<R, E>>`.
pub(crate) struct AsyncFnTool<F, A> {
    f: F,
    _args: PhantomData<fn(A)>,
}

impl<F, A> AsyncFnTool<F, A> {
    pub(crate) fn new(f: F) -> Self {
        AsyncFnTool { f, _args: PhantomData }
    }

    fn start<Fut, R, E>(&self, cx: CallContext, a: A) -> ToolFuture
    where
        F: Fn(CallContext, A) -> Fut,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Serialize,
        E: Display,
    {
        let fut = (self.f)(cx, a);
        ToolFuture::new(async move { finish(fut.await) })
    }
}

impl<F, A, Fut, R, E> ErasedTool for AsyncFnTool<F, A>
where
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Serialize,
    E: Display,
{
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        match crate::args::from_value::<A>(&args) {
            Ok(a) => self.start(cx, a),
            Err(error) => ToolFuture::ready(Err(error)),
        }
    }

    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        match crate::args::from_str::<A>(text) {
            Ok(a) => Ok(self.start(cx, a)),
            Err(_) => Err(cx),
        }
    }

    fn call_value(&self, cx: CallContext, args: &Value) -> Result<ToolFuture, CallContext> {
        match crate::args::from_value::<A>(args) {
            Ok(a) => Ok(self.start(cx, a)),
            Err(_) => Err(cx),
        }
    }
}

/// A plain Rust function `Fn(CallContext, A) -> Result<R, E>`, run inline
/// when the call starts (or on the blocking pool when a timeout applies).
pub(crate) struct SyncFnTool<F, A> {
    f: F,
    _args: PhantomData<fn(A)>,
}

impl<F, A> SyncFnTool<F, A> {
    pub(crate) fn new(f: F) -> Self {
        SyncFnTool { f, _args: PhantomData }
    }
}

impl<F, A, R, E> ErasedTool for SyncFnTool<F, A>
where
    F: Fn(CallContext, A) -> Result<R, E> + Send + Sync + 'static,
    A: DeserializeOwned + Send + 'static,
    R: Serialize,
    E: Display,
{
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        ToolFuture::ready(crate::args::from_value::<A>(&args).and_then(|a| finish((self.f)(cx, a))))
    }

    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        match crate::args::from_str::<A>(text) {
            Ok(a) => Ok(ToolFuture::ready(finish((self.f)(cx, a)))),
            Err(_) => Err(cx),
        }
    }

    fn call_value(&self, cx: CallContext, args: &Value) -> Result<ToolFuture, CallContext> {
        match crate::args::from_value::<A>(args) {
            Ok(a) => Ok(ToolFuture::ready(finish((self.f)(cx, a)))),
            Err(_) => Err(cx),
        }
    }

    fn runs_inline(&self) -> bool {
        true
    }
}

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
