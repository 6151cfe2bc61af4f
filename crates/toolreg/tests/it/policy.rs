//! Selection, approval and audit through the public API.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolreg::CallOptions;
use toolreg::engine::ToolEngine;
use toolreg::policy::{
    ApprovalRequest, Approver, ArgumentsHash, AuditDecision, Decision, JsonLinesSink, MemorySink, PolicyApprover,
    Selection, TerminalApprover, approver_fn,
};
use toolreg::{
    FunctionRegistry, ParamType, SafetyLevel, Scope, ToolCall, ToolDeclaration, ToolError, ToolExecutor, tool,
};

fn decl(name: &str, safety: SafetyLevel) -> ToolDeclaration {
    ToolDeclaration::builder(name)
        .description("test tool")
        .param("path", ParamType::String, "a path")
        .param_with_default("force", ParamType::Boolean, "force it", json!(false))
        .safety(safety)
        .build()
}

/// A registry whose tools record every run (tool name and arguments).
fn registry(runs: &Arc<Mutex<Vec<(String, Value)>>>) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for (name, safety, scope, category) in [
        ("read_file", SafetyLevel::Safe, Scope::Core, "fs"),
        ("write_file", SafetyLevel::Cautious, Scope::Core, "fs"),
        ("delete_file", SafetyLevel::Dangerous, Scope::Core, "fs"),
        ("ask_user", SafetyLevel::Safe, Scope::User, "user"),
        ("fetch", SafetyLevel::Safe, Scope::Custom, "web"),
    ] {
        let runs = Arc::clone(runs);
        let tool_name = name.to_owned();
        let d = decl(name, safety).with_scope(scope).with_category(category);
        registry
            .register_sync_tool(
                name,
                move |args: Value| {
                    runs.lock().unwrap().push((tool_name.clone(), args.clone()));
                    Ok::<_, String>(format!("{tool_name} done"))
                },
                d,
            )
            .unwrap();
    }
    registry
}

fn runs() -> Arc<Mutex<Vec<(String, Value)>>> {
    Arc::new(Mutex::new(Vec::new()))
}

#[test]
fn selection_filters_combine_with_and() {
    let registry = registry(&runs());
    let names = |s: Selection| s.apply(&registry).list().map(|tool| tool.name().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(Selection::all()), ["read_file", "write_file", "delete_file", "ask_user", "fetch"]);
    assert_eq!(names(Selection::sub_agent()), ["read_file", "write_file", "delete_file", "fetch"]);
    assert_eq!(names(Selection::top_level().max_safety(SafetyLevel::Safe)), ["read_file", "ask_user", "fetch"]);
    assert_eq!(
        names(Selection::all().max_safety(SafetyLevel::Cautious).categories(["fs"])),
        ["read_file", "write_file"]
    );
    assert_eq!(names(Selection::all().scopes([Scope::Custom, Scope::User])), ["ask_user", "fetch"]);
    assert_eq!(names(Selection::all().allow(["fetch", "delete_file"]).deny(["delete_file"])), ["fetch"]);
    assert_eq!(
        names(Selection::all().categories(["web", "user"]).max_safety(SafetyLevel::Safe)),
        ["ask_user", "fetch"]
    );
    let set = Selection::sub_agent().apply(&registry);
    assert_eq!(set.get_declarations().len(), set.len());
    assert!(set.contains("fetch") && !set.contains("ask_user"));
}

#[test]
fn hints_follow_safety_levels() {
    let hints = |s| decl("t", s).hints();
    assert!(hints(SafetyLevel::Safe).read_only && !hints(SafetyLevel::Safe).destructive);
    assert!(!hints(SafetyLevel::Cautious).read_only && !hints(SafetyLevel::Cautious).destructive);
    assert!(!hints(SafetyLevel::Dangerous).read_only && hints(SafetyLevel::Dangerous).destructive);
}

#[tokio::test]
async fn a_tool_outside_the_selection_is_refused_not_run() {
    let runs = runs();
    let registry = registry(&runs);
    let engine = ToolEngine::builder(&registry).selection(Selection::sub_agent()).build();
    let result = engine.execute_call(ToolCall::new("c1", "ask_user", r#"{"path": "x"}"#), CallOptions::default()).await;
    assert_eq!(result.id, "c1");
    match &result.outcome {
        Err(ToolError::NotOffered { available }) => {
            assert!(!available.contains(&"ask_user".to_owned()));
        }
        other => panic!("expected NotOffered, got {other:?}"),
    }
    assert!(result.text().contains("not available here"));
    assert!(runs.lock().unwrap().is_empty());
    // An unknown name is told apart, and its list of tools is the selected one.
    let result = engine.execute_call(ToolCall::new("c2", "nope", "{}"), CallOptions::default()).await;
    match result.outcome {
        Err(ToolError::UnknownTool { available, .. }) => assert!(!available.contains(&"ask_user".to_owned())),
        other => panic!("expected UnknownTool, got {other:?}"),
    }
    // An engine with no approver refuses dangerous tools.
    let result =
        engine.execute_call(ToolCall::new("c3", "delete_file", r#"{"path": "x"}"#), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::ApprovalRequired)));
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn unknown_tool_gives_a_result_and_leaves_the_registry_alone() {
    let runs = runs();
    let registry = registry(&runs);
    let engine = ToolEngine::builder(&registry).build();
    let result = engine.execute_call(ToolCall::new("c1", "launch", "{}"), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::UnknownTool { .. })));
    assert!(result.text().contains("Available tools: read_file"));
    assert_eq!(registry.len(), 5);
    let ok = engine.execute_call(ToolCall::new("c2", "read_file", r#"{"path": "a"}"#), CallOptions::default()).await;
    assert_eq!(ok.text(), "read_file done");
}

#[tokio::test]
async fn dangerous_calls_fail_closed_without_an_approver() {
    let runs = runs();
    let audit = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry(&runs)).audit(audit.clone()).build();
    let result =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/x"}"#), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::ApprovalRequired)) && result.name == "delete_file");
    assert!(!result.outcome.as_ref().unwrap_err().retryable());
    // Safe and cautious tools run with no approver.
    assert!(
        !engine
            .execute_call(ToolCall::new("c2", "read_file", r#"{"path": "/x"}"#), CallOptions::default())
            .await
            .is_error()
    );
    assert!(
        !engine
            .execute_call(ToolCall::new("c3", "write_file", r#"{"path": "/x"}"#), CallOptions::default())
            .await
            .is_error()
    );
    let ran: Vec<String> = runs.lock().unwrap().iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(ran, ["read_file", "write_file"]);
    let decisions: Vec<AuditDecision> = audit.events().iter().map(|e| e.decision).collect();
    assert_eq!(decisions, [AuditDecision::NoApprover, AuditDecision::NotRequired, AuditDecision::Recorded]);
}

/// A decision asked for and not given yet: the call does not run, fails
/// as pending with the reason, and the audit says pending, not denied.
#[tokio::test]
async fn a_pending_decision_is_audited_as_pending() {
    let runs = runs();
    let audit = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry(&runs))
        .approver(approver_fn("later", |request: ApprovalRequest| async move { request.pending("asked the user") }))
        .audit(audit.clone())
        .build();
    let result =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/x"}"#), CallOptions::default()).await;
    assert!(matches!(&result.outcome, Err(ToolError::Pending { reason, .. }) if reason == "asked the user"));
    assert!(runs.lock().unwrap().is_empty());
    let decisions: Vec<AuditDecision> = audit.events().iter().map(|e| e.decision).collect();
    assert_eq!(decisions, [AuditDecision::Pending]);
    assert_eq!(AuditDecision::Pending.as_str(), "pending");
}

#[tokio::test]
async fn denial_reason_reaches_the_model() {
    let runs = runs();
    let engine = ToolEngine::builder(&registry(&runs))
        .approver(approver_fn("no", |request: ApprovalRequest| async move { request.deny("the user said no") }))
        .build();
    let result =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/x"}"#), CallOptions::default()).await;
    match &result.outcome {
        Err(ToolError::Denied { reason, approver, .. }) => {
            assert_eq!(reason, "the user said no");
            assert_eq!(approver, "no");
        }
        other => panic!("expected Denied, got {other:?}"),
    }
    assert!(result.text().contains("Reason: the user said no"));
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn approver_sees_validated_arguments_and_approval_runs_exactly_them() {
    let runs = runs();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let engine = ToolEngine::builder(&registry(&runs))
        .approver(approver_fn("yes", move |request: ApprovalRequest| {
            seen2.lock().unwrap().push((request.arguments().clone(), request.arguments_hash()));
            async move { request.approve() }
        }))
        .build();
    let result =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/x"}"#), CallOptions::default()).await;
    assert_eq!(result.text(), "delete_file done");
    let expected = json!({"path": "/x", "force": false});
    assert_eq!(seen.lock().unwrap()[0], (expected.clone(), ArgumentsHash::of(&expected)));
    assert_eq!(runs.lock().unwrap()[0].1, expected);
    // Invalid arguments never reach the approver.
    let result =
        engine.execute_call(ToolCall::new("c2", "delete_file", r#"{"path": 3}"#), CallOptions::default()).await;
    assert!(matches!(result.outcome, Err(ToolError::InvalidArguments { .. })));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn edited_arguments_are_validated_again() {
    let runs = runs();
    let engine = ToolEngine::builder(&registry(&runs))
        .approver(approver_fn("editor", |request: ApprovalRequest| async move {
            match request.call_id() {
                Some("good") => request.approve_with(json!({"path": "/tmp/safe"})),
                _ => request.approve_with(json!({"path": 42})),
            }
        }))
        .build();
    let good =
        engine.execute_call(ToolCall::new("good", "delete_file", r#"{"path": "/"}"#), CallOptions::default()).await;
    assert!(!good.is_error(), "{:?}", good.outcome);
    assert_eq!(runs.lock().unwrap()[0].1, json!({"path": "/tmp/safe", "force": false}));
    let bad =
        engine.execute_call(ToolCall::new("bad", "delete_file", r#"{"path": "/"}"#), CallOptions::default()).await;
    match &bad.outcome {
        Err(ToolError::InvalidEdit { errors, .. }) => assert_eq!(errors[0].path, "/path"),
        other => panic!("expected InvalidEdit, got {other:?}"),
    }
    assert!(bad.text().contains("the approver substituted"));
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_replayed_approval_is_refused() {
    let runs = runs();
    // An approver that approves the first request and replays that approval ever after.
    let first: Arc<Mutex<Option<Decision>>> = Arc::new(Mutex::new(None));
    let engine = ToolEngine::builder(&registry(&runs))
        .approver(approver_fn("replayer", move |request: ApprovalRequest| {
            let decision = first.lock().unwrap().get_or_insert_with(|| request.approve()).clone();
            async move { decision }
        }))
        .build();
    let ok =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/tmp/a"}"#), CallOptions::default()).await;
    assert!(!ok.is_error());
    // Other arguments, same call id: refused.
    let other_args =
        engine.execute_call(ToolCall::new("c1", "delete_file", r#"{"path": "/etc"}"#), CallOptions::default()).await;
    assert!(matches!(other_args.outcome, Err(ToolError::ApprovalMismatch { .. })), "{:?}", other_args.outcome);
    // Same arguments, another call: refused too.
    let other_call =
        engine.execute_call(ToolCall::new("c2", "delete_file", r#"{"path": "/tmp/a"}"#), CallOptions::default()).await;
    assert!(matches!(other_call.outcome, Err(ToolError::ApprovalMismatch { .. })));
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn policy_approver_rules_first_match_and_fallback() {
    let decl = Arc::new(decl("delete_file", SafetyLevel::Dangerous));
    let req = |args: Value| ApprovalRequest::new(decl.clone(), Some("c"), args);
    let policy = PolicyApprover::new()
        .deny_if("delete_file", |a| a["force"] == json!(true), "no forcing")
        .approve_if("delete_file", |a| a["path"].as_str().is_some_and(|p| p.starts_with("/tmp/")));
    assert!(matches!(policy.decide(req(json!({"path": "/tmp/a", "force": false}))).await, Decision::Approve(_)));
    assert_eq!(policy.decide(req(json!({"path": "/tmp/a", "force": true}))).await, Decision::deny("no forcing"));
    match policy.decide(req(json!({"path": "/etc", "force": false}))).await {
        Decision::Deny { reason } => assert!(reason.contains("no policy rule")),
        other => panic!("{other:?}"),
    }
    let with_fallback =
        policy.clone().otherwise(approver_fn("fallback", |r: ApprovalRequest| async move { r.approve() }));
    let request = req(json!({"path": "/etc", "force": false}));
    match with_fallback.decide(request.clone()).await {
        Decision::Approve(approval) => assert!(approval.is_for(&request)),
        other => panic!("{other:?}"),
    }
    let any = PolicyApprover::new().approve_tool("*");
    assert!(matches!(any.decide(req(json!({}))).await, Decision::Approve(_)));
}

/// A writer the test can read after the approver has written to it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn terminal_approver_answers() {
    let decl = Arc::new(decl("delete_file", SafetyLevel::Dangerous));
    let request = ApprovalRequest::new(decl, Some("c9"), json!({"path": "/tmp/a", "force": false}));
    let ask = |input: &str| {
        let out = Shared::default();
        let approver = TerminalApprover::new(Cursor::new(input.as_bytes().to_vec()), out.clone());
        let request = request.clone();
        async move { (approver.decide(request).await, String::from_utf8(out.0.lock().unwrap().clone()).unwrap()) }
    };
    let (decision, prompt) = ask("y\n").await;
    assert_eq!(decision, request.approve());
    assert!(prompt.contains("Tool `delete_file` (dangerous) wants to run"), "{prompt}");
    assert!(prompt.contains("\"/tmp/a\"") && prompt.contains("c9"), "{prompt}");
    assert_eq!(ask("no\n").await.0, Decision::deny("the user declined"));
    assert_eq!(ask("n too risky\n").await.0, Decision::deny("too risky"));
    // EOF (closed input) denies instead of blocking.
    match ask("").await.0 {
        Decision::Deny { reason } => assert!(reason.contains("input closed")),
        other => panic!("{other:?}"),
    }
    // Unreadable answers are asked again, then denied.
    let (decision, prompt) = ask("maybe\nYES\n").await;
    assert_eq!(decision, request.approve());
    assert!(prompt.contains("Please answer y, n or e."));
    assert!(matches!(ask("?\n?\n?\ny\n").await.0, Decision::Deny { .. }));
    // Edit: replacement arguments as JSON, re-asked if not JSON.
    let (decision, _) = ask("e\nnot json\ne\n{\"path\": \"/tmp/b\"}\n").await;
    assert_eq!(decision, request.approve_with(json!({"path": "/tmp/b"})));
}

#[tokio::test]
async fn audit_events_record_every_call_as_json_lines() {
    let runs = runs();
    let out = Shared::default();
    let engine = ToolEngine::builder(&registry(&runs))
        .selection(Selection::sub_agent())
        .approver(PolicyApprover::new().approve_tool("delete_file"))
        .audit(JsonLinesSink::new(out.clone()))
        .build();
    let calls = [
        ToolCall::new("c1", "read_file", r#"{"path": "a"}"#),
        ToolCall::new("c2", "delete_file", r#"{"path": "b"}"#),
        ToolCall::new("c3", "ask_user", r#"{"path": "c"}"#),
        ToolCall::new("c4", "write_file", "{not json"),
    ];
    for call in calls {
        engine.execute_call(call, CallOptions::default()).await;
    }
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0]["tool"], "read_file");
    assert_eq!(events[0]["decision"], "not_required");
    assert_eq!(events[0]["outcome"], "ok");
    assert_eq!(events[0]["result_bytes"], "read_file done".len());
    let hash = ArgumentsHash::of(&json!({"path": "a"})).to_string();
    assert_eq!(events[0]["arguments_hash"], hash);
    assert!(events[0].get("approved_hash").is_none());
    assert_eq!(events[1]["decision"], "approved");
    let approved = ArgumentsHash::of(&json!({"path": "b", "force": false})).to_string();
    assert_eq!(events[1]["approved_hash"], approved);
    assert_eq!(events[1]["approver"], "policy");
    assert_eq!(events[1]["call_id"], "c2");
    assert_eq!(events[2]["outcome"], "not_offered");
    assert_eq!(events[2]["decision"], "not_reached");
    assert_eq!(events[3]["outcome"], "malformed_arguments");
    assert!(events.iter().all(|e| e["started_at_ms"].as_u64().unwrap() > 0 && e.get("duration_us").is_some()));
}

/// Remove a file.
#[allow(dead_code)]
#[tool(safety = "dangerous", exclusive = "path", category = "fs")]
fn remove(path: String) -> String {
    path
}

#[test]
fn macro_sets_the_exclusive_key() {
    let decl = remove_tool::declaration();
    assert_eq!(decl.exclusive_key.as_deref(), Some("path"));
    assert_eq!(decl.safety, SafetyLevel::Dangerous);
    let built = ToolDeclaration::builder("t").exclusive_key("id").build();
    assert_eq!(built.exclusive_key.as_deref(), Some("id"));
    let round: ToolDeclaration = serde_json::from_value(serde_json::to_value(&built).unwrap()).unwrap();
    assert_eq!(round, built);
}

/// The host's principal reaches the tool, the approver and the audit record
/// of every call — run alone, in a batch, or refused before it ran — and is
/// never taken from the arguments.
#[tokio::test]
async fn the_principal_reaches_the_tool_the_approver_and_the_audit() {
    use toolreg::{CallContext, Principal, ToolRegistration};

    let mut registry = FunctionRegistry::new();
    let whoami = |name: &str, safety| {
        ToolRegistration::new(decl(name, safety), |cx: CallContext, _args: Value| async move {
            Ok::<_, String>(cx.principal().map_or("nobody".to_owned(), |p| p.subject.clone()))
        })
    };
    registry.register(whoami("whoami", SafetyLevel::Safe)).unwrap();
    registry.register(whoami("drop_table", SafetyLevel::Dangerous)).unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let sink = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry)
        .approver(approver_fn("admins-only", move |request: ApprovalRequest| {
            let who = request.principal().cloned();
            seen.lock().unwrap().push(who.clone());
            async move {
                match who {
                    Some(p) if p.has_scope("admin") => request.approve(),
                    _ => request.deny("only an admin may approve this"),
                }
            }
        }))
        .audit(Arc::clone(&sink))
        .build();
    let alice = Principal::verified("https://as.example", "alice").with_scopes(["admin"]);
    let bob = Principal::verified("https://as.example", "bob");

    // The argument called `principal` is only an argument.
    let call = ToolCall::new("1", "whoami", r#"{"path": "x", "principal": "root"}"#);
    let result = engine.execute_call(call, CallOptions::new().principal(bob.clone())).await;
    assert_eq!(result.outcome.unwrap().text(), "bob");
    let result = engine.execute_call(ToolCall::new("2", "whoami", r#"{"path": "x"}"#), CallOptions::new()).await;
    assert_eq!(result.outcome.unwrap().text(), "nobody");

    let batch =
        vec![ToolCall::new("3", "drop_table", r#"{"path": "t"}"#), ToolCall::new("3", "whoami", r#"{"path": "x"}"#)];
    let results = engine.execute_batch(batch.clone(), CallOptions::new().principal(bob.clone())).await;
    assert!(matches!(results[0].outcome, Err(ToolError::Denied { .. })), "{:?}", results[0].outcome);
    assert!(matches!(results[1].outcome, Err(ToolError::DuplicateCallId { .. })));
    let results = engine.execute_batch(batch[..1].to_vec(), CallOptions::new().principal(alice.clone())).await;
    assert_eq!(results[0].outcome.as_ref().unwrap().text(), "alice");
    assert_eq!(*asked.lock().unwrap(), [Some(bob.clone()), Some(alice.clone())]);

    let events = sink.take();
    let who: Vec<Option<&str>> = events.iter().map(|e| e.principal.as_ref().map(|p| p.subject.as_str())).collect();
    assert_eq!(who, [Some("bob"), None, Some("bob"), Some("bob"), Some("alice")]);
    // The repeated id is refused (and recorded) before the batch runs.
    assert_eq!(events[2].outcome, "duplicate_call_id");
    assert_eq!(events[3].decision, AuditDecision::Denied);
    let line = serde_json::to_value(&events[4]).unwrap();
    assert_eq!(
        line["principal"],
        json!({"subject": "alice", "scopes": ["admin"], "source": {"kind": "token", "issuer": "https://as.example"}})
    );
}

/// Quotas per principal: past its calls a minute a principal is refused
/// with when to try again, past its calls at once it waits for one to end,
/// and another principal keeps working all along.
#[tokio::test]
async fn a_noisy_principal_is_refused_while_the_others_keep_working() {
    use std::time::Duration;
    use toolreg::policy::AccessPolicy;
    use toolreg::{Principal, ToolRegistration};

    let mut registry = FunctionRegistry::new();
    let slow = ToolDeclaration::builder("slow").description("Wait a little.").safety(SafetyLevel::Safe).build();
    registry
        .register(ToolRegistration::new(slow, |_: Value| async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok::<_, String>("done")
        }))
        .unwrap();
    let policy: AccessPolicy = serde_json::from_value(json!({"roles": {
        "user": {"allow": ["*"], "calls_per_minute": 3, "concurrent_calls": 1}
    }}))
    .unwrap();
    let engine = ToolEngine::builder(&registry).access(policy).build();
    let who = |sub: &str| CallOptions::new().principal(Principal::verified("https://as", sub).with_scopes(["user"]));

    // Two at once: one runs, the other is told to wait for it.
    let both = vec![ToolCall::new("1", "slow", "{}"), ToolCall::new("2", "slow", "{}")];
    let results = engine.execute_batch(both, who("noisy")).await;
    assert!(results[0].outcome.is_ok(), "{:?}", results[0].outcome);
    match &results[1].outcome {
        Err(ToolError::QuotaExceeded { retry_after: None, reason }) => assert!(reason.contains("at once"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // Two more pass (three a minute, the refused one not counted), then the fourth waits.
    for id in ["3", "4"] {
        assert!(engine.execute_call(ToolCall::new(id, "slow", "{}"), who("noisy")).await.outcome.is_ok());
    }
    let refused = engine.execute_call(ToolCall::new("5", "slow", "{}"), who("noisy")).await;
    let Err(ToolError::QuotaExceeded { retry_after: Some(wait), .. }) = &refused.outcome else {
        panic!("{:?}", refused.outcome)
    };
    assert!(*wait >= Duration::from_secs(1) && *wait <= Duration::from_secs(20), "{wait:?}");
    let text = refused.outcome.as_ref().unwrap_err().model_text("slow");
    assert!(text.contains("3 calls a minute") && text.contains("try again in"), "{text}");
    // Someone else is not affected, and a rebuilt engine keeps the count.
    assert!(engine.execute_call(ToolCall::new("6", "slow", "{}"), who("quiet")).await.outcome.is_ok());
    let rebuilt = engine.to_builder().build();
    let still = rebuilt.execute_call(ToolCall::new("7", "slow", "{}"), who("noisy")).await;
    assert!(matches!(still.outcome, Err(ToolError::QuotaExceeded { .. })), "{:?}", still.outcome);
}
