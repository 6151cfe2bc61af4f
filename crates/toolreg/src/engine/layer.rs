//! Hooks and layers around a tool call: [`ToolLayer`], [`hook_fn`],
//! [`HookCall`], [`Next`].

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde_json::Value;

use super::contain::{self, Site};
use super::tool::{self, Arguments};
use crate::exec::{CallContext, ToolError, ToolOutput};
use crate::handler::ToolFuture;
use crate::policy::ArgumentsHash;
use crate::registry::ToolEntry;

/// Middleware around a tool call, axum `from_fn`-style: it sees the call's
/// arguments before the tool runs and its result after.
///
/// Layers are added with [`EngineBuilder::layer`](crate::engine::EngineBuilder::layer);
/// the layer added first sees the call first. A layer passes the call on
/// with [`Next::run`] (arguments changed or not: any mutable use of
/// [`HookCall::arguments`] marks them changed, so they are validated again
/// before the tool runs), or answers without running the tool.
///
/// Most hooks are easiest to write with [`hook_fn`]; implement this trait for
/// layers that need their own state or type.
///
/// ```
/// use toolreg::engine::{HookCall, Next, ToolLayer};
/// use toolreg::ToolFuture;
///
/// /// Refuses every call that changes something while the system is read-only.
/// struct ReadOnly;
///
/// impl ToolLayer for ReadOnly {
///     fn call(&self, call: HookCall, next: Next) -> ToolFuture {
///         if call.cx.declaration().is_some_and(|d| !d.is_read_only()) {
///             return ToolFuture::ready(Err(call.refuse("the system is read-only")));
///         }
///         next.run(call)
///     }
/// }
/// ```
pub trait ToolLayer: Send + Sync + 'static {
    /// Handle one call: pass it on with `next.run(call)`, or answer it.
    fn call(&self, call: HookCall, next: Next) -> ToolFuture;

    /// The name a failure of this layer is reported under
    /// ([`ToolError::HookFailed`]'s `hook`, when the layer panics or
    /// refuses); the default is the type's name without its path.
    fn name(&self) -> Cow<'_, str> {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        Cow::Borrowed(base.rsplit("::").next().unwrap_or(base))
    }
}

impl<L: ToolLayer + ?Sized> ToolLayer for Arc<L> {
    fn call(&self, call: HookCall, next: Next) -> ToolFuture {
        (**self).call(call, next)
    }

    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}

/// A hook's view of the call's arguments: reads go through to the JSON
/// value; any mutable use (`call.arguments["path"] = ..`,
/// `*call.arguments = ..`, `as_object_mut()`) marks them changed, so that
/// they are validated again before the tool runs. Arguments a hook only
/// reads are validated once.
#[derive(Debug, Clone, PartialEq)]
pub struct HookArguments {
    pub(crate) value: Value,
    pub(crate) changed: bool,
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
    pub(crate) hook: Arc<str>,
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

/// A layer with its name, resolved once when the engine is built.
pub(crate) struct Layer {
    pub(crate) name: Arc<str>,
    pub(crate) layer: Arc<dyn ToolLayer>,
}

/// What the layers of one call pass on to the tool: the tool, the hash the
/// approval is bound to, and how to run it.
pub(crate) struct Chain {
    pub(crate) layers: Arc<[Layer]>,
    pub(crate) entry: ToolEntry,
    pub(crate) approved: Option<ArgumentsHash>,
    pub(crate) offload: bool,
}

/// The rest of the call, handed to a layer: the layers after it and the
/// tool. Call [`run`](Next::run) to go on.
pub struct Next {
    pub(crate) chain: Arc<Chain>,
    /// The index of the next layer; past the last, the tool.
    pub(crate) index: usize,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").field("index", &self.index).finish_non_exhaustive()
    }
}

impl Next {
    /// Run the inner layers and the tool; the result (or error) comes back
    /// for the layer to pass on, transform or replace.
    ///
    /// Each layer runs inside a panic boundary of its own: a layer that
    /// panics fails the call with [`ToolError::HookFailed`], and a panic in
    /// the tool under it comes back from `run` as the tool's
    /// [`ToolError::Panicked`].
    pub fn run(self, call: HookCall) -> ToolFuture {
        let Next { chain, index } = self;
        let Some(layer) = chain.layers.get(index) else {
            return chain.run_tool(call);
        };
        let site = Site::Hook(Arc::clone(&layer.name));
        let call = HookCall { hook: Arc::clone(&layer.name), ..call };
        let layer = Arc::clone(&layer.layer);
        let tool = Arc::clone(chain.entry.declaration_arc());
        let next = Next { chain, index: index + 1 };
        contain::start(site, &tool, || layer.call(call, next))
    }
}

impl Chain {
    /// Past the last layer: arguments a layer changed are validated again
    /// (and, under an approval, must still hash to what was approved; a
    /// layer that only read them costs nothing more), then the tool.
    fn run_tool(&self, call: HookCall) -> ToolFuture {
        let HookCall { cx, arguments: HookArguments { mut value, changed }, .. } = call;
        if changed {
            if let Err(error) = self.entry.check_arguments(&mut value) {
                return ToolFuture::ready(Err(error));
            }
            if self.approved.is_some_and(|approved| approved != ArgumentsHash::of(&value)) {
                let detail = "the arguments changed after they were approved".to_owned();
                return ToolFuture::ready(Err(ToolError::ApprovalMismatch { detail }));
            }
        }
        tool::run(&self.entry, cx, Arguments::Checked(value), self.offload)
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
///     let mut output = next.run(call).await?;
///     if let serde_json::Value::String(s) = &mut output.value {
///         *s = s.to_uppercase();
///     }
///     Ok(output)
/// })
/// .named("tmp-only");
/// # let _ = hook;
/// ```
pub fn hook_fn<F, Fut>(f: F) -> HookFn<F>
where
    F: Fn(HookCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    HookFn { name: Arc::from("hook"), f: Arc::new(f) }
}

impl<F, Fut> ToolLayer for HookFn<F>
where
    F: Fn(HookCall, Next) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(&self, call: HookCall, next: Next) -> ToolFuture {
        ToolFuture::new((self.f)(call, next))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.name)
    }
}
