//! [`TerminalChannel`]: the user is a person at a terminal, answering one
//! line per question.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, Stderr, Write};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

use super::{Notice, Question, UserChannel, UserError};

/// How many unreadable answers a terminal accepts before giving up.
const ATTEMPTS: usize = 3;

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
