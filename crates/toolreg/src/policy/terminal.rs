//! [`TerminalApprover`]: ask a person on a terminal.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead, BufReader, Stderr, Stdin, Write};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use crate::policy::approval::{ApprovalRequest, Approver, Decision};

/// How many unreadable answers before the approver gives up and denies.
const ATTEMPTS: usize = 3;

/// Asks a person to approve each call: prints the tool and its arguments to
/// the writer and reads one answer line from the reader.
///
/// Answers: `y` / `yes` approves; `n` / `no`, optionally followed by a reason,
/// denies (the reason reaches the model); `e` / `edit` asks for replacement
/// arguments as one line of JSON. End of input denies, so a closed or
/// non-interactive standard input never blocks a call forever; so do three
/// unreadable answers in a row.
///
/// The reader and writer are injectable, which is how it is tested:
///
/// ```
/// use std::io::Cursor;
/// use std::sync::Arc;
/// use toolreg::policy::{Approver, ApprovalRequest, Decision, TerminalApprover};
/// use toolreg::ToolDeclaration;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let approver = TerminalApprover::new(Cursor::new(b"n not today\n".to_vec()), Vec::new());
/// let decl = Arc::new(ToolDeclaration::new("rm", "Delete a file", json!({"type": "object"})));
/// let request = ApprovalRequest::new(decl, Some("c1"), json!({"path": "/etc"}));
/// assert_eq!(approver.decide(request).await, Decision::deny("not today"));
/// # });
/// ```
pub struct TerminalApprover<R, W> {
    io: Arc<Mutex<(R, W)>>,
}

impl<R, W> fmt::Debug for TerminalApprover<R, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalApprover").finish_non_exhaustive()
    }
}

impl<R, W> Clone for TerminalApprover<R, W> {
    fn clone(&self) -> Self {
        TerminalApprover { io: Arc::clone(&self.io) }
    }
}

impl TerminalApprover<BufReader<Stdin>, Stderr> {
    /// Read answers from standard input, write prompts to standard error.
    pub fn stdio() -> Self {
        TerminalApprover::new(BufReader::new(io::stdin()), io::stderr())
    }
}

impl<R, W> TerminalApprover<R, W>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    /// Read answers from `reader`, write prompts to `writer`. One question is
    /// asked at a time, even when calls run concurrently.
    pub fn new(reader: R, writer: W) -> Self {
        TerminalApprover { io: Arc::new(Mutex::new((reader, writer))) }
    }
}

impl<R, W> Approver for TerminalApprover<R, W>
where
    R: BufRead + Send + 'static,
    W: Write + Send + 'static,
{
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        let io = Arc::clone(&self.io);
        Box::pin(async move {
            // Reading a terminal blocks; keep it off the async workers.
            let asked = tokio::task::spawn_blocking(move || {
                let mut guard = io.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                let (reader, writer) = &mut *guard;
                ask(reader, writer, &request)
            })
            .await;
            asked.unwrap_or_else(|_| Decision::deny("the approval prompt failed"))
        })
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("terminal")
    }
}

fn ask(reader: &mut impl BufRead, writer: &mut impl Write, request: &ApprovalRequest) -> Decision {
    match ask_io(reader, writer, request) {
        Ok(decision) => decision,
        Err(error) => Decision::deny(format!("the approval prompt failed: {error}")),
    }
}

fn read_answer(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

fn ask_io(reader: &mut impl BufRead, writer: &mut impl Write, request: &ApprovalRequest) -> io::Result<Decision> {
    const CLOSED: &str = "no answer from the user (input closed), so the call was not approved";
    let arguments = serde_json::to_string_pretty(request.arguments()).unwrap_or_default();
    writeln!(writer, "\nTool `{}` ({}) wants to run", request.tool(), request.declaration().safety)?;
    if let Some(id) = request.call_id() {
        writeln!(writer, "  call id: {id}")?;
    }
    for line in arguments.lines() {
        writeln!(writer, "  {line}")?;
    }
    if let Some(preview) = request.preview() {
        writeln!(writer, "  it would do:")?;
        for line in preview.lines() {
            writeln!(writer, "  | {line}")?;
        }
    }
    if let Some(printed) = request.printed_before() {
        writeln!(writer, "  the program printed before it:")?;
        for line in printed.lines() {
            writeln!(writer, "  > {line}")?;
        }
    }
    for _ in 0..ATTEMPTS {
        write!(writer, "Approve? [y]es / [n]o [reason] / [e]dit arguments: ")?;
        writer.flush()?;
        let Some(answer) = read_answer(reader)? else {
            writeln!(writer)?;
            return Ok(request.deny(CLOSED));
        };
        let (word, rest) = answer.split_once(char::is_whitespace).unwrap_or((&answer, ""));
        match word.to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(request.approve()),
            "n" | "no" => {
                let reason = rest.trim();
                let reason = if reason.is_empty() { "the user declined" } else { reason };
                return Ok(request.deny(reason));
            }
            "e" | "edit" => {
                write!(writer, "New arguments (JSON on one line): ")?;
                writer.flush()?;
                let Some(text) = read_answer(reader)? else {
                    writeln!(writer)?;
                    return Ok(request.deny(CLOSED));
                };
                match serde_json::from_str(&text) {
                    Ok(value) => return Ok(request.approve_with(value)),
                    Err(error) => writeln!(writer, "Not valid JSON ({error}).")?,
                }
            }
            _ => writeln!(writer, "Please answer y, n or e.")?,
        }
    }
    Ok(request.deny("no usable answer from the user, so the call was not approved"))
}
