//! The clients connected to a server, as a whole: who is told when the
//! tools change, and the log level they asked for.

use std::sync::{Mutex, PoisonError};

use rmcp::model::{LoggingLevel, RequestId};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};

/// Every connection that completed `initialize`, every open
/// `subscriptions/listen` stream, and the level `logging/setLevel` set.
#[derive(Default)]
pub(super) struct Clients {
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Open `subscriptions/listen` streams (2026-07-28 clients hear of tool
    /// list changes on these, not as unsolicited notifications).
    listeners: Mutex<Vec<SubscriptionSink>>,
    /// The level the client asked for with `logging/setLevel`.
    log_level: Mutex<Option<LoggingLevel>>,
}

impl Clients {
    /// A connection completed the handshake (the closed ones are forgotten).
    pub(super) fn joined(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// A `subscriptions/listen` stream opened.
    pub(super) fn listening(&self, sink: SubscriptionSink) {
        self.listeners.lock().unwrap_or_else(PoisonError::into_inner).push(sink);
    }

    /// The `subscriptions/listen` stream `id` ended.
    pub(super) fn stopped_listening(&self, id: &RequestId) {
        self.listeners.lock().unwrap_or_else(PoisonError::into_inner).retain(|sink| sink.id() != id);
    }

    /// Send `notifications/tools/list_changed` to every connection, and on
    /// every stream (a 2026-07-28 client hears of it there).
    pub(super) async fn tools_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = self.peers.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut any_closed = false;
        for peer in &peers {
            if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                any_closed |= peer.is_transport_closed();
            }
        }
        if any_closed {
            let mut live = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
            live.retain(|peer| !peer.is_transport_closed());
        }
        let listeners: Vec<SubscriptionSink> = self.listeners.lock().unwrap_or_else(PoisonError::into_inner).clone();
        for sink in listeners {
            // A stream that closed is removed by its `listen` when it ends.
            let _ = sink.notify_tool_list_changed().await;
        }
    }

    /// The level a client last asked for (`None`: none has asked).
    pub(super) fn log_level(&self) -> Option<LoggingLevel> {
        *self.log_level.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A client asked for `level` with `logging/setLevel`.
    pub(super) fn set_log_level(&self, level: LoggingLevel) {
        *self.log_level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }
}
