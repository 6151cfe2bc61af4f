//! Running the calls of one model turn together.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use indexmap::IndexMap;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::engine::{Deadline, Prepared, ToolEngine, bounded, stopped};
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

fn lane_of(engine: &ToolEngine, prepared: &Prepared) -> Option<Lane> {
    let Ok((index, args)) = &prepared.ready else {
        return None; // fails before running: nothing to protect
    };
    let slot = engine.slot(*index)?;
    let decl = slot.entry.declaration();
    if let Some(value) = decl.exclusive_key.as_deref().and_then(|key| args.get(key)) {
        return Some(Lane::Key(canonical_json(value)));
    }
    if decl.is_read_only() || engine.inner.options.parallel_writes { None } else { Some(Lane::Writes) }
}

/// Wait for a slot, then run the call; a call stopped while waiting still
/// goes through [`ToolEngine::run`] so that it is audited.
async fn run_one(
    engine: &ToolEngine,
    semaphore: &Semaphore,
    mut prepared: Prepared,
    cancel: &CancellationToken,
    batch: Option<Deadline>,
) -> ToolResult {
    let mut permit = None;
    match bounded(semaphore.acquire(), Some(cancel), batch).await {
        Ok(Ok(acquired)) => permit = Some(acquired),
        Ok(Err(_closed)) => {}
        Err(stop) => prepared.ready = Err(stopped(&prepared.name, stop)),
    }
    let result = engine.run(prepared, Some(cancel), batch).await;
    drop(permit);
    result
}

pub(crate) async fn run(engine: &ToolEngine, calls: Vec<ToolCall>, cancel: CancellationToken) -> Vec<ToolResult> {
    let options = engine.inner.options;
    let batch = options.batch_timeout.map(Deadline::after);
    // No limit to enforce when the whole batch fits under it.
    let limit = options.max_concurrency.max(1);
    let semaphore = (calls.len() > limit).then(|| Arc::new(Semaphore::new(limit)));
    let mut labels = Vec::with_capacity(calls.len());
    let mut lanes: IndexMap<Lane, Vec<(usize, Prepared)>> = IndexMap::new();
    // Calls free to run in parallel are dealt round-robin to one task per
    // worker thread, each driving its share as concurrent futures: parallel
    // across threads without the cost of a task per call.
    let workers = tokio::runtime::Handle::current().metrics().num_workers().max(1);
    let mut shares: Vec<Vec<(usize, Pending)>> = (0..workers).map(|_| Vec::new()).collect();
    let mut dealt = 0;

    for (index, call) in calls.into_iter().enumerate() {
        labels.push((call.id.clone(), call.name.clone()));
        // A read-only tool with no exclusive key (or an unknown one) runs in
        // parallel whatever its arguments: parse them on the worker.
        let free = engine.inner.stacks.get(call.name.as_str()).is_none_or(|slot| {
            let decl = slot.entry.declaration();
            decl.exclusive_key.is_none() && (decl.is_read_only() || options.parallel_writes)
        });
        if free {
            shares[dealt % workers].push((index, Pending::Call(call)));
            dealt += 1;
            continue;
        }
        let prepared = engine.prepare(call);
        match lane_of(engine, &prepared) {
            Some(lane) => lanes.entry(lane).or_default().push((index, prepared)),
            None => {
                shares[dealt % workers].push((index, Pending::Prepared(prepared)));
                dealt += 1;
            }
        }
    }

    let mut tasks = JoinSet::new();
    for share in shares.into_iter().filter(|share| !share.is_empty()) {
        let (engine, semaphore, cancel) = (engine.clone(), semaphore.clone(), cancel.clone());
        tasks.spawn(async move {
            let (engine, semaphore, cancel) = (&engine, semaphore.as_deref(), &cancel);
            let mut running: FuturesUnordered<_> = share
                .into_iter()
                .map(|(index, pending)| async move {
                    let prepared = match pending {
                        Pending::Call(call) => engine.prepare(call),
                        Pending::Prepared(prepared) => prepared,
                    };
                    let result = match semaphore {
                        Some(semaphore) => run_one(engine, semaphore, prepared, cancel, batch).await,
                        None => engine.run(prepared, Some(cancel), batch).await,
                    };
                    (index, result)
                })
                .collect();
            let mut done = Vec::with_capacity(running.len());
            while let Some(finished) = running.next().await {
                done.push(finished);
            }
            done
        });
    }
    for (_, queue) in lanes {
        let (engine, semaphore, cancel) = (engine.clone(), semaphore.clone(), cancel.clone());
        tasks.spawn(async move {
            let mut done = Vec::with_capacity(queue.len());
            for (index, prepared) in queue {
                let result = match semaphore.as_deref() {
                    Some(semaphore) => run_one(&engine, semaphore, prepared, &cancel, batch).await,
                    None => engine.run(prepared, Some(&cancel), batch).await,
                };
                done.push((index, result));
            }
            done
        });
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
