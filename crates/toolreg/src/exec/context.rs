//! What a running call can see of itself: its id, its cancellation, the
//! declaration of the tool it runs, typed [`Extensions`] put in by the
//! stages above it, and a way to report [`Progress`].
//!
//! Kept apart from the call's data ([`ToolCall`](super::ToolCall),
//! [`ToolResult`](super::ToolResult)): that is what a model sent and reads
//! back, while this is what the stack hands down to the tool while it runs.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;

use tokio_util::sync::CancellationToken;

use crate::declaration::ToolDeclaration;
use crate::principal::Principal;

/// Typed values that travel with a call down the stack, in the manner of
/// `http::Extensions`: a layer puts something in for the layers below it (the
/// approval stage its grant, an agent loop its run's state) without the core
/// having to know the type. Cloning shares the values.
#[derive(Clone, Default)]
pub struct Extensions {
    // A short list: a call carries a handful of values at most, so a linear
    // search beats hashing, and an empty list costs no allocation.
    values: Vec<(TypeId, Arc<dyn Any + Send + Sync>)>,
}

impl Extensions {
    /// Put `value` in, replacing any value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.insert_arc(Arc::new(value));
    }

    /// Put a shared value in, replacing any value of the same type.
    pub fn insert_arc<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        let id = TypeId::of::<T>();
        match self.values.iter_mut().find(|(t, _)| *t == id) {
            Some(slot) => slot.1 = value,
            None => self.values.push((id, value)),
        }
    }

    /// The value of type `T`, if one was put in.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        let id = TypeId::of::<T>();
        self.values.iter().find(|(t, _)| *t == id).and_then(|(_, v)| v.as_ref().downcast_ref::<T>())
    }

    /// The shared value of type `T`, if one was put in.
    pub fn get_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let id = TypeId::of::<T>();
        self.values.iter().find(|(t, _)| *t == id).and_then(|(_, v)| Arc::clone(v).downcast::<T>().ok())
    }

    /// Take the value of type `T` out.
    pub fn remove<T: Send + Sync + 'static>(&mut self) -> Option<Arc<T>> {
        let id = TypeId::of::<T>();
        let at = self.values.iter().position(|(t, _)| *t == id)?;
        self.values.swap_remove(at).1.downcast::<T>().ok()
    }

    /// Whether no value was put in.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions").field("len", &self.values.len()).finish()
    }
}

/// What a running tool (and each stage around it) can see of its call: the
/// call id, a cancellation token, the tool's declaration and typed
/// [`Extensions`].
///
/// A `#[tool]` function takes it with a `#[context] cx: CallContext`
/// parameter; hooks get
/// it in their [`HookCall`](crate::engine::HookCall).
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    call_id: Option<Arc<str>>,
    /// Shared, so that the calls of a batch hold one token between them
    /// (cloning a `CancellationToken` takes a lock).
    cancellation: Option<Arc<CancellationToken>>,
    declaration: Option<Arc<ToolDeclaration>>,
    principal: Option<Arc<Principal>>,
    extensions: Extensions,
}

impl CallContext {
    /// A context for the call with this id.
    pub fn new(call_id: impl Into<Arc<str>>) -> Self {
        CallContext { call_id: Some(call_id.into()), ..CallContext::default() }
    }

    /// Attach a cancellation token.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(Arc::new(token));
        self
    }

    /// Attach a token shared with other calls.
    pub(crate) fn with_shared_cancellation(mut self, token: Arc<CancellationToken>) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Run the call for `principal` (its host's word, never the arguments').
    pub fn with_principal(mut self, principal: Arc<Principal>) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Who the call runs for, when its host said
    /// ([`CallOptions::principal`](crate::CallOptions::principal)); shared,
    /// so that a tool that makes calls of its own (code mode, a
    /// sub-agent) runs them for the same principal.
    pub fn principal(&self) -> Option<&Arc<Principal>> {
        self.principal.as_ref()
    }

    /// The provider's id for this call, when there is one.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Whether the caller has asked the call to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.as_deref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes when the call is cancelled; never, if it cannot be.
    pub async fn cancelled(&self) {
        match &self.cancellation {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The cancellation token, if the caller supplied one.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancellation.as_deref()
    }

    /// Attach the declaration of the tool being called (the pipeline does
    /// this, so hooks and tools can see what they are running).
    pub fn with_declaration(mut self, declaration: Arc<ToolDeclaration>) -> Self {
        self.declaration = Some(declaration);
        self
    }

    /// The declaration of the tool being called, when it was attached.
    pub fn declaration(&self) -> Option<&ToolDeclaration> {
        self.declaration.as_deref()
    }

    /// The name of the tool being called, when its declaration was attached.
    pub fn tool_name(&self) -> Option<&str> {
        self.declaration.as_deref().map(|d| d.name.as_str())
    }

    /// The typed values passed down with this call.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The typed values, to add to them.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// Add a typed value (builder style).
    pub fn with_extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// End the run this call belongs to with `value`: the host (an agent
    /// loop) put a [`Finish`] slot in the call's extensions and reads it
    /// after the call. `true` when this call's value is the run's result;
    /// `false` when another call finished the run first (the first finish
    /// wins) or no host put a slot in (check
    /// `cx.extensions().get::<Finish>()` to tell these apart).
    pub fn finish(&self, value: Value) -> bool {
        self.extensions.get::<Finish>().is_some_and(|slot| slot.set(value))
    }

    /// Tell the caller how far the call has got: `progress` of `total`
    /// (when known), with an optional message. It reaches whoever put a
    /// [`ProgressReporter`] in the call's extensions (an MCP server sends it
    /// to the client as `notifications/progress`); without one it does nothing.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(reporter) = self.extensions.get::<ProgressReporter>() {
            (reporter.report)(Progress { progress, total, message: message.map(str::to_owned) });
        }
    }
}

/// Where a run's result goes when a tool ends the run (`final_answer`,
/// `return_result`, or any tool of yours): the one way to finish.
///
/// The host puts a slot in the extensions of the calls it runs, the tools
/// set it through [`CallContext::finish`], and the host reads it once after
/// the calls; no text is parsed. It takes one value: the first finish wins
/// and every later one is refused. Cloning shares the slot.
///
/// ```
/// use serde_json::json;
/// use toolreg::{CallContext, Finish};
///
/// let slot = Finish::new();
/// let cx = CallContext::new("c1").with_extension(slot.clone());
/// assert!(cx.finish(json!("done")));
/// assert!(!cx.finish(json!("again"))); // the first finish wins
/// assert_eq!(slot.get(), Some(&json!("done")));
/// assert!(!CallContext::new("c2").finish(json!("no host"))); // no slot, nothing finished
/// ```
#[derive(Debug, Clone, Default)]
pub struct Finish {
    value: Arc<OnceLock<Value>>,
}

impl Finish {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record `value` as the result, unless one was recorded already:
    /// `true` when this one is the result.
    pub fn set(&self, value: Value) -> bool {
        self.value.set(value).is_ok()
    }

    /// The result, once a tool has finished the run.
    pub fn get(&self) -> Option<&Value> {
        self.value.get()
    }

    /// Whether a tool has finished the run.
    pub fn is_set(&self) -> bool {
        self.value.get().is_some()
    }
}

/// Where a call that stops to wait for the outside leaves what it needs to
/// go on, and finds it again when it is run once more: a program in code
/// mode stopped at a call waiting for an approval keeps its record of the
/// calls it already made here, so the resumed run replays them instead of
/// running them twice. Keyed by the call's id; the host (the agent loop)
/// puts one in the call's [`Extensions`], stores what was saved with the
/// suspended run, and hands it back [`restoring`](Self::restoring) it.
///
/// ```
/// use serde_json::json;
/// use toolreg::Checkpoints;
///
/// let first = Checkpoints::new();
/// first.save("call_1", json!({"done": 3}));
/// let stored = first.take_saved(); // goes with the suspended run
///
/// let again = Checkpoints::restoring(stored);
/// assert_eq!(again.take_restored("call_1"), Some(json!({"done": 3})));
/// assert_eq!(again.take_restored("call_1"), None); // used once
/// ```
#[derive(Debug, Default)]
pub struct Checkpoints {
    saved: Mutex<BTreeMap<String, Value>>,
    restored: Mutex<BTreeMap<String, Value>>,
}

impl Checkpoints {
    /// None saved, none to restore.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checkpoints saved by an earlier run, for its calls to find.
    pub fn restoring(saved: BTreeMap<String, Value>) -> Self {
        Checkpoints { saved: Mutex::default(), restored: Mutex::new(saved) }
    }

    /// Save the state of the call `call_id`, replacing any saved before.
    pub fn save(&self, call_id: &str, state: Value) {
        self.saved.lock().unwrap_or_else(PoisonError::into_inner).insert(call_id.to_owned(), state);
    }

    /// The state an earlier run saved for `call_id`, once.
    pub fn take_restored(&self, call_id: &str) -> Option<Value> {
        self.restored.lock().unwrap_or_else(PoisonError::into_inner).remove(call_id)
    }

    /// Whether a state was saved for `call_id`.
    pub fn has_saved(&self, call_id: &str) -> bool {
        self.saved.lock().unwrap_or_else(PoisonError::into_inner).contains_key(call_id)
    }

    /// Everything saved, taken out.
    pub fn take_saved(&self) -> BTreeMap<String, Value> {
        std::mem::take(&mut *self.saved.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One progress report of a running call (see [`CallContext::report_progress`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the call has got; grows with every report.
    pub progress: f64,
    /// The value `progress` reaches at the end, when known.
    pub total: Option<f64>,
    /// What is happening, in words.
    pub message: Option<String>,
}

/// Where a call's [`Progress`] goes: put one in the call's
/// [`Extensions`] to receive the reports of [`CallContext::report_progress`].
#[derive(Clone)]
pub struct ProgressReporter {
    report: Arc<dyn Fn(Progress) + Send + Sync>,
}

impl ProgressReporter {
    /// A reporter that hands every report to `report`.
    pub fn new(report: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        ProgressReporter { report: Arc::new(report) }
    }
}

impl fmt::Debug for ProgressReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressReporter")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_typed_slots() {
        let mut ext = Extensions::default();
        assert!(ext.get::<u32>().is_none());
        ext.insert(7u32);
        ext.insert("x");
        ext.insert(8u32);
        assert_eq!(ext.get::<u32>(), Some(&8));
        assert_eq!(ext.get::<&str>(), Some(&"x"));
        assert_eq!(ext.remove::<u32>().as_deref(), Some(&8));
        assert!(ext.get::<u32>().is_none());
    }
}
