//! A remote server's elicitation and sampling requests, forwarded to the
//! MCP client whose call is running on it.
//!
//! The client declares both capabilities to every server. When a server
//! asks, the question goes to the MCP client of the most recent of its
//! calls in flight that came over MCP (the gateway's client: the call's
//! context holds that connection); the answer goes back unchanged. Where no
//! one can answer — no call in flight came over MCP, or that client does
//! not support the request — the server gets an error saying so.

// rmcp marks sampling deprecated (a protocol draft drops it); the revisions
// the servers speak have it.
#![allow(deprecated)]

use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorData};
use rmcp::service::{Peer, RoleServer};
use toolreg::CallContext;

use super::{Inner, RemoteServer};

/// A call in flight whose caller can be asked, registered while it runs.
pub(super) struct Asker {
    server: RemoteServer,
    key: u64,
}

impl Asker {
    /// Register the call if it came over MCP (its context holds the connection).
    pub(super) fn open(server: &RemoteServer, cx: &CallContext) -> Option<Asker> {
        let peer = cx.extensions().get::<Peer<RoleServer>>()?.clone();
        let key = server.inner.next_asker.fetch_add(1, Ordering::Relaxed);
        server.inner.askers.lock().unwrap_or_else(PoisonError::into_inner).insert(key, peer);
        Some(Asker { server: server.clone(), key })
    }
}

impl Drop for Asker {
    fn drop(&mut self) {
        self.server.inner.askers.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.key);
    }
}

/// The client to ask: that of the most recent call in flight that came over MCP.
fn asker(inner: &Inner) -> Result<Peer<RoleServer>, ErrorData> {
    let askers = inner.askers.lock().unwrap_or_else(PoisonError::into_inner);
    askers.iter().max_by_key(|(key, _)| **key).map(|(_, peer)| peer.clone()).ok_or_else(|| {
        ErrorData::invalid_request(
            format!(
                "toolreg has no one to ask for MCP server `{}`: no call of it in flight came from an MCP client",
                inner.name
            ),
            None,
        )
    })
}

/// The client's failure, as the server that asked is told it.
fn refused(what: &str, error: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_request(format!("the client behind toolreg could not answer the {what} request: {error}"), None)
}

pub(super) async fn elicit(inner: &Inner, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
    let peer = asker(inner)?;
    if peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_none()) {
        return Err(refused("elicitation", "it does not support elicitation"));
    }
    peer.create_elicitation(request).await.map_err(|error| refused("elicitation", error))
}

pub(super) async fn sample(
    inner: &Inner,
    request: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    let peer = asker(inner)?;
    if peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_none()) {
        return Err(refused("sampling", "it does not support sampling"));
    }
    peer.create_message(request).await.map_err(|error| refused("sampling", error))
}
