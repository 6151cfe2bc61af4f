//! The human user as a function: `ask_user`, `notify_user`, `final_answer`.
//!
//! The tools talk to the user through a [`UserChannel`]: a
//! [`TerminalChannel`] for a person at a terminal, or an [`InProcessChannel`]
//! whose questions an application (or a test) answers from a [`UserInbox`].
//! They are in [`Scope::User`](toolreg::Scope::User), which an engine offers to the top-level agent
//! only, never to sub-agents.
//!
//! ## Knowing that the run is finished
//!
//! `final_answer` finishes the run the way every finishing tool does: it
//! sets the [`Finish`] slot the host put in the call's extensions (through
//! [`CallContext::finish`]; an agent loop does this for every call) to the
//! answer, and also returns the structured value
//! `{"finished": true, "answer": ...}`. The host reads the slot after the
//! calls — no text is parsed. A second `final_answer` in the same run is
//! [`UserError::AlreadyFinished`]. Called with no slot (no host is waiting),
//! it only shows the answer to the user.
//!
//! ```
//! use serde_json::json;
//! use toolreg::{CallOptions, Finish, FunctionRegistry, ToolCall, ToolExecutor};
//! use toolreg_builtins::user::{InProcessChannel, UserRequest, UserTools};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (channel, mut inbox) = InProcessChannel::new();
//! let user = UserTools::new(channel);
//! let mut registry = FunctionRegistry::new();
//! toolreg::register_tools!(registry, user.registrations())?;
//!
//! // The application answers questions as they come.
//! tokio::spawn(async move {
//!     while let Some(request) = inbox.recv().await {
//!         if let UserRequest::Ask(mut pending) = request {
//!             let _ = pending.answer("blue");
//!         }
//!     }
//! });
//! let out = registry
//!     .execute("ask_user", json!({"question": "Which colour?", "choices": ["red", "blue"]}))
//!     .await?;
//! assert_eq!(out.value, json!({"answer": "blue", "choice": 1}));
//!
//! // The host (here by hand; an agent loop does it for you) gives the call a
//! // `Finish` slot and reads it afterwards.
//! let finished = Finish::new();
//! let call = ToolCall::new("c2", "final_answer", json!({"answer": "Blue it is."}));
//! registry.execute_call(call, CallOptions::new().extension(finished.clone())).await.outcome?;
//! assert_eq!(finished.get(), Some(&json!("Blue it is.")));
//! # Ok(())
//! # }
//! ```

mod approver;
mod channel;
mod in_process;
mod terminal;

pub use approver::UserApprover;
pub use channel::{Notice, NoticeLevel, Question, UserChannel};
pub use in_process::{InProcessChannel, PendingQuestion, UserInbox, UserRequest};
pub use terminal::TerminalChannel;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolreg::{CallContext, Finish, ToolArgs, ToolRegistration, tools};

/// The category of the user tools.
pub const CATEGORY: &str = "user";

/// Most choices one question may offer.
pub const MAX_CHOICES: usize = 20;

/// Why a user tool failed. The state is unchanged by each of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    /// The question is empty.
    #[error("the question is empty")]
    EmptyQuestion,
    /// The message is empty.
    #[error("the message is empty")]
    EmptyMessage,
    /// Too many choices, or an empty one.
    #[error("choices must be 1 to {MAX_CHOICES} non-empty strings, got {count}{}", if *blank { " with a blank one" } else { "" })]
    BadChoices {
        /// How many were given.
        count: usize,
        /// Whether one was blank.
        blank: bool,
    },
    /// A timeout of zero was asked for.
    #[error("timeout_secs must be at least 1")]
    ZeroTimeout,
    /// The user did not answer in time.
    #[error("the user did not answer within {}s", after.as_secs())]
    Timeout {
        /// The time waited.
        after: Duration,
    },
    /// The call was cancelled while waiting for the user.
    #[error("the question was cancelled before the user answered")]
    Cancelled,
    /// Nobody is there to answer: input ended or the application stopped listening.
    #[error("no user is reachable: {reason}")]
    Closed {
        /// What closed.
        reason: String,
    },
    /// The answer is not one of the choices.
    #[error("`{answer}` is not one of the choices: {}", choices.join(", "))]
    NotAChoice {
        /// The answer given.
        answer: String,
        /// The choices offered.
        choices: Vec<String>,
    },
    /// The question was answered already.
    #[error("the question was answered already")]
    AlreadyAnswered,
    /// The asker stopped waiting (timeout or cancellation) before the answer came.
    #[error("the question is no longer waiting for an answer (it timed out or was cancelled)")]
    NoLongerWaiting,
    /// `final_answer` was called when the run already had one.
    #[error("the run already has a final answer; it cannot be given twice")]
    AlreadyFinished,
    /// Writing to or reading from the terminal failed.
    #[error("the terminal failed: {message}")]
    Io {
        /// The operating system's message.
        message: String,
    },
}

/// Limits for the user tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct UserOptions {
    /// How long `ask_user` waits by default, and at most (5 minutes).
    pub ask_timeout: Duration,
}

impl Default for UserOptions {
    fn default() -> Self {
        UserOptions { ask_timeout: Duration::from_secs(300) }
    }
}

/// The three user tools over one channel.
#[derive(Clone)]
pub struct UserTools {
    channel: Arc<dyn UserChannel>,
    options: UserOptions,
}

impl fmt::Debug for UserTools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserTools").field("channel", &self.channel.name()).field("options", &self.options).finish()
    }
}

impl<C: UserChannel + 'static> From<C> for UserTools {
    fn from(channel: C) -> Self {
        UserTools::new(channel)
    }
}

/// Arguments of `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AskArgs {
    /// The question for the user.
    pub question: String,
    /// Answers to pick from; leave out for a free-text answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// Seconds to wait for the answer; at most the configured limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl AskArgs {
    /// Ask `question`.
    pub fn new(question: impl Into<String>) -> Self {
        AskArgs { question: question.into(), choices: None, timeout_secs: None }
    }

    /// Offer these choices.
    pub fn choices(mut self, choices: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.choices = Some(choices.into_iter().map(Into::into).collect());
        self
    }

    /// Wait at most this long.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout_secs = Some(secs);
        self
    }
}

/// What `ask_user` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AskResult {
    /// The answer (for a choice, the choice's text).
    pub answer: String,
    /// Which choice, from 0, when choices were offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choice: Option<usize>,
}

/// Arguments of `notify_user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct NotifyArgs {
    /// The message for the user.
    pub message: String,
    /// info (default), warning or error.
    #[serde(default)]
    pub level: NoticeLevel,
}

impl NotifyArgs {
    /// A notice at `level`.
    pub fn new(message: impl Into<String>, level: NoticeLevel) -> Self {
        NotifyArgs { message: message.into(), level }
    }
}

/// Arguments of `final_answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FinalArgs {
    /// The answer that completes the task.
    pub answer: String,
}

impl FinalArgs {
    /// Finish with `answer`.
    pub fn new(answer: impl Into<String>) -> Self {
        FinalArgs { answer: answer.into() }
    }
}

/// What `final_answer` returns: the typed signal that the run is finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FinalResult {
    /// Always true: the run is finished.
    pub finished: bool,
    /// The answer given.
    pub answer: String,
}

impl UserTools {
    /// The tools over `channel`.
    pub fn new(channel: impl UserChannel + 'static) -> Self {
        UserTools { channel: Arc::new(channel), options: UserOptions::default() }
    }

    /// Use these limits.
    pub fn with_options(mut self, options: UserOptions) -> Self {
        self.options = options;
        self
    }

    /// Ask the user; `cancel` completing stops the wait.
    pub async fn ask(
        &self,
        args: &AskArgs,
        cancel: impl std::future::Future<Output = ()>,
    ) -> Result<AskResult, UserError> {
        if args.question.trim().is_empty() {
            return Err(UserError::EmptyQuestion);
        }
        let choices = args.choices.clone().unwrap_or_default();
        if args.choices.is_some()
            && (choices.is_empty() || choices.len() > MAX_CHOICES || choices.iter().any(|c| c.trim().is_empty()))
        {
            let blank = choices.iter().any(|c| c.trim().is_empty());
            return Err(UserError::BadChoices { count: choices.len(), blank });
        }
        let timeout = match args.timeout_secs {
            Some(0) => return Err(UserError::ZeroTimeout),
            Some(secs) => Duration::from_secs(secs).min(self.options.ask_timeout),
            None => self.options.ask_timeout,
        };
        let question = Question { question: args.question.clone(), choices };
        let answer = tokio::select! {
            answer = self.channel.ask(question.clone()) => answer?,
            () = tokio::time::sleep(timeout) => return Err(UserError::Timeout { after: timeout }),
            () = cancel => return Err(UserError::Cancelled),
        };
        if question.choices.is_empty() {
            return Ok(AskResult { answer, choice: None });
        }
        match question.resolve(&answer) {
            Some(i) => Ok(AskResult { answer: question.choices[i].clone(), choice: Some(i) }),
            None => Err(UserError::NotAChoice { answer, choices: question.choices }),
        }
    }

    /// Show a notice.
    pub async fn notify(&self, args: &NotifyArgs) -> Result<(), UserError> {
        if args.message.trim().is_empty() {
            return Err(UserError::EmptyMessage);
        }
        self.channel.notify(Notice { message: args.message.clone(), level: args.level }).await
    }

    /// Finish the run `cx` belongs to with `answer` (see
    /// [`CallContext::finish`]), then show it. Refused when the run is
    /// finished already; with no [`Finish`] slot in `cx`, only shown.
    pub async fn finish(&self, cx: &CallContext, args: &FinalArgs) -> Result<FinalResult, UserError> {
        let hosted = cx.extensions().get::<Finish>().is_some();
        if hosted && !cx.finish(serde_json::Value::String(args.answer.clone())) {
            return Err(UserError::AlreadyFinished);
        }
        // The run is finished whether or not the user could be shown the answer.
        let _ = self.channel.deliver_final(args.answer.clone()).await;
        Ok(FinalResult { finished: true, answer: args.answer.clone() })
    }

    /// `ask_user`, `notify_user` and `final_answer`, in [`Scope::User`](toolreg::Scope::User):
    /// the `#[tool]` methods below, sharing one clone of `self`.
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.tool_registrations()
    }
}

// The tools' names, descriptions and classification are written once, here;
// what each does is in the public `ask`, `notify` and `finish` above.
#[tools]
impl UserTools {
    /// Ask the user a question and wait for the answer. Give choices to have
    /// the user pick one.
    #[tool(safety = "safe", category = "user", scope = "user")]
    async fn ask_user(&self, #[context] cx: &CallContext, #[args] args: AskArgs) -> Result<AskResult, UserError> {
        self.ask(&args, cx.cancelled()).await
    }

    /// Tell the user something that needs no answer (progress, a warning, an
    /// error).
    #[tool(safety = "safe", category = "user", scope = "user")]
    async fn notify_user(&self, #[args] args: NotifyArgs) -> Result<serde_json::Value, UserError> {
        self.notify(&args).await.map(|()| serde_json::json!({"delivered": true}))
    }

    /// Give the final answer to the user's task. This ends the run; call it
    /// once, last.
    #[tool(safety = "cautious", category = "user", scope = "user")]
    async fn final_answer(
        &self,
        #[context] cx: &CallContext,
        #[args] args: FinalArgs,
    ) -> Result<FinalResult, UserError> {
        self.finish(cx, &args).await
    }
}
