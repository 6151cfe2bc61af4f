//! A remote server's elicitation and sampling requests, forwarded to the
//! MCP client whose call is running on it, or answered by the host.
//!
//! The client declares both capabilities to every server. When a server
//! asks, the question goes to the MCP client of the most recent of its
//! calls in flight that came over MCP (the gateway's client: the call's
//! context holds that connection); the answer goes back unchanged. With no
//! such call in flight, the host's [`Answerer`] answers, when the host set
//! one ([`RemoteServer::answer_with`]: `toolreg run` asks its terminal and
//! its model). Where no one can answer — no call in flight came over MCP
//! and no answerer is set, or the one asked does not support the request
//! or refuses it — the server gets an error saying so.
//!
//! A client on the 2026-07-28 revision takes questions only as
//! `input_required` results (Multi Round-Trip Requests). Its call then runs
//! the remote call on a task of its own and waits for the answer or a
//! question: a question parks the remote call (see `Parked`) and is put to
//! the client through the call's [`InputRound`]; the client's next round
//! takes the parked call up again, gives the server the answer and waits
//! again.
//!
//! A remote task's questions (`input_required` in `tasks/get`) go the same
//! way as a plain request of the server (see `answer`), except for a
//! 2026-07-28 client's call, whose rounds do not reach into a task.

// rmcp marks sampling deprecated (a protocol draft drops it); the revisions
// the servers speak have it.
#![allow(deprecated)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use futures_util::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ErrorData, InputRequest, ListRootsResult,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use toolreg::CallContext;

use super::{Inner, RemoteServer};
use crate::protocol::InputRound;

/// The host's answers to a remote server's elicitation and sampling
/// requests, for calls that did not come over MCP (a host's own agent
/// calling an imported tool). Set with [`RemoteServer::answer_with`].
///
/// An `Err` is a refusal: its text goes to the server that asked, after
/// "the client behind toolreg could not answer the … request: ". A person
/// who declines or cancels a form is an `Ok` [`ElicitResult`] with that
/// action, not an error.
pub trait Answerer: Send + Sync {
    /// Answer server `server`'s elicitation request (a form, or a URL to visit).
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>>;

    /// Answer server `server`'s sampling request (a model's answer to its messages).
    fn sample<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, String>>;
}

/// Who a question of the server goes to.
#[derive(Clone)]
pub(super) enum Caller {
    /// A handshake-era client, asked over its connection.
    Peer(Peer<RoleServer>),
    /// A 2026-07-28 client, asked in its next round (through its call).
    Rounds { questions: mpsc::Sender<Question>, capabilities: Option<ClientCapabilities> },
    /// The host (no call in flight came over MCP).
    Host(Arc<dyn Answerer>),
}

/// A question of the server for a 2026-07-28 client, and where its answer goes.
pub(super) struct Question {
    pub(super) request: InputRequest,
    pub(super) answer: oneshot::Sender<Value>,
}

/// A call in flight whose caller can be asked, registered while it runs.
pub(super) struct Asker {
    server: RemoteServer,
    key: u64,
}

impl Asker {
    /// Register the call if it came over MCP (its context holds the connection).
    pub(super) fn open(server: &RemoteServer, cx: &CallContext) -> Option<Asker> {
        let peer = cx.extensions().get::<Peer<RoleServer>>()?.clone();
        Some(Self::register(server, Caller::Peer(peer)))
    }

    /// Register a call of a 2026-07-28 client: its questions come out of the receiver.
    pub(super) fn open_rounds(server: &RemoteServer, round: &InputRound) -> (Asker, mpsc::Receiver<Question>) {
        let (questions, receiver) = mpsc::channel(1);
        let caller = Caller::Rounds { questions, capabilities: round.client_capabilities().cloned() };
        (Self::register(server, caller), receiver)
    }

    fn register(server: &RemoteServer, caller: Caller) -> Asker {
        let key = server.inner.next_asker.fetch_add(1, Ordering::Relaxed);
        server.inner.askers.lock().unwrap_or_else(PoisonError::into_inner).insert(key, caller);
        Asker { server: server.clone(), key }
    }
}

impl Drop for Asker {
    fn drop(&mut self) {
        self.server.inner.askers.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.key);
    }
}

/// Who to ask: the client of the most recent call in flight that came over
/// MCP, else the host's answerer.
fn asker(inner: &Inner) -> Result<Caller, ErrorData> {
    let askers = inner.askers.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, caller)) = askers.iter().max_by_key(|(key, _)| **key) {
        return Ok(caller.clone());
    }
    let answerer = inner.answerer.lock().unwrap_or_else(PoisonError::into_inner).clone();
    answerer.map(Caller::Host).ok_or_else(|| {
        ErrorData::invalid_request(
            format!(
                "toolreg has no one to ask for MCP server `{}`: no call of it in flight came from an MCP client, \
                 and the host answers no questions",
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

/// Put `request` to a 2026-07-28 client through its call, and wait for the answer.
async fn ask_in_rounds(
    questions: &mpsc::Sender<Question>,
    what: &str,
    request: InputRequest,
) -> Result<Value, ErrorData> {
    let (answer, answered) = oneshot::channel();
    questions.send(Question { request, answer }).await.map_err(|_| refused(what, "the call ended"))?;
    answered.await.map_err(|_| refused(what, "it did not answer in time, or the call ended"))
}

pub(super) async fn elicit(inner: &Inner, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
    match asker(inner)? {
        Caller::Peer(peer) => {
            if peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_none()) {
                return Err(refused("elicitation", "it does not support elicitation"));
            }
            peer.create_elicitation(request).await.map_err(|error| refused("elicitation", error))
        }
        Caller::Rounds { questions, capabilities } => {
            if capabilities.is_none_or(|c| c.elicitation.is_none()) {
                return Err(refused("elicitation", "it does not support elicitation"));
            }
            let answer =
                ask_in_rounds(&questions, "elicitation", InputRequest::Elicitation(ElicitRequest::new(request)))
                    .await?;
            serde_json::from_value(answer).map_err(|error| refused("elicitation", error))
        }
        Caller::Host(answerer) => {
            answerer.elicit(&inner.name, request).await.map_err(|error| refused("elicitation", error))
        }
    }
}

pub(super) async fn sample(
    inner: &Inner,
    request: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    match asker(inner)? {
        Caller::Peer(peer) => {
            if peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_none()) {
                return Err(refused("sampling", "it does not support sampling"));
            }
            peer.create_message(request).await.map_err(|error| refused("sampling", error))
        }
        Caller::Rounds { questions, capabilities } => {
            if capabilities.is_none_or(|c| c.sampling.is_none()) {
                return Err(refused("sampling", "it does not support sampling"));
            }
            let answer =
                ask_in_rounds(&questions, "sampling", InputRequest::CreateMessage(CreateMessageRequest::new(request)))
                    .await?;
            serde_json::from_value(answer).map_err(|error| refused("sampling", error))
        }
        Caller::Host(answerer) => {
            answerer.sample(&inner.name, request).await.map_err(|error| refused("sampling", error))
        }
    }
}

/// Answer one question of a remote task as the server's own request would
/// be answered: elicitation and sampling forwarded, roots listed as none
/// (as toolreg answers `roots/list`). The answer as the task expects it.
pub(super) async fn answer(inner: &Inner, request: InputRequest) -> Result<Value, ErrorData> {
    let json = |value: Result<Value, serde_json::Error>| value.map_err(|e| refused("task", e));
    match request {
        InputRequest::Elicitation(request) => json(serde_json::to_value(elicit(inner, request.params).await?)),
        InputRequest::CreateMessage(request) => json(serde_json::to_value(sample(inner, request.params).await?)),
        InputRequest::ListRoots(_) => json(serde_json::to_value(ListRootsResult::default())),
        other => Err(refused("task", format!("toolreg does not know this kind of question: {other:?}"))),
    }
}
