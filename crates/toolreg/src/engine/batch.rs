//! Running the calls of one model turn together.
//!
//! The calls are dealt to workers, one Tokio task each: calls free to run in
//! parallel are spread over one worker per runtime thread, and each lane of
//! calls that must not overlap gets a worker that runs them one at a time.
//! A worker drives its calls as concurrent futures and watches the batch's
//! cancellation and timeout once for all of them, so a call costs no task,
//! no timer and no cancellation waiter of its own.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::instrument::Instrumented;

use crate::engine::call::EngineCall;
use crate::engine::{Arguments, Deadline, Prepared, Stop, ToolEngine, stopped};
use crate::exec::{ToolCall, ToolError, ToolResult};
use crate::policy::canonical_json;

/// Which calls must not overlap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Lane {
    /// Tools that change something and name no exclusive key.
    Writes,
    /// Calls whose exclusive-key argument has this (canonical JSON) value.
    Key(String),
}

/// A call dealt to a worker: parsed there, or already parsed to find its lane.
enum Pending {
    Call(ToolCall),
    Prepared(Prepared),
}

impl Pending {
    fn prepare(self, engine: &ToolEngine) -> Prepared {
        match self {
            Pending::Call(call) => engine.prepare(call),
            Pending::Prepared(prepared) => prepared,
        }
    }
}

fn lane_of(engine: &ToolEngine, prepared: &Prepared) -> Option<Lane> {
    let Ok((index, args)) = &prepared.ready else {
        return None; // fails before running: nothing to protect
    };
    let decl = engine.slot(*index)?.entry.declaration();
    // A tool with an exclusive key has its arguments parsed (see `Slot::takes_text`).
    let parsed = match args {
        Arguments::Parsed(value) => Some(value),
        Arguments::Text(_) => None,
    };
    if let Some(value) = decl.exclusive_key.as_deref().zip(parsed).and_then(|(key, args)| args.get(key)) {
        return Some(Lane::Key(canonical_json(value)));
    }
    if decl.is_read_only() || engine.inner.options.parallel_writes { None } else { Some(Lane::Writes) }
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
    deadline: Option<Deadline>,
    /// The concurrency limit, when the batch is larger than it.
    semaphore: Option<Arc<Semaphore>>,
}

pub(crate) async fn run(engine: &ToolEngine, calls: Vec<ToolCall>, cancel: CancellationToken) -> Vec<ToolResult> {
    let options = engine.inner.options;
    let limit = options.max_concurrency.max(1);
    let shared = Shared {
        engine: engine.clone(),
        token: Arc::new(cancel.child_token()),
        cancel,
        deadline: options.batch_timeout.map(Deadline::after),
        // No limit to enforce when the whole batch fits under it.
        semaphore: (calls.len() > limit).then(|| Arc::new(Semaphore::new(limit))),
    };
    let mut labels = Vec::with_capacity(calls.len());
    let mut lanes: IndexMap<Lane, VecDeque<(usize, Pending)>> = IndexMap::new();
    let workers = tokio::runtime::Handle::current().metrics().num_workers().max(1);
    let mut shares: Vec<VecDeque<(usize, Pending)>> = (0..workers).map(|_| VecDeque::new()).collect();
    let mut dealt = 0;

    for (index, call) in calls.into_iter().enumerate() {
        labels.push((call.id.clone(), call.name.clone()));
        // A read-only tool with no exclusive key (or an unknown one) runs in
        // parallel whatever its arguments: parse them on the worker.
        let free = engine.inner.stacks.get(call.name.as_str()).is_none_or(|slot| {
            let decl = slot.entry.declaration();
            decl.exclusive_key.is_none() && (decl.is_read_only() || options.parallel_writes)
        });
        let pending = if free {
            Pending::Call(call)
        } else {
            let prepared = engine.prepare(call);
            match lane_of(engine, &prepared) {
                Some(lane) => {
                    lanes.entry(lane).or_default().push_back((index, Pending::Prepared(prepared)));
                    continue;
                }
                None => Pending::Prepared(prepared),
            }
        };
        shares[dealt % workers].push_back((index, pending));
        dealt += 1;
    }

    let mut tasks = JoinSet::new();
    for share in shares.into_iter().filter(|share| !share.is_empty()) {
        tasks.spawn(work(shared.clone(), share, false));
    }
    for (_, queue) in lanes {
        tasks.spawn(work(shared.clone(), queue, true));
    }

    let mut results: Vec<Option<ToolResult>> = (0..labels.len()).map(|_| None).collect();
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
    results
        .into_iter()
        .zip(labels)
        .map(|(result, (id, name))| {
            result.unwrap_or_else(|| {
                let message = "the call's task failed before it produced a result".to_owned();
                ToolResult { id, outcome: Err(ToolError::Panicked { tool: name.clone(), message }), name }
            })
        })
        .collect()
}

/// Run a worker's queue, all at once or one at a time, admitting a call
/// only with a permit when the batch has a concurrency limit.
async fn work(shared: Shared, mut queue: VecDeque<(usize, Pending)>, one_at_a_time: bool) -> Vec<(usize, ToolResult)> {
    let Shared { engine, cancel, token, deadline, semaphore } = &shared;
    let mut done = Vec::with_capacity(queue.len());
    let mut running = FuturesUnordered::new();
    let mut stop_signal = std::pin::pin!(stop_signal(cancel, *deadline));
    let admit = |index: usize, pending: Pending, permit: Option<OwnedSemaphorePermit>| Admitted {
        index,
        permit,
        call: engine.run(pending.prepare(engine), None, Some(Arc::clone(token))),
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
            let Some((index, pending)) = queue.pop_front() else { break };
            running.push(admit(index, pending, permit));
        }
        if running.is_empty() && queue.is_empty() {
            break None;
        }
        tokio::select! {
            biased;
            stop = &mut stop_signal => break Some(stop),
            Some(finished) = running.next(), if !running.is_empty() => done.push(finished),
            permit = async { acquiring.as_mut()?.await.ok() }, if acquiring.is_some() => {
                acquiring = None;
                if let Some((index, pending)) = queue.pop_front() {
                    running.push(admit(index, pending, permit));
                }
            }
        }
    };
    if let Some(stop) = stop {
        if let Stop::Timeout(_) = stop {
            token.cancel(); // tell every tool of the batch to stop
        }
        for call in Pin::new(&mut running).iter_pin_mut() {
            done.push(call.stop(stop));
        }
        // Calls that never started answer the same way, and are audited.
        for (index, pending) in queue {
            let mut prepared = pending.prepare(engine);
            prepared.ready = Err(stopped(&prepared.name, stop));
            if let Some(result) = engine.run(prepared, None, None).now_or_never() {
                done.push((index, result));
            }
        }
    }
    done
}

/// A worker's place in the queue for a permit of the concurrency limit.
type Acquiring = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// Completes when the caller cancels the batch or its deadline passes.
async fn stop_signal(cancel: &CancellationToken, deadline: Option<Deadline>) -> Stop {
    match deadline {
        None => {
            cancel.cancelled().await;
            Stop::Cancelled
        }
        Some(deadline) => tokio::select! {
            biased;
            () = cancel.cancelled() => Stop::Cancelled,
            () = tokio::time::sleep_until(deadline.at.into()) => Stop::Timeout(deadline.limit),
        },
    }
}

pin_project_lite::pin_project! {
    /// A call a worker has started, holding its share of the concurrency limit.
    struct Admitted<'a> {
        index: usize,
        permit: Option<OwnedSemaphorePermit>,
        #[pin]
        call: Instrumented<EngineCall<'a>>,
    }
}

impl Admitted<'_> {
    /// End the call now (see [`EngineCall::stop`]).
    fn stop(self: Pin<&mut Self>, stop: Stop) -> (usize, ToolResult) {
        let this = self.project();
        let span = this.call.span().clone();
        let _in_span = span.enter();
        let result = this.call.inner_pin_mut().stop(stop);
        this.permit.take();
        (*this.index, result)
    }
}

impl Future for Admitted<'_> {
    type Output = (usize, ToolResult);

    fn poll(self: Pin<&mut Self>, task: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.call.poll(task).map(|result| {
            this.permit.take(); // free the slot before the next call is admitted
            (*this.index, result)
        })
    }
}
