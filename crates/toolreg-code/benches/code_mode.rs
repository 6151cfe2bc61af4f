//! What code mode costs, the model excluded (issue 22's targets: start-up
//! ≤ 5 ms, a call from a program ≤ 50 µs over the engine's own cost).
//!
//! - `code_mode/return_1`: `CodeMode::run` of `return 1`, end to end: the
//!   worker process started, the interpreter and prelude set up, the
//!   program run, the answer read, the worker ended and reaped.
//! - `code_mode/program_100_sequential` against
//!   `code_mode/engine_100_sequential`: a program awaiting 100 calls of a
//!   trivial tool one after the other, and the same 100 calls through
//!   `ToolExecutor::execute_call`, one after the other. Per call from a
//!   program: (program − `return_1` − engine) / 100. Also on a
//!   current-thread runtime (`program_100_sequential_current_thread`).
//! - `code_mode/program_100_promise_all` against
//!   `code_mode/engine_100_batch`: the 100 calls started together
//!   (`Promise.all`, one batch) and the same 100 as one `execute_batch`.
//! - `cpu/*`: the same runs timed in CPU time instead of wall time (this
//!   process's, all threads, plus the reaped workers'), which a machine
//!   busy with other work inflates far less than wall time.
//! - `startup_parts/*`: where start-up goes — a process that does nothing
//!   (`/bin/true`), the worker process started and ended without a program
//!   (it reads end-of-file and exits), a QuickJS runtime and context as the
//!   worker makes them, and those plus the prelude.
//!
//! `cargo bench -p toolreg-code --bench code_mode`

use std::process::Stdio;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolreg::{
    CallOptions, FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolEngine, ToolExecutor,
};
use toolreg_code::{CodeMode, Worker};

const WORKER: &str = env!("CARGO_BIN_EXE_toolreg-code-worker");
const N: usize = 100;

/// `inc(n)`: `n + 1`, the trivial tool every call runs.
fn engine() -> ToolEngine {
    let mut registry = FunctionRegistry::new();
    let declaration = ToolDeclaration::builder("inc")
        .description("Add one to a number.")
        .param("n", ParamType::Integer, "The number")
        .safety(SafetyLevel::Safe)
        .build();
    registry
        .register_sync_tool(
            "inc",
            |args: Value| Ok::<_, String>(json!(args["n"].as_i64().unwrap_or(0) + 1)),
            declaration,
        )
        .unwrap();
    ToolEngine::builder(&registry).build()
}

fn calls() -> Vec<ToolCall> {
    (0..N).map(|i| ToolCall::new(format!("c{i}"), "inc", json!({ "n": i }))).collect()
}

/// The sum of `inc(i)` for i < N.
fn expected() -> Value {
    json!((1..=N).sum::<usize>())
}

/// `N` calls one after the other, summing the results.
fn sequential_program() -> String {
    format!("let sum = 0;\nfor (let i = 0; i < {N}; i++) sum += await tools.inc({{ n: i }});\nreturn sum;")
}

/// `N` calls started together (`Promise.all`: one batch), summed.
fn together_program() -> String {
    format!(
        "const all = await Promise.all(Array.from({{ length: {N} }}, (_, i) => tools.inc({{ n: i }})));\nreturn \
         all.reduce((a, b) => a + b, 0);"
    )
}

fn end_to_end(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let engine = engine();
    let code = CodeMode::new(Worker::new(WORKER));
    let mut group = c.benchmark_group("code_mode");
    group.sample_size(50).measurement_time(Duration::from_secs(8));

    group.bench_function("return_1", |b| {
        b.to_async(&runtime).iter(|| async {
            let out = code.run(&engine, "return 1").await.unwrap();
            assert_eq!(out.value, json!(1));
        })
    });

    let (sequential, together) = (sequential_program(), together_program());
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("program_100_sequential", |b| {
        b.to_async(&runtime).iter(|| async {
            let out = code.run(&engine, &sequential).await.unwrap();
            assert_eq!(out.value, expected());
        })
    });
    // The same on a current-thread runtime: no hand-over between the
    // runtime's threads on each message from the worker.
    let single = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    group.bench_function("program_100_sequential_current_thread", |b| {
        b.to_async(&single).iter(|| async {
            let out = code.run(&engine, &sequential).await.unwrap();
            assert_eq!(out.value, expected());
        })
    });
    group.bench_function("engine_100_sequential", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut sum = 0;
            for call in calls() {
                sum += engine.execute_call(call, CallOptions::default()).await.outcome.unwrap().value.as_i64().unwrap();
            }
            assert_eq!(json!(sum), expected());
        })
    });
    group.bench_function("program_100_promise_all", |b| {
        b.to_async(&runtime).iter(|| async {
            let out = code.run(&engine, &together).await.unwrap();
            assert_eq!(out.value, expected());
        })
    });
    group.bench_function("engine_100_batch", |b| {
        b.to_async(&runtime).iter(|| async {
            let results = engine.execute_batch(calls(), CallOptions::default()).await;
            let sum: i64 = results.iter().map(|r| r.outcome.as_ref().unwrap().value.as_i64().unwrap()).sum();
            assert_eq!(json!(sum), expected());
        })
    });
    group.finish();
}

/// CPU time used so far by this process (all threads) and its reaped
/// children (the workers).
#[cfg(unix)]
fn cpu_time() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let used = |who| {
        let usage = getrusage(who).unwrap();
        let (user, system) = (usage.user_time(), usage.system_time());
        let micros = |t: nix::sys::time::TimeVal| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64;
        Duration::from_micros(micros(user) + micros(system))
    };
    used(UsageWho::RUSAGE_SELF) + used(UsageWho::RUSAGE_CHILDREN)
}

#[cfg(unix)]
fn cpu(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let engine = engine();
    let code = CodeMode::new(Worker::new(WORKER));
    let mut group = c.benchmark_group("cpu");
    group.sample_size(20).measurement_time(Duration::from_secs(8));
    let programs = [
        ("return_1", "return 1".to_owned()),
        ("program_100_sequential", sequential_program()),
        ("program_100_promise_all", together_program()),
    ];
    for (name, program) in &programs {
        group.bench_function(*name, |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (code, engine) = (&code, &engine);
                async move {
                    let start = cpu_time();
                    for _ in 0..iters {
                        code.run(engine, program).await.unwrap();
                    }
                    cpu_time() - start
                }
            })
        });
    }
    group.bench_function("engine_100_sequential", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let engine = &engine;
            async move {
                let start = cpu_time();
                for _ in 0..iters {
                    for call in calls() {
                        engine.execute_call(call, CallOptions::default()).await.outcome.unwrap();
                    }
                }
                cpu_time() - start
            }
        })
    });
    group.bench_function("engine_100_batch", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let engine = &engine;
            async move {
                let start = cpu_time();
                for _ in 0..iters {
                    engine.execute_batch(calls(), CallOptions::default()).await;
                }
                cpu_time() - start
            }
        })
    });
    group.finish();
}

#[cfg(not(unix))]
fn cpu(_: &mut Criterion) {}

/// The worker's choice of built-ins (`worker.rs`): no `Performance`, no `WeakRef`.
type Intrinsics = (
    rquickjs::context::intrinsic::Date,
    rquickjs::context::intrinsic::Eval,
    rquickjs::context::intrinsic::RegExpCompiler,
    rquickjs::context::intrinsic::RegExp,
    rquickjs::context::intrinsic::Json,
    rquickjs::context::intrinsic::Proxy,
    rquickjs::context::intrinsic::MapSet,
    rquickjs::context::intrinsic::TypedArrays,
    rquickjs::context::intrinsic::Promise,
);

const PRELUDE: &str = include_str!("../src/worker/prelude.js");

fn startup_parts(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("startup_parts");
    group.sample_size(50).measurement_time(Duration::from_secs(5));

    // A process, as the host starts one (tokio, empty environment, pipes).
    let spawn = |program: &'static str| async move {
        let mut child = tokio::process::Command::new(program)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        child.wait().await.unwrap();
    };
    group.bench_function("process_bin_true", |b| b.to_async(&runtime).iter(|| spawn("/bin/true")));
    group.bench_function("process_worker_no_program", |b| b.to_async(&runtime).iter(|| spawn(WORKER)));

    group.bench_function("quickjs_runtime_context", |b| {
        b.iter(|| {
            let rt = rquickjs::Runtime::new().unwrap();
            rt.set_memory_limit(64 << 20);
            rt.set_max_stack_size(512 << 10);
            let context = rquickjs::Context::custom::<Intrinsics>(&rt).unwrap();
            drop(context);
        })
    });
    group.bench_function("quickjs_runtime_context_prelude", |b| {
        b.iter(|| {
            let rt = rquickjs::Runtime::new().unwrap();
            rt.set_memory_limit(64 << 20);
            rt.set_max_stack_size(512 << 10);
            let context = rquickjs::Context::custom::<Intrinsics>(&rt).unwrap();
            context.with(|ctx| {
                let call = rquickjs::Function::new(ctx.clone(), |_tool: String, _args: String| 1u64).unwrap();
                let print = rquickjs::Function::new(ctx.clone(), |_text: String| ()).unwrap();
                let setup: rquickjs::Function<'_> = ctx.eval(PRELUDE).unwrap();
                let _settle: rquickjs::Function<'_> = setup.call((call, print, "[\"inc\"]".to_owned())).unwrap();
            });
        })
    });
    group.finish();
}

criterion_group!(benches, end_to_end, cpu, startup_parts);
criterion_main!(benches);
