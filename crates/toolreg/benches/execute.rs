//! Execute-by-name overhead against calling the typed function directly with
//! the same JSON in and out, with 10 and 100,000 registered tools, for good
//! and bad arguments.
//!
//! Both sides run their future to completion with `now_or_never` (the tool is
//! synchronous), so the figures compare the work, not an executor.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;
use serde_json::{Value, json};
use toolreg::{CallOptions, FunctionRegistry, ToolCall, ToolDeclaration, ToolExecutor, ToolRegistration, tool};

/// Add two numbers.
#[tool(safety = "safe")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

fn registry_with(n: usize) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    registry.register(add_tool::registration()).unwrap();
    let filler: Vec<ToolRegistration> = (1..n)
        .map(|i| {
            let name = format!("tool_{i:06}");
            let decl = ToolDeclaration::for_args::<add_tool::Args>(name.clone(), "Filler");
            ToolRegistration::new(decl, |a: add_tool::Args| Ok::<_, String>(a.a - a.b))
        })
        .collect();
    toolreg::register_tools!(registry, filler).unwrap();
    registry
}

/// What a caller without toolreg writes: deserialise, call, serialise.
fn direct(args: Value) -> Result<Value, String> {
    let args: add_tool::Args = serde_json::from_value(args).map_err(|e| e.to_string())?;
    serde_json::to_value(add(args.a, args.b)).map_err(|e| e.to_string())
}

fn direct_text(args: &str) -> Result<Value, String> {
    let args: add_tool::Args = serde_json::from_str(args).map_err(|e| e.to_string())?;
    serde_json::to_value(add(args.a, args.b)).map_err(|e| e.to_string())
}

fn bench_execute(c: &mut Criterion) {
    let good = json!({"a": 2.5, "b": 40});
    let bad = json!({"a": 2.5, "b": "forty"});
    let good_text = r#"{"a": 2.5, "b": 40}"#;

    let mut group = c.benchmark_group("execute");
    group.bench_function("direct/good", |b| b.iter(|| black_box(direct(black_box(good.clone())))));
    group.bench_function("direct/bad", |b| b.iter(|| black_box(direct(black_box(bad.clone())))));
    group.bench_function("direct/good_text", |b| b.iter(|| black_box(direct_text(black_box(good_text)))));
    for n in [10usize, 100_000] {
        let registry = registry_with(n);
        group.bench_with_input(BenchmarkId::new("registry/good", n), &registry, |b, r| {
            b.iter(|| black_box(r.execute(black_box("add"), black_box(good.clone())).now_or_never().unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("registry/bad", n), &registry, |b, r| {
            b.iter(|| black_box(r.execute(black_box("add"), black_box(bad.clone())).now_or_never().unwrap()))
        });
        group.bench_with_input(BenchmarkId::new("registry/good_text", n), &registry, |b, r| {
            b.iter(|| {
                let call = ToolCall::new("c1", black_box("add"), black_box(good_text));
                black_box(r.execute_call(call, CallOptions::default()).now_or_never().unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_execute);
criterion_main!(benches);
