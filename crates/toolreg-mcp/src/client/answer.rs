//! A remote server's elicitation and sampling requests, and its tasks'
//! questions, answered by whoever the host set ([`RemoteServer::answer_with`]).
//!
//! The client declares both capabilities to every server. When a server
//! asks, its [`Answerer`] answers: the host's own (`toolreg run` asks its
//! terminal and its model), or a gateway's, which asks the MCP client whose
//! call is running on the server first ([`Gateway`](crate::gateway::Gateway)).
//! With no answerer, or one that refuses, the server gets an error saying why.
//!
//! A remote task's questions (`input_required` in `tasks/get`) go the same
//! way as a plain request of the server (see `answer`).

// rmcp marks sampling deprecated (a protocol draft drops it); the revisions
// the servers speak have it.
#![allow(deprecated)]

use std::sync::PoisonError;

use futures_util::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorData, InputRequest,
    ListRootsResult,
};
use serde_json::Value;

use super::{Inner, RemoteServer};

/// Who answers a remote server's elicitation and sampling requests (and its
/// tasks' questions): the host, or a gateway asking the MCP client behind
/// the call. Set with [`RemoteServer::answer_with`].
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

impl RemoteServer {
    /// Let `answerer` answer the server's elicitation and sampling requests
    /// and its tasks' questions, for this connection and every later one,
    /// in place of any answerer set before (a gateway sets its own, which
    /// asks the MCP client behind the call first).
    pub fn answer_with(&self, answerer: std::sync::Arc<dyn Answerer>) {
        *self.inner.answerer.lock().unwrap_or_else(PoisonError::into_inner) = Some(answerer);
    }
}

/// The answerer, or the refusal the server gets when there is none.
fn answerer(inner: &Inner) -> Result<std::sync::Arc<dyn Answerer>, ErrorData> {
    let answerer = inner.answerer.lock().unwrap_or_else(PoisonError::into_inner).clone();
    answerer.ok_or_else(|| {
        ErrorData::invalid_request(
            format!("toolreg has no one to ask for MCP server `{}`: the host answers no questions", inner.name),
            None,
        )
    })
}

/// The answerer's refusal, as the server that asked is told it.
fn refused(what: &str, error: impl std::fmt::Display) -> ErrorData {
    ErrorData::invalid_request(format!("the client behind toolreg could not answer the {what} request: {error}"), None)
}

pub(super) async fn elicit(inner: &Inner, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
    answerer(inner)?.elicit(&inner.name, request).await.map_err(|error| refused("elicitation", error))
}

pub(super) async fn sample(
    inner: &Inner,
    request: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    answerer(inner)?.sample(&inner.name, request).await.map_err(|error| refused("sampling", error))
}

/// Answer one question of a remote task as the server's own request would
/// be answered: elicitation and sampling by the answerer, roots listed as
/// none (as toolreg answers `roots/list`). The answer as the task expects it.
pub(super) async fn answer(inner: &Inner, request: InputRequest) -> Result<Value, ErrorData> {
    let json = |value: Result<Value, serde_json::Error>| value.map_err(|e| refused("task", e));
    match request {
        InputRequest::Elicitation(request) => json(serde_json::to_value(elicit(inner, request.params).await?)),
        InputRequest::CreateMessage(request) => json(serde_json::to_value(sample(inner, request.params).await?)),
        InputRequest::ListRoots(_) => json(serde_json::to_value(ListRootsResult::default())),
        other => Err(refused("task", format!("toolreg does not know this kind of question: {other:?}"))),
    }
}
