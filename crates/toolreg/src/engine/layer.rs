//! Hooks and layers around a tool call: [`ToolLayer`], [`hook_fn`],
//! [`HookCall`], [`Next`].

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde_json::Value;

use crate::exec::{CallContext, ToolError};
use crate::handler::{ErasedTool, ToolFuture};

/// Wraps a tool in another, tower-style: the wrapper sees the call's
/// arguments before the tool runs and its result after.
///
/// Layers are applied by [`EngineBuilder::layer`](crate::engine::EngineBuilder::layer)
/// once, when the engine is built; the layer added first sees the call
/// first. The inner tool of the innermost layer runs the tool itself
/// (panics contained). Arguments reach the first layer validated; a layer
/// that passes on changed arguments marks the context with
/// [`ArgumentsChanged`] so that they are validated again.
///
/// Most hooks are easiest to write with [`hook_fn`]; implement this trait for
/// layers that need their own state or type.
pub trait ToolLayer: Send + Sync + 'static {
    /// Wrap `inner`.
    fn layer(&self, inner: Arc<dyn ErasedTool>) -> Arc<dyn ErasedTool>;

    /// The name a failure of this layer is reported under
    /// ([`ToolError::HookFailed`]'s `hook`, when the layer panics); the
    /// default is the type's name without its path.
    fn name(&self) -> Cow<'_, str> {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        Cow::Borrowed(base.rsplit("::").next().unwrap_or(base))
    }
}

impl<L: ToolLayer + ?Sized> ToolLayer for Arc<L> {
    fn layer(&self, inner: Arc<dyn ErasedTool>) -> Arc<dyn ErasedTool> {
        (**self).layer(inner)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

/// The mark on a call's [`CallContext`] saying that a layer replaced or
/// edited the arguments it passes on: the run then validates them again (and,
/// under an approval, checks them against the approved hash).
///
/// Arguments are validated once, before the first layer; a layer that
/// passes on the arguments it got needs nothing. [`hook_fn`] hooks set the
/// mark themselves (see [`HookArguments`]); a hand-written [`ToolLayer`] that
/// passes different arguments to its inner tool inserts it:
///
/// ```
/// # use toolreg::engine::ArgumentsChanged;
/// # let mut cx = toolreg::CallContext::default();
/// cx.extensions_mut().insert(ArgumentsChanged);
/// ```
///
/// Under an approval the run compares the arguments with the approved ones
/// anyway, so an unmarked change to a dangerous tool's arguments is still
/// refused ([`ToolError::ApprovalMismatch`]), never run unchecked.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArgumentsChanged;

/// A hook's view of the call's arguments: reads go through to the JSON
/// value; any mutable use (`call.arguments["path"] = ..`,
/// `*call.arguments = ..`, `as_object_mut()`) marks them changed, so that
/// they are validated again before the tool runs. Arguments a hook only
/// reads are validated once.
#[derive(Debug, Clone, PartialEq)]
pub struct HookArguments {
    value: Value,
    changed: bool,
}

impl HookArguments {
    /// Whether the hook took the arguments mutably (and so may have changed them).
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The arguments, taken out.
    pub fn into_value(self) -> Value {
        self.value
    }
}

impl Deref for HookArguments {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl DerefMut for HookArguments {
    fn deref_mut(&mut self) -> &mut Value {
        // The explicit signal: whoever can write the arguments is taken to
        // have written them (no comparison afterwards).
        self.changed = true;
        &mut self.value
    }
}

impl fmt::Display for HookArguments {
    /// The arguments as JSON text, as [`Value`] writes them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.value, f)
    }
}

impl PartialEq<Value> for HookArguments {
    fn eq(&self, other: &Value) -> bool {
        self.value == *other
    }
}

/// A call as a hook sees it: the context (call id, cancellation, the tool's
/// declaration) and the validated arguments, which the hook may rewrite.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HookCall {
    /// The call's context; [`CallContext::declaration`] is always set.
    pub cx: CallContext,
    /// The arguments, validated against the input schema. Arguments the
    /// hook writes are validated again before the tool runs.
    pub arguments: HookArguments,
    hook: Arc<str>,
}

impl HookCall {
    /// The name of the tool being called.
    pub fn tool(&self) -> &str {
        self.cx.tool_name().unwrap_or_default()
    }

    /// The error with which this hook refuses the call; `message` reaches the model.
    pub fn refuse(&self, message: impl Into<String>) -> ToolError {
        ToolError::HookFailed { hook: self.hook.to_string(), message: message.into() }
    }
}

/// The rest of the stack, handed to a hook: call [`run`](Next::run) to go on.
pub struct Next {
    inner: Arc<dyn ErasedTool>,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").finish_non_exhaustive()
    }
}

impl Next {
    /// Run the inner layers and the tool; the result (or error) comes back
    /// for the hook to pass on, transform or replace.
    pub async fn run(self, call: HookCall) -> Result<Value, ToolError> {
        let HookCall { mut cx, arguments, .. } = call;
        if arguments.changed {
            cx.extensions_mut().insert(ArgumentsChanged);
        }
        self.inner.call(cx, arguments.value).await
    }
}

/// A hook made from an async closure; see [`hook_fn`].
pub struct HookFn<F> {
    name: Arc<str>,
    f: Arc<F>,
}

impl<F> fmt::Debug for HookFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookFn").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<F> HookFn<F> {
    /// Name the hook (used in [`ToolError::HookFailed`]); the default is `"hook"`.
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }
}

/// A hook from an async closure `|call, next| async { .. }`, axum
/// `from_fn`-style.
///
/// Before the call, the hook can rewrite `call.arguments` (which are then
/// validated again, see [`HookArguments`]) or refuse with
/// [`HookCall::refuse`]; it runs the rest with `next.run(call).await`; after,
/// it can transform or replace the result. A hook that panics fails its call
/// with [`ToolError::HookFailed`] (its message says the hook panicked); other
/// calls are unaffected, and a panic in the tool under it is still the
/// tool's ([`ToolError::Panicked`]).
///
/// ```
/// use toolreg::engine::hook_fn;
///
/// // Refuse paths outside /tmp, and upper-case text results.
/// let hook = hook_fn(|call, next| async move {
///     if call.arguments["path"].as_str().is_some_and(|p| !p.starts_with("/tmp/")) {
///         return Err(call.refuse("only /tmp is writable"));
///     }
///     let value = next.run(call).await?;
///     Ok(match value {
///         serde_json::Value::String(s) => s.to_uppercase().into(),
///         other => other,
///     })
/// })
/// .named("tmp-only");
/// # let _ = hook;
/// ```
pub fn hook_fn<F, Fut>(f: F) -> HookFn<F>
where
    F: Fn(HookCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    HookFn { name: Arc::from("hook"), f: Arc::new(f) }
}

impl<F, Fut> ToolLayer for HookFn<F>
where
    F: Fn(HookCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn layer(&self, inner: Arc<dyn ErasedTool>) -> Arc<dyn ErasedTool> {
        Arc::new(HookService { name: Arc::clone(&self.name), f: Arc::clone(&self.f), inner })
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
}

struct HookService<F> {
    name: Arc<str>,
    f: Arc<F>,
    inner: Arc<dyn ErasedTool>,
}

impl<F, Fut> ErasedTool for HookService<F>
where
    F: Fn(HookCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        let arguments = HookArguments { value: args, changed: false };
        let call = HookCall { cx, arguments, hook: Arc::clone(&self.name) };
        let next = Next { inner: Arc::clone(&self.inner) };
        ToolFuture::new((self.f)(call, next))
    }
}
