//! Hooks and layers around a tool call: [`ToolLayer`], [`hook_fn`],
//! [`HookCall`], [`Next`].

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
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
/// (arguments checked again, panics contained).
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

/// A call as a hook sees it: the context (call id, cancellation, the tool's
/// declaration) and the validated arguments, which the hook may rewrite.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HookCall {
    /// The call's context; [`CallContext::declaration`] is always set.
    pub cx: CallContext,
    /// The arguments, validated against the input schema. Rewritten
    /// arguments are validated again before the tool runs.
    pub arguments: Value,
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
        self.inner.call(call.cx, call.arguments).await
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
/// Before the call, the hook can rewrite `call.arguments` or refuse with
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
        let call = HookCall { cx, arguments: args, hook: Arc::clone(&self.name) };
        let next = Next { inner: Arc::clone(&self.inner) };
        ToolFuture::new((self.f)(call, next))
    }
}
