//! An imported tool called by a client on the 2026-07-28 revision, which
//! takes questions only as `input_required` results (Multi Round-Trip
//! Requests).
//!
//! The call runs the remote call on a task of its own and waits for its
//! answer or a question of the server: a question parks the remote call
//! ([`Parked`]) and is put to the client through the call's [`InputRound`]
//! under [`FORWARDED_KEY`]; the client's next round takes the parked call
//! up again (its sealed state names it), gives the server the answer and
//! waits again. Progress goes to the round that waits. A remote task's
//! questions are not put to such a client (its rounds do not reach into a
//! task): the task is cancelled, saying so.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::InputRequests;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use toolreg::{CallContext, CancellationToken, ErasedTool, ProgressReporter, ToolError, ToolOutput};
use tracing::Instrument;

use super::forward::{Asker, Caller, Forward, Question};
use crate::client::NoTaskQuestions;
use crate::protocol::{InputRound, STATE_TTL};

/// The key of a remote server's question in an `input_required` result's
/// `inputRequests` (and of the answer in `inputResponses`).
pub const FORWARDED_KEY: &str = "toolreg_forwarded";

/// The key of a parked call's id in the round's state.
const PARKED: &str = "toolreg_parked";

/// Calls parked at most per remote server.
const MAX_PARKED: usize = 1024;

/// A call of a 2026-07-28 client parked between rounds: the remote call
/// runs on (its task sends the output), its server's question waits for
/// the client's next round.
pub(super) struct Parked {
    /// When it was parked.
    at: Instant,
    /// Cancels the remote call.
    cancel: CancellationToken,
    /// The round its progress goes to, when the client takes progress.
    progress: Option<Arc<Mutex<CallContext>>>,
    output: oneshot::Receiver<Result<ToolOutput, ToolError>>,
    questions: mpsc::Receiver<Question>,
    /// The question put to the client, waiting for its answer.
    pending: Option<Question>,
}

/// One round of a 2026-07-28 client's call of `tool`: the call started, or
/// taken up again when the round's state names a parked one.
pub(super) async fn call(
    forward: &Arc<Forward>,
    tool: Arc<dyn ErasedTool>,
    cx: CallContext,
    round: &InputRound,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let Some(id) = round.state().and_then(|state| state.get(PARKED)).and_then(Value::as_u64) else {
        let parked = start(forward, tool, &cx, round, args);
        return resume(forward, &cx, round, parked).await;
    };
    let parked = forward.parked.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    let parked = parked.ok_or_else(|| {
        ToolError::failed(format!(
            "the call to MCP server `{}` that waited for this answer is gone (it ended or waited too long); call \
             the tool again",
            forward.server
        ))
    })?;
    resume(forward, &cx, round, parked).await
}

/// Start the remote call on a task of its own, with a cancellation of its
/// own (the round may end before it does) and its progress going to
/// whichever round waits for it.
fn start(
    forward: &Arc<Forward>,
    tool: Arc<dyn ErasedTool>,
    cx: &CallContext,
    round: &InputRound,
    args: Value,
) -> Parked {
    let tasks =
        Arc::new(NoTaskQuestions::new("toolreg does not forward from a task to a client on the 2026-07-28 revision"));
    let (questions, receiver) = mpsc::channel(1);
    let caller = Caller::Rounds {
        questions,
        capabilities: round.client_capabilities().cloned().map(Arc::new),
        tasks: Arc::clone(&tasks),
    };
    let asker = Asker::open(forward, caller);
    let cancel = CancellationToken::new();
    let mut remote = cx.clone().with_cancellation(cancel.clone());
    let extensions = remote.extensions_mut();
    extensions.remove::<InputRound>();
    extensions.insert_arc(tasks);
    let progress = cx.extensions().get::<ProgressReporter>().map(|_| {
        let target = Arc::new(Mutex::new(cx.clone()));
        let to = Arc::clone(&target);
        extensions.insert(ProgressReporter::new(move |report| {
            let round = to.lock().unwrap_or_else(PoisonError::into_inner).clone();
            round.report_progress(report.progress, report.total, report.message.as_deref());
        }));
        target
    });
    let call = tool.call(remote, args);
    let (done, output) = oneshot::channel();
    tokio::spawn(
        async move {
            let answer = call.await;
            drop(asker);
            let _ = done.send(answer);
        }
        .in_current_span(),
    );
    Parked { at: Instant::now(), cancel, progress, output, questions: receiver, pending: None }
}

/// Wait for a 2026-07-28 client's call: its output, or a question of the
/// server (which parks the call and is put to the client).
async fn resume(
    forward: &Arc<Forward>,
    cx: &CallContext,
    round: &InputRound,
    mut parked: Parked,
) -> Result<ToolOutput, ToolError> {
    // Progress the server reports from now on goes to this round's client.
    if let Some(target) = &parked.progress
        && cx.extensions().get::<ProgressReporter>().is_some()
    {
        *target.lock().unwrap_or_else(PoisonError::into_inner) = cx.clone();
    }
    if let Some(question) = parked.pending.take() {
        match round.response(FORWARDED_KEY) {
            Some(answer) => {
                // The server may have stopped waiting: then it is moot.
                let _ = question.answer.send(answer.clone());
            }
            // Not answered: asked again.
            None => {
                parked.pending = Some(question);
                return park(forward, round, parked);
            }
        }
    }
    tokio::select! {
        output = &mut parked.output => output.unwrap_or_else(|_| {
            Err(ToolError::failed(format!("the call to MCP server `{}` ended without an answer", forward.server)))
        }),
        Some(question) = parked.questions.recv() => {
            parked.pending = Some(question);
            park(forward, round, parked)
        }
        () = cx.cancelled() => {
            // The remote call tells its server, then ends.
            parked.cancel.cancel();
            let _ = (&mut parked.output).await;
            Err(ToolError::Cancelled)
        }
    }
}

/// Keep the call for the client's next round and put the server's
/// question to the client (the call's output is then not sent).
fn park(forward: &Arc<Forward>, round: &InputRound, mut parked: Parked) -> Result<ToolOutput, ToolError> {
    let Some(question) = parked.pending.as_ref().map(|question| question.request.clone()) else {
        return Err(ToolError::failed("nothing to ask"));
    };
    let key = forward.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    {
        let mut lot = forward.parked.lock().unwrap_or_else(PoisonError::into_inner);
        // A call whose client never came back is dropped after the
        // state's lifetime: the server's question is then refused.
        lot.retain(|_, waiting| waiting.at.elapsed() < STATE_TTL);
        if lot.len() >= MAX_PARKED {
            return Err(ToolError::failed(format!(
                "MCP server `{}` asked a question, but {MAX_PARKED} calls already wait for their client's answer",
                forward.server
            )));
        }
        parked.at = Instant::now();
        lot.insert(key, parked);
    }
    // Dropped when its time is up even if no other call parks meanwhile.
    let lot = Arc::downgrade(forward);
    tokio::spawn(async move {
        tokio::time::sleep(STATE_TTL).await;
        if let Some(forward) = lot.upgrade() {
            forward.parked.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
        }
    });
    // An approval used for this call in this round goes on to the next
    // round with the state (the round carries it), for this call only.
    let mut requests = InputRequests::new();
    requests.insert(FORWARDED_KEY.to_owned(), question);
    round.ask(requests, json!({PARKED: key}));
    Ok(ToolOutput::new(Value::Null))
}
