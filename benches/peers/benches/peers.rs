//! toolreg, rmcp and rig side by side, in one process, on the same tools and
//! the same argument JSON. See README.md for what each group measures.
//!
//! Every call runs inside one Tokio runtime and is awaited, one after
//! another, as an agent loop or a server makes its calls. Each call gets its
//! own owned arguments, built before the clock starts (in chunks, to bound
//! memory), so the figures are the call alone: lookup, argument decoding,
//! the tool, and the answer.

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Criterion, criterion_group, measurement::WallTime};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::runtime::Runtime;
use toolreg::engine::ToolEngine;
use toolreg::policy::{JsonLinesSink, PolicyApprover, Selection};
use toolreg::{CallOptions, FunctionRegistry, SafetyLevel, ToolCall, ToolExecutor};
use toolreg_peer_benches::args::{AddArgs, AreaArgs, ConvertArgs, ShipArgs, StatsArgs};
use toolreg_peer_benches::cases::{self, Case};
use toolreg_peer_benches::rmcp_side::{self, RmcpServer};
use toolreg_peer_benches::{fillers, toolreg_side};

/// Arguments are built this many at a time, outside the timed part.
const CHUNK: u64 = 1024;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// Time `iters` awaited calls of `call`, each on a fresh `make()`.
fn bench_calls<I, Fut>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    rt: &Runtime,
    label: &str,
    make: impl Fn() -> I,
    mut call: impl FnMut(I) -> Fut,
) where
    Fut: Future,
{
    group.bench_function(label, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                let mut left = iters;
                let mut inputs = Vec::with_capacity(CHUNK as usize);
                while left > 0 {
                    let n = left.min(CHUNK);
                    inputs.extend((0..n).map(|_| make()));
                    let start = Instant::now();
                    for input in inputs.drain(..) {
                        black_box(call(black_box(input)).await);
                    }
                    total += start.elapsed();
                    left -= n;
                }
                total
            })
        })
    });
}

/// What a caller without any framework writes: decode the typed arguments,
/// call the function, encode the answer. The floor for execute-by-name.
fn direct<A: DeserializeOwned, R: Serialize>(args: Value, f: impl FnOnce(A) -> R) -> Result<Value, String> {
    let args: A = serde_json::from_value(args).map_err(|e| e.to_string())?;
    serde_json::to_value(f(args)).map_err(|e| e.to_string())
}

fn direct_text<A: DeserializeOwned, R: Serialize>(args: &str, f: impl FnOnce(A) -> R) -> Result<Value, String> {
    let args: A = serde_json::from_str(args).map_err(|e| e.to_string())?;
    serde_json::to_value(f(args)).map_err(|e| e.to_string())
}

/// A direct typed call from a value.
type DirectValue = fn(Value) -> Result<Value, String>;
/// A direct typed call from text.
type DirectText = fn(&str) -> Result<Value, String>;

/// The direct typed call for `case`'s tool, from a value and from text.
fn direct_for(case: &Case) -> (DirectValue, DirectText) {
    use toolreg_side::{add, area, convert, ship, stats};
    match case.tool {
        "add" => (|v| direct(v, |a: AddArgs| add(a.a, a.b)), |t| direct_text(t, |a: AddArgs| add(a.a, a.b))),
        "ship" => (
            |v| direct(v, |a: ShipArgs| ship(a.customer, a.weight_kg)),
            |t| direct_text(t, |a: ShipArgs| ship(a.customer, a.weight_kg)),
        ),
        "convert" => (
            |v| direct(v, |a: ConvertArgs| convert(a.value, a.from, a.to)),
            |t| direct_text(t, |a: ConvertArgs| convert(a.value, a.from, a.to)),
        ),
        "area" => (
            |v| direct(v, |a: AreaArgs| area(a.shape, a.scale)),
            |t| direct_text(t, |a: AreaArgs| area(a.shape, a.scale)),
        ),
        "stats" => (
            |v| direct(v, |a: StatsArgs| stats(a.values, a.weights)),
            |t| direct_text(t, |a: StatsArgs| stats(a.values, a.weights)),
        ),
        other => panic!("no direct call for {other}"),
    }
}

/// Execute by name, good or bad arguments, every side, every shape.
fn execute(c: &mut Criterion, good: bool) {
    let rt = runtime();
    let registry = toolreg_side::registry().expect("registry");
    let server = rt.block_on(async { RmcpServer::start() });
    #[cfg(feature = "rig")]
    let toolset = toolreg_peer_benches::rig_side::toolset();
    for case in cases::all() {
        let (value, text, object) = if good {
            (case.good(), case.good_text, case.good_object())
        } else {
            (case.bad(), case.bad_text, case.bad_object())
        };
        // Each side must answer as the case says before it is timed.
        let toolreg_ok =
            futures_util::FutureExt::now_or_never(registry.execute(case.tool, value.clone())).expect("ready");
        assert_eq!(toolreg_ok.is_ok(), good, "toolreg {}", case.shape);
        let rmcp_ok = rmcp_side::answer_text(&rt.block_on(server.call(case.tool, object.clone())));
        assert_eq!(rmcp_ok.is_ok(), good, "rmcp {}: {rmcp_ok:?}", case.shape);

        let name = format!("{}/{}", if good { "execute" } else { "bad_arguments" }, case.shape);
        let mut group = c.benchmark_group(name);
        let (direct_value, direct_text) = direct_for(&case);
        bench_calls(&mut group, &rt, "direct_value", || value.clone(), |v| async move { direct_value(v) });
        bench_calls(&mut group, &rt, "direct_text", || (), |()| async move { direct_text(text) });
        let tool = case.tool;
        let registry = &registry;
        bench_calls(&mut group, &rt, "toolreg_value", || value.clone(), move |v| registry.execute(tool, v));
        // A model's call: argument text with an id, through the
        // `ToolExecutor` trait (the same code for every toolreg checkout).
        bench_calls(
            &mut group,
            &rt,
            "toolreg_text",
            || (),
            move |()| async move {
                toolreg::ToolExecutor::execute_call(
                    registry,
                    toolreg::ToolCall::new("call_1", tool, text),
                    Default::default(),
                )
                .await
                .outcome
            },
        );
        let server = &server;
        bench_calls(&mut group, &rt, "rmcp_object", || object.clone(), move |o| server.call(tool, o));
        // rmcp receives arguments inside the JSON-RPC request it decodes;
        // decoding the argument text to its object stands for that part.
        bench_calls(
            &mut group,
            &rt,
            "rmcp_text",
            || (),
            move |()| {
                let object = serde_json::from_str(text).unwrap_or_default();
                server.call(tool, object)
            },
        );
        #[cfg(feature = "rig")]
        {
            let set = &toolset;
            let rig_ok = toolreg_peer_benches::rig_side::answer_text(
                &rt.block_on(async { set.execute(tool, text, &mut rig_core::tool::ToolContext::default()).await }),
            );
            assert_eq!(rig_ok.is_ok(), good, "rig {}: {rig_ok:?}", case.shape);
            // rig takes the argument text as an owned `String`, as its agent
            // loop holds it; the string is built before the clock starts.
            bench_calls(
                &mut group,
                &rt,
                "rig_text",
                || text.to_owned(),
                move |t| async move {
                    let mut context = rig_core::tool::ToolContext::default();
                    set.execute(tool, t, &mut context).await
                },
            );
        }
        group.finish();
    }
}

fn execute_good(c: &mut Criterion) {
    execute(c, true);
}

fn execute_bad(c: &mut Criterion) {
    execute(c, false);
}

/// A safe call through toolreg's engine (selection, approver, JSON-lines
/// audit) against the bare registry and rmcp's bare router.
fn engine(c: &mut Criterion) {
    let rt = runtime();
    let registry = toolreg_side::registry().expect("registry");
    let engine = ToolEngine::builder(&registry)
        .selection(Selection::sub_agent().max_safety(SafetyLevel::Cautious))
        .approver(PolicyApprover::new().approve_tool("*"))
        .audit(JsonLinesSink::new(std::io::sink()))
        .build();
    let server = rt.block_on(async { RmcpServer::start() });
    for case in cases::all().into_iter().filter(|c| matches!(c.shape, "flat" | "nested")) {
        let tool = case.tool;
        let (value, text, object) = (case.good(), case.good_text, case.good_object());
        let by_value = || ToolCall::new("call_1", tool, value.clone());
        let by_text = || ToolCall::new("call_1", tool, text);
        let through_engine = rt.block_on(engine.execute_call(by_text(), CallOptions::default()));
        assert!(!through_engine.is_error(), "engine {}: {through_engine:?}", case.shape);

        let mut group = c.benchmark_group(format!("engine/{}", case.shape));
        let (registry, engine, server) = (&registry, &engine, &server);
        bench_calls(&mut group, &rt, "toolreg_registry_value", by_value, move |call| {
            registry.execute_call(call, CallOptions::default())
        });
        bench_calls(&mut group, &rt, "toolreg_registry_text", by_text, move |call| {
            registry.execute_call(call, CallOptions::default())
        });
        bench_calls(&mut group, &rt, "toolreg_engine_value", by_value, move |call| {
            engine.execute_call(call, CallOptions::default())
        });
        bench_calls(&mut group, &rt, "toolreg_engine_text", by_text, move |call| {
            engine.execute_call(call, CallOptions::default())
        });
        bench_calls(&mut group, &rt, "rmcp_object", || object.clone(), move |o| server.call(tool, o));
        bench_calls(
            &mut group,
            &rt,
            "rmcp_text",
            || (),
            move |()| {
                let object = serde_json::from_str(text).unwrap_or_default();
                server.call(tool, object)
            },
        );
        group.finish();
    }
}

/// `n` filler tools in a toolreg registry and in an rmcp router.
fn fillers_on_both(n: usize) -> (FunctionRegistry, rmcp::handler::server::tool::ToolRouter<rmcp_side::RmcpTools>) {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, fillers::toolreg(n)).expect("fillers");
    let mut router = rmcp::handler::server::tool::ToolRouter::new();
    for route in fillers::rmcp(n) {
        router.add_route(route);
    }
    (registry, router)
}

/// Listing 1,000 declarations, the five argument types in turn.
fn list(c: &mut Criterion) {
    const N: usize = 1_000;
    let (registry, router) = fillers_on_both(N);
    assert_eq!((registry.len(), router.list_all().len()), (N, N));
    let mut group = c.benchmark_group("list_1000");
    group.bench_function("toolreg_get_declarations", |b| b.iter(|| black_box(registry.get_declarations())));
    group.bench_function("toolreg_list", |b| b.iter(|| black_box(registry.list().collect::<Vec<_>>())));
    group.bench_function("rmcp_list_all", |b| b.iter(|| black_box(router.list_all())));
    #[cfg(feature = "rig")]
    {
        let mut set = rig_agent::tool::ToolSet::default();
        for tool in fillers::rig(N) {
            set.add_dynamic_tool(tool);
        }
        assert_eq!(set.tool_definitions().len(), N);
        group.bench_function("rig_tool_definitions", |b| b.iter(|| black_box(set.tool_definitions())));
    }
    group.finish();
}

/// Declaring 1,000 tools to the text of a request (the five argument types
/// in turn): toolreg's MCP and Anthropic formats from registry entries
/// (lowered schemas kept in the entries, as an agent or server has them)
/// against rmcp's `list_all()` written as JSON, which is what an rmcp
/// server sends for `tools/list`.
///
/// `*_value` builds the `tools` value (`declare`) and writes it; `*_text`
/// writes `declare_partial`'s tools straight to text.
fn declare(c: &mut Criterion) {
    use toolreg::provider::{ToolRef, WireFormat, anthropic::Anthropic, mcp::Mcp};
    const N: usize = 1_000;
    let (registry, router) = fillers_on_both(N);
    let formats: [(&str, Box<dyn WireFormat>); 2] =
        [("mcp", Box::new(Mcp::new())), ("anthropic", Box::new(Anthropic::new()))];
    for (_, format) in &formats {
        let declared = format.declare(&ToolRef::list(registry.list())).expect("declared");
        assert_eq!(declared.tools.as_array().map(Vec::len), Some(N));
    }
    let mut group = c.benchmark_group("declare_1000");
    group.bench_function("rmcp_list_all_json", |b| b.iter(|| serde_json::to_string(&router.list_all()).expect("json")));
    for (label, format) in &formats {
        group.bench_function(format!("toolreg_{label}_value"), |b| {
            b.iter(|| {
                let declared = format.declare(&ToolRef::list(registry.list())).expect("declared");
                serde_json::to_string(&declared.tools).expect("json")
            })
        });
        group.bench_function(format!("toolreg_{label}_text"), |b| {
            b.iter(|| {
                let declared = format.declare_partial(&ToolRef::list(registry.list()));
                serde_json::to_string(&declared.tools).expect("json")
            })
        });
    }
    group.finish();
}

/// Wait 20 ms, then answer.
#[toolreg::tool(safety = "safe")]
async fn nap(id: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(20)).await;
    id
}

/// An audit sink that only counts, so the batch measures the audit path
/// (event built and handed over) without growing memory.
#[derive(Default)]
struct CountingSink(std::sync::atomic::AtomicUsize);

impl toolreg::policy::AuditSink for CountingSink {
    fn record(&self, event: &toolreg::policy::AuditEvent) {
        black_box(event);
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// 10,000 calls of an async tool that sleeps 20 ms, in one engine batch
/// (`max_concurrency` 10,000), with a counting audit sink and without one,
/// against the floor: the same sleeps as bare Tokio tasks. The calls are
/// cloned outside the timed part (the floor builds no input either).
fn batch(c: &mut Criterion) {
    use toolreg::engine::BatchOptions;
    let rt = runtime();
    let mut registry = FunctionRegistry::new();
    registry.register(nap_tool::registration()).expect("nap");
    let options = || BatchOptions::default().max_concurrency(10_000);
    let audited = ToolEngine::builder(&registry).audit(CountingSink::default()).options(options()).build();
    let quiet = ToolEngine::builder(&registry).options(options()).build();
    let calls: Vec<ToolCall> =
        (0..10_000u64).map(|i| ToolCall::new(format!("call_{i}"), "nap", format!(r#"{{"id": {i}}}"#))).collect();
    let mut group = c.benchmark_group("batch_10k_sleeping_20ms");
    group.sample_size(10);
    group.bench_function("tokio_floor", |b| {
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
    for (label, engine) in [("toolreg_engine_audit", &audited), ("toolreg_engine_no_audit", &quiet)] {
        group.bench_function(label, |b| {
            b.iter_batched(
                || calls.clone(),
                |calls| {
                    let results = rt.block_on(engine.execute_batch(calls, CallOptions::default()));
                    assert!(results.iter().all(|r| !r.is_error()));
                    results
                },
                criterion::BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

/// One run of registering `N` tools: the time to build the registrations
/// (declarations with their schemas) and the time to register them.
/// Dropping the filled registry is not timed.
fn register_once<I, R>(build: impl Fn() -> I, register: impl Fn(I) -> R) -> (Duration, Duration) {
    let start = Instant::now();
    let input = build();
    let built = start.elapsed();
    let start = Instant::now();
    let filled = register(input);
    let registered = start.elapsed();
    drop(black_box(filled));
    (built, registered)
}

/// Registering 100,000 tools, timed by hand: a run can take seconds, and
/// criterion needs at least ten per figure, so this takes the median of
/// `RUNS` runs per side and prints it.
fn register() {
    const N: usize = 100_000;
    const RUNS: usize = 3;
    fn report(label: &str, mut runs: Vec<(Duration, Duration)>) {
        runs.sort_by_key(|(b, r)| *b + *r);
        let (built, registered) = runs[runs.len() / 2];
        println!(
            "register_100k/{label:<8} build {:>9.1} ms  register {:>9.1} ms  total {:>9.1} ms  (median of {RUNS})",
            built.as_secs_f64() * 1e3,
            registered.as_secs_f64() * 1e3,
            (built + registered).as_secs_f64() * 1e3,
        );
    }
    let toolreg = (0..RUNS)
        .map(|_| {
            register_once(
                || fillers::toolreg(N),
                |regs| {
                    let mut registry = FunctionRegistry::new();
                    toolreg::register_tools!(registry, regs).expect("fillers");
                    registry
                },
            )
        })
        .collect();
    report("toolreg", toolreg);
    let rmcp = (0..RUNS)
        .map(|_| {
            register_once(
                || fillers::rmcp(N),
                |routes| {
                    let mut router = rmcp::handler::server::tool::ToolRouter::new();
                    for route in routes {
                        router.add_route(route);
                    }
                    router
                },
            )
        })
        .collect();
    report("rmcp", rmcp);
    #[cfg(feature = "rig")]
    {
        let rig = (0..RUNS)
            .map(|_| {
                register_once(
                    || fillers::rig(N),
                    |tools| {
                        let mut set = rig_agent::tool::ToolSet::default();
                        for tool in tools {
                            set.add_dynamic_tool(tool);
                        }
                        set
                    },
                )
            })
            .collect();
        report("rig", rig);
    }
}

/// The criterion filter among the bench's arguments: the first one that is
/// neither an option nor the value of an option.
fn filter_argument(mut args: impl Iterator<Item = String>) -> Option<String> {
    const TAKE_VALUES: &[&str] = &[
        "--warm-up-time",
        "--measurement-time",
        "--sample-size",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--profile-time",
        "--save-baseline",
        "--baseline",
        "--load-baseline",
        "--color",
        "--format",
        "--output-format",
        "--plotting-backend",
    ];
    while let Some(arg) = args.next() {
        if TAKE_VALUES.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

/// Runs the criterion groups, then the registration timing unless a filter
/// that does not name it was given.
fn main() {
    benches();
    let filter = filter_argument(std::env::args().skip(1));
    if filter.is_none_or(|f| "register_100k".contains(f.as_str())) {
        register();
    }
    Criterion::default().configure_from_args().final_summary();
}

criterion_group!(benches, execute_good, execute_bad, engine, list, declare, batch);
