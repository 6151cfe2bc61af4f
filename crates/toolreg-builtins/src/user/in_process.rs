//! [`InProcessChannel`]: the user is an application (or a test) answering
//! from a [`UserInbox`].

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::{Notice, Question, UserChannel, UserError};

/// A request from the tools to the application behind an [`InProcessChannel`].
#[derive(Debug)]
#[non_exhaustive]
pub enum UserRequest {
    /// A question waiting for [`PendingQuestion::answer`].
    Ask(PendingQuestion),
    /// A notice to show.
    Notify(Notice),
    /// The run's final answer.
    Final(String),
}

/// A question the application has yet to answer. Dropping it unanswered
/// tells the asker that no user is reachable.
#[derive(Debug)]
pub struct PendingQuestion {
    question: Question,
    reply: Option<oneshot::Sender<String>>,
}

impl PendingQuestion {
    /// The question.
    pub fn question(&self) -> &Question {
        &self.question
    }

    /// Whether the asker is still waiting.
    pub fn is_waiting(&self) -> bool {
        self.reply.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Answer it. With choices, the answer must pick one (by number from 1
    /// or by text); otherwise the question stays pending and this is an error.
    pub fn answer(&mut self, answer: impl Into<String>) -> Result<(), UserError> {
        let answer = answer.into();
        let text = if self.question.choices.is_empty() {
            answer
        } else {
            match self.question.resolve(&answer) {
                Some(i) => self.question.choices[i].clone(),
                None => return Err(UserError::NotAChoice { answer, choices: self.question.choices.clone() }),
            }
        };
        let reply = self.reply.take().ok_or(UserError::AlreadyAnswered)?;
        reply.send(text).map_err(|_| UserError::NoLongerWaiting)
    }
}

/// A [`UserChannel`] answered by the application, through a [`UserInbox`].
#[derive(Debug, Clone)]
pub struct InProcessChannel {
    tx: mpsc::UnboundedSender<UserRequest>,
}

/// The application's end of an [`InProcessChannel`].
#[derive(Debug)]
pub struct UserInbox {
    rx: mpsc::UnboundedReceiver<UserRequest>,
}

impl UserInbox {
    /// The next request; `None` once every channel clone is gone.
    pub async fn recv(&mut self) -> Option<UserRequest> {
        self.rx.recv().await
    }

    /// The next request if one is waiting.
    pub fn try_recv(&mut self) -> Option<UserRequest> {
        self.rx.try_recv().ok()
    }
}

impl InProcessChannel {
    /// A channel and the inbox that answers it.
    pub fn new() -> (InProcessChannel, UserInbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        (InProcessChannel { tx }, UserInbox { rx })
    }

    fn send(&self, request: UserRequest) -> Result<(), UserError> {
        self.tx.send(request).map_err(|_| UserError::Closed { reason: "the application's inbox is closed".to_owned() })
    }
}

impl UserChannel for InProcessChannel {
    fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.send(UserRequest::Ask(PendingQuestion { question, reply: Some(reply) }))?;
            answer
                .await
                .map_err(|_| UserError::Closed { reason: "the application dropped the question unanswered".to_owned() })
        })
    }

    fn notify(&self, notice: Notice) -> BoxFuture<'_, Result<(), UserError>> {
        Box::pin(async move { self.send(UserRequest::Notify(notice)) })
    }

    fn deliver_final(&self, answer: String) -> BoxFuture<'_, Result<(), UserError>> {
        Box::pin(async move { self.send(UserRequest::Final(answer)) })
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("in-process")
    }
}
