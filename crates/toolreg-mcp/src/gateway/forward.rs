//! A remote server's questions (elicitation, sampling, its tasks'), put to
//! the MCP client whose call is running on it.
//!
//! The gateway wraps each imported tool ([`Forwarded`]) and is the
//! [`Answerer`] of each imported server ([`Forward`]). A call of an imported
//! tool that came over MCP is entered in its server's table of calls in
//! flight while it runs; a question of that server goes to the client of
//! the most recent of them: a handshake-era client over its connection, a
//! 2026-07-28 client in its next round (see `rounds`). With no such call in
//! flight, the host's answerer answers, when the host set one
//! ([`Gateway::answer_with`](super::Gateway::answer_with)). Where no one
//! can answer — no call in flight came over MCP and no answerer is set, or
//! the one asked does not support the request or refuses it — the server
//! gets an error saying so.

// rmcp marks sampling deprecated (a protocol draft drops it); the revisions
// the servers speak have it.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, InputRequest,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use toolreg::{CallContext, ErasedTool, ToolFuture};

use super::rounds::{self, Parked};
use crate::client::{Answerer, NoTaskQuestions};
use crate::protocol::InputRound;

/// The host's answerer, shared by every server of a gateway.
pub(super) type HostAnswerer = Arc<Mutex<Option<Arc<dyn Answerer>>>>;

/// One imported server's questions: its calls in flight that can be asked,
/// the host's answerer behind them, and the calls of 2026-07-28 clients
/// parked between rounds.
pub(super) struct Forward {
    pub(super) server: String,
    /// The callers of its calls in flight that came over MCP, by the order
    /// the calls started: who a question of the server goes to.
    callers: Mutex<BTreeMap<u64, Caller>>,
    /// Keys of callers and of parked calls.
    pub(super) next: AtomicU64,
    host: HostAnswerer,
    /// Calls of 2026-07-28 clients waiting for their client's next round
    /// (a question of this server's was put to it), by the id in the
    /// round's sealed state.
    pub(super) parked: Mutex<HashMap<u64, Parked>>,
}

/// Who a question of the server goes to.
#[derive(Clone)]
pub(super) enum Caller {
    /// A handshake-era client, asked over its connection.
    Peer(Peer<RoleServer>),
    /// A 2026-07-28 client, asked in its next round (through its call); not
    /// once its call runs as a remote task (its rounds do not reach into one).
    Rounds {
        questions: mpsc::Sender<Question>,
        capabilities: Option<Arc<ClientCapabilities>>,
        tasks: Arc<NoTaskQuestions>,
    },
}

/// A question of the server for a 2026-07-28 client, and where its answer goes.
pub(super) struct Question {
    pub(super) request: InputRequest,
    pub(super) answer: oneshot::Sender<Value>,
}

/// A call in flight whose caller can be asked, in its server's table while it runs.
pub(super) struct Asker {
    forward: Arc<Forward>,
    key: u64,
}

impl Asker {
    pub(super) fn open(forward: &Arc<Forward>, caller: Caller) -> Asker {
        let key = forward.next.fetch_add(1, Ordering::Relaxed);
        forward.callers.lock().unwrap_or_else(PoisonError::into_inner).insert(key, caller);
        Asker { forward: Arc::clone(forward), key }
    }
}

impl Drop for Asker {
    fn drop(&mut self) {
        self.forward.callers.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.key);
    }
}

/// Who is asked: a caller, or the host.
enum Asked {
    Caller(Caller),
    Host(Arc<dyn Answerer>),
}

impl Forward {
    pub(super) fn new(server: &str, host: HostAnswerer) -> Forward {
        Forward {
            server: server.to_owned(),
            callers: Mutex::default(),
            next: AtomicU64::new(0),
            host,
            parked: Mutex::default(),
        }
    }

    /// Who to ask: the client of the most recent call in flight that came
    /// over MCP (a 2026-07-28 client's only while its call is no remote
    /// task), else the host's answerer.
    fn asked(&self) -> Result<Asked, String> {
        let callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        let askable = |caller: &&Caller| !matches!(caller, Caller::Rounds { tasks, .. } if tasks.in_task());
        if let Some(caller) = callers.values().rev().find(askable) {
            return Ok(Asked::Caller(caller.clone()));
        }
        let host = self.host.lock().unwrap_or_else(PoisonError::into_inner).clone();
        host.map(Asked::Host)
            .ok_or_else(|| "no call of it in flight came from an MCP client, and the host answers no questions".into())
    }
}

/// Put `request` to a 2026-07-28 client through its call, and wait for the answer.
async fn ask_in_rounds(questions: &mpsc::Sender<Question>, request: InputRequest) -> Result<Value, String> {
    let (answer, answered) = oneshot::channel();
    questions.send(Question { request, answer }).await.map_err(|_| "the call ended".to_owned())?;
    answered.await.map_err(|_| "it did not answer in time, or the call ended".to_owned())
}

impl Answerer for Forward {
    fn elicit<'a>(
        &'a self,
        server: &'a str,
        request: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async move {
            match self.asked()? {
                Asked::Caller(Caller::Peer(peer)) => {
                    if peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_none()) {
                        return Err("it does not support elicitation".to_owned());
                    }
                    peer.create_elicitation(request).await.map_err(|error| error.to_string())
                }
                Asked::Caller(Caller::Rounds { questions, capabilities, .. }) => {
                    if capabilities.is_none_or(|c| c.elicitation.is_none()) {
                        return Err("it does not support elicitation".to_owned());
                    }
                    let answer =
                        ask_in_rounds(&questions, InputRequest::Elicitation(ElicitRequest::new(request))).await?;
                    serde_json::from_value(answer).map_err(|error| error.to_string())
                }
                Asked::Host(answerer) => answerer.elicit(server, request).await,
            }
        })
    }

    fn sample<'a>(
        &'a self,
        server: &'a str,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, String>> {
        Box::pin(async move {
            match self.asked()? {
                Asked::Caller(Caller::Peer(peer)) => {
                    if peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_none()) {
                        return Err("it does not support sampling".to_owned());
                    }
                    peer.create_message(request).await.map_err(|error| error.to_string())
                }
                Asked::Caller(Caller::Rounds { questions, capabilities, .. }) => {
                    if capabilities.is_none_or(|c| c.sampling.is_none()) {
                        return Err("it does not support sampling".to_owned());
                    }
                    let request = InputRequest::CreateMessage(CreateMessageRequest::new(request));
                    let answer = ask_in_rounds(&questions, request).await?;
                    serde_json::from_value(answer).map_err(|error| error.to_string())
                }
                Asked::Host(answerer) => answerer.sample(server, request).await,
            }
        })
    }
}

/// An imported tool as the gateway registers it: a call that came over MCP
/// is entered in its server's table while it runs, and a 2026-07-28
/// client's call runs between rounds (see `rounds`).
pub(super) struct Forwarded {
    pub(super) tool: Arc<dyn ErasedTool>,
    pub(super) forward: Arc<Forward>,
}

impl ErasedTool for Forwarded {
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        if let Some(round) = cx.extensions().get_arc::<InputRound>() {
            let (forward, tool) = (Arc::clone(&self.forward), Arc::clone(&self.tool));
            return ToolFuture::new(async move { rounds::call(&forward, tool, cx, &round, args).await });
        }
        // A handshake-era client: the context holds its connection.
        let asker = cx
            .extensions()
            .get::<Peer<RoleServer>>()
            .map(|peer| Asker::open(&self.forward, Caller::Peer(peer.clone())));
        let call = self.tool.call(cx, args);
        ToolFuture::new(async move {
            let _asker = asker;
            call.await
        })
    }
}
