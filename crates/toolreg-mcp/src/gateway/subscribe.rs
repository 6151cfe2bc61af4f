//! Resource subscriptions through the gateway: a client subscribes to an
//! imported server's resource by the URI it reads it by, the gateway
//! subscribes once on that server, and each `notifications/resources/updated`
//! the server sends goes on to every client that subscribed, under the URI
//! that client used.
//!
//! A handshake-era client subscribes with `resources/subscribe` and stops
//! with `resources/unsubscribe`; a 2026-07-28 client names the URIs in its
//! `subscriptions/listen` filter, for as long as the stream is open (the
//! server turns both into [`ResourceListener`]s). The gateway unsubscribes
//! on the server when its last listener has gone (a listener whose
//! connection closed is dropped at the next update).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::ErrorData;

use super::{Gateway, remote_error};
use crate::client::RemoteServer;
use crate::server::ResourceListener;

/// The gateway's subscriptions, by the URI the clients used.
#[derive(Default)]
pub(super) struct Subscriptions {
    entries: Mutex<HashMap<String, Entry>>,
    /// The tasks that follow each imported server's updates.
    watchers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

struct Entry {
    remote: RemoteServer,
    /// The server's own URI (what its updates name).
    own: String,
    listeners: Vec<ResourceListener>,
}

impl Subscriptions {
    /// Subscriptions that follow the updates of these servers.
    pub(super) fn watching(remotes: &[RemoteServer]) -> Arc<Subscriptions> {
        let subscriptions = Arc::new(Subscriptions::default());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no async runtime: updates of subscribed resources are not forwarded");
            return subscriptions;
        };
        let watchers = remotes.iter().map(|remote| runtime.spawn(follow(Arc::downgrade(&subscriptions), remote)));
        *subscriptions.watchers.lock().unwrap_or_else(PoisonError::into_inner) = watchers.collect();
        subscriptions
    }

    /// Tell every listener of server `name`'s resource `own`, dropping the gone.
    async fn dispatch(&self, name: &str, own: &str) {
        let targets: Vec<(String, Vec<ResourceListener>)> = self
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
                    self.remove(&uri, &listener).await;
                }
            }
        }
    }

    /// Add `listener` to `uri`'s entry; `false` when there is no entry yet.
    fn join(&self, uri: &str, listener: &ResourceListener) -> bool {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = entries.get_mut(uri) else { return false };
        if !entry.listeners.contains(listener) {
            entry.listeners.push(listener.clone());
        }
        true
    }

    /// Take `listener` off `uri`'s listeners; the last one gone, unsubscribe on the server.
    pub(super) async fn remove(&self, uri: &str, listener: &ResourceListener) {
        let emptied = {
            let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(entry) = entries.get_mut(uri) else { return };
            entry.listeners.retain(|other| other != listener);
            if entry.listeners.is_empty() { entries.remove(uri) } else { None }
        };
        if let Some(entry) = emptied
            && let Err(error) = entry.remote.unsubscribe(&entry.own).await
        {
            tracing::debug!(server = entry.remote.name(), %error, "unsubscribing failed");
        }
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for watcher in self.watchers.get_mut().unwrap_or_else(PoisonError::into_inner).drain(..) {
            watcher.abort();
        }
    }
}

/// Pass `remote`'s resource updates on, for as long as the subscriptions live.
fn follow(subscriptions: Weak<Subscriptions>, remote: &RemoteServer) -> impl Future<Output = ()> + Send + use<> {
    let mut updates = remote.resource_updates();
    let name = remote.name().to_owned();
    async move {
        loop {
            let own = match updates.recv().await {
                Ok(own) => own,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let Some(subscriptions) = subscriptions.upgrade() else { return };
            subscriptions.dispatch(&name, &own).await;
        }
    }
}

impl Gateway {
    /// Subscribe `listener` to the resource `uri` (as the client reads it).
    pub(super) async fn subscribe_to(&self, uri: &str, listener: ResourceListener) -> Result<(), ErrorData> {
        if self.subscriptions.join(uri, &listener) {
            return Ok(());
        }
        let owner = self.owner_of(uri).await?;
        if !owner.offers_subscriptions() {
            return Err(ErrorData::invalid_params(
                format!("MCP server `{}` does not support subscribing to its resources", owner.name()),
                None,
            ));
        }
        let own = owner.subscribe(uri).await.map_err(remote_error)?;
        let mut entries = self.subscriptions.entries.lock().unwrap_or_else(PoisonError::into_inner);
        // Another client may have subscribed meanwhile: join its entry.
        let entry = entries.entry(uri.to_owned()).or_insert(Entry { remote: owner, own, listeners: Vec::new() });
        if !entry.listeners.contains(&listener) {
            entry.listeners.push(listener);
        }
        Ok(())
    }
}
