//! Hostile and unusual input thrown at the public API: every one gets a typed
//! answer, nothing crashes, and nothing runs that should not.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use toolreg::CallOptions;
use toolreg::engine::{BatchOptions, ToolEngine};
use toolreg::policy::{ApprovalRequest, approver_fn};
use toolreg::{
    ArgumentLimits, FunctionRegistry, SafetyLevel, ToolArguments, ToolCall, ToolDeclaration, ToolError, ToolExecutor,
};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Count {
    n: i64,
    small: Option<u8>,
}

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    registry
        .register_sync_tool(
            "count",
            |args: Count| Ok::<_, String>(json!({"n": args.n, "small": args.small})),
            ToolDeclaration::for_args::<Count>("count", "Count").with_safety(SafetyLevel::Safe),
        )
        .unwrap();
    registry
        .register_sync_tool(
            "echo",
            |args: Value| Ok::<_, String>(args),
            ToolDeclaration::builder("echo").description("Echo").build().with_safety(SafetyLevel::Safe),
        )
        .unwrap();
    registry
        .register_sync_tool(
            "infinite",
            |_: Value| Ok::<_, String>(f64::INFINITY),
            ToolDeclaration::builder("infinite").build().with_safety(SafetyLevel::Safe),
        )
        .unwrap();
    registry
}

fn nested(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = json!({ "a": value });
    }
    value
}

#[tokio::test]
async fn parsed_arguments_get_the_same_limits_as_text() {
    let registry = registry();
    // 2 MiB of parsed arguments, as Anthropic, Gemini, Bedrock and MCP deliver them.
    let big = json!({ "n": 1, "pad": "x".repeat(2 << 20) });
    let err = registry.execute("echo", big.clone()).await.unwrap_err();
    assert!(matches!(err, ToolError::ArgumentsTooLarge { limit, .. } if limit == 1 << 20), "{err:?}");
    let result = registry.execute_call(ToolCall::new("c1", "echo", big), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::ArgumentsTooLarge { .. })));
    // 100 levels deep.
    let err = registry.execute("echo", nested(100)).await.unwrap_err();
    assert_eq!(err, ToolError::ArgumentsTooDeep { limit: 64 });
    // Text and parsed arguments of the same size get the same answer.
    let limits = ArgumentLimits::default().with_max_bytes(32);
    let mut small = FunctionRegistry::with_limits(limits);
    small.register_sync_tool("echo", |a: Value| Ok::<_, String>(a), ToolDeclaration::builder("echo").build()).unwrap();
    let args = json!({"text": "a fairly long string here"});
    assert!(args.to_string().len() > 32);
    assert!(matches!(small.execute("echo", args.clone()).await, Err(ToolError::ArgumentsTooLarge { .. })));
    assert!(matches!(
        small.execute_call(ToolCall::new("c", "echo", args.to_string()), CallOptions::default()).await.outcome,
        Err(ToolError::ArgumentsTooLarge { .. })
    ));
}

#[test]
fn a_hundred_thousand_levels_deep_is_refused_on_a_small_stack() {
    // A 2 MiB stack: a recursive check (or drop) of this value would overflow it.
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut value = json!(1);
            for _ in 0..100_000 {
                value = Value::Array(vec![value]);
            }
            let registry = registry();
            let outcome = futures_util::FutureExt::now_or_never(registry.execute("echo", value));
            matches!(outcome, Some(Err(ToolError::ArgumentsTooDeep { limit: 64 })))
        })
        .unwrap();
    assert!(handle.join().unwrap());
}

#[tokio::test]
async fn integral_floats_are_integers() {
    let registry = registry();
    for (args, n) in [(r#"{"n": 3.0}"#, 3), (r#"{"n": 1e3}"#, 1000), (r#"{"n": -0.0}"#, 0)] {
        let out =
            registry.execute_call(ToolCall::new("c", "count", args), CallOptions::default()).await.outcome.unwrap();
        assert_eq!(out.value["n"], n, "{args}");
        let out = registry.execute("count", serde_json::from_str(args).unwrap()).await.unwrap();
        assert_eq!(out.value["n"], n, "{args}");
    }
    let err = registry
        .execute_call(ToolCall::new("c", "count", r#"{"n": 1.5}"#), CallOptions::default())
        .await
        .outcome
        .unwrap_err();
    assert!(err.to_string().contains("`/n`: expected integer"), "{err}");
    let err = registry
        .execute_call(ToolCall::new("c", "count", r#"{"n": 1, "small": 256.0}"#), CallOptions::default())
        .await
        .outcome
        .unwrap_err();
    assert!(err.to_string().contains("`/small`"), "{err}");
}

#[tokio::test]
async fn a_non_finite_result_is_an_error_not_null() {
    let err = registry().execute("infinite", json!({})).await.unwrap_err();
    assert!(matches!(err, ToolError::ResultSerialization { .. }), "{err:?}");
    assert!(err.to_string().contains("not finite"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_synchronous_tool_cannot_hold_the_caller_past_its_deadline() {
    let mut registry = registry();
    registry
        .register_sync_tool(
            "block",
            |_: Value| {
                std::thread::sleep(Duration::from_secs(3));
                Ok::<_, String>("late")
            },
            ToolDeclaration::builder("block").build().with_safety(SafetyLevel::Safe),
        )
        .unwrap();
    let options =
        BatchOptions::default().call_timeout(Duration::from_millis(200)).batch_timeout(Duration::from_millis(400));
    let engine = ToolEngine::builder(&registry).options(options).build();
    let started = Instant::now();
    let result = engine.execute_call(ToolCall::new("c1", "block", "{}"), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::Timeout { .. })), "{:?}", result.outcome);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    // The batch deadline alone holds too.
    let engine = ToolEngine::builder(&registry)
        .options(BatchOptions::default().batch_timeout(Duration::from_millis(300)))
        .build();
    let started = Instant::now();
    let results = engine.execute_batch(vec![ToolCall::new("c2", "block", "{}")], CallOptions::default()).await;
    assert!(matches!(results[0].outcome, Err(ToolError::Timeout { .. })), "{:?}", results[0].outcome);
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn one_approval_never_runs_a_tool_twice() {
    let runs = Arc::new(AtomicUsize::new(0));
    let approvals = Arc::new(AtomicUsize::new(0));
    let mut registry = FunctionRegistry::new();
    let counter = Arc::clone(&runs);
    registry
        .register_sync_tool(
            "wipe",
            move |_: Value| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, String>("wiped")
            },
            ToolDeclaration::builder("wipe").build(),
        )
        .unwrap();
    let asked = Arc::clone(&approvals);
    let engine = ToolEngine::builder(&registry)
        .approver(approver_fn("yes", move |request: ApprovalRequest| {
            asked.fetch_add(1, Ordering::SeqCst);
            async move { request.approve() }
        }))
        .build();
    let call = ToolCall::new("dup", "wipe", ToolArguments::Json(json!({})));
    let results = engine.execute_batch(vec![call.clone(), call], CallOptions::default()).await;
    assert!(!results[0].is_error());
    assert!(matches!(&results[1].outcome, Err(ToolError::DuplicateCallId { id }) if id == "dup"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(approvals.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_bare_registry_has_no_approval_stage_and_an_engine_does() {
    // One rule: approval is a policy of the engine. A registry runs what
    // your own code asks for; an engine refuses dangerous tools without an approver.
    let mut registry = FunctionRegistry::new();
    registry
        .register_sync_tool("rm", |_: Value| Ok::<_, String>("removed"), ToolDeclaration::builder("rm").build())
        .unwrap();
    assert_eq!(registry.get("rm").unwrap().declaration().safety, SafetyLevel::Dangerous);
    assert!(!registry.execute_call(ToolCall::new("c1", "rm", "{}"), CallOptions::default()).await.is_error());
    let engine = ToolEngine::builder(&registry).build();
    let result = engine.execute_call(ToolCall::new("c2", "rm", "{}"), CallOptions::default()).await;
    assert_eq!(result.outcome, Err(ToolError::ApprovalRequired));
    let set_engine = ToolEngine::builder(&registry).selection(toolreg::Selection::sub_agent()).build();
    assert_eq!(
        set_engine.execute_call(ToolCall::new("c3", "rm", "{}"), CallOptions::default()).await.outcome,
        Err(ToolError::ApprovalRequired)
    );
}
