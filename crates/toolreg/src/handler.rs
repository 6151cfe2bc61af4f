//! Type erasure: any Rust function with typed arguments becomes an
//! [`ErasedTool`] that takes JSON and returns JSON.
//!
//! Erasure happens once, when a [`crate::ToolRegistration`] is built; a call
//! then allocates only its boxed future and its output.

use std::fmt::{self, Display};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::exec::CallContext;
use crate::validate::{ArgumentError, serde_error};

/// The future a tool call runs as: a result that was ready when the call
/// started (synchronous tools, refusals), or a boxed future.
///
/// A ready result costs no allocation, which is what keeps synchronous tools
/// as cheap through the registry as when called by hand.
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
    Ready(Option<Result<Value, CallFailure>>),
    Boxed(Pin<Box<dyn Future<Output = Result<Value, CallFailure>> + Send + 'static>>),
}

impl ToolFuture {
    /// A call that runs as this future.
    pub fn new(future: impl Future<Output = Result<Value, CallFailure>> + Send + 'static) -> Self {
        ToolFuture { state: FutureState::Boxed(Box::pin(future)) }
    }

    /// A call whose result is already known.
    pub fn ready(result: Result<Value, CallFailure>) -> Self {
        ToolFuture { state: FutureState::Ready(Some(result)) }
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
    type Output = Result<Value, CallFailure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            FutureState::Ready(result) => Poll::Ready(result.take().expect("ToolFuture polled after completion")),
            FutureState::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

/// How an erased call failed. The registry turns it into a [`crate::ToolError`]
/// that names the tool.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallFailure {
    /// The arguments did not deserialise; `args` is handed back so the
    /// registry can check it against the schema for a fuller report.
    Arguments {
        /// The arguments as received.
        args: Value,
        /// serde's complaint, with its path.
        errors: Vec<ArgumentError>,
    },
    /// The tool returned an error; its `Display` text.
    Tool(String),
    /// The tool's result did not serialise.
    Result(String),
    /// The call was stopped with a typed error (by a layer or hook of the
    /// policy engine: refused, timed out, approval mismatch, ...).
    Error(crate::exec::ToolError),
}

/// A tool with its types erased: JSON arguments in, a future of JSON out.
///
/// Implement it for tools whose shape is only known at run time (remote
/// servers, scripts); typed Rust functions get one from
/// [`crate::ToolRegistration`]'s constructors.
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
    /// default) to have the text parsed and passed to [`call`](Self::call),
    /// which is also what happens when the text does not deserialise.
    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        let _ = text;
        Err(cx)
    }
}

/// Deserialize `A` from `args`, keeping `args` for error reporting.
fn deserialize<A: DeserializeOwned>(args: Value) -> Result<A, CallFailure> {
    match A::deserialize(&args) {
        Ok(a) => Ok(a),
        Err(_) => {
            let error = match serde_path_to_error::deserialize::<_, A>(&args) {
                Err(e) => serde_error(e.path(), e.inner()),
                Ok(_) => ArgumentError { path: String::new(), message: "arguments rejected".into() },
            };
            Err(CallFailure::Arguments { args, errors: vec![error] })
        }
    }
}

fn finish<R: Serialize, E: Display>(result: Result<R, E>) -> Result<Value, CallFailure> {
    match result {
        Ok(r) => serde_json::to_value(r).map_err(|e| CallFailure::Result(e.to_string())),
        Err(e) => Err(CallFailure::Tool(e.to_string())),
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
        match deserialize::<A>(args) {
            Ok(a) => {
                let fut = (self.f)(cx, a);
                ToolFuture::new(async move { finish(fut.await) })
            }
            Err(failure) => ToolFuture::ready(Err(failure)),
        }
    }

    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        match serde_json::from_str::<A>(text) {
            Ok(a) => {
                let fut = (self.f)(cx, a);
                Ok(ToolFuture::new(async move { finish(fut.await) }))
            }
            Err(_) => Err(cx),
        }
    }
}

/// A plain Rust function `Fn(CallContext, A) -> Result<R, E>`, run inline
/// when the call starts. Keep such tools quick; anything that blocks belongs
/// in an async tool (with `spawn_blocking` if need be).
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
        match deserialize::<A>(args) {
            Ok(a) => ToolFuture::ready(finish((self.f)(cx, a))),
            Err(failure) => ToolFuture::ready(Err(failure)),
        }
    }

    fn call_text(&self, cx: CallContext, text: &str) -> Result<ToolFuture, CallContext> {
        match serde_json::from_str::<A>(text) {
            Ok(a) => Ok(ToolFuture::ready(finish((self.f)(cx, a)))),
            Err(_) => Err(cx),
        }
    }
}
