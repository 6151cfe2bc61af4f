//! How the user tools reach the user: the [`UserChannel`] trait and what
//! travels through it (questions and notices).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::UserError;

/// A question for the user, with optional choices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Question {
    /// The question, as the model wrote it.
    pub question: String,
    /// The answers to pick from; empty for a free-text answer.
    pub choices: Vec<String>,
}

impl Question {
    /// A free-text question.
    pub fn new(question: impl Into<String>) -> Self {
        Question { question: question.into(), choices: Vec::new() }
    }

    /// Offer these choices.
    pub fn with_choices(mut self, choices: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.choices = choices.into_iter().map(Into::into).collect();
        self
    }

    /// Which choice (from 0) an answer picks: its number from 1, or its
    /// text, ignoring case and surrounding space. `None` when it picks none.
    pub fn resolve(&self, answer: &str) -> Option<usize> {
        let answer = answer.trim();
        // A choice's own text wins over a number: choices may be numbers.
        if let Some(i) = self.choices.iter().position(|c| c.trim().eq_ignore_ascii_case(answer)) {
            return Some(i);
        }
        answer.parse::<usize>().ok().filter(|n| (1..=self.choices.len()).contains(n)).map(|n| n - 1)
    }
}

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NoticeLevel {
    /// Progress and information.
    #[default]
    Info,
    /// Something the user may want to look at.
    Warning,
    /// Something went wrong.
    Error,
}

impl fmt::Display for NoticeLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NoticeLevel::Info => "info",
            NoticeLevel::Warning => "warning",
            NoticeLevel::Error => "error",
        })
    }
}

/// A message for the user that needs no answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Notice {
    /// The message.
    pub message: String,
    /// How loud it is.
    pub level: NoticeLevel,
}

impl Notice {
    /// A notice at `level`.
    pub fn new(message: impl Into<String>, level: NoticeLevel) -> Self {
        Notice { message: message.into(), level }
    }
}

/// Where the user is: how questions, notices and the final answer reach them.
///
/// Implement it for a chat UI, a web socket, a ticket queue. Timeouts and
/// cancellation are applied around [`ask`](Self::ask) by the tool, which
/// drops the future; an implementation must tolerate that.
pub trait UserChannel: Send + Sync {
    /// Put the question to the user and wait for the answer's text. With
    /// choices, the answer should be one of them (see [`Question::resolve`]).
    fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>>;

    /// Show a notice.
    fn notify(&self, notice: Notice) -> BoxFuture<'_, Result<(), UserError>>;

    /// Show the run's final answer. By default, nothing is shown: the host
    /// reads it from the call's [`Finish`](toolreg::Finish) slot.
    fn deliver_final(&self, answer: String) -> BoxFuture<'_, Result<(), UserError>> {
        let _ = answer;
        Box::pin(async { Ok(()) })
    }

    /// A short name for logs.
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("user")
    }
}

impl<C: UserChannel + ?Sized> UserChannel for Arc<C> {
    fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>> {
        (**self).ask(question)
    }
    fn notify(&self, notice: Notice) -> BoxFuture<'_, Result<(), UserError>> {
        (**self).notify(notice)
    }
    fn deliver_final(&self, answer: String) -> BoxFuture<'_, Result<(), UserError>> {
        (**self).deliver_final(answer)
    }
    fn name(&self) -> Cow<'_, str> {
        (**self).name()
    }
}
