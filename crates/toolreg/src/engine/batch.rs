//! Running the calls of one model turn together.
//!
//! The calls are dealt to workers, one Tokio task each: calls free to run in
//! parallel are spread over one worker per runtime thread, and each lane of
//! calls that must not overlap gets a worker that runs them one at a time.
//! A worker drives its calls as concurrent futures and watches the batch's
//! cancellation and timeout once for all of them, so a call costs no task,
//! no timer and no cancellation waiter of its own. When there is only one
//! worker (a single call, or calls that all share a lane), it runs on the
//! caller's task: a task of its own would only add a hand-over between
//! threads.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::pipeline::{self, Control};
use super::record::Record;
use super::{Stop, ToolEngine};
use crate::exec::{Extensions, ToolArguments, ToolCall, ToolError, ToolResult};
use crate::policy::canonical_json;
use crate::principal::Principal;

/// Which calls must not overlap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Lane {
    /// Tools that change something and name no exclusive key.
    Writes,
    /// Calls whose exclusive-key argument has this (canonical JSON) value.
    Key(String),
}

/// The lane a call must run in, if any. A call whose tool has an exclusive
/// key has its arguments parsed here (once: they travel on parsed).
fn lane_of(engine: &ToolEngine, call: &mut ToolCall) -> Option<Lane> {
    let pipeline = engine.pipeline();
    let decl = pipeline.offered.get(call.name.as_str())?.declaration();
    if let Some(key) = decl.exclusive_key.as_deref() {
        if let ToolArguments::Raw(text) = &call.arguments {
            let limits = pipeline.registered.limits();
            if limits.check_text(text).is_err() {
                return None; // refused before it runs: nothing to protect
            }
            match crate::args::parse(text) {
                Ok(value) => call.arguments = ToolArguments::Json(value),
                Err(_) => return None,
            }
        }
        if let ToolArguments::Json(args) = &call.arguments
            && let Some(value) = args.get(key)
        {
            return Some(Lane::Key(canonical_json(value)));
        }
    }
    if decl.is_read_only() || pipeline.options.parallel_writes { None } else { Some(Lane::Writes) }
}

/// What every worker of a batch shares.
#[derive(Clone)]
struct Shared {
    engine: ToolEngine,
    /// The caller's token: cancelling it stops the batch.
    cancel: CancellationToken,
    /// The token the tools see: a child of the caller's, also cancelled when
    /// the batch times out.
    token: Arc<CancellationToken>,
    deadline: Option<(tokio::time::Instant, std::time::Duration)>,
    /// The concurrency limit, when the batch is larger than it.
    semaphore: Option<Arc<Semaphore>>,
    /// Why the batch stopped, once it has: read by the calls it drops.
    stopped: Arc<OnceLock<Stop>>,
    /// The caller's typed values for every call's context.
    extensions: Option<Arc<Extensions>>,
    /// Who every call of the batch runs for.
    principal: Option<Arc<Principal>>,
}

/// Run the calls of one batch and answer each, in the order of the calls.
pub(crate) async fn run(
    engine: &ToolEngine,
    calls: Vec<ToolCall>,
    cancel: CancellationToken,
    extensions: Extensions,
    principal: Option<Arc<Principal>>,
) -> Vec<ToolResult> {
    let options = engine.options();
    let limit = options.max_concurrency.max(1);
    let shared = Shared {
        engine: engine.clone(),
        token: Arc::new(cancel.child_token()),
        cancel,
        deadline: options.batch_timeout.map(|limit| (tokio::time::Instant::now() + limit, limit)),
        // No limit to enforce when the whole batch fits under it.
        semaphore: (calls.len() > limit).then(|| Arc::new(Semaphore::new(limit))),
        stopped: Arc::default(),
        extensions: (!extensions.is_empty()).then(|| Arc::new(extensions)),
        principal,
    };
    let Dealt { mut queues, mut results, labels } = deal(engine, calls, shared.principal.as_ref());
    // One queue (a model's usual single call) runs right here: a task of
    // its own would only add a hand-over between threads (measured: 13 to
    // 27 µs on a 2-core machine, more than the rest of an agent step).
    if queues.len() == 1 {
        let (queue, one_at_a_time) = queues.remove(0);
        for (index, result) in work(shared, queue, one_at_a_time).await {
            results[index] = Some(result);
        }
        return answers(results, labels);
    }
    let mut tasks = JoinSet::new();
    // The workers' calls stay children of the caller's span (a trace of
    // an agent step holds its tool calls).
    for (queue, one_at_a_time) in queues {
        tasks.spawn(work(shared.clone(), queue, one_at_a_time).in_current_span());
    }
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(done) => {
                for (index, result) in done {
                    results[index] = Some(result);
                }
            }
            Err(error) => tracing::error!(%error, "a batch task failed"),
        }
    }
    answers(results, labels)
}

/// A worker's calls, each with its place in the batch.
type Queue = VecDeque<(usize, ToolCall)>;

/// A batch dealt to its workers.
struct Dealt {
    /// Each worker's queue, and whether it runs its calls one at a time.
    queues: Vec<(Queue, bool)>,
    /// The calls answered already (a repeated call id), by place.
    results: Vec<Option<Finished>>,
    /// Each call's id and name, by place.
    labels: Vec<(String, String)>,
}

/// Deal the calls: those free to run in parallel spread over one worker
/// per runtime thread, each lane of calls that must not overlap to a
/// worker of its own.
fn deal(engine: &ToolEngine, calls: Vec<ToolCall>, principal: Option<&Arc<Principal>>) -> Dealt {
    let mut results: Vec<Option<Finished>> = (0..calls.len()).map(|_| None).collect();
    let mut labels = Vec::with_capacity(calls.len());
    let mut lanes: IndexMap<Lane, Queue> = IndexMap::new();
    let workers = tokio::runtime::Handle::current().metrics().num_workers().max(1);
    let mut shares: Vec<Queue> = (0..workers).map(|_| VecDeque::new()).collect();
    // One approval must never run a tool twice: a call repeating an earlier
    // call's id is refused.
    let repeated: Vec<bool> = {
        let mut seen = HashSet::with_capacity(calls.len());
        calls.iter().map(|call| !seen.insert(call.id.as_str())).collect()
    };
    let mut dealt = 0;
    for (index, mut call) in calls.into_iter().enumerate() {
        labels.push((call.id.clone(), call.name.clone()));
        if repeated[index] {
            let error = ToolError::DuplicateCallId { id: call.id.clone() };
            results[index] = Some(Finished::Result(refused(engine, principal, call, error)));
            continue;
        }
        match lane_of(engine, &mut call) {
            Some(lane) => lanes.entry(lane).or_default().push_back((index, call)),
            None => {
                shares[dealt % workers].push_back((index, call));
                dealt += 1;
            }
        }
    }
    let mut queues: Vec<(Queue, bool)> =
        shares.into_iter().filter(|share| !share.is_empty()).map(|share| (share, false)).collect();
    queues.extend(lanes.into_values().map(|queue| (queue, true)));
    Dealt { queues, results, labels }
}

/// Each call's result, in the order of the calls: the call's own, or made
/// from its label when it was stopped or its task failed.
fn answers(results: Vec<Option<Finished>>, labels: Vec<(String, String)>) -> Vec<ToolResult> {
    results
        .into_iter()
        .zip(labels)
        .map(|(finished, (id, name))| match finished {
            Some(Finished::Result(result)) => result,
            Some(Finished::Stopped(stop)) => ToolResult { id, name, outcome: Err(stop.error()) },
            None => {
                let message = "the call's task failed before it produced a result".to_owned();
                ToolResult { id, name, outcome: Err(ToolError::Panicked { message }) }
            }
        })
        .collect()
}

/// Answer a call that will not run, recorded like every other call.
fn refused(engine: &ToolEngine, principal: Option<&Arc<Principal>>, call: ToolCall, error: ToolError) -> ToolResult {
    let mut record = Record::new(engine.pipeline().sinks, call.id, call.name, None, false);
    record.event.principal = principal.map(|principal| Principal::clone(principal));
    record.finish(&tracing::Span::none(), Err(error))
}

/// Run a worker's queue, all at once or one at a time, admitting a call
/// only with a permit when the batch has a concurrency limit.
async fn work(shared: Shared, mut queue: Queue, one_at_a_time: bool) -> Vec<(usize, Finished)> {
    let Shared { engine, cancel, token, deadline, semaphore, stopped, extensions, principal } = &shared;
    let extensions = extensions.as_deref();
    let mut done = Vec::with_capacity(queue.len());
    let mut running = FuturesUnordered::new();
    // The calls this worker was dealt: those neither done nor queued when the
    // batch stops were running.
    let dealt: Vec<usize> = queue.iter().map(|(index, _)| *index).collect();
    let mut stop_signal = std::pin::pin!(stop_signal(cancel, *deadline));
    let admit = |index: usize, call: ToolCall, permit: Option<OwnedSemaphorePermit>| {
        let control = Control {
            watch: None,
            token: Some(Arc::clone(token)),
            stopped: Some(&**stopped),
            extensions,
            principal: principal.as_ref(),
        };
        let call = pipeline::run(engine.pipeline(), call, control);
        async move {
            let result = call.await;
            drop(permit); // free the slot before the next call is admitted
            (index, result)
        }
    };
    // Waiting for a permit: kept from turn to turn so that the worker keeps its
    // place in the semaphore's queue while its running calls finish.
    let mut acquiring: Option<Acquiring> = None;
    let stop = loop {
        // Start what may start now; once queued for a permit, wait for it.
        while !queue.is_empty() && (!one_at_a_time || running.is_empty()) && acquiring.is_none() {
            let permit = match semaphore {
                None => None,
                Some(semaphore) => match Arc::clone(semaphore).try_acquire_owned() {
                    Ok(permit) => Some(permit),
                    Err(TryAcquireError::NoPermits) => {
                        acquiring = Some(Box::pin(Arc::clone(semaphore).acquire_owned()));
                        break;
                    }
                    Err(TryAcquireError::Closed) => None,
                },
            };
            let Some((index, call)) = queue.pop_front() else { break };
            running.push(admit(index, call, permit));
        }
        if running.is_empty() && queue.is_empty() {
            break None;
        }
        tokio::select! {
            biased;
            stop = &mut stop_signal => break Some(stop),
            Some((index, result)) = running.next(), if !running.is_empty() => {
                done.push((index, Finished::Result(result)));
            }
            permit = async { acquiring.as_mut()?.await.ok() }, if acquiring.is_some() => {
                acquiring = None;
                if let Some((index, call)) = queue.pop_front() {
                    running.push(admit(index, call, permit));
                }
            }
        }
    };
    if let Some(stop) = stop {
        if let Stop::Timeout(_) = stop {
            token.cancel(); // tell every tool of the batch to stop
        }
        // The calls still running are dropped; each records itself as stopped.
        let _ = stopped.set(stop);
        drop(running);
        answer_stopped(engine, principal.as_ref(), stop, dealt, queue, &mut done);
    }
    done
}

/// Answer the calls of a worker whose batch stopped: those that were
/// running from their labels, those that never started here, recorded.
fn answer_stopped(
    engine: &ToolEngine,
    principal: Option<&Arc<Principal>>,
    stop: Stop,
    dealt: Vec<usize>,
    queue: Queue,
    done: &mut Vec<(usize, Finished)>,
) {
    let mut finished: HashSet<usize> = done.iter().map(|(index, _)| *index).collect();
    finished.extend(queue.iter().map(|(index, _)| *index));
    for index in dealt.into_iter().filter(|index| !finished.contains(index)) {
        done.push((index, Finished::Stopped(stop)));
    }
    for (index, call) in queue {
        done.push((index, Finished::Result(refused(engine, principal, call, stop.error()))));
    }
}

/// How a worker's call ended: with its result, or stopped while running (the
/// batch answers it from the call's label).
enum Finished {
    Result(ToolResult),
    Stopped(Stop),
}

/// A worker's place in the queue for a permit of the concurrency limit.
type Acquiring = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// Completes when the caller cancels the batch or its deadline passes.
async fn stop_signal(
    cancel: &CancellationToken,
    deadline: Option<(tokio::time::Instant, std::time::Duration)>,
) -> Stop {
    match deadline {
        None => {
            cancel.cancelled().await;
            Stop::Cancelled
        }
        Some((at, limit)) => tokio::select! {
            biased;
            () = cancel.cancelled() => Stop::Cancelled,
            () = tokio::time::sleep_until(at) => Stop::Timeout(limit),
        },
    }
}
