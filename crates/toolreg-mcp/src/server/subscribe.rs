//! Resource subscriptions through the gateway: a client subscribes to an
//! imported server's resource by the URI it reads it by, the gateway
//! subscribes once on that server, and each `notifications/resources/updated`
//! the server sends goes on to every client that subscribed, under the URI
//! that client used.
//!
//! A handshake-era client subscribes with `resources/subscribe` and stops
//! with `resources/unsubscribe`; a 2026-07-28 client names the URIs in its
//! `subscriptions/listen` filter, for as long as the stream is open. The
//! gateway unsubscribes on the server when its last listener has gone (a
//! listener whose connection closed is dropped at the next update).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::ErrorData;
use rmcp::service::{Peer, RoleServer, SubscriptionSink};

use super::remote::remote_error;
use super::{McpServer, Shared};
use crate::client::RemoteServer;

/// The gateway's subscriptions, by the URI the clients used.
#[derive(Default)]
pub(super) struct Subscriptions {
    entries: Mutex<HashMap<String, Entry>>,
    /// The tasks that follow each imported server's updates.
    watchers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    next_stream: AtomicU64,
}

struct Entry {
    remote: RemoteServer,
    /// The server's own URI (what its updates name).
    own: String,
    listeners: Vec<Listener>,
}

/// Who hears of a resource's updates.
#[derive(Clone)]
pub(super) struct Listener {
    key: ListenerKey,
    to: Notify,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListenerKey {
    /// A handshake-era connection, known by its `initialize` record.
    Client(usize),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(u64),
}

#[derive(Clone)]
enum Notify {
    Client(Peer<RoleServer>),
    Stream(SubscriptionSink),
}

impl Listener {
    /// The connection `peer`, when it has completed the handshake (only a
    /// connection can be told of updates later).
    pub(super) fn client(peer: &Peer<RoleServer>) -> Option<Listener> {
        let info = peer.peer_info()?;
        Some(Listener { key: ListenerKey::Client(Arc::as_ptr(&info) as usize), to: Notify::Client(peer.clone()) })
    }

    /// Tell it `uri` was updated; `false` when it is gone.
    async fn notify(&self, uri: &str) -> bool {
        match &self.to {
            Notify::Client(peer) => {
                let params = rmcp::model::ResourceUpdatedNotificationParam::new(uri.to_owned());
                peer.notify_resource_updated(params).await.is_ok()
            }
            Notify::Stream(sink) => sink.notify_resource_updated(uri.to_owned()).await.is_ok(),
        }
    }
}

impl Subscriptions {
    /// Follow the updates of these servers (replacing the servers followed before).
    pub(super) fn watch(&self, shared: Weak<Shared>, remotes: &[RemoteServer]) {
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        for old in watchers.drain(..) {
            old.abort();
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no async runtime: updates of subscribed resources are not forwarded");
            return;
        };
        for remote in remotes {
            let mut updates = remote.resource_updates();
            let (shared, name) = (shared.clone(), remote.name().to_owned());
            watchers.push(runtime.spawn(async move {
                loop {
                    let own = match updates.recv().await {
                        Ok(own) => own,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    };
                    let Some(shared) = shared.upgrade() else { return };
                    shared.subscriptions.dispatch(&name, &own).await;
                }
            }));
        }
    }

    /// Tell every listener of server `name`'s resource `own`, dropping the gone.
    async fn dispatch(&self, name: &str, own: &str) {
        let targets: Vec<(String, Vec<Listener>)> = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, entry)| entry.remote.name() == name && entry.own == own)
            .map(|(uri, entry)| (uri.clone(), entry.listeners.clone()))
            .collect();
        for (uri, listeners) in targets {
            for listener in listeners {
                if !listener.notify(&uri).await {
                    self.remove(&uri, listener.key).await;
                }
            }
        }
    }

    /// Take `key` off `uri`'s listeners; the last one gone, unsubscribe on the server.
    async fn remove(&self, uri: &str, key: ListenerKey) {
        let emptied = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(entry) = entries.get_mut(uri) else { return };
            entry.listeners.retain(|listener| listener.key != key);
            if entry.listeners.is_empty() { entries.remove(uri) } else { None }
        };
        if let Some(entry) = emptied
            && let Err(error) = entry.remote.unsubscribe(&entry.own).await
        {
            tracing::debug!(server = entry.remote.name(), %error, "unsubscribing failed");
        }
    }
}

impl McpServer {
    /// Subscribe `listener` to the resource `uri` (as the client reads it).
    pub(super) async fn gateway_subscribe(&self, uri: &str, listener: Listener) -> Result<(), ErrorData> {
        let subscriptions = &self.shared.subscriptions;
        {
            let mut entries = subscriptions.entries.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = entries.get_mut(uri) {
                if !entry.listeners.iter().any(|other| other.key == listener.key) {
                    entry.listeners.push(listener);
                }
                return Ok(());
            }
        }
        let owner = self.owner_of(uri).await?;
        if !owner.offers_subscriptions() {
            return Err(ErrorData::invalid_params(
                format!("MCP server `{}` does not support subscribing to its resources", owner.name()),
                None,
            ));
        }
        let own = owner.subscribe(uri).await.map_err(remote_error)?;
        let mut entries = subscriptions.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Another client may have subscribed meanwhile: join its entry.
        let entry = entries.entry(uri.to_owned()).or_insert(Entry { remote: owner, own, listeners: Vec::new() });
        if !entry.listeners.iter().any(|other| other.key == listener.key) {
            entry.listeners.push(listener);
        }
        Ok(())
    }

    /// Stop `listener`'s subscription to `uri` (nothing to stop is no error).
    pub(super) async fn gateway_unsubscribe(&self, uri: &str, listener: &Listener) {
        self.shared.subscriptions.remove(uri, listener.key).await;
    }

    /// Serve a 2026-07-28 client's `subscriptions/listen` stream's resource
    /// URIs until `closed` resolves (the stream ends).
    pub(super) async fn listen_to_resources(
        &self,
        sink: &SubscriptionSink,
        uris: &[String],
        closed: impl Future<Output = ()>,
    ) {
        let key = ListenerKey::Stream(self.shared.subscriptions.next_stream.fetch_add(1, Ordering::Relaxed));
        let listener = Listener { key, to: Notify::Stream(sink.clone()) };
        for uri in uris {
            if let Err(error) = self.gateway_subscribe(uri, listener.clone()).await {
                tracing::info!(%uri, error = %error.message, "a listened resource cannot be subscribed to");
            }
        }
        closed.await;
        for uri in uris {
            self.gateway_unsubscribe(uri, &listener).await;
        }
    }
}
