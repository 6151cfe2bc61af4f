//! Policy engine benchmarks: a large batch of sleeping async calls, the
//! per-call overhead of selection + approval gate + audit over the bare
//! registry path, and the audit's argument hash.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use toolreg::engine::{BatchOptions, ToolEngine};
use toolreg::policy::{AuditEvent, AuditSink, PolicyApprover, Selection};
use toolreg::{CallOptions, FunctionRegistry, SafetyLevel, ToolCall, ToolExecutor, tool};

/// Add two numbers.
#[tool(safety = "safe")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// Wait 20 ms, then answer.
#[tool(safety = "safe")]
async fn nap(id: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(20)).await;
    id
}

/// An audit sink that only counts, so the benchmark measures the audit path
/// (event built and handed over) without growing memory.
#[derive(Default)]
struct CountingSink(AtomicUsize);

impl AuditSink for CountingSink {
    fn record(&self, event: &AuditEvent) {
        black_box(event);
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn batch(c: &mut Criterion) {
    let rt = runtime();
    let mut registry = FunctionRegistry::new();
    registry.register(nap_tool::registration()).unwrap();
    let engine = ToolEngine::builder(&registry)
        .audit(CountingSink::default())
        .options(BatchOptions::default().max_concurrency(10_000))
        .build();
    let calls: Vec<ToolCall> =
        (0..10_000u64).map(|i| ToolCall::new(format!("call_{i}"), "nap", format!(r#"{{"id": {i}}}"#))).collect();
    let mut group = c.benchmark_group("policy_batch");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    // The floor: the same 10,000 sleeps as bare Tokio tasks, no toolreg at all.
    group.bench_function("tokio_floor_10k_tasks_sleeping_20ms", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut set = tokio::task::JoinSet::new();
                for i in 0..10_000u64 {
                    set.spawn(async move {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        i
                    });
                }
                set.join_all().await
            })
        })
    });
    // The same batch with no audit sink (no hashing, no events).
    let quiet = ToolEngine::builder(&registry).options(BatchOptions::default().max_concurrency(10_000)).build();
    for (name, engine) in [("10k_calls_sleeping_20ms", &engine), ("10k_calls_sleeping_20ms_no_audit", &quiet)] {
        // The calls are cloned outside the timed part: the floor builds no input either.
        group.bench_function(name, |b| {
            b.iter_batched(
                || calls.clone(),
                |calls| {
                    let results = rt.block_on(engine.execute_batch(calls, CallOptions::default()));
                    assert!(results.iter().all(|r| !r.is_error()));
                    results
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn overhead(c: &mut Criterion) {
    let rt = runtime();
    let mut registry = FunctionRegistry::new();
    registry.register(add_tool::registration()).unwrap();
    let engine = ToolEngine::builder(&registry)
        .selection(Selection::sub_agent().max_safety(SafetyLevel::Dangerous))
        .approver(PolicyApprover::new().approve_tool("*"))
        .audit(CountingSink::default())
        .build();
    // The same selection and approver with no audit sink: no argument hash,
    // no clock reads, no event.
    let unaudited = ToolEngine::builder(&registry)
        .selection(Selection::sub_agent().max_safety(SafetyLevel::Dangerous))
        .approver(PolicyApprover::new().approve_tool("*"))
        .build();
    let call = ToolCall::new("call_1", "add", r#"{"a": 2, "b": 40}"#);
    let mut group = c.benchmark_group("policy_overhead");
    group.measurement_time(Duration::from_secs(3));
    drive(&mut group, &rt, "bare", &registry, &call);
    drive(&mut group, &rt, "engine", &engine, &call);
    drive(&mut group, &rt, "engine_no_audit", &unaudited, &call);
    group.finish();
}

/// One call of `executor` (`add`, a synchronous tool), driven three ways:
/// - `poll`: polled to completion with `now_or_never`, no executor at all,
///   as the execute bench measures the registry: the work of the path alone;
/// - `in_runtime`: awaited one after another inside a running runtime, as an
///   agent loop makes its calls;
/// - `block_on`: each call a `Runtime::block_on` from synchronous code, where
///   entering the runtime adds about 200 ns to every call.
fn drive(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    label: &str,
    executor: &impl ToolExecutor,
    call: &ToolCall,
) {
    use futures_util::FutureExt;
    group.bench_function(format!("{label}_poll"), |b| {
        b.iter(|| executor.execute_call(black_box(call.clone()), CallOptions::default()).now_or_never().unwrap())
    });
    group.bench_function(format!("{label}_in_runtime"), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = std::time::Instant::now();
                for _ in 0..iters {
                    black_box(executor.execute_call(black_box(call.clone()), CallOptions::default()).await);
                }
                start.elapsed()
            })
        })
    });
    group.bench_function(format!("{label}_block_on"), |b| {
        b.iter(|| rt.block_on(executor.execute_call(black_box(call.clone()), CallOptions::default())))
    });
}

/// The argument hash the audit event carries, on each of its three paths.
fn arguments_hash(c: &mut Criterion) {
    use toolreg::policy::ArgumentsHash;
    let mut group = c.benchmark_group("arguments_hash");
    group.measurement_time(Duration::from_secs(2));
    // Spaced, sorted keys, plain strings and integers: whitespace dropped in one scan.
    group.bench_function("text_simple", |b| b.iter(|| ArgumentsHash::of_json(black_box(r#"{"a": 2, "b": 40}"#))));
    // The same, already compact: canonical as it is.
    group.bench_function("text_compact", |b| b.iter(|| ArgumentsHash::of_json(black_box(r#"{"a":2,"b":40}"#))));
    // A float and an escape: parsed and written back by serde_json, no `Value`.
    group.bench_function("text_serde", |b| b.iter(|| ArgumentsHash::of_json(black_box(r#"{"a": 2.5, "b": "x\ny"}"#))));
    // Keys in schema order, not sorted: the simple path sorts them.
    group.bench_function("text_unsorted", |b| b.iter(|| ArgumentsHash::of_json(black_box(r#"{"b": 40, "a": 2}"#))));
    let value = serde_json::json!({"a": 2, "b": 40});
    group.bench_function("value", |b| b.iter(|| ArgumentsHash::of(black_box(&value))));
    group.finish();
}

criterion_group!(benches, batch, overhead, arguments_hash);
criterion_main!(benches);
