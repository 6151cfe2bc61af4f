//! The human user as a function: `ask_user`, `notify_user`, `final_answer`.
//!
//! The tools talk to the user through a [`UserChannel`]: a
//! [`TerminalChannel`] for a person at a terminal, or an [`InProcessChannel`]
//! whose questions an application (or a test) answers from a [`UserInbox`].
//! They are in [`Scope::User`], which an engine offers to the top-level agent
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
//! use toolreg::{CallContext, Finish, FunctionRegistry};
//! use toolreg_builtins::user::{InProcessChannel, UserRequest, UserTools};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (channel, mut inbox) = InProcessChannel::new();
//! let user = UserTools::new(channel);
//! let mut registry = FunctionRegistry::new();
//! registry.register_all(user.registrations())?;
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
//! let cx = CallContext::new("c2").with_extension(finished.clone());
//! registry.execute_with("final_answer", json!({"answer": "Blue it is."}), cx).await?;
//! assert_eq!(finished.get(), Some(&json!("Blue it is.")));
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Stderr, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use toolreg::{CallContext, Finish, SafetyLevel, Scope, ToolDeclaration, ToolRegistration};

/// The category of the user tools.
pub const CATEGORY: &str = "user";

/// Most choices one question may offer.
pub const MAX_CHOICES: usize = 20;

/// How many unreadable answers a terminal accepts before giving up.
const ATTEMPTS: usize = 3;

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
    /// reads it from the call's [`Finish`] slot.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

    /// `ask_user`, `notify_user` and `final_answer`, in [`Scope::User`].
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        fn declare<A: JsonSchema + 'static>(name: &str, description: &str, safety: SafetyLevel) -> ToolDeclaration {
            ToolDeclaration::for_args::<A>(name, description)
                .with_safety(safety)
                .with_category(CATEGORY)
                .with_scope(Scope::User)
        }
        let (ask, notify, finish) = (self.clone(), self.clone(), self.clone());
        vec![
            ToolRegistration::from_async_with_context(
                "ask_user",
                move |cx: CallContext, args: AskArgs| {
                    let tools = ask.clone();
                    async move { tools.ask(&args, cx.cancelled()).await }
                },
                declare::<AskArgs>(
                    "ask_user",
                    "Ask the user a question and wait for the answer. Give choices to have the user pick one.",
                    SafetyLevel::Safe,
                ),
            ),
            ToolRegistration::from_async(
                "notify_user",
                move |args: NotifyArgs| {
                    let tools = notify.clone();
                    async move { tools.notify(&args).await.map(|()| serde_json::json!({"delivered": true})) }
                },
                declare::<NotifyArgs>(
                    "notify_user",
                    "Tell the user something that needs no answer (progress, a warning, an error).",
                    SafetyLevel::Safe,
                ),
            ),
            ToolRegistration::from_async_with_context(
                "final_answer",
                move |cx: CallContext, args: FinalArgs| {
                    let tools = finish.clone();
                    async move { tools.finish(&cx, &args).await }
                },
                declare::<FinalArgs>(
                    "final_answer",
                    "Give the final answer to the user's task. This ends the run; call it once, last.",
                    SafetyLevel::Cautious,
                ),
            ),
        ]
    }
}

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

type LineReceiver = mpsc::UnboundedReceiver<io::Result<String>>;

/// A [`UserChannel`] on a terminal: questions are written to the writer and
/// answered by one line each from the reader.
///
/// The reader is read on a thread of its own from the first question on, so
/// a timed-out question never leaves a blocked read behind; lines typed
/// while no question is open are discarded when the next one is asked. With
/// choices, the user answers with a number or a choice's text, and is asked
/// again (three times in all) when the answer picks none. End of input makes
/// every later question fail with [`UserError::Closed`].
///
/// ```
/// use std::io::Cursor;
/// use toolreg_builtins::user::{AskArgs, TerminalChannel, UserTools};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let channel = TerminalChannel::new(Cursor::new(b"maybe\n2\n".to_vec()), Vec::new());
/// let user = UserTools::new(channel);
/// let answer = user.ask(&AskArgs::new("Proceed?").choices(["yes", "no"]), std::future::pending()).await;
/// assert_eq!(answer.unwrap().answer, "no");
/// # }
/// ```
pub struct TerminalChannel<W> {
    writer: Arc<Mutex<W>>,
    reader: Mutex<Option<Box<dyn BufRead + Send>>>,
    lines: tokio::sync::Mutex<Option<LineReceiver>>,
}

impl<W> fmt::Debug for TerminalChannel<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalChannel").finish_non_exhaustive()
    }
}

impl TerminalChannel<Stderr> {
    /// Read answers from standard input, write to standard error.
    pub fn stdio() -> Self {
        TerminalChannel::new(io::BufReader::new(io::stdin()), io::stderr())
    }
}

impl<W: Write + Send + 'static> TerminalChannel<W> {
    /// Read answers from `reader`, write questions and notices to `writer`.
    pub fn new(reader: impl BufRead + Send + 'static, writer: W) -> Self {
        TerminalChannel {
            writer: Arc::new(Mutex::new(writer)),
            reader: Mutex::new(Some(Box::new(reader))),
            lines: tokio::sync::Mutex::new(None),
        }
    }

    fn write(&self, text: &str) -> Result<(), UserError> {
        let mut writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        writer
            .write_all(text.as_bytes())
            .and_then(|()| writer.flush())
            .map_err(|e| UserError::Io { message: e.to_string() })
    }

    /// Start the reading thread, once.
    fn start(&self) -> Result<LineReceiver, UserError> {
        let reader = self.reader.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(mut reader) = reader else {
            return Err(UserError::Closed { reason: "the terminal's input has ended".to_owned() });
        };
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("toolreg-user-input".into())
            .spawn(move || {
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) => break,
                        Ok(_) => {
                            if tx.send(Ok(line)).is_err() {
                                break;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            break;
                        }
                    }
                }
            })
            .map_err(|e| UserError::Io { message: e.to_string() })?;
        Ok(rx)
    }

    async fn ask_lines(&self, question: Question) -> Result<String, UserError> {
        let mut lines = self.lines.lock().await;
        let first = lines.is_none();
        if first {
            *lines = Some(self.start()?);
        }
        let Some(rx) = lines.as_mut() else {
            return Err(UserError::Closed { reason: "the terminal's input has ended".to_owned() });
        };
        let mut closed = false;
        // Lines read since the last question are stale. Before the first
        // there is no last question: whatever the new reading thread has
        // already read answers this one (it may be quick with piped input).
        if !first {
            while let Ok(stale) = rx.try_recv() {
                closed |= stale.is_err();
            }
        }
        let mut prompt = format!("\n? {}\n", question.question);
        for (i, choice) in question.choices.iter().enumerate() {
            prompt.push_str(&format!("  {}) {choice}\n", i + 1));
        }
        prompt.push_str("> ");
        self.write(&prompt)?;
        if closed {
            return Err(UserError::Closed { reason: "the terminal's input failed".to_owned() });
        }
        for _ in 0..ATTEMPTS {
            let line = match rx.recv().await {
                None => return Err(UserError::Closed { reason: "the terminal's input has ended".to_owned() }),
                Some(Err(e)) => return Err(UserError::Io { message: e.to_string() }),
                Some(Ok(line)) => line.trim().to_owned(),
            };
            if question.choices.is_empty() {
                if !line.is_empty() {
                    return Ok(line);
                }
                self.write("Please type an answer.\n> ")?;
                continue;
            }
            if let Some(i) = question.resolve(&line) {
                return Ok(question.choices[i].clone());
            }
            self.write(&format!(
                "Please answer with a number from 1 to {} or a choice's text.\n> ",
                question.choices.len()
            ))?;
        }
        Err(UserError::Closed { reason: format!("no usable answer after {ATTEMPTS} tries") })
    }
}

impl<W: Write + Send + 'static> UserChannel for TerminalChannel<W> {
    fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>> {
        Box::pin(self.ask_lines(question))
    }

    fn notify(&self, notice: Notice) -> BoxFuture<'_, Result<(), UserError>> {
        Box::pin(async move { self.write(&format!("[{}] {}\n", notice.level, notice.message)) })
    }

    fn deliver_final(&self, answer: String) -> BoxFuture<'_, Result<(), UserError>> {
        Box::pin(async move { self.write(&format!("\nFinal answer:\n{answer}\n")) })
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("terminal")
    }
}
