//! Batches, timeouts, cancellation, hooks and the order of the stack.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;
use toolreg::CallOptions;
use toolreg::engine::{BatchOptions, OutputBudget, ToolEngine, hook_fn};
use toolreg::policy::{ApprovalRequest, Selection, approver_fn};
use toolreg::{
    CallContext, FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolError, ToolExecutor,
    ToolRegistration,
};

/// Generous bound for tests that would otherwise hang on a broken engine.
const HANG: Duration = Duration::from_secs(20);

fn decl(name: &str, safety: SafetyLevel) -> ToolDeclaration {
    ToolDeclaration::builder(name)
        .description("test tool")
        .optional_param("path", ParamType::String, "a path")
        .param_with_default("n", ParamType::Integer, "a number", json!(1))
        .safety(safety)
        .build()
}

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn push(log: &Log, entry: impl Into<String>) {
    log.lock().unwrap().push(entry.into());
}

/// A registry of tools that misbehave in every way a test needs.
fn registry(log: &Log) -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    let l = Arc::clone(log);
    r.register_sync_tool(
        "echo",
        move |args: Value| {
            push(&l, format!("run echo {args}"));
            Ok::<_, String>(args)
        },
        decl("echo", SafetyLevel::Safe),
    )
    .unwrap();
    r.register_sync_tool(
        "boom",
        |_: Value| -> Result<Value, String> { panic!("kaboom") },
        decl("boom", SafetyLevel::Safe),
    )
    .unwrap();
    // Never finishes and never looks at its cancellation token.
    r.register_async_tool(
        "hang",
        |_: Value| async {
            std::future::pending::<()>().await;
            Ok::<_, String>("never")
        },
        decl("hang", SafetyLevel::Safe),
    )
    .unwrap();
    r.register_async_tool(
        "long_text",
        |args: Value| async move { Ok::<_, String>("x".repeat(args["n"].as_u64().unwrap_or(1) as usize)) },
        decl("long_text", SafetyLevel::Safe),
    )
    .unwrap();
    let l = Arc::clone(log);
    r.register(ToolRegistration::new(decl("wait_cancel", SafetyLevel::Safe), move |cx: CallContext, _: Value| {
        let l = Arc::clone(&l);
        async move {
            cx.cancelled().await;
            push(&l, format!("saw cancel {}", cx.call_id().unwrap_or("?")));
            Ok::<_, String>("cancelled")
        }
    }))
    .unwrap();
    let l = Arc::clone(log);
    r.register_sync_tool(
        "rm",
        move |args: Value| {
            push(&l, format!("run rm {args}"));
            Ok::<_, String>("removed")
        },
        decl("rm", SafetyLevel::Dangerous),
    )
    .unwrap();
    r
}

fn approve_all() -> impl toolreg::Approver {
    approver_fn("yes", |request: ApprovalRequest| async move { request.approve() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_isolates_faults_and_keeps_call_order() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log))
        .selection(Selection::all().deny(["rm"]))
        .options(BatchOptions::default().call_timeout(Duration::from_secs(2)))
        .build();
    let calls = vec![
        ToolCall::new("a", "echo", r#"{"path": "1"}"#),
        ToolCall::new("b", "boom", "{}"),
        ToolCall::new("c", "hang", "{}"),
        ToolCall::new("d", "nope", "{}"),
        ToolCall::new("e", "rm", "{}"),
        ToolCall::new("f", "echo", "{oops"),
        ToolCall::new("g", "echo", json!({"path": "2", "n": 5})),
    ];
    let results =
        tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(results[0].outcome, Ok(toolreg::ToolOutput::new(json!({"path": "1", "n": 1}))));
    assert!(
        matches!(&results[1].outcome, Err(ToolError::Panicked { message, .. }) if message == "kaboom"),
        "{:?}",
        results[1].outcome
    );
    match &results[2].outcome {
        Err(ToolError::Timeout { limit, .. }) => assert_eq!(*limit, Duration::from_secs(2)),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(results[2].text().contains("did not finish within 2s"));
    assert!(matches!(results[3].outcome, Err(ToolError::UnknownTool { .. })));
    assert!(matches!(results[4].outcome, Err(ToolError::NotOffered { .. })));
    assert!(matches!(results[5].outcome, Err(ToolError::MalformedArguments { .. })));
    assert_eq!(results[6].value(), Some(&json!({"path": "2", "n": 5})));
    // The engine still works after all that.
    let again = engine.execute_call(ToolCall::new("h", "echo", "{}"), CallOptions::default()).await;
    assert!(!again.is_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_timeout_stops_the_rest() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log))
        .options(BatchOptions::default().batch_timeout(Duration::from_millis(400)))
        .build();
    let calls =
        vec![ToolCall::new("a", "hang", "{}"), ToolCall::new("b", "echo", "{}"), ToolCall::new("c", "hang", "{}")];
    let results =
        tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    assert!(matches!(results[0].outcome, Err(ToolError::Timeout { limit, .. }) if limit == Duration::from_millis(400)));
    assert!(!results[1].is_error());
    assert!(matches!(results[2].outcome, Err(ToolError::Timeout { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_every_tool_and_stops_the_batch() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log)).build();
    let token = CancellationToken::new();
    let calls = vec![
        ToolCall::new("a", "wait_cancel", "{}"),
        ToolCall::new("b", "hang", "{}"),
        ToolCall::new("c", "echo", "{}"),
    ];
    let batch = tokio::spawn({
        let (engine, token) = (engine.clone(), token.clone());
        async move { engine.execute_batch(calls, toolreg::CallOptions::new().cancel(token)).await }
    });
    // Wait until the quick call has run, then cancel.
    tokio::time::timeout(HANG, async {
        while !log.lock().unwrap().iter().any(|l| l.starts_with("run echo")) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("echo never ran");
    token.cancel();
    let results = tokio::time::timeout(HANG, batch).await.expect("batch hung").unwrap();
    assert!(!results[2].is_error());
    // The tool that ignores cancellation is answered anyway.
    assert!(matches!(results[1].outcome, Err(ToolError::Cancelled)));
    // The cooperative tool either finished after seeing the token or was stopped.
    assert!(
        matches!(results[0].outcome, Err(ToolError::Cancelled)) || results[0].text() == "cancelled",
        "{:?}",
        results[0].outcome
    );
    // A single call is cancellable too, even when the tool ignores the token.
    let token = CancellationToken::new();
    let single = tokio::spawn({
        let (engine, token) = (engine.clone(), token.clone());
        async move { engine.execute_call(ToolCall::new("z", "hang", "{}"), toolreg::CallOptions::new().cancel(token)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    token.cancel();
    let result = tokio::time::timeout(HANG, single).await.expect("call hung").unwrap();
    assert_eq!(result.id, "z");
    assert!(matches!(result.outcome, Err(ToolError::Cancelled)), "{:?}", result.outcome);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_see_cancellation_through_their_context() {
    let log = log();
    // A hook cancels the call's own token before running it; the tool sees it.
    let engine = ToolEngine::builder(&registry(&log))
        .layer(hook_fn(|call, next| async move {
            call.cx.cancellation().expect("the engine always supplies a token").cancel();
            next.run(call).await
        }))
        .build();
    let call = engine.execute_call(
        ToolCall::new("k", "wait_cancel", "{}"),
        toolreg::CallOptions::new().cancel(CancellationToken::new()),
    );
    let result = tokio::time::timeout(HANG, call).await.expect("call hung");
    assert_eq!(result.text(), "cancelled");
    assert_eq!(log.lock().unwrap().as_slice(), ["saw cancel k"]);
}

/// Registers `count` tools that wait at one barrier: they can only finish if all run at once.
fn barrier_registry(safety: SafetyLevel, exclusive: Option<&str>, count: usize) -> FunctionRegistry {
    let barrier = Arc::new(Barrier::new(count));
    let mut r = FunctionRegistry::new();
    let mut d = decl("meet", safety);
    if let Some(key) = exclusive {
        d = d.with_exclusive_key(key);
    }
    r.register_async_tool(
        "meet",
        move |_: Value| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok::<_, String>("met")
            }
        },
        d,
    )
    .unwrap();
    r
}

fn meet_calls(paths: &[&str]) -> Vec<ToolCall> {
    paths.iter().enumerate().map(|(i, p)| ToolCall::new(format!("m{i}"), "meet", json!({"path": p}))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_tools_run_in_parallel() {
    let engine = ToolEngine::builder(&barrier_registry(SafetyLevel::Safe, None, 5)).build();
    let results = tokio::time::timeout(
        HANG,
        engine.execute_batch(meet_calls(&["a", "a", "a", "a", "a"]), CallOptions::default()),
    )
    .await
    .expect("read-only tools did not run in parallel");
    assert!(results.iter().all(|r| r.text() == "met"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_exclusive_keys_run_in_parallel_and_writes_can_be_allowed_to() {
    let engine = ToolEngine::builder(&barrier_registry(SafetyLevel::Cautious, Some("path"), 2)).build();
    let results = tokio::time::timeout(HANG, engine.execute_batch(meet_calls(&["a", "b"]), CallOptions::default()))
        .await
        .expect("keys a, b");
    assert!(results.iter().all(|r| !r.is_error()));
    let engine = ToolEngine::builder(&barrier_registry(SafetyLevel::Cautious, None, 2))
        .options(BatchOptions::default().parallel_writes(true))
        .build();
    let results = tokio::time::timeout(HANG, engine.execute_batch(meet_calls(&["a", "a"]), CallOptions::default()))
        .await
        .expect("writes");
    assert!(results.iter().all(|r| !r.is_error()));
}

/// A tool that records how many of its calls overlap, overall and per path.
fn overlap_registry(exclusive: bool, seen: &Arc<(AtomicUsize, AtomicUsize, Mutex<Vec<String>>)>) -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    let mut d = decl("write", SafetyLevel::Cautious);
    if exclusive {
        d = d.with_exclusive_key("path");
    }
    let seen = Arc::clone(seen);
    let in_flight: Arc<Mutex<Vec<String>>> = Arc::default();
    r.register_async_tool(
        "write",
        move |args: Value| {
            let (seen, in_flight) = (Arc::clone(&seen), Arc::clone(&in_flight));
            async move {
                let path = args["path"].as_str().unwrap_or_default().to_owned();
                {
                    let mut flying = in_flight.lock().unwrap();
                    if flying.contains(&path) {
                        seen.1.fetch_add(1, Ordering::SeqCst); // same key overlapped
                    }
                    flying.push(path.clone());
                    seen.0.fetch_max(flying.len(), Ordering::SeqCst);
                }
                seen.2.lock().unwrap().push(format!("{path}{}", args["n"]));
                tokio::time::sleep(Duration::from_millis(15)).await;
                let mut flying = in_flight.lock().unwrap();
                let at = flying.iter().position(|p| *p == path).unwrap();
                flying.remove(at);
                Ok::<_, String>("written")
            }
        },
        d,
    )
    .unwrap();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_exclusive_key_runs_one_at_a_time_in_call_order() {
    let seen = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0), Mutex::new(Vec::new())));
    let engine = ToolEngine::builder(&overlap_registry(true, &seen)).build();
    let calls: Vec<ToolCall> = (0..8)
        .map(|i| ToolCall::new(format!("w{i}"), "write", json!({"path": if i % 2 == 0 { "a" } else { "b" }, "n": i})))
        .collect();
    let results =
        tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    assert!(results.iter().all(|r| !r.is_error()));
    assert_eq!(seen.1.load(Ordering::SeqCst), 0, "two calls with the same key overlapped");
    let order = seen.2.lock().unwrap().clone();
    let a: Vec<&String> = order.iter().filter(|s| s.starts_with('a')).collect();
    let b: Vec<&String> = order.iter().filter(|s| s.starts_with('b')).collect();
    assert_eq!(a, ["a0", "a2", "a4", "a6"]);
    assert_eq!(b, ["b1", "b3", "b5", "b7"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_without_a_key_run_one_at_a_time_and_the_limit_holds() {
    let seen = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0), Mutex::new(Vec::new())));
    let engine = ToolEngine::builder(&overlap_registry(false, &seen)).build();
    let calls: Vec<ToolCall> =
        (0..4).map(|i| ToolCall::new(format!("w{i}"), "write", json!({"path": format!("p{i}"), "n": i}))).collect();
    let results = tokio::time::timeout(HANG, engine.execute_batch(calls.clone(), CallOptions::default()))
        .await
        .expect("batch hung");
    assert!(results.iter().all(|r| !r.is_error()));
    assert_eq!(seen.0.load(Ordering::SeqCst), 1, "unkeyed writes overlapped");
    assert_eq!(*seen.2.lock().unwrap(), ["p00", "p11", "p22", "p33"]);

    let seen = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0), Mutex::new(Vec::new())));
    let engine = ToolEngine::builder(&overlap_registry(false, &seen))
        .options(BatchOptions::default().parallel_writes(true).max_concurrency(2))
        .build();
    let calls: Vec<ToolCall> =
        (0..8).map(|i| ToolCall::new(format!("w{i}"), "write", json!({"path": format!("p{i}"), "n": i}))).collect();
    tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    assert!(seen.0.load(Ordering::SeqCst) <= 2, "more than max_concurrency calls ran at once");
}

#[tokio::test]
async fn the_stack_runs_in_design_order() {
    let log = log();
    let (l1, l2, l3) = (Arc::clone(&log), Arc::clone(&log), Arc::clone(&log));
    let engine = ToolEngine::builder(&registry(&log))
        .selection(Selection::all().deny(["echo"]))
        .approver(approver_fn("recorder", move |request: ApprovalRequest| {
            push(&l1, format!("approve {}", request.arguments()));
            async move { request.approve() }
        }))
        .layer(
            hook_fn(move |call, next| {
                let l = Arc::clone(&l2);
                async move {
                    push(&l, format!("before outer {}", call.arguments));
                    let out = next.run(call).await;
                    push(&l, "after outer");
                    out
                }
            })
            .named("outer"),
        )
        .layer(
            hook_fn(move |call, next| {
                let l = Arc::clone(&l3);
                async move {
                    push(&l, "before inner");
                    let out = next.run(call).await;
                    push(&l, "after inner");
                    out
                }
            })
            .named("inner"),
        )
        .build();
    let result = engine.execute_call(ToolCall::new("c1", "rm", r#"{"path": "/tmp/x"}"#), CallOptions::default()).await;
    assert!(!result.is_error(), "{:?}", result.outcome);
    let validated = r#"{"path":"/tmp/x","n":1}"#; // defaults filled after what the model sent
    assert_eq!(
        *log.lock().unwrap(),
        [
            format!("approve {validated}"), // validation (defaults filled) before approval
            format!("before outer {validated}"),
            "before inner".to_owned(),
            format!("run rm {validated}"),
            "after inner".to_owned(),
            "after outer".to_owned(),
        ]
    );
    // Lookup, selection and validation stop a call before approval and hooks.
    log.lock().unwrap().clear();
    for call in [
        ToolCall::new("c2", "nope", "{}"),
        ToolCall::new("c3", "echo", "{}"),
        ToolCall::new("c4", "rm", r#"{"n": "x"}"#),
    ] {
        assert!(engine.execute_call(call, CallOptions::default()).await.is_error());
    }
    assert!(log.lock().unwrap().is_empty(), "{:?}", log.lock().unwrap());
}

#[tokio::test]
async fn hooks_rewrite_arguments_and_rewrites_are_checked() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log))
        .approver(approve_all())
        .layer(hook_fn(|mut call, next| async move {
            match call.arguments["path"].as_str() {
                Some("rewrite") => call.arguments["path"] = json!("rewritten"),
                Some("break") => call.arguments["n"] = json!("not a number"),
                _ => {}
            }
            next.run(call).await
        }))
        .build();
    let r = engine.execute_call(ToolCall::new("a", "echo", r#"{"path": "rewrite"}"#), CallOptions::default()).await;
    assert_eq!(r.value(), Some(&json!({"path": "rewritten", "n": 1})));
    let r = engine.execute_call(ToolCall::new("b", "echo", r#"{"path": "break"}"#), CallOptions::default()).await;
    assert!(matches!(r.outcome, Err(ToolError::InvalidArguments { .. })));
    // A dangerous tool's approval covers the approved arguments only.
    let r = engine.execute_call(ToolCall::new("c", "rm", r#"{"path": "rewrite"}"#), CallOptions::default()).await;
    match &r.outcome {
        Err(ToolError::ApprovalMismatch { detail, .. }) => assert!(detail.contains("changed after")),
        other => panic!("expected ApprovalMismatch, got {other:?}"),
    }
    assert!(!log.lock().unwrap().iter().any(|l| l.starts_with("run rm")));
    let r = engine.execute_call(ToolCall::new("d", "rm", r#"{"path": "keep"}"#), CallOptions::default()).await;
    assert!(!r.is_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_and_panicking_hooks_fail_only_their_call() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log))
        .layer(
            hook_fn(|call, next| async move {
                match call.arguments["path"].as_str() {
                    Some("refuse") => Err(call.refuse("path is on the deny list")),
                    Some("panic") => panic!("hook bug"),
                    _ => next.run(call).await,
                }
            })
            .named("guard"),
        )
        .build();
    let calls = vec![
        ToolCall::new("a", "echo", r#"{"path": "refuse"}"#),
        ToolCall::new("b", "echo", r#"{"path": "panic"}"#),
        ToolCall::new("c", "echo", r#"{"path": "fine"}"#),
    ];
    let results =
        tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    match &results[0].outcome {
        Err(ToolError::HookFailed { hook, message, .. }) => {
            assert_eq!(hook, "guard");
            assert_eq!(message, "path is on the deny list");
        }
        other => panic!("expected HookFailed, got {other:?}"),
    }
    assert!(results[0].text().contains("hook `guard` refused the call"), "{}", results[0].text());
    // One panic boundary per call: a panicking hook fails its call, and says it was the hook.
    match &results[1].outcome {
        Err(ToolError::HookFailed { hook, message }) => {
            assert_eq!(hook, "guard");
            assert_eq!(message, "the hook panicked: hook bug");
        }
        other => panic!("expected HookFailed, got {other:?}"),
    }
    assert!(!results[2].is_error());
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn output_budget_cuts_head_and_tail_with_a_marker() {
    let log = log();
    let engine = ToolEngine::builder(&registry(&log)).layer(OutputBudget::new(100)).build();
    let long = engine.execute_call(ToolCall::new("a", "long_text", r#"{"n": 1000}"#), CallOptions::default()).await;
    let text = long.text().into_owned();
    assert!(text.starts_with(&"x".repeat(50)));
    assert!(text.ends_with(&"x".repeat(50)));
    assert!(text.contains("[... 900 characters removed ...]"), "{text}");
    let short = engine.execute_call(ToolCall::new("b", "long_text", r#"{"n": 100}"#), CallOptions::default()).await;
    assert_eq!(short.text(), "x".repeat(100));
    // Structured results longer than the budget become cut text.
    let engine = ToolEngine::builder(&registry(&log)).layer(OutputBudget::new(10)).build();
    let json = engine
        .execute_call(ToolCall::new("c", "echo", r#"{"path": "a rather long path"}"#), CallOptions::default())
        .await;
    assert!(json.text().contains("characters removed"));
}

#[tokio::test]
async fn output_budget_cuts_text_blocks_and_leaves_other_blocks_whole() {
    let mut registry = FunctionRegistry::new();
    let blocks = |_: Value| {
        Ok::<_, String>(toolreg::ToolOutput::from(vec![
            toolreg::Content::text("y".repeat(1000)),
            toolreg::Content::image(vec![7; 500], "image/png"),
        ]))
    };
    registry.register(ToolRegistration::new(decl("blocks", SafetyLevel::Safe), blocks)).unwrap();
    let audit = Arc::new(toolreg::policy::MemorySink::new());
    let engine = ToolEngine::builder(&registry).layer(OutputBudget::new(100)).audit(Arc::clone(&audit)).build();
    let out = engine.execute_call(ToolCall::new("a", "blocks", "{}"), CallOptions::default()).await.outcome.unwrap();
    let text = out.content[0].as_text().unwrap();
    assert!(text.contains("[... 900 characters removed ...]"), "{text}");
    assert_eq!(out.content[1], toolreg::Content::image(vec![7; 500], "image/png"));
    // The audit counts what the model gets: the cut text and the image's bytes.
    assert_eq!(audit.events()[0].result_bytes, text.len() + 500);
}

#[tokio::test]
async fn a_dangerous_tool_in_a_batch_waits_for_approval_others_do_not_need_it() {
    let log = log();
    let asked = Arc::new(AtomicBool::new(false));
    let asked2 = Arc::clone(&asked);
    let engine = ToolEngine::builder(&registry(&log))
        .approver(approver_fn("yes", move |request: ApprovalRequest| {
            asked2.store(true, Ordering::SeqCst);
            async move { request.approve() }
        }))
        .build();
    let results = engine
        .execute_batch(
            vec![ToolCall::new("a", "rm", r#"{"path": "x"}"#), ToolCall::new("b", "echo", "{}")],
            CallOptions::default(),
        )
        .await;
    assert!(results.iter().all(|r| !r.is_error()));
    assert!(asked.load(Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_batch_starts_nothing_more_and_audits_every_call() {
    let log = log();
    let mut r = FunctionRegistry::new();
    r.register_async_tool(
        "slow_write",
        |_: Value| async {
            std::future::pending::<()>().await;
            Ok::<_, String>("never")
        },
        decl("slow_write", SafetyLevel::Cautious),
    )
    .unwrap();
    let l = Arc::clone(&log);
    r.register_sync_tool(
        "quick_write",
        move |_: Value| {
            push(&l, "run quick_write");
            Ok::<_, String>("written")
        },
        decl("quick_write", SafetyLevel::Cautious),
    )
    .unwrap();
    let audit = Arc::new(toolreg::policy::MemorySink::new());
    let engine = ToolEngine::builder(&r).audit(Arc::clone(&audit)).build();
    let token = CancellationToken::new();
    // Writes without a key run one at a time: the quick write waits behind the slow one.
    let calls = vec![ToolCall::new("w1", "slow_write", "{}"), ToolCall::new("w2", "quick_write", "{}")];
    let batch = tokio::spawn({
        let (engine, token) = (engine.clone(), token.clone());
        async move { engine.execute_batch(calls, toolreg::CallOptions::new().cancel(token)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    token.cancel();
    let results = tokio::time::timeout(HANG, batch).await.expect("batch hung").unwrap();
    for result in &results {
        assert!(matches!(result.outcome, Err(ToolError::Cancelled)), "{:?}", result.outcome);
    }
    assert!(log.lock().unwrap().is_empty(), "a call queued behind a cancelled batch ran");
    let outcomes: Vec<_> = audit.events().into_iter().map(|e| (e.call_id, e.outcome.into_owned())).collect();
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.iter().all(|(_, outcome)| outcome == "cancelled"), "{outcomes:?}");

    // A single call whose token is already cancelled does not run either.
    let token = CancellationToken::new();
    token.cancel();
    let result =
        engine.execute_call(ToolCall::new("w3", "quick_write", "{}"), toolreg::CallOptions::new().cancel(token)).await;
    assert!(matches!(result.outcome, Err(ToolError::Cancelled)), "{:?}", result.outcome);
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_limit_holds_across_workers() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let mut r = FunctionRegistry::new();
    let (run, top) = (Arc::clone(&running), Arc::clone(&peak));
    r.register_async_tool(
        "nap",
        move |_: Value| {
            let (run, top) = (Arc::clone(&run), Arc::clone(&top));
            async move {
                let now = run.fetch_add(1, Ordering::SeqCst) + 1;
                top.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                run.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, String>("ok")
            }
        },
        decl("nap", SafetyLevel::Safe),
    )
    .unwrap();
    let engine = ToolEngine::builder(&r).options(BatchOptions::default().max_concurrency(3)).build();
    let calls: Vec<_> = (0..40).map(|i| ToolCall::new(format!("c{i}"), "nap", "{}")).collect();
    let results =
        tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.expect("batch hung");
    assert!(results.iter().all(|r| !r.is_error()));
    assert_eq!(results.iter().map(|r| r.id.as_str()).collect::<Vec<_>>()[..3], ["c0", "c1", "c2"]);
    let peak = peak.load(Ordering::SeqCst);
    assert!((1..=3).contains(&peak), "peak concurrency {peak}");
}

/// Add two numbers.
#[toolreg::tool(safety = "safe")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

/// A safe typed tool with no approval, hooks or lane takes its argument text
/// straight to serde. Every way that text can be wrong still gets its own
/// error, and the audit records the same hash the parsed arguments have.
#[tokio::test]
async fn argument_text_kept_for_the_tool_is_checked_and_hashed_like_parsed_arguments() {
    use toolreg::ArgumentLimits;
    use toolreg::policy::{ArgumentsHash, MemorySink};

    let limits = ArgumentLimits::default().with_max_bytes(200).with_max_depth(4);
    let mut registry = FunctionRegistry::with_limits(limits);
    registry.register(add_tool::registration()).unwrap();
    let audit = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry).audit(audit.clone()).build();
    let run =
        |id: &str, text: &str| engine.execute_call(ToolCall::new(id, "add", text.to_owned()), CallOptions::default());

    // Spaced and sorted (the scanner), escaped and unsorted (serde), a repeated key (a `Value`).
    let good = [
        ("spaced", " {\"a\": 2,\n \"b\": 40} ", json!({"a": 2, "b": 40})),
        ("unsorted", r#"{"b": 4e1, "a": 2.0}"#, json!({"a": 2.0, "b": 40.0})),
        ("repeated", r#"{"a": 1, "b": 40, "a": 2}"#, json!({"a": 2, "b": 40})),
    ];
    for (id, text, parsed) in &good {
        let result = run(id, text).await;
        assert_eq!(result.value(), Some(&json!(42.0)), "{id}");
        let event = audit.events().pop().unwrap();
        assert_eq!(event.call_id, *id);
        assert_eq!(event.arguments_hash, Some(ArgumentsHash::of(parsed)), "{id}");
    }

    let deep = r#"{"a": [[[[[1]]]]], "b": 1}"#;
    let large = format!(r#"{{"a": 1, "b": 1, "c": "{}"}}"#, "x".repeat(300));
    let bad = [
        ("malformed", "{\"a\": 2,", "malformed_arguments", None),
        ("wrong_type", r#"{"a": "two", "b": 40}"#, "invalid_arguments", Some(json!({"a": "two", "b": 40}))),
        ("missing", r#"{"a": 2}"#, "invalid_arguments", Some(json!({"a": 2}))),
        ("empty", "  ", "invalid_arguments", Some(json!({}))),
        ("array", "[2, 40]", "invalid_arguments", Some(json!([2, 40]))),
        ("deep", deep, "arguments_too_deep", None),
        ("large", large.as_str(), "arguments_too_large", None),
    ];
    for (id, text, kind, hashed) in bad {
        let result = run(id, text).await;
        assert!(result.is_error(), "{id}: {result:?}");
        let event = audit.events().pop().unwrap();
        assert_eq!(event.outcome, kind, "{id}: {result:?}");
        assert_eq!(event.arguments_hash, hashed.map(|v| ArgumentsHash::of(&v)), "{id}");
    }
    let missing = run("missing", r#"{"a": 2}"#).await;
    assert!(missing.text().contains('b'), "the model is told which argument is missing");
}

/// An audit sink that panics on every record.
struct PanickingSink;

impl toolreg::policy::AuditSink for PanickingSink {
    fn record(&self, _: &toolreg::policy::AuditEvent) {
        panic!("sink broke");
    }
}

/// A panicking sink costs its own record only: single calls and every call
/// of a batch still get their results, and the next sink still hears of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_audit_sink_loses_no_result_and_no_other_record() {
    use toolreg::policy::MemorySink;

    let log = log();
    let memory = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry(&log)).audit(PanickingSink).audit(memory.clone()).build();

    let single = engine.execute_call(ToolCall::new("c0", "echo", json!({"n": 0})), CallOptions::default()).await;
    assert_eq!(single.value(), Some(&json!({"n": 0})));

    let calls: Vec<ToolCall> = (1..=20).map(|i| ToolCall::new(format!("c{i}"), "echo", json!({"n": i}))).collect();
    let results = tokio::time::timeout(HANG, engine.execute_batch(calls, CallOptions::default())).await.unwrap();
    assert_eq!(results.len(), 20);
    for (i, result) in (1..).zip(&results) {
        assert_eq!(result.id, format!("c{i}"));
        assert_eq!(result.value(), Some(&json!({"n": i})));
    }
    let mut recorded: Vec<String> = memory.events().into_iter().map(|event| event.call_id).collect();
    recorded.sort_by_key(|id| id[1..].parse::<u32>().unwrap());
    assert_eq!(recorded, (0..=20).map(|i| format!("c{i}")).collect::<Vec<_>>());
}

/// A worker waiting for a permit of the concurrency limit keeps its place in
/// the queue while its own running calls finish: the call it queued for
/// starts before those of a worker that queued later.
#[tokio::test]
async fn a_worker_waiting_for_a_permit_keeps_its_place() {
    // One gate per call: a call starts, logs it, and waits for its gate.
    type Gates = Arc<Mutex<std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>>>;
    fn gate_of(gates: &Gates, name: &str) -> Arc<tokio::sync::Semaphore> {
        let mut gates = gates.lock().unwrap();
        Arc::clone(gates.entry(name.to_owned()).or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(0))))
    }
    let gates = Gates::default();
    let started = log();
    let gate = |name: &str| gate_of(&gates, name);
    let mut r = FunctionRegistry::new();
    for (tool, safety) in [("read", SafetyLevel::Safe), ("write", SafetyLevel::Cautious)] {
        let (gates, started) = (Arc::clone(&gates), Arc::clone(&started));
        r.register_async_tool(
            tool,
            move |args: Value| {
                let name = args["path"].as_str().unwrap_or_default().to_owned();
                let gate = gate_of(&gates, &name);
                push(&started, name);
                async move {
                    let _ = gate.acquire().await;
                    Ok::<_, String>("done")
                }
            },
            decl(tool, safety),
        )
        .unwrap();
    }
    let engine = ToolEngine::builder(&r).options(BatchOptions::default().max_concurrency(2)).build();
    let call = |tool: &str, path: &str| ToolCall::new(path, tool, json!({"path": path}));
    // On this one-thread runtime the reads' worker is spawned, and runs, first:
    // it starts s1 and s2, then queues for a permit for s3; the writes' lane
    // queues after it.
    let calls = vec![call("read", "s1"), call("read", "s2"), call("read", "s3"), call("write", "w1")];
    let batch = tokio::spawn({
        let engine = engine.clone();
        async move { engine.execute_batch(calls, CallOptions::default()).await }
    });
    while started.lock().unwrap().len() < 2 {
        tokio::task::yield_now().await;
    }
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    gate("s1").add_permits(1);
    while started.lock().unwrap().len() < 3 {
        tokio::task::yield_now().await;
    }
    for name in ["s2", "s3", "w1"] {
        gate(name).add_permits(1);
    }
    let results = tokio::time::timeout(HANG, batch).await.unwrap().unwrap();
    assert!(results.iter().all(|result| !result.is_error()), "{results:?}");
    assert_eq!(*started.lock().unwrap(), ["s1", "s2", "s3", "w1"]);
}

/// What a host passes down with a call reaches the approver and the tool,
/// and a tool's progress reports reach the reporter the host put there.
#[tokio::test]
async fn caller_extensions_reach_approver_tool_and_progress() {
    #[derive(Debug, PartialEq)]
    struct Client(&'static str);

    let mut r = FunctionRegistry::new();
    r.register(ToolRegistration::new(decl("wipe", SafetyLevel::Dangerous), |cx: CallContext, _: Value| async move {
        cx.report_progress(1.0, Some(2.0), Some("half"));
        cx.report_progress(2.0, Some(2.0), None);
        Ok::<_, String>(json!(cx.extensions().get::<Client>().map(|c| c.0)))
    }))
    .unwrap();
    let seen = Arc::new(Mutex::new(None));
    let seen_by_approver = Arc::clone(&seen);
    let engine = ToolEngine::builder(&r)
        .approver(approver_fn("host", move |request: ApprovalRequest| {
            *seen_by_approver.lock().unwrap() = request.extensions().get::<Client>().map(|c| c.0);
            let decision = request.approve();
            async move { decision }
        }))
        .build();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reports);
    let mut extensions = toolreg::Extensions::default();
    extensions.insert(Client("mcp-client-1"));
    extensions
        .insert(toolreg::ProgressReporter::new(move |p| sink.lock().unwrap().push((p.progress, p.total, p.message))));

    let call = ToolCall::new("c1", "wipe", json!({}));
    let options = toolreg::CallOptions::new().extensions(extensions.clone());
    let result = engine.execute_call(call.clone(), options).await;
    assert_eq!(result.value(), Some(&json!("mcp-client-1")));
    assert_eq!(*seen.lock().unwrap(), Some("mcp-client-1"));
    assert_eq!(*reports.lock().unwrap(), vec![(1.0, Some(2.0), Some("half".to_owned())), (2.0, Some(2.0), None)]);

    let options = toolreg::CallOptions::new().extensions(extensions);
    let results = engine.execute_batch(vec![ToolCall::new("c2", "wipe", json!({}))], options).await;
    assert_eq!(results[0].value(), Some(&json!("mcp-client-1")));
    // Without extensions the tool sees none and progress goes nowhere.
    let plain = engine.execute_call(call, CallOptions::default()).await;
    assert_eq!(plain.value(), Some(&Value::Null));
}

/// A layer written by hand (not `hook_fn`) that panics before the tool runs.
struct Exploding;

impl toolreg::engine::ToolLayer for Exploding {
    fn call(&self, call: toolreg::engine::HookCall, next: toolreg::engine::Next) -> toolreg::ToolFuture {
        if call.arguments["path"] == "explode" {
            panic!("layer bug");
        }
        next.run(call)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_reported_where_it_started() {
    let log = log();
    let mut registry = registry(&log);
    registry
        .register_async_tool(
            "async_boom",
            |_: Value| async {
                tokio::task::yield_now().await;
                if true {
                    panic!("async kaboom");
                }
                Ok::<_, String>("never")
            },
            decl("async_boom", SafetyLevel::Dangerous),
        )
        .unwrap();
    let audit = Arc::new(toolreg::policy::MemorySink::new());
    // The approver fails on `rm`, in its future, and approves the rest.
    let approver = approver_fn("flaky", |request: ApprovalRequest| async move {
        tokio::task::yield_now().await;
        if request.tool() == "rm" {
            panic!("approver down");
        }
        request.approve()
    });
    let engine = ToolEngine::builder(&registry)
        .approver(approver)
        .layer(hook_fn(|call, next| async move { next.run(call).await }).named("pass"))
        .layer(Exploding)
        .audit(Arc::clone(&audit))
        .build();

    // The approver panicked: the call is refused (fail closed) and the tool never ran.
    let r = engine.execute_call(ToolCall::new("a", "rm", r#"{"path": "x"}"#), CallOptions::default()).await;
    match &r.outcome {
        Err(ToolError::ApprovalFailed { approver, message }) => {
            assert_eq!((approver.as_str(), message.as_str()), ("flaky", "approver down"));
        }
        other => panic!("expected ApprovalFailed, got {other:?}"),
    }
    assert!(!r.text().contains("panicked"), "{}", r.text());
    assert!(r.text().contains("refused and did not run"), "{}", r.text());
    assert!(!log.lock().unwrap().iter().any(|l| l.starts_with("run rm")));
    let event = audit.events().last().cloned().unwrap();
    assert_eq!(event.outcome, "approval_failed");
    assert_eq!(event.decision, toolreg::policy::AuditDecision::ApprovalFailed);
    assert_eq!(event.approver.as_deref(), Some("flaky"));

    // The tool panicked under an approval and two layers: the tool's panic,
    // synchronous or in its future.
    let r = engine.execute_call(ToolCall::new("b", "boom", "{}"), CallOptions::default()).await;
    assert_eq!(r.outcome, Err(ToolError::Panicked { message: "kaboom".into() }));
    let r = engine.execute_call(ToolCall::new("c", "async_boom", "{}"), CallOptions::default()).await;
    assert_eq!(r.outcome, Err(ToolError::Panicked { message: "async kaboom".into() }));

    // A layer written by hand panicked: named after its type.
    let r = engine.execute_call(ToolCall::new("d", "echo", r#"{"path": "explode"}"#), CallOptions::default()).await;
    match &r.outcome {
        Err(ToolError::HookFailed { hook, message }) => {
            assert_eq!(hook, "Exploding");
            assert_eq!(message, "the hook panicked: layer bug");
        }
        other => panic!("expected HookFailed, got {other:?}"),
    }
    // And a good call after all that is untouched.
    let r = engine.execute_call(ToolCall::new("e", "echo", r#"{"path": "fine"}"#), CallOptions::default()).await;
    assert!(!r.is_error(), "{r:?}");
}
