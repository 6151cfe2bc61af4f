//! The host's end: start a worker, give it the program, run the calls it
//! sends through the engine (or answer them from the journal on resume),
//! and enforce the limits the worker cannot be trusted with alone — the
//! wall clock, the number of calls, the size of every message.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use toolreg::policy::PrintedBefore;
use toolreg::{CallOptions, Extensions, Principal, ToolCall, ToolEngine, ToolError, ToolExecutor, ToolOutput};

use crate::journal::{Entry, Journal};
use crate::protocol::{Answer, FromWorker, ProgramCall, Reply, ToWorker};
use crate::{CodeError, Limits};

/// How to start a worker process: a program and its arguments. It must run
/// [`worker::serve`](crate::worker::serve) — the `toolreg-code-worker`
/// binary of this crate, or a host's own binary with a subcommand that
/// calls it (`toolreg code-worker`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Worker {
    /// Start `program` (with no arguments) as the worker.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Worker { program: program.into(), args: Vec::new() }
    }

    /// With this argument appended.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Start one, with an empty environment (no secret reaches the
    /// program's process) and nothing but its stdin and stdout.
    fn spawn(&self) -> Result<(Child, ChildStdin, ChildStdout), CodeError> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .env_clear()
            // The one variable it gets: dates format the same everywhere
            // (Landlock hides the zone files where it runs anyway).
            .env("TZ", "UTC")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| CodeError::Sandbox {
                message: format!("could not start the worker `{}`: {e}", self.program.display()),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(CodeError::Sandbox { message: "the worker has no pipes".into() });
        };
        Ok((child, stdin, stdout))
    }
}

/// A program that finished.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProgramOutput {
    /// What it returned (`null` for nothing).
    pub value: Value,
    /// What it printed.
    pub output: String,
    /// How many tool calls it made (replayed ones included).
    pub calls: usize,
}

impl ProgramOutput {
    /// As a tool's output: `{"result": …, "output": "…"}` (the output left
    /// out when nothing was printed).
    pub fn into_tool_output(self) -> ToolOutput {
        let mut value = json!({ "result": self.value });
        if !self.output.is_empty() {
            value["output"] = Value::String(self.output);
        }
        ToolOutput::new(value)
    }
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Ended {
    Finished(ProgramOutput),
    Failed {
        error: CodeError,
        output: String,
    },
    /// A call waits for an approval from outside; `journal` holds every
    /// other call made so far with its answer, and what the program
    /// printed before it stopped.
    Waiting {
        journal: Journal,
        reason: String,
    },
}

/// One program's run.
pub(crate) struct Session {
    pub(crate) engine: ToolEngine,
    /// The tools the program may call.
    pub(crate) offered: Arc<HashSet<String>>,
    pub(crate) limits: Limits,
    /// The id of the call that runs the program: each call it makes gets
    /// the id `<run_id>/<n>`, which is how the audit trail ties them to it.
    pub(crate) run_id: String,
    pub(crate) extensions: Extensions,
    /// Who the program runs for: its calls run for the same principal.
    pub(crate) principal: Option<Arc<Principal>>,
    pub(crate) cancel: CancellationToken,
    /// The calls recorded before a suspension, to answer again.
    pub(crate) replay: Journal,
    /// Whether a call waiting for an approval may stop the program (the
    /// caller can store it and resume), or fails inside it.
    pub(crate) can_wait: bool,
}

impl Session {
    /// Run `program` in a new worker.
    ///
    /// The conversation with the worker runs on a blocking thread of its
    /// own, over plain pipes, and drives the engine's calls from there
    /// (`Handle::block_on`: the tools still run on the caller's runtime).
    /// A call from the program is then one write and one read on one
    /// thread. Over the runtime's async pipes the same round trip cost
    /// about 65 µs a call on a multi-thread runtime (the worker's message
    /// read on one runtime thread and its task woken on another), about
    /// 30 µs this way (BENCHMARKS.md, "Issue 22").
    pub(crate) async fn run(self, worker: &Worker, program: &str) -> Ended {
        if program.len() > self.limits.program_bytes {
            let error = CodeError::ProgramTooLarge { bytes: program.len(), limit_bytes: self.limits.program_bytes };
            return Ended::Failed { error, output: String::new() };
        }
        let (child, stdin, stdout) = match worker.spawn() {
            Ok(started) => started,
            Err(error) => return Ended::Failed { error, output: String::new() },
        };
        let child = Arc::new(Mutex::new(child));
        // However this future ends (answered, cancelled, dropped), the
        // worker is killed; the thread then reads end of file and reaps it.
        let _kill = KillOnDrop(Arc::clone(&child));
        let cancel = self.cancel.clone();
        let runtime = Handle::current();
        let program = program.to_owned();
        let conversation = tokio::task::spawn_blocking(move || {
            let mut link = Link { stdin, stdout: BufReader::new(stdout), limit: self.limits.message_bytes };
            let ended = match self.converse(&runtime, &mut link, &program) {
                // The worker's own account of its death says more.
                Err(CodeError::Sandbox { message }) => {
                    Ended::Failed { error: died(message, exit_status(&child), &self.limits), output: String::new() }
                }
                Err(error) => Ended::Failed { error, output: String::new() },
                Ok(ended) => ended,
            };
            end(&child);
            ended
        });
        tokio::select! {
            joined = conversation => joined.unwrap_or_else(|e| Ended::Failed {
                error: CodeError::Sandbox { message: format!("the program's session ended abnormally: {e}") },
                output: String::new(),
            }),
            () = cancel.cancelled() => Ended::Failed { error: CodeError::Cancelled, output: String::new() },
        }
    }

    /// Talk to the worker until the program ends (on the session's thread).
    fn converse(&self, runtime: &Handle, link: &mut Link, program: &str) -> Result<Ended, CodeError> {
        let tools: Vec<String> = self.offered.iter().cloned().collect();
        link.send(&ToWorker::Start { program: program.to_owned(), tools, limits: self.limits })?;
        // The worker stops itself at its time limit; this clock, which
        // runs only while the worker has the turn, is for a worker stuck
        // where its interrupt never comes.
        let mut left = self.limits.time + GRACE;
        let mut journal = Journal::default();
        let mut made = 0usize;
        // What the program printed so far, for an approver to see at a
        // call that waits (the whole comes again when it ends).
        let mut printed = String::new();
        loop {
            let started = Instant::now();
            let Some(message) = link.receive(left)? else {
                return Err(CodeError::Timeout { limit_ms: millis(self.limits.time) });
            };
            left = left.saturating_sub(started.elapsed());
            let calls = match message {
                FromWorker::Done { value, output } => {
                    return Ok(Ended::Finished(ProgramOutput { value, output, calls: made }));
                }
                FromWorker::Failed { error, output } => return Ok(Ended::Failed { error, output }),
                FromWorker::Calls { calls, printed: more } => {
                    if printed.len() + more.len() > self.limits.output_bytes {
                        return Err(CodeError::OutputLimit { limit_bytes: self.limits.output_bytes });
                    }
                    printed.push_str(&more);
                    calls
                }
            };
            made += calls.len();
            if made > self.limits.max_calls {
                return Err(CodeError::CallLimit { limit: self.limits.max_calls });
            }
            let (replies, waiting) = runtime.block_on(self.answer(calls, &mut journal, &printed))?;
            if let Some(reason) = waiting {
                journal.printed = printed;
                return Ok(Ended::Waiting { journal, reason });
            }
            link.send(&ToWorker::Results { results: replies })?;
        }
    }

    /// Answer one batch of the program's calls: from the record where the
    /// call was made before a suspension, else through the engine, all the
    /// new ones as one batch. Every answer joins `journal`. What the
    /// program `printed` so far goes with the calls, for their approver
    /// ([`PrintedBefore`]).
    async fn answer(
        &self,
        calls: Vec<ProgramCall>,
        journal: &mut Journal,
        printed: &str,
    ) -> Result<(Vec<Reply>, Option<String>), CodeError> {
        let mut replies = Vec::with_capacity(calls.len());
        let mut new = Vec::new();
        for call in calls {
            if let Some(entry) = self.replay.calls.get(&call.id) {
                let answer = entry.replay(call.id, &call.tool, &call.args)?;
                journal.calls.insert(call.id, entry.clone());
                replies.push(Reply { id: call.id, outcome: answer });
            } else if !self.offered.contains(&call.tool) {
                let error = ToolError::NotOffered { available: Vec::new() };
                replies.push(Reply { id: call.id, outcome: refusal(&call.tool, &error) });
            } else {
                new.push(call);
            }
        }
        if new.is_empty() {
            return Ok((replies, None));
        }
        let batch: Vec<ToolCall> = new
            .iter()
            .map(|c| ToolCall::new(format!("{}/{}", self.run_id, c.id), c.tool.clone(), c.args.clone()))
            .collect();
        let mut extensions = self.extensions.clone();
        if !printed.is_empty() {
            extensions.insert(PrintedBefore::new(printed));
        }
        let mut options = CallOptions::new().cancel(self.cancel.child_token()).extensions(extensions);
        options.principal = self.principal.clone();
        // A call awaited alone runs right here, on the session's thread;
        // a batch spreads over the runtime's threads.
        let results = match <[ToolCall; 1]>::try_from(batch) {
            Ok([call]) => vec![self.engine.execute_call(call, options).await],
            Err(batch) => self.engine.execute_batch(batch, options).await,
        };
        let new_tools: HashMap<u64, String> = new.iter().map(|c| (c.id, c.tool.clone())).collect();
        let mut waiting = None;
        for (call, result) in new.into_iter().zip(results) {
            let answer = match result.outcome {
                Err(ToolError::Pending { reason, .. }) if self.can_wait => {
                    // Not recorded: on resume it runs, with the decision.
                    waiting = Some(reason);
                    continue;
                }
                Err(ToolError::Pending { reason, .. }) => refusal(
                    &call.tool,
                    &ToolError::failed(format!(
                        "this call waits for an approval ({reason}), and a program run here cannot wait for one"
                    )),
                ),
                Err(error) => refusal(&call.tool, &error),
                // Measured without recursion before anything walks it
                // recursively (the copy below, the message to the worker).
                Ok(output) if nesting(&output.value) > MAX_RESULT_DEPTH => refusal(
                    &call.tool,
                    &ToolError::ResultSerialization {
                        message: format!("the result is nested more than {MAX_RESULT_DEPTH} levels deep"),
                    },
                ),
                Ok(output) => Answer::Ok(program_value(&output)),
            };
            journal.calls.insert(call.id, Entry::new(&call.tool, &call.args, answer.clone()));
            replies.push(Reply { id: call.id, outcome: answer });
        }
        fit(&mut replies, &new_tools, self.limits.message_bytes, journal);
        Ok((replies, waiting))
    }
}

/// How deep a tool's result may nest to reach a program (the interpreter's
/// stack bounds it below this anyway).
const MAX_RESULT_DEPTH: usize = 2_000;

/// How deep `value` nests, counted without recursion.
fn nesting(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        if depth > MAX_RESULT_DEPTH {
            break;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    deepest
}

/// Make the answers of one batch fit in one message to the worker: the
/// largest results of the new calls are answered with
/// [`ToolError::ResultTooLarge`] instead until they do (the tools ran; the
/// program is told its result was too large, and the record says the same,
/// so a replay answers alike).
fn fit(replies: &mut [Reply], new: &HashMap<u64, String>, limit: usize, journal: &mut Journal) {
    // Room for the envelope of the message.
    let budget = limit.saturating_sub(1024);
    let size = |reply: &Reply| serde_json::to_string(reply).map_or(usize::MAX, |t| t.len());
    let mut sizes: Vec<usize> = replies.iter().map(size).collect();
    while sizes.iter().fold(0usize, |a, b| a.saturating_add(*b)) > budget {
        let Some((at, _)) = sizes
            .iter()
            .enumerate()
            .filter(|(i, _)| matches!(replies[*i].outcome, Answer::Ok(_)) && new.contains_key(&replies[*i].id))
            .max_by_key(|(_, size)| **size)
        else {
            return;
        };
        let reply = &mut replies[at];
        let tool = new.get(&reply.id).cloned().unwrap_or_default();
        let error = ToolError::ResultTooLarge { size: sizes[at], limit: budget };
        reply.outcome = refusal(&tool, &error);
        if let Some(entry) = journal.calls.get_mut(&reply.id) {
            entry.answer = reply.outcome.clone();
        }
        sizes[at] = size(reply);
    }
}

/// Time past the limit before the host kills a worker that did not stop
/// itself.
const GRACE: Duration = Duration::from_secs(2);

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What the program sees of a failed call: a `ToolError` with the kind and
/// the text the model would read.
fn refusal(tool: &str, error: &ToolError) -> Answer {
    // The exception is already named `ToolError`: no second "Error:".
    let text = error.model_text(tool);
    let message = text.strip_prefix("Error: ").map_or_else(|| text.clone(), str::to_owned);
    Answer::Error { kind: error.kind().to_owned(), message }
}

/// What the program sees of a call's output: its value when that is all
/// there is; with content blocks, `{ text, content, value }` (each block
/// as its JSON object: images and files keep their data).
fn program_value(output: &ToolOutput) -> Value {
    if output.content.is_empty() {
        return output.value.clone();
    }
    json!({
        "text": output.text(),
        "content": output.content.iter().map(toolreg::Content::to_json).collect::<Vec<_>>(),
        "value": output.value,
    })
}

/// The error for a worker that died: a limit the kernel enforced where its
/// status says so.
fn died(message: String, status: Option<std::process::ExitStatus>, limits: &Limits) -> CodeError {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        match status.and_then(|s| s.signal()) {
            Some(signal) if signal == nix::sys::signal::Signal::SIGXCPU as i32 => {
                return CodeError::Timeout { limit_ms: millis(limits.time) };
            }
            Some(signal) => {
                return CodeError::Sandbox { message: format!("{message} (the worker was ended by signal {signal})") };
            }
            None => {}
        }
    }
    let _ = limits;
    match status {
        Some(status) => CodeError::Sandbox { message: format!("{message} (the worker exited: {status})") },
        None => CodeError::Sandbox { message },
    }
}

/// The host's end of the pipes.
struct Link {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    limit: usize,
}

impl Link {
    fn send(&mut self, message: &ToWorker) -> Result<(), CodeError> {
        let lost = |e: std::io::Error| CodeError::Sandbox { message: format!("could not write to the worker: {e}") };
        let mut line = serde_json::to_vec(message).map_err(|e| CodeError::Sandbox { message: e.to_string() })?;
        if line.len() > self.limit {
            return Err(CodeError::Sandbox {
                message: format!("a message to the worker is {} bytes, over the limit of {}", line.len(), self.limit),
            });
        }
        line.push(b'\n');
        self.stdin.write_all(&line).map_err(lost)?;
        self.stdin.flush().map_err(lost)
    }

    /// The worker's next message, or `None` if it sends none within `wait`.
    fn receive(&mut self, wait: Duration) -> Result<Option<FromWorker>, CodeError> {
        let lost = |e: std::io::Error| CodeError::Sandbox { message: format!("could not read from the worker: {e}") };
        let deadline = Instant::now() + wait;
        let mut line = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.stdout.buffer().is_empty() && !readable(self.stdout.get_ref(), left).map_err(lost)? {
                return Ok(None);
            }
            let available = self.stdout.fill_buf().map_err(lost)?;
            if available.is_empty() {
                return Err(CodeError::Sandbox { message: "the worker stopped answering".into() });
            }
            let end = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..end.unwrap_or(available.len())];
            if line.len() + chunk.len() > self.limit {
                return Err(CodeError::Sandbox {
                    message: format!("the worker sent more than {} bytes at once", self.limit),
                });
            }
            line.extend_from_slice(chunk);
            let taken = chunk.len() + usize::from(end.is_some());
            self.stdout.consume(taken);
            if end.is_some() {
                break;
            }
        }
        serde_json::from_slice(&line)
            .map(Some)
            .map_err(|e| CodeError::Sandbox { message: format!("the worker sent a malformed message: {e}") })
    }
}

/// Whether the worker's pipe has something to read (or is closed) within
/// `wait`.
#[cfg(unix)]
fn readable(pipe: &ChildStdout, wait: Duration) -> std::io::Result<bool> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    // Whole milliseconds, rounded up: a wait never ends early.
    let millis = wait.as_micros().div_ceil(1000);
    let timeout = PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX);
    loop {
        let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(ready) => return Ok(ready > 0),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Elsewhere the read blocks: the worker's own interrupt and CPU limit
/// bound it, and cancelling the run kills the worker.
#[cfg(not(unix))]
fn readable(_: &ChildStdout, _: Duration) -> std::io::Result<bool> {
    Ok(true)
}

/// Kills the worker when dropped.
struct KillOnDrop(Arc<Mutex<Child>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // A worker already reaped is not signalled again (std keeps its
        // status), so this never reaches a process that took its pid.
        let _ = self.0.lock().unwrap_or_else(PoisonError::into_inner).kill();
    }
}

/// The status of a worker that is ending or has ended, waiting up to a
/// second for it.
fn exit_status(child: &Mutex<Child>) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    loop {
        match child.lock().unwrap_or_else(PoisonError::into_inner).try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if started.elapsed() < Duration::from_secs(1) => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

/// Kill the worker and reap it.
fn end(child: &Mutex<Child>) {
    let mut child = child.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = child.kill();
    let _ = child.wait();
}
