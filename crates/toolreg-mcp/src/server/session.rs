//! One connection of the server: how it keeps state (a stream, an HTTP
//! session, nothing), the deferred tools its searches loaded, its open
//! `subscriptions/listen` streams, and when its input closed.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use rmcp::service::{RequestContext, RoleServer, SubscriptionSink};
use tokio_util::sync::CancellationToken;
use toolreg::Principal;

use crate::protocol::is_2026_07_28;

/// How a server's connections keep what their searches load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    /// One connection (stdio, any stream): it is the session.
    Stream,
    /// HTTP with sessions: a handshake-era client's session keeps what it
    /// loads; a 2026-07-28 request stands alone (that revision has no
    /// sessions).
    HttpSession,
    /// Stateless HTTP: nothing is kept.
    Stateless,
}

/// One connection's deferred-loading state.
pub(super) struct Session {
    transport: Transport,
    /// The deferred tools its searches found, in the order they were found.
    /// Bounded by the catalog: only names of deferred tools are kept.
    loaded: Mutex<Vec<String>>,
    /// Its open `subscriptions/listen` streams (a 2026-07-28 client hears of
    /// list changes there).
    listeners: Mutex<Vec<SubscriptionSink>>,
    /// Cancelled when the client has said its last word (its input closed):
    /// streams that would stay open until the client goes (its
    /// `subscriptions/listen`) end then, so that shutdown does not wait on them.
    input_closed: CancellationToken,
}

impl Session {
    pub(super) fn new(transport: Transport) -> Session {
        Session {
            transport,
            loaded: Mutex::default(),
            listeners: Mutex::default(),
            input_closed: CancellationToken::new(),
        }
    }

    /// This session, when the request belongs to one that lasts (a
    /// 2026-07-28 request over HTTP stands alone; stateless HTTP keeps nothing).
    pub(super) fn lasting(&self, context: &RequestContext<RoleServer>) -> Option<&Session> {
        match self.transport {
            Transport::Stream => Some(self),
            Transport::HttpSession if !is_2026_07_28(context) => Some(self),
            Transport::HttpSession | Transport::Stateless => None,
        }
    }

    /// Who the request comes from: over HTTP, who the server's
    /// authentication found (whoever holds the bearer token), nobody when
    /// it has none; over a stream (stdio), the local user.
    pub(super) fn principal(&self, context: &RequestContext<RoleServer>) -> Option<Arc<Principal>> {
        static LOCAL: LazyLock<Arc<Principal>> = LazyLock::new(|| Arc::new(Principal::local_user()));
        match self.transport {
            Transport::Stream => Some(Arc::clone(&LOCAL)),
            Transport::HttpSession | Transport::Stateless => {
                let parts = context.extensions.get::<http::request::Parts>()?;
                parts.extensions.get::<Arc<Principal>>().cloned()
            }
        }
    }

    /// Tell this session's client its tool list changed.
    pub(super) async fn announce(&self, context: &RequestContext<RoleServer>) {
        if is_2026_07_28(context) {
            // That revision hears of changes on `subscriptions/listen` streams.
            let sinks: Vec<SubscriptionSink> = self.listeners.lock().unwrap_or_else(PoisonError::into_inner).clone();
            for sink in sinks {
                let _ = sink.notify_tool_list_changed().await;
            }
        } else if let Err(error) = context.peer.notify_tool_list_changed().await {
            tracing::debug!(%error, "list_changed after a search not sent");
        }
    }

    /// The token its transport cancels when the client's input closes.
    pub(super) fn input_closed(&self) -> &CancellationToken {
        &self.input_closed
    }

    /// Record an open `subscriptions/listen` stream until the guard drops.
    pub(super) fn listening(&self, sink: SubscriptionSink) -> Listening<'_> {
        let id = sink.id().clone();
        self.listeners.lock().unwrap_or_else(PoisonError::into_inner).push(sink);
        Listening { session: self, id }
    }

    /// The names of the tools it loaded that `keep` still admits, in load
    /// order; the others (gone with a remote server's `list_changed`) are
    /// forgotten.
    pub(super) fn loaded(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.retain(|name| keep(name));
        loaded.clone()
    }

    /// Whether it loaded `name`.
    pub(super) fn has_loaded(&self, name: &str) -> bool {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|n| n == name)
    }

    /// Add these tools; whether any was new.
    pub(super) fn load(&self, names: impl IntoIterator<Item = String>) -> bool {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let before = loaded.len();
        for name in names {
            if !loaded.contains(&name) {
                loaded.push(name);
            }
        }
        loaded.len() > before
    }
}

/// Keeps a `subscriptions/listen` stream on its session's list while it is open.
pub(super) struct Listening<'a> {
    session: &'a Session,
    id: rmcp::model::RequestId,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        let mut listeners = self.session.listeners.lock().unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|sink| sink.id() != &self.id);
    }
}
