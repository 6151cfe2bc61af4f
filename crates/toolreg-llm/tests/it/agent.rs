//! The agent loop against a scripted model: multi-step runs, malformed
//! calls, limits, approvals, suspension resumed in a fresh process,
//! sub-agents, cancellation.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolreg::engine::{EngineBuilder, ToolEngine};
use toolreg::policy::{ApprovalRequest, approver_fn};
use toolreg::{CallContext, CallOptions, FunctionRegistry, ToolCall, ToolExecutor, tool};
use toolreg_llm::agent::functions::{AgentTools, TaskResult};
use toolreg_llm::agent::{
    Agent, AgentError, AgentEvent, AgentLimits, Deferral, Resolution, RunOutcome, SuspendForApproval, Suspended,
};
use toolreg_llm::scripted::{ScriptedClient, calls_response, text_response};
use toolreg_llm::{LlmError, Message, ModelResponse, OfferedTool};

/// Add two numbers.
#[tool(safety = "safe")]
fn add(a: f64, b: f64) -> f64 {
    a + b
}

static WIPED: AtomicUsize = AtomicUsize::new(0);

/// Delete everything under a path.
#[tool(safety = "dangerous")]
fn wipe(path: String) -> String {
    WIPED.fetch_add(1, Ordering::SeqCst);
    format!("wiped {path}")
}

/// Wait until cancelled.
#[tool(safety = "safe")]
async fn wait(#[context] cx: CallContext) -> String {
    cx.cancelled().await;
    "stopped".to_owned()
}

fn registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    toolreg::register_tools!(r, [add_tool, wipe_tool, wait_tool]).unwrap();
    AgentTools::new().register(&mut r).unwrap();
    r
}

/// The engine most tests run on: dangerous calls suspend the run.
fn engine(registry: &FunctionRegistry) -> EngineBuilder {
    ToolEngine::builder(registry).approver(SuspendForApproval)
}

fn finished(outcome: RunOutcome) -> toolreg_llm::agent::Finished {
    match outcome {
        RunOutcome::Finished(done) => done,
        RunOutcome::Suspended(s) => panic!("suspended: {s:?}"),
    }
}

fn tool_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { results } => {
                Some(results.iter().map(|r| (r.call_id.clone(), r.content.clone(), r.is_error)))
            }
            _ => None,
        })
        .flatten()
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn multi_step_parallel_calls_and_a_corrected_malformed_call() {
    let model = ScriptedClient::new()
        .then_calls(vec![
            ToolCall::new("c1", "add", r#"{"a": 1, "b": 2}"#),
            ToolCall::new("c2", "add", r#"{"a": 10, "b": "#), // malformed JSON
        ])
        .then_call("c3", "add", json!({"a": 10, "b": 20}))
        .then_text("3 and 30");
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let agent = Agent::builder(model.clone(), "m", engine(&registry()))
        .system("Be brief.")
        .on_event(move |e| seen.lock().unwrap().push(e.clone()))
        .build();
    let done = finished(agent.run("add things").await.unwrap());
    assert_eq!(done.answer, "3 and 30");
    assert_eq!(done.steps, 3);
    assert_eq!(done.usage.total(), 45);
    let results = tool_results(&done.transcript);
    assert_eq!(results[0], ("c1".into(), "3.0".into(), false));
    assert_eq!(results[1].0, "c2");
    assert!(results[1].2 && results[1].1.contains("JSON"), "{:?}", results[1]);
    assert_eq!(results[2], ("c3".into(), "30.0".into(), false));

    // The model saw the system prompt, the tools and the growing conversation.
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    assert!(requests[0].tools.iter().any(|t| t.name == "add"));
    // Offered as registry entries, whose per-provider schema lowerings are
    // cached from one request to the next.
    assert!(requests[0].tools.iter().all(|t| matches!(t, OfferedTool::Entry(_))));
    assert_eq!(requests[2].messages.len(), 5);

    let events = events.lock().unwrap();
    assert_eq!(events.iter().filter(|e| matches!(e, AgentEvent::ModelRequest { .. })).count(), 3);
    assert_eq!(events.iter().filter(|e| matches!(e, AgentEvent::ToolResult(_))).count(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn each_limit_is_a_typed_error_with_the_transcript() {
    let forever =
        || ScriptedClient::from_fn(|_| Ok(calls_response(vec![ToolCall::new("x", "add", json!({"a": 1, "b": 1}))])));
    let agent = Agent::builder(forever(), "m", engine(&registry())).limits(AgentLimits::default().max_steps(3)).build();
    match agent.run("loop").await {
        Err(AgentError::StepLimit { limit: 3, transcript }) => assert_eq!(transcript.len(), 7),
        other => panic!("{other:?}"),
    }
    let agent =
        Agent::builder(forever(), "m", engine(&registry())).limits(AgentLimits::default().max_tokens(40)).build();
    match agent.run("loop").await {
        Err(AgentError::TokenLimit { limit: 40, used, transcript }) => {
            assert!(used >= 40);
            assert!(!transcript.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let slow = ScriptedClient::from_fn(|_| Ok(calls_response(vec![ToolCall::new("w", "wait", json!({}))])));
    let agent = Agent::builder(slow, "m", engine(&registry()))
        .limits(AgentLimits::default().max_time(Duration::from_millis(300)))
        .build();
    let started = std::time::Instant::now();
    let error = tokio::time::timeout(Duration::from_secs(20), async {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(800)).await;
            stop.cancel();
        });
        agent.run_with(vec![Message::user("wait")], cancel).await
    })
    .await
    .unwrap();
    assert!(matches!(error, Err(AgentError::TimeLimit { .. }) | Err(AgentError::Cancelled { .. })), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(10));

    let failing = ScriptedClient::new().then(Err(LlmError::Status { status: 500, message: "down".into() }));
    let agent = Agent::builder(failing, "m", engine(&registry())).build();
    assert!(matches!(agent.run("x").await, Err(AgentError::Model { .. })));
}

#[tokio::test(flavor = "multi_thread")]
async fn cancellation_stops_the_running_tools() {
    let model = ScriptedClient::new()
        .then_calls(vec![ToolCall::new("w1", "wait", json!({})), ToolCall::new("w2", "wait", json!({}))]);
    let agent = Agent::builder(model, "m", engine(&registry())).build();
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.cancel();
    });
    let result =
        tokio::time::timeout(Duration::from_secs(20), agent.run_with(vec![Message::user("wait")], cancel)).await;
    assert!(matches!(result, Ok(Err(AgentError::Cancelled { .. }))), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn live_approvals_run_or_refuse_dangerous_calls() {
    let before = WIPED.load(Ordering::SeqCst);
    for approve in [true, false] {
        let model = ScriptedClient::new().then_call("d1", "wipe", json!({"path": "/tmp/x"})).then_text("done");
        let approver = approver_fn("test", move |r: ApprovalRequest| {
            let d = if approve { r.approve() } else { r.deny("no") };
            async move { d }
        });
        let agent = Agent::builder(model, "m", ToolEngine::builder(&registry()).approver(approver)).build();
        let done = finished(agent.run("wipe").await.unwrap());
        let results = tool_results(&done.transcript);
        assert_eq!(results[0].2, !approve, "{results:?}");
    }
    assert_eq!(WIPED.load(Ordering::SeqCst) - before, 1);
}

/// A dangerous call with nobody to ask suspends the run; the suspension
/// survives JSON and a fresh process, and an approval binds to the exact
/// call id and arguments.
#[tokio::test(flavor = "multi_thread")]
async fn suspension_serialises_and_resumes_in_a_fresh_process() {
    if let Ok(path) = std::env::var("TOOLREG_RESUME_FROM") {
        // The child: resume from the file with the decisions written beside it.
        let suspended: Suspended = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let resolutions: Vec<Resolution> =
            serde_json::from_str(&std::fs::read_to_string(format!("{path}.decisions")).unwrap()).unwrap();
        let agent = Agent::builder(ScriptedClient::new().then_text("all done"), "m", engine(&registry())).build();
        let outcome = agent.resume(suspended, resolutions, CancellationToken::new()).await.unwrap();
        let done = finished(outcome);
        std::fs::write(format!("{path}.out"), serde_json::to_string(&tool_results(&done.transcript)).unwrap()).unwrap();
        return;
    }
    let model = ScriptedClient::new().then_calls(vec![
        ToolCall::new("s1", "add", json!({"a": 1, "b": 1})),
        ToolCall::new("s2", "wipe", json!({"path": "/data"})),
    ]);
    let agent = Agent::builder(model, "m", engine(&registry())).build();
    let RunOutcome::Suspended(suspended) = agent.run("clean up").await.unwrap() else { panic!("not suspended") };
    assert_eq!(suspended.approvals.len(), 1);
    assert_eq!(suspended.approvals[0].call_id, "s2");
    assert_eq!(suspended.done.len(), 1, "the safe call already ran");
    let pending = suspended.approvals[0].clone();

    let dir = tempfile::tempdir().unwrap();
    let run_child = |suspended: &Suspended, resolutions: Vec<Resolution>, name: &str| -> Vec<(String, String, bool)> {
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(suspended).unwrap()).unwrap();
        std::fs::write(format!("{}.decisions", path.display()), serde_json::to_string(&resolutions).unwrap()).unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "agent::suspension_serialises_and_resumes_in_a_fresh_process", "--nocapture"])
            .env("TOOLREG_RESUME_FROM", &path)
            .status()
            .unwrap();
        assert!(status.success());
        serde_json::from_str(&std::fs::read_to_string(format!("{}.out", path.display())).unwrap()).unwrap()
    };

    // Approved as shown: the call runs, in another process.
    let results = run_child(&suspended, vec![pending.approve()], "approved.json");
    assert_eq!(results[0], ("s1".into(), "2.0".into(), false));
    assert_eq!(results[1], ("s2".into(), "wiped /data".into(), false));

    // Someone changed the arguments after the approval: refused.
    let mut tampered = suspended.clone();
    tampered.calls[1] = ToolCall::new("s2", "wipe", json!({"path": "/"}));
    let results = run_child(&tampered, vec![pending.approve()], "tampered.json");
    assert!(results[1].2 && results[1].1.contains("other arguments"), "{results:?}");

    // Denied: the model reads why.
    let results = run_child(&suspended, vec![pending.deny("not on Fridays")], "denied.json");
    assert!(results[1].2 && results[1].1.contains("not on Fridays"), "{results:?}");

    // Without a decision, resuming is refused.
    let missing = agent.resume(suspended, vec![], CancellationToken::new()).await;
    assert!(matches!(missing, Err(AgentError::Resume(_))));
}

static ARCHIVED: AtomicUsize = AtomicUsize::new(0);
/// The paths archived, for tests that run beside others.
static ARCHIVED_PATHS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Archive a path.
#[tool(safety = "dangerous")]
fn archive(path: String) -> String {
    ARCHIVED.fetch_add(1, Ordering::SeqCst);
    ARCHIVED_PATHS.lock().unwrap().push(path.clone());
    format!("archived {path}")
}

/// The approval for `archive` is bound to `archive`: a stored suspension
/// edited to name another tool with the same arguments does not run it.
#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_approval_is_bound_to_its_tool() {
    let mut registry = registry();
    registry.register(archive_tool::registration()).unwrap();
    let model = ScriptedClient::new().then_call("a1", "archive", json!({"path": "/data"})).then_text("done");
    let agent = Agent::builder(model, "m", engine(&registry)).build();
    let RunOutcome::Suspended(suspended) = agent.run("archive it").await.unwrap() else { panic!("not suspended") };
    let approval = suspended.approvals[0].approve();
    let mut edited: Suspended = serde_json::from_value(serde_json::to_value(&suspended).unwrap()).unwrap();
    edited.calls[0].name = "wipe".into();
    let wiped = WIPED.load(Ordering::SeqCst);
    let done = finished(agent.resume(edited, vec![approval], CancellationToken::new()).await.unwrap());
    assert_eq!(WIPED.load(Ordering::SeqCst), wiped, "wipe never ran");
    let results = tool_results(&done.transcript);
    assert!(results[0].2 && results[0].1.contains("another tool"), "{results:?}");
}

/// A suspension resumes once: the same state resumed again (by the same
/// agent, or by another sharing the claims namespace, or with its id
/// edited) never runs the approved call a second time.
#[tokio::test(flavor = "multi_thread")]
async fn a_suspension_resumes_once() {
    let mut registry = registry();
    registry.register(archive_tool::registration()).unwrap();
    let store = toolreg_store::SqliteStore::in_memory().await.unwrap();
    let claims = store.namespace("resumed-runs").unwrap();
    let agent =
        |model: ScriptedClient| Agent::builder(model, "m", engine(&registry)).resume_claims(claims.clone()).build();
    let first = agent(ScriptedClient::new().then_call("r1", "archive", json!({"path": "/x"})).then_text("done"));
    let RunOutcome::Suspended(suspended) = first.run("archive it").await.unwrap() else { panic!("not suspended") };
    let approval = suspended.approvals[0].approve();

    // A resume refused for a missing decision consumes nothing.
    assert!(matches!(
        first.resume(suspended.clone(), vec![], CancellationToken::new()).await,
        Err(AgentError::Resume(_))
    ));

    let before = ARCHIVED.load(Ordering::SeqCst);
    finished(first.resume(suspended.clone(), vec![approval.clone()], CancellationToken::new()).await.unwrap());
    assert_eq!(ARCHIVED.load(Ordering::SeqCst), before + 1);

    let again = first.resume(suspended.clone(), vec![approval.clone()], CancellationToken::new()).await;
    assert!(matches!(again, Err(AgentError::AlreadyResumed { .. })), "{again:?}");
    // Another agent (another process, say) sharing the claims.
    let other = agent(ScriptedClient::new().then_text("done"));
    let again = other.resume(suspended.clone(), vec![approval.clone()], CancellationToken::new()).await;
    assert!(matches!(again, Err(AgentError::AlreadyResumed { .. })), "{again:?}");
    assert_eq!(ARCHIVED.load(Ordering::SeqCst), before + 1, "the approved call ran once");
}

/// Ids toolreg made up for calls that came without one (Gemini's, derived
/// from the call) are unique to their step of the run: the same call in two
/// turns gets two ids, and each result answers its own call, and the
/// history still marks them as made up.
#[tokio::test(flavor = "multi_thread")]
async fn made_up_call_ids_are_unique_within_a_run() {
    let turn = || {
        let mut response = calls_response(vec![ToolCall::new("gemini_call_0_ab12", "add", json!({"a": 1, "b": 2}))]);
        response.generated_ids = vec!["gemini_call_0_ab12".into()];
        Ok(response)
    };
    let model = ScriptedClient::new().then(turn()).then(turn()).then_text("3");
    let agent = Agent::builder(model, "m", engine(&registry())).build();
    let done = finished(agent.run("add twice").await.unwrap());
    let results: Vec<String> = tool_results(&done.transcript).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(results.len(), 2);
    assert_ne!(results[0], results[1], "{results:?}");
    for message in &done.transcript {
        if let Message::Assistant { tool_calls, generated_ids, .. } = message
            && !tool_calls.is_empty()
        {
            let ids: Vec<&String> = tool_calls.iter().map(|c| &c.id).collect();
            assert_eq!(ids, generated_ids.iter().collect::<Vec<_>>());
            assert!(results.contains(ids[0]), "{ids:?} {results:?}");
        }
    }
}

/// Claims are per suspension: two runs whose models used the same call id
/// (`call_1` from a local server, say) both resume, and a resume refused as
/// already resumed takes nothing from another run.
#[tokio::test(flavor = "multi_thread")]
async fn two_runs_with_the_same_call_id_both_resume_once() {
    let mut registry = registry();
    registry.register(archive_tool::registration()).unwrap();
    let store = toolreg_store::SqliteStore::in_memory().await.unwrap();
    let claims = store.namespace("resumed-runs").unwrap();
    let agent =
        |model: ScriptedClient| Agent::builder(model, "m", engine(&registry)).resume_claims(claims.clone()).build();
    let suspend = |path: &'static str| {
        let agent = agent(ScriptedClient::new().then_call("call_1", "archive", json!({"path": path})));
        async move {
            let RunOutcome::Suspended(suspended) = agent.run("archive it").await.unwrap() else {
                panic!("not suspended")
            };
            suspended
        }
    };
    let (first, second) = (suspend("/same-id/1").await, suspend("/same-id/2").await);
    assert_eq!(first.approvals[0].call_id, second.approvals[0].call_id);
    let resume = |suspended: toolreg_llm::agent::Suspended| {
        let agent = agent(ScriptedClient::new().then_text("done"));
        let approval = suspended.approvals[0].approve();
        async move { agent.resume(suspended, vec![approval], CancellationToken::new()).await }
    };
    finished(resume(first.clone()).await.unwrap());
    let again = resume(first).await;
    assert!(matches!(again, Err(AgentError::AlreadyResumed { .. })), "{again:?}");
    finished(resume(second.clone()).await.unwrap());
    let ran = |path: &str| ARCHIVED_PATHS.lock().unwrap().iter().filter(|p| *p == path).count();
    assert_eq!((ran("/same-id/1"), ran("/same-id/2")), (1, 1));
    assert!(matches!(resume(second).await, Err(AgentError::AlreadyResumed { .. })));
}

/// Eight hosts (agents sharing one store file, as processes would) resume
/// the same suspension at the same moment: exactly one runs the call.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_resumes_of_one_suspension_run_it_once() {
    let mut registry = registry();
    registry.register(archive_tool::registration()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claims.db");
    let first = Agent::builder(
        ScriptedClient::new().then_call("r9", "archive", json!({"path": "/concurrent"})),
        "m",
        engine(&registry),
    )
    .build();
    let RunOutcome::Suspended(suspended) = first.run("archive it").await.unwrap() else { panic!("not suspended") };
    let approval = suspended.approvals[0].approve();
    let mut hosts = Vec::new();
    for _ in 0..8 {
        // Each host opens the file itself, as another process would.
        let store = toolreg_store::SqliteStore::open(&path).await.unwrap();
        let agent = Agent::builder(ScriptedClient::new().then_text("done"), "m", engine(&registry))
            .resume_claims(store.namespace("resumed-runs").unwrap())
            .build();
        let (suspended, approval) = (suspended.clone(), approval.clone());
        hosts
            .push(tokio::spawn(async move { agent.resume(suspended, vec![approval], CancellationToken::new()).await }));
    }
    let mut resumed = 0;
    for host in hosts {
        match host.await.unwrap() {
            Ok(_) => resumed += 1,
            Err(AgentError::AlreadyResumed { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(resumed, 1);
    let runs = ARCHIVED_PATHS.lock().unwrap().iter().filter(|p| *p == "/concurrent").count();
    assert_eq!(runs, 1, "the approved call ran once");
}

/// A suspended run kept in the store by id, sealed with the host key: any
/// host with the store and the key loads it; a record changed in the store,
/// another key or another id is refused.
#[tokio::test(flavor = "multi_thread")]
async fn suspended_runs_are_stored_sealed_and_loaded_by_id() {
    use toolreg::seal::SealingKey;
    use toolreg_llm::agent::SuspendedRuns;

    let model = ScriptedClient::new().then_call("w1", "wipe", json!({"path": "/tmp/x"}));
    let agent = Agent::builder(model, "m", engine(&registry())).build();
    let RunOutcome::Suspended(suspended) = agent.run("wipe").await.unwrap() else { panic!("not suspended") };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = toolreg_store::SqliteStore::open(&path).await.unwrap();
    let runs = SuspendedRuns::new(store.namespace("suspended").unwrap(), SealingKey::new([3; 32]));
    runs.save(&suspended).await.unwrap();
    assert!(matches!(runs.save(&suspended).await, Err(AgentError::Resume(_))), "stored once");
    assert_eq!(runs.list(10).await.unwrap(), std::slice::from_ref(&suspended.id));

    // Another host: its own connection to the store, the same key.
    let other = toolreg_store::SqliteStore::open(&path).await.unwrap();
    let there = SuspendedRuns::new(other.namespace("suspended").unwrap(), SealingKey::new([3; 32]));
    assert_eq!(there.load(&suspended.id).await.unwrap(), suspended);

    // Another key: refused.
    let wrong = SuspendedRuns::new(other.namespace("suspended").unwrap(), SealingKey::new([4; 32]));
    assert!(matches!(wrong.load(&suspended.id).await, Err(AgentError::Resume(m)) if m.contains("changed")));
    // The record changed in the store (the arguments to approve): refused.
    let ns = other.namespace("suspended").unwrap();
    let key = format!("run/{}", suspended.id.bytes().map(|b| format!("{b:02x}")).collect::<String>());
    let mut record = ns.get(&key).await.unwrap().value;
    record["run"] = json!(record["run"].as_str().unwrap().replace("/tmp/x", "/"));
    ns.set(&key, &record).await.unwrap();
    assert!(matches!(there.load(&suspended.id).await, Err(AgentError::Resume(m)) if m.contains("changed")));
    assert!(matches!(there.load("s-none").await, Err(AgentError::Resume(m)) if m.contains("no suspended run")));

    // A record copied into another store (whose claims never saw it),
    // under the same key: refused, so it cannot run its approval again there.
    let model = ScriptedClient::new().then_call("w2", "wipe", json!({"path": "/tmp/y"}));
    let RunOutcome::Suspended(kept) =
        Agent::builder(model, "m", engine(&registry())).build().run("wipe").await.unwrap()
    else {
        panic!("not suspended")
    };
    runs.save(&kept).await.unwrap();
    let key = format!("run/{}", kept.id.bytes().map(|b| format!("{b:02x}")).collect::<String>());
    let record = store.namespace("suspended").unwrap().get(&key).await.unwrap().value;
    let elsewhere = toolreg_store::SqliteStore::in_memory().await.unwrap();
    elsewhere.namespace("suspended").unwrap().create(&key, &record).await.unwrap();
    let copy = SuspendedRuns::new(elsewhere.namespace("suspended").unwrap(), SealingKey::new([3; 32]));
    assert!(matches!(copy.load(&kept.id).await, Err(AgentError::Resume(m)) if m.contains("another store")));
    assert_eq!(runs.load(&kept.id).await.unwrap(), kept);
}

#[tokio::test(flavor = "multi_thread")]
async fn external_tools_suspend_for_the_hosts_answer() {
    let model = ScriptedClient::new().then_call("e1", "add", json!({"a": 1, "b": 2})).then_text("the host said 99");
    let agent = Agent::builder(model, "m", engine(&registry())).external(["add"]).build();
    let RunOutcome::Suspended(suspended) = agent.run("x").await.unwrap() else { panic!("not suspended") };
    assert_eq!(suspended.external[0].id, "e1");
    let resumed =
        agent.resume(suspended, vec![Resolution::answer("e1", Ok(json!(99)))], CancellationToken::new()).await;
    let done = finished(resumed.unwrap());
    assert_eq!(done.answer, "the host said 99");
    assert_eq!(tool_results(&done.transcript)[0], ("e1".into(), "99".into(), false));
}

/// A model that acts as parent and sub-agents by looking at the task.
fn family_model() -> ScriptedClient {
    ScriptedClient::from_fn(|request| {
        let task = match request.messages.first() {
            Some(Message::User { text }) => text.clone(),
            _ => String::new(),
        };
        let last_is_result = matches!(request.messages.last(), Some(Message::Tool { .. }));
        if task.starts_with("parent") {
            if last_is_result {
                let Some(Message::Tool { results }) = request.messages.last() else { unreachable!() };
                return Ok(text_response(results[0].content.clone()));
            }
            return Ok(calls_response(vec![ToolCall::new(
                "p1",
                "spawn_many",
                json!({"tasks": [
                    {"task": "child 1"}, {"task": "child fail"}, {"task": "child 3", "tools": ["add", "return_result"]}
                ]}),
            )]));
        }
        if task.starts_with("child fail") {
            return Err(LlmError::Status { status: 500, message: "boom".into() });
        }
        if task.starts_with("child") {
            if last_is_result {
                return Ok(text_response("unreachable: return_result ends the run"));
            }
            let n: i64 = task.rsplit(' ').next().unwrap().parse().unwrap();
            return Ok(calls_response(vec![ToolCall::new("r", "return_result", json!({"value": n * 10}))]));
        }
        if task.starts_with("deep") {
            return Ok(calls_response(vec![ToolCall::new("d", "spawn_agent", json!({"task": "deep"}))]));
        }
        Ok(ModelResponse::default())
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_many_keeps_order_and_survives_a_failing_child() {
    let agent = Agent::builder(family_model(), "m", engine(&registry())).build();
    let done = finished(agent.run("parent").await.unwrap());
    let results: Vec<TaskResult> = serde_json::from_str(&done.answer).unwrap();
    assert_eq!(results[0], TaskResult::Ok("10".into()));
    assert!(matches!(&results[1], TaskResult::Error(e) if e.contains("boom")), "{results:?}");
    assert_eq!(results[2], TaskResult::Ok("30".into()));
}

#[tokio::test(flavor = "multi_thread")]
async fn sub_agents_are_depth_limited_and_never_see_user_tools() {
    use toolreg_llm::agent::Budget;
    let budget = Budget { steps: 3, tokens: Some(100), deadline: None };
    let agent =
        Agent::builder(family_model(), "m", engine(&registry())).limits(AgentLimits::default().max_depth(1)).build();
    let sub = agent.sub_agent(None, budget).unwrap();
    assert_eq!((sub.depth(), sub.limits().max_steps, sub.limits().max_tokens), (1, 3, Some(100)));
    assert!(matches!(sub.sub_agent(None, budget), Err(AgentError::DepthLimit { limit: 1 })));

    // In a run: the refusal is a result the model reads.
    let agent = Agent::builder(family_model(), "m", engine(&registry()))
        .limits(AgentLimits::default().max_depth(0).max_steps(1))
        .build();
    let Err(AgentError::StepLimit { transcript, .. }) = agent.run("deep").await else {
        panic!("expected the step limit")
    };
    assert!(tool_results(&transcript)[0].1.contains("nest 0 deep"), "{transcript:?}");

    // A user-scope tool is offered to the top level only.
    let mut registry = registry();
    registry.register(ask_me_tool::registration()).unwrap();
    let model = family_model();
    let agent = Agent::builder(model.clone(), "m", engine(&registry)).build();
    finished(agent.run("parent").await.unwrap());
    for request in model.requests() {
        let Some(Message::User { text }) = request.messages.first() else { continue };
        let offers_user_tool = request.tools.iter().any(|t| t.name == "ask_me");
        assert_eq!(offers_user_tool, text.starts_with("parent"), "{text}");
        if text.starts_with("child 3") {
            let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["add", "return_result"]);
        }
    }
}

/// Ask the user something.
#[tool(safety = "safe", scope = "user")]
fn ask_me(question: String) -> String {
    question
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_functions_refuse_outside_a_run() {
    let registry = registry();
    let result = toolreg::ToolExecutor::execute_call(
        &registry,
        ToolCall::new("x", "return_result", json!({"value": 1})),
        CallOptions::default(),
    )
    .await;
    assert!(result.text().contains("only inside an agent run"), "{}", result.text());
    let _: Value = json!(null);
}

/// Read the agent's own notes.
#[tool(safety = "safe")]
fn my_notes() -> String {
    "only mine".to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_layers_its_own_functions_over_a_shared_registry() {
    let shared = registry();
    let model = ScriptedClient::new().then_call("n1", "my_notes", json!({})).then_text("ok");
    let mut mine = shared.clone();
    mine.register(my_notes_tool::registration()).unwrap();
    let agent = Agent::builder(model.clone(), "m", engine(&mine)).build();
    let done = finished(agent.run("notes").await.unwrap());
    assert_eq!(tool_results(&done.transcript)[0].1, "only mine");
    assert!(model.requests()[0].tools.iter().any(|t| t.name == "my_notes"));
    assert!(!shared.contains("my_notes"), "the shared registry is unchanged");
}

/// A call to a tool the request did not declare is answered, never run,
/// and the run goes on: the model reads which tools it has.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_to_an_undeclared_tool_is_answered_and_the_run_goes_on() {
    let before = WIPED.load(Ordering::SeqCst);
    let mut refused_step = calls_response(vec![ToolCall::new("c1", "add", json!({"a": 1, "b": 1}))]);
    refused_step.sent_calls =
        vec![ToolCall::new("c1", "add", json!({"a": 1, "b": 1})), ToolCall::new("c2", "wipe", json!({"path": "/"}))];
    refused_step.refused = vec![toolreg::ToolResult {
        id: "c2".into(),
        name: "wipe".into(),
        outcome: Err(toolreg::ToolError::NotOffered { available: vec!["add".into()] }),
    }];
    let model = ScriptedClient::new().then(Ok(refused_step)).then_text("done");
    let agent = Agent::builder(model.clone(), "m", engine(&registry())).build();
    let done = finished(agent.run("go").await.unwrap());
    assert_eq!(done.answer, "done");
    assert_eq!(WIPED.load(Ordering::SeqCst), before, "the undeclared call ran");
    let results = tool_results(&model.requests()[1].messages);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().any(|(id, text, error)| id == "c1" && text == "2.0" && !error), "{results:?}");
    assert!(
        results.iter().any(|(id, text, error)| id == "c2" && text.contains("not available") && *error),
        "{results:?}"
    );

    // Only undeclared calls: the run still goes on.
    let mut only_refused = calls_response(vec![]);
    only_refused.sent_calls = vec![ToolCall::new("c9", "ghost", json!({}))];
    only_refused.refused = vec![toolreg::ToolResult {
        id: "c9".into(),
        name: "ghost".into(),
        outcome: Err(toolreg::ToolError::NotOffered { available: vec!["add".into()] }),
    }];
    let model = ScriptedClient::new().then(Ok(only_refused)).then_text("ok");
    let agent = Agent::builder(model.clone(), "m", engine(&registry())).build();
    assert_eq!(finished(agent.run("go").await.unwrap()).answer, "ok");
    assert_eq!(model.requests().len(), 2);
}

/// The user tools over an in-process channel nobody reads.
fn with_user_tools(mut registry: FunctionRegistry) -> FunctionRegistry {
    let (channel, inbox) = toolreg_builtins::user::InProcessChannel::new();
    std::mem::forget(inbox); // keep the channel open: final_answer shows its answer there
    toolreg::register_tools!(registry, toolreg_builtins::user::UserTools::new(channel).registrations()).unwrap();
    registry
}

/// `final_answer` (a built-in user tool) and `return_result` (an agent
/// function) end a run through the same slot, and the run's answer is
/// what the first of them gave: the second is refused.
#[tokio::test(flavor = "multi_thread")]
async fn both_finishing_tools_end_a_run_and_the_first_finish_wins() {
    let registry = with_user_tools(registry());
    let model =
        ScriptedClient::new().then_call("f1", "final_answer", json!({"answer": "forty-two"})).then_text("unused");
    let agent = Agent::builder(model.clone(), "m", engine(&registry)).build();
    let done = finished(agent.run("answer").await.unwrap());
    assert_eq!((done.answer.as_str(), done.steps), ("forty-two", 1));

    let model = ScriptedClient::new().then_call("r1", "return_result", json!({"value": {"n": 42}})).then_text("unused");
    let agent = Agent::builder(model, "m", engine(&registry)).build();
    let done = finished(agent.run("answer").await.unwrap());
    assert_eq!((done.answer.as_str(), done.steps), (r#"{"n":42}"#, 1));

    // Both in one turn (the safe return_result may run before the cautious
    // final_answer): whichever finishes first is the answer, the other is
    // refused.
    let model = ScriptedClient::new()
        .then_calls(vec![
            ToolCall::new("f1", "final_answer", json!({"answer": "first"})),
            ToolCall::new("r1", "return_result", json!({"value": "second"})),
        ])
        .then_text("unused");
    let agent = Agent::builder(model, "m", engine(&registry)).build();
    let done = finished(agent.run("answer").await.unwrap());
    let results = tool_results(&done.transcript);
    let refused: Vec<_> = results.iter().filter(|(_, text, error)| *error && text.contains("already")).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    let winner = if refused[0].0 == "f1" { "second" } else { "first" };
    assert_eq!(done.answer, winner, "{results:?}");
}

/// Repeat a word.
#[tool(safety = "safe")]
fn shout(word: String, times: usize) -> String {
    word.repeat(times)
}

/// The agent's calls go through the engine its builder was given: a hook
/// rewrites the model's arguments, an `OutputBudget` cuts the result, an
/// audit sink records the call, and the selection decides what the model
/// is offered and may call — sub-agents included.
#[tokio::test(flavor = "multi_thread")]
async fn the_agents_calls_go_through_its_engine_with_hooks_budget_audit_and_selection() {
    use toolreg::engine::{OutputBudget, hook_fn};
    use toolreg::policy::{MemorySink, Selection};

    let mut registry = registry();
    registry.register(shout_tool::registration()).unwrap();
    let audit = Arc::new(MemorySink::new());
    let hook = hook_fn(|mut call, next| async move {
        call.arguments["word"] = json!("hooked-");
        next.run(call).await
    })
    .named("rewrite");
    let engine = ToolEngine::builder(&registry)
        .selection(Selection::all().deny(["wipe"]))
        .layer(hook)
        .layer(OutputBudget::new(40))
        .audit(Arc::clone(&audit));
    let model = ScriptedClient::new()
        .then_calls(vec![
            ToolCall::new("s1", "shout", json!({"word": "hi", "times": 20})),
            ToolCall::new("w1", "wipe", json!({"path": "/"})),
        ])
        .then_text("done");
    let agent = Agent::builder(model.clone(), "m", engine).build();
    let wiped = WIPED.load(Ordering::SeqCst);
    let done = finished(agent.run("shout").await.unwrap());

    let results = tool_results(&done.transcript);
    let (_, shouted, error) = &results[0];
    assert!(!error);
    assert!(shouted.starts_with("hooked-hooked-") && !shouted.contains("hi"), "the hook ran: {shouted}");
    assert!(shouted.contains("characters removed"), "the budget cut it: {shouted}");
    assert!(results[1].2 && results[1].1.contains("not available"), "{results:?}");
    assert_eq!(WIPED.load(Ordering::SeqCst), wiped, "a tool outside the selection ran");

    let offered: Vec<String> = model.requests()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert!(offered.contains(&"shout".to_owned()) && !offered.contains(&"wipe".to_owned()), "{offered:?}");
    let events = audit.events();
    let mut tools: Vec<&str> = events.iter().map(|e| e.tool.as_str()).collect();
    tools.sort_unstable(); // the refusal may be recorded first
    assert_eq!(tools, ["shout", "wipe"]);

    // A sub-agent runs on the same engine: same selection (never wider),
    // same audit.
    let sub = agent.sub_agent(None, toolreg_llm::agent::Budget { steps: 2, tokens: None, deadline: None }).unwrap();
    let names: Vec<String> = sub.engine().offered().get_declarations().iter().map(|d| d.name.clone()).collect();
    assert!(names.contains(&"shout".to_owned()) && !names.contains(&"wipe".to_owned()), "{names:?}");
    let sub_result = sub
        .engine()
        .execute_call(ToolCall::new("x1", "shout", json!({"word": "a", "times": 1})), CallOptions::default())
        .await;
    assert_eq!(sub_result.text(), "hooked-");
    assert_eq!(audit.events().len(), 3);
}

/// An engine with no approver refuses dangerous calls (as `toolreg call`
/// does); `SuspendForApproval` as a policy's fallback suspends only the
/// calls the policy leaves to it.
#[tokio::test(flavor = "multi_thread")]
async fn approval_is_the_engines_refuse_approve_or_suspend() {
    use toolreg::policy::PolicyApprover;
    let before = WIPED.load(Ordering::SeqCst);
    let model = ScriptedClient::new().then_call("d1", "wipe", json!({"path": "/x"})).then_text("done");
    let agent = Agent::builder(model, "m", ToolEngine::builder(&registry())).build();
    let done = finished(agent.run("wipe").await.unwrap());
    let results = tool_results(&done.transcript);
    assert!(results[0].2 && results[0].1.contains("approv"), "{results:?}");

    let mut registry = registry();
    registry.register(archive_tool::registration()).unwrap();
    let policy = PolicyApprover::new().approve_tool("wipe").otherwise(SuspendForApproval);
    let model = ScriptedClient::new().then_calls(vec![
        ToolCall::new("d1", "wipe", json!({"path": "/y"})),
        ToolCall::new("a1", "archive", json!({"path": "/y"})),
    ]);
    let agent = Agent::builder(model, "m", ToolEngine::builder(&registry).approver(policy)).build();
    let RunOutcome::Suspended(suspended) = agent.run("both").await.unwrap() else { panic!("not suspended") };
    assert_eq!(WIPED.load(Ordering::SeqCst), before + 1, "the policy approved wipe live");
    assert_eq!(suspended.approvals.len(), 1);
    assert_eq!(suspended.approvals[0].tool, "archive");

    // Outside a run nothing can wait: the call is denied with the reason.
    let engine = ToolEngine::builder(&registry).approver(SuspendForApproval).build();
    let result =
        engine.execute_call(ToolCall::new("o1", "archive", json!({"path": "/z"})), CallOptions::default()).await;
    assert!(result.is_error() && result.text().contains("nothing here can wait"), "{}", result.text());
}

/// A model for `spawn_many`: the task `spawn {args}` calls it with these
/// arguments and answers with its result (an error prefixed `ERROR: `);
/// `child N` returns N × 10; `child fail` fails.
fn merging_model() -> ScriptedClient {
    ScriptedClient::from_fn(|request| {
        let Some(Message::User { text: task }) = request.messages.first() else { return Ok(text_response("")) };
        if let Some(args) = task.strip_prefix("spawn ") {
            if let Some(Message::Tool { results }) = request.messages.last() {
                let prefix = if results[0].is_error { "ERROR: " } else { "" };
                return Ok(text_response(format!("{prefix}{}", results[0].content)));
            }
            let args: Value = serde_json::from_str(args).unwrap();
            return Ok(calls_response(vec![ToolCall::new("m1", "spawn_many", args)]));
        }
        if task.starts_with("child fail") {
            return Err(LlmError::Status { status: 500, message: "boom".into() });
        }
        if task.starts_with("child wait") {
            return Ok(calls_response(vec![ToolCall::new("w", "wait", json!({}))]));
        }
        let n: i64 = task.rsplit(' ').next().unwrap().parse().unwrap();
        Ok(calls_response(vec![ToolCall::new("r", "return_result", json!({"value": n * 10}))]))
    })
}

/// Add up the sub-agents' answers.
#[tool(safety = "safe")]
fn merge_sum(results: Vec<TaskResult>) -> Result<i64, String> {
    let mut sum = 0;
    for result in results {
        match result {
            TaskResult::Ok(answer) => sum += answer.parse::<i64>().map_err(|e| e.to_string())?,
            TaskResult::Error(error) => return Err(format!("a task failed: {error}")),
        }
    }
    Ok(sum)
}

fn spawn_task(merge: Value, children: &[&str]) -> String {
    let tasks: Vec<Value> = children.iter().map(|c| json!({"task": c})).collect();
    format!("spawn {}", json!({"tasks": tasks, "merge": merge}))
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_many_merges_all_first_success_or_with_a_named_function() {
    use toolreg::policy::{MemorySink, Selection};
    let mut registry = registry();
    registry.register(merge_sum_tool::registration()).unwrap();
    let audit = Arc::new(MemorySink::new());
    let model = merging_model();
    let agent = Agent::builder(model.clone(), "m", engine(&registry).audit(Arc::clone(&audit))).build();
    let run = |task: String| {
        let agent = agent.clone();
        async move { finished(agent.run(task).await.unwrap()).answer }
    };

    // All (also the default when `merge` is left out): in task order.
    let all: Vec<TaskResult> =
        serde_json::from_str(&run(spawn_task(json!("all"), &["child 1", "child fail", "child 3"])).await).unwrap();
    assert_eq!(all[0], TaskResult::Ok("10".into()));
    assert!(matches!(&all[1], TaskResult::Error(e) if e.contains("boom")), "{all:?}");
    assert_eq!(all[2], TaskResult::Ok("30".into()));

    // First success: the failing task is passed over.
    let first: Value =
        serde_json::from_str(&run(spawn_task(json!("first_success"), &["child fail", "child 2"])).await).unwrap();
    assert_eq!(first, json!({"task": 1, "answer": "20"}));
    // ... and the others are stopped: one that would wait forever does not hold it.
    let first = tokio::time::timeout(
        Duration::from_secs(20),
        run(spawn_task(json!("first_success"), &["child wait", "child 2"])),
    )
    .await
    .expect("first_success waited for a slower sub-agent");
    assert_eq!(serde_json::from_str::<Value>(&first).unwrap(), json!({"task": 1, "answer": "20"}));
    let none = run(spawn_task(json!("first_success"), &["child fail", "child fail"])).await;
    assert!(none.starts_with("ERROR: ") && none.contains("no sub-agent succeeded: task 0: "), "{none}");
    let empty = run(spawn_task(json!("first_success"), &[])).await;
    assert!(empty.starts_with("ERROR: ") && empty.contains("no tasks were given"), "{empty}");

    // A named function, called through the engine: the audit records it.
    audit.take();
    let merged = run(spawn_task(json!({"function": "merge_sum"}), &["child 1", "child 2", "child 4"])).await;
    assert_eq!(merged, "70");
    let calls: Vec<String> = audit.events().iter().map(|e| e.tool.clone()).collect();
    assert!(calls.contains(&"merge_sum".to_owned()), "{calls:?}");
    // Its failure is the model's to read, with the results it was given.
    let failed = run(spawn_task(json!({"function": "merge_sum"}), &["child 1", "child fail"])).await;
    assert!(failed.starts_with("ERROR: ") && failed.contains("a task failed"), "{failed}");
    assert!(failed.contains(r#"{"ok":"10"}"#), "{failed}");

    // An unknown function: refused before any sub-agent starts.
    let before = model.requests().len();
    let unknown = run(spawn_task(json!({"function": "ghost"}), &["child 1"])).await;
    assert!(unknown.starts_with("ERROR: ") && unknown.contains("`ghost` is not available"), "{unknown}");
    assert_eq!(model.requests().len(), before + 2, "a sub-agent ran");

    // A function outside the selection is not offered either.
    let narrow = engine(&registry).selection(Selection::all().deny(["merge_sum"]));
    let agent = Agent::builder(merging_model(), "m", narrow).build();
    let refused = finished(agent.run(spawn_task(json!({"function": "merge_sum"}), &["child 1"])).await.unwrap());
    assert!(refused.answer.contains("`merge_sum` is not available"), "{}", refused.answer);

    // A strategy the schema does not know: the model reads the argument error.
    let bad = run(spawn_task(json!("best"), &["child 1"])).await;
    assert!(bad.starts_with("ERROR: ") && bad.contains("merge"), "{bad}");
}

/// Check that a report has a title.
#[tool(safety = "safe")]
fn validate_report(result: Value) -> Result<Value, String> {
    match result.get("title") {
        Some(Value::String(title)) if !title.is_empty() => Ok(result),
        _ => Err("a report needs a non-empty `title`".to_owned()),
    }
}

/// Add the report's word count.
#[tool(safety = "safe")]
fn count_words(result: Value) -> Value {
    let words = result["body"].as_str().map_or(0, |b| b.split_whitespace().count());
    json!({"title": result["title"], "body": result["body"], "words": words})
}

/// Upper-case a text answer.
#[tool(safety = "safe")]
fn upper(result: String) -> String {
    result.to_uppercase()
}

fn post_registry() -> FunctionRegistry {
    let mut registry = registry();
    toolreg::register_tools!(registry, [validate_report_tool, count_words_tool, upper_tool]).unwrap();
    registry
}

#[tokio::test(flavor = "multi_thread")]
async fn post_processing_validates_and_transforms_the_result_in_order() {
    use toolreg::policy::MemorySink;
    let audit = Arc::new(MemorySink::new());
    let report = json!({"title": "Q3", "body": "sales went up"});
    let model = ScriptedClient::new().then_call("r1", "return_result", json!({"value": report})).then_text("unused");
    let agent = Agent::builder(model, "m", engine(&post_registry()).audit(Arc::clone(&audit)))
        .post_process(["validate_report", "count_words"])
        .build();
    let done = finished(agent.run("report").await.unwrap());
    assert_eq!(done.value, json!({"title": "Q3", "body": "sales went up", "words": 3}));
    assert_eq!(serde_json::from_str::<Value>(&done.answer).unwrap(), done.value);
    assert_eq!(done.steps, 1);
    // Through the engine: audited like any call, in order.
    let tools: Vec<String> = audit.events().iter().map(|e| e.tool.clone()).collect();
    assert_eq!(tools, ["return_result", "validate_report", "count_words"]);

    // A plain text answer goes through as a JSON string.
    let model = ScriptedClient::new().then_text("all good");
    let agent = Agent::builder(model, "m", engine(&post_registry())).post_process(["upper"]).build();
    let done = finished(agent.run("say it").await.unwrap());
    assert_eq!((done.answer.as_str(), &done.value), ("ALL GOOD", &json!("ALL GOOD")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_result_is_the_models_to_correct_within_the_limits() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let model = ScriptedClient::new()
        .then_call("r1", "return_result", json!({"value": {"body": "no title"}}))
        .then_call("r2", "return_result", json!({"value": {"title": "Fixed", "body": "now"}}));
    let agent = Agent::builder(model.clone(), "m", engine(&post_registry()))
        .post_process(["validate_report"])
        .on_event(move |e| seen.lock().unwrap().push(e.clone()))
        .build();
    let done = finished(agent.run("report").await.unwrap());
    assert_eq!(done.value, json!({"title": "Fixed", "body": "now"}));
    assert_eq!(done.steps, 2);
    // The model read the refusal as a tool's error reads.
    let Some(Message::User { text }) = model.requests()[1].messages.last().cloned() else { panic!("no message") };
    assert!(text.contains("not accepted") && text.contains("needs a non-empty `title`"), "{text}");
    let refused = events.lock().unwrap().iter().filter(|e| matches!(e, AgentEvent::ResultRefused(_))).count();
    assert_eq!(refused, 1);

    // Never corrected: the step limit ends the run, as any run.
    let model = ScriptedClient::from_fn(|_| Ok(text_response("still no title")));
    let agent = Agent::builder(model, "m", engine(&post_registry()))
        .post_process(["validate_report"])
        .limits(AgentLimits::default().max_steps(3))
        .build();
    assert!(matches!(agent.run("report").await, Err(AgentError::StepLimit { limit: 3, .. })));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unoffered_post_processing_function_stops_the_run_before_it_starts() {
    use toolreg::policy::Selection;
    let model = ScriptedClient::new().then_text("unused");
    let agent = Agent::builder(model.clone(), "m", engine(&post_registry())).post_process(["ghost"]).build();
    let error = agent.run("x").await.unwrap_err();
    assert_eq!(error, AgentError::PostProcessNotOffered { function: "ghost".into() });
    // Outside the selection is the same as unknown.
    let narrow = engine(&post_registry()).selection(Selection::all().deny(["upper"]));
    let agent = Agent::builder(model.clone(), "m", narrow).post_process(["upper"]).build();
    assert!(matches!(agent.run("x").await, Err(AgentError::PostProcessNotOffered { .. })));
    assert!(model.requests().is_empty(), "a model request was made");
}

/// Upper-case a text answer, dangerously.
#[tool(safety = "dangerous")]
fn risky_upper(result: String) -> String {
    result.to_uppercase()
}

/// Merge results, dangerously.
#[tool(safety = "dangerous")]
fn risky_merge(results: Vec<TaskResult>) -> usize {
    results.len()
}

/// Merge and post-processing functions are approved like any call: the
/// engine's approver decides, and `SuspendForApproval` cannot defer a call
/// the agent makes itself, so it is refused for the model to read.
#[tokio::test(flavor = "multi_thread")]
async fn merge_and_post_processing_functions_need_the_engines_approval() {
    use toolreg::policy::PolicyApprover;
    let mut registry = registry();
    toolreg::register_tools!(registry, [risky_upper_tool, risky_merge_tool]).unwrap();
    let policy = || PolicyApprover::new().approve_tool("risky_upper").otherwise(SuspendForApproval);

    let model = ScriptedClient::new().then_text("fine");
    let agent = Agent::builder(model, "m", ToolEngine::builder(&registry).approver(policy()))
        .post_process(["risky_upper"])
        .build();
    assert_eq!(finished(agent.run("x").await.unwrap()).answer, "FINE");

    let agent = Agent::builder(merging_model(), "m", ToolEngine::builder(&registry).approver(policy())).build();
    let done = finished(agent.run(spawn_task(json!({"function": "risky_merge"}), &["child 1"])).await.unwrap());
    assert!(done.answer.starts_with("ERROR: ") && done.answer.contains("nothing here can wait"), "{}", done.answer);
}

// ---- Deferred loading -----------------------------------------------------------

/// Convert an amount of money from one currency to another.
#[tool(safety = "safe")]
fn convert_currency(amount: f64, from: String, to: String) -> String {
    format!("{amount} {from} is {} {to}", amount * 2.0)
}

/// Ask the host a question and wait for its answer.
#[tool(safety = "safe")]
fn ask_host(question: String) -> String {
    question
}

#[tokio::test(flavor = "multi_thread")]
async fn deferred_tools_are_found_loaded_appended_and_kept_through_a_suspension() {
    let mut registry = registry();
    toolreg::register_tools!(registry, [convert_currency_tool, ask_host_tool]).unwrap();
    let model = ScriptedClient::new()
        // Called before it is loaded: answered, never run.
        .then_call("c1", "convert_currency", json!({"amount": 1, "from": "EUR", "to": "USD"}))
        .then_call("c2", "search_tools", json!({"query": "exchange money between currencies"}))
        .then_call("c3", "convert_currency", json!({"amount": 1, "from": "EUR", "to": "USD"}))
        .then_call("c4", "ask_host", json!({"question": "Is 2 right?"}));
    let agent = Agent::builder(model.clone(), "m", engine(&registry))
        .defer(Deferral::new().tools(["convert_currency"]))
        .external(["ask_host"])
        .build();
    let RunOutcome::Suspended(suspended) = agent.run("Convert 1 EUR to USD.").await.unwrap() else {
        panic!("the run should wait for the host's answer");
    };
    let requests = model.requests();
    let names = |i: usize| requests[i].tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert!(!names(0).contains(&"convert_currency".to_owned()), "deferred: {:?}", names(0));
    assert!(names(0).contains(&"search_tools".to_owned()));
    // The tool found joins the next request after the ones already offered.
    assert_eq!(names(2)[..names(0).len()], names(0)[..]);
    assert_eq!(names(2).last().map(String::as_str), Some("convert_currency"));

    let mut transcript = suspended.transcript.clone();
    transcript.push(Message::Tool { results: suspended.done.clone() });
    let results = tool_results(&transcript);
    assert!(results[0].2 && results[0].1.contains("not loaded yet") && results[0].1.contains("search_tools"));
    assert!(results[1].1.contains("convert_currency"), "{:?}", results[1]);
    assert_eq!(results[2], ("c3".into(), "1 EUR is 2 USD".into(), false));

    // Loaded tools survive the suspension, serialised, and are offered on resume.
    assert_eq!(suspended.loaded, ["convert_currency"]);
    let stored: Suspended = serde_json::from_value(serde_json::to_value(&suspended).unwrap()).unwrap();
    let model = ScriptedClient::new().then_text("1 EUR is 2 USD.");
    let agent = Agent::builder(model.clone(), "m", engine(&registry))
        .defer(Deferral::new().tools(["convert_currency"]))
        .external(["ask_host"])
        .build();
    let answer = Resolution::answer("c4", Ok(json!("yes")));
    let done = finished(agent.resume(stored, vec![answer], CancellationToken::new()).await.unwrap());
    assert_eq!(done.answer, "1 EUR is 2 USD.");
    assert!(model.requests()[0].tools.iter().any(|t| t.name == "convert_currency"));
}

/// Split a restaurant bill between several people.
#[tool(safety = "safe")]
fn split_bill(total: f64, people: u32) -> f64 {
    total / f64::from(people)
}

/// With a search model, the agent's `search_tools` finds a tool by what the
/// request means when no word of it is the tool's (the model of
/// `scripts/fetch_search_model.sh`; skipped without it unless
/// `TOOLREG_REQUIRE_SEARCH_MODEL` is set, as in CI).
#[tokio::test(flavor = "multi_thread")]
async fn the_agents_search_finds_a_tool_by_meaning_with_a_search_model() {
    use toolreg::search::{Embeddings, SentenceEncoder};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/search-model/all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").is_file() {
        assert!(std::env::var_os("TOOLREG_REQUIRE_SEARCH_MODEL").is_none(), "no search model in {}", dir.display());
        eprintln!("skipped: no search model in {} (scripts/fetch_search_model.sh)", dir.display());
        return;
    }
    let mut registry = registry();
    toolreg::register_tools!(registry, [convert_currency_tool, split_bill_tool]).unwrap();
    let embeddings = Embeddings::new(SentenceEncoder::load(&dir).unwrap());
    // As a host that would rather wait than search by keywords first.
    embeddings.embed_now(registry.list().map(|t| t.declaration())).unwrap();
    registry.use_embeddings(embeddings);
    let request = "how many yen would I get for 50 quid";
    let model = ScriptedClient::new()
        .then_call("c1", "search_tools", json!({"query": request, "limit": 1}))
        .then_call("c2", "convert_currency", json!({"amount": 50, "from": "GBP", "to": "JPY"}))
        .then_text("done");
    let agent = Agent::builder(model.clone(), "m", engine(&registry))
        .defer(Deferral::new().tools(["convert_currency", "split_bill"]))
        .build();
    let done = finished(agent.run(request).await.unwrap());
    let results = tool_results(&done.transcript);
    assert!(results[0].1.contains("convert_currency") && !results[0].1.contains("split_bill"), "{:?}", results[0]);
    assert_eq!(results[1], ("c2".into(), "50 GBP is 100 JPY".into(), false));
    // Keywords alone find nothing for it: no word of the request is the tool's.
    let keyword = toolreg::search::ToolIndex::new(registry.list().map(|t| t.declaration()));
    assert!(keyword.search_where(request, 5, |n| n == "convert_currency").is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn with_native_search_every_request_holds_every_tool_and_the_search_answers_with_references() {
    let mut registry = registry();
    toolreg::register_tools!(registry, [convert_currency_tool]).unwrap();
    let model = ScriptedClient::new()
        .native_search(true)
        // Sent deferred, not yet found: answered, never run.
        .then_call("c1", "convert_currency", json!({"amount": 1, "from": "EUR", "to": "USD"}))
        .then_call("c2", "search_tools", json!({"query": "exchange money between currencies"}))
        .then_call("c3", "convert_currency", json!({"amount": 1, "from": "EUR", "to": "USD"}))
        .then_text("1 EUR is 2 USD.");
    let agent = Agent::builder(model.clone(), "m", engine(&registry))
        .defer(Deferral::new().tools(["convert_currency"]))
        .build();
    let done = finished(agent.run("Convert 1 EUR to USD.").await.unwrap());
    assert_eq!(done.answer, "1 EUR is 2 USD.");

    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let names = |i: usize| requests[i].tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    // Every tool in registration order, in every request: the prefix never changes.
    let all: Vec<String> = registry.list().map(|e| e.declaration().name.clone()).collect();
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(names(i), all, "request {i}");
        assert_eq!(request.deferred_tools, ["convert_currency".to_owned()].into(), "request {i}");
    }
    let results = tool_results(&done.transcript);
    assert!(results[0].2 && results[0].1.contains("not loaded yet"), "{:?}", results[0]);
    assert_eq!(results[2], ("c3".into(), "1 EUR is 2 USD".into(), false));
    // The search's answer names what it found, for the format to send as references.
    let search = done
        .transcript
        .iter()
        .find_map(|m| match m {
            Message::Tool { results } => results.iter().find(|r| r.call_id == "c2").cloned(),
            _ => None,
        })
        .unwrap();
    assert_eq!(search.tool_references, ["convert_currency"]);
    // Without native search the same run adds the tool when found.
    let local = ScriptedClient::new()
        .then_call("c2", "search_tools", json!({"query": "exchange money between currencies"}))
        .then_text("done");
    let agent = Agent::builder(local.clone(), "m", engine(&registry))
        .defer(Deferral::new().tools(["convert_currency"]))
        .build();
    finished(agent.run("Convert.").await.unwrap());
    let requests = local.requests();
    assert!(requests.iter().all(|r| r.deferred_tools.is_empty()));
    assert!(!requests[0].tools.iter().any(|t| t.name == "convert_currency"));
    assert_eq!(requests[1].tools.last().map(|t| t.name.as_str()), Some("convert_currency"));
}

#[tokio::test]
async fn without_deferral_search_tools_is_not_offered() {
    let model = ScriptedClient::new().then_text("done");
    let agent = Agent::builder(model.clone(), "m", engine(&registry())).build();
    finished(agent.run("hi").await.unwrap());
    assert!(model.requests()[0].tools.iter().all(|t| t.name != "search_tools"));
}

/// The host's tools change mid-run (an imported MCP server's
/// `list_changed`): the next request offers the new set, a removed tool
/// no longer runs, an added one does, and a deferred one added is found by
/// `search_tools`.
#[tokio::test(flavor = "multi_thread")]
async fn tools_added_and_removed_mid_run_are_offered_from_the_next_step() {
    use std::sync::{Arc, OnceLock};
    let agent_cell: Arc<OnceLock<Agent>> = Arc::new(OnceLock::new());
    let with = |extra: toolreg::ToolRegistration| {
        let mut r = registry();
        r.register(extra).unwrap();
        r
    };
    let refresh = {
        let cell = Arc::clone(&agent_cell);
        let after = with(convert_currency_tool::registration());
        toolreg::ToolRegistration::new(
            toolreg::ToolDeclaration::builder("refresh")
                .description("Reload the tools.")
                .safety(toolreg::SafetyLevel::Safe)
                .build(),
            move |_: serde_json::Value| {
                cell.get().unwrap().set_tools(&after);
                async { Ok::<_, String>("reloaded") }
            },
        )
    };
    let before = with(refresh);
    let model = ScriptedClient::new()
        .then_call("c1", "refresh", json!({}))
        .then_call("c2", "refresh", json!({}))
        .then_call("c3", "search_tools", json!({"query": "convert currency"}))
        .then_call("c4", "convert_currency", json!({"amount": 2, "from": "EUR", "to": "USD"}))
        .then_text("done");
    let agent =
        Agent::builder(model.clone(), "m", engine(&before)).defer(Deferral::new().tools(["convert_currency"])).build();
    agent_cell.set(agent.clone()).ok().unwrap();
    let done = finished(agent.run("Reload, then convert 2 EUR.").await.unwrap());
    let requests = model.requests();
    let names = |i: usize| requests[i].tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert!(names(0).contains(&"refresh".to_owned()));
    // Removed: no longer offered, and a call to it does not run.
    assert!(!names(1).contains(&"refresh".to_owned()), "{:?}", names(1));
    let results = tool_results(&done.transcript);
    assert_eq!(results[0], ("c1".into(), "reloaded".into(), false));
    assert!(results[1].2, "{:?}", results[1]);
    // Added and deferred: found by the search, then loaded and run.
    assert!(!names(1).contains(&"convert_currency".to_owned()));
    assert!(results[2].1.contains("convert_currency"), "{:?}", results[2]);
    assert_eq!(names(3).last().map(String::as_str), Some("convert_currency"));
    assert_eq!(results[3], ("c4".into(), "2 EUR is 4 USD".into(), false));
}

/// The names of the spans opened while it is the default subscriber.
struct SpanNames(Arc<Mutex<Vec<&'static str>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanNames {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.0.lock().unwrap().push(attrs.metadata().name());
    }
}

/// A resumed run is traced as a run of its own (`agent_run`, exported as
/// OpenTelemetry's `invoke_agent`), like the run that suspended.
#[tokio::test]
async fn a_resumed_run_is_traced_as_an_agent_run() {
    use tracing_subscriber::layer::SubscriberExt;
    let names = Arc::new(Mutex::new(Vec::new()));
    // With a single live dispatcher, tracing takes a new callsite's interest
    // from the default of whichever thread reaches it first: another test's
    // thread would cache "no one listens". A second live dispatcher makes it
    // ask every live one, this test's among them.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(SpanNames(names.clone())));
    // The span's callsite may have been registered before this subscriber
    // was set: ask every callsite again.
    tracing::callsite::rebuild_interest_cache();
    let model = ScriptedClient::new().then_call("t1", "wipe", json!({"path": "/x"})).then_text("done");
    let agent = Agent::builder(model, "m", engine(&registry())).build();
    let RunOutcome::Suspended(suspended) = agent.run("wipe it").await.unwrap() else { panic!("not suspended") };
    let runs = |names: &Mutex<Vec<&str>>| names.lock().unwrap().iter().filter(|n| **n == "agent_run").count();
    assert_eq!(runs(&names), 1);
    let approval = suspended.approvals[0].approve();
    finished(agent.resume(suspended, vec![approval], CancellationToken::new()).await.unwrap());
    assert_eq!(runs(&names), 2);
}

/// An agent runs every call for the principal it works for, its
/// sub-agents' calls too, as the audit records them.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_and_its_sub_agents_call_for_its_principal() {
    let audit = std::sync::Arc::new(toolreg::policy::MemorySink::new());
    let engine = engine(&registry()).audit(std::sync::Arc::clone(&audit));
    let alice = toolreg::Principal::verified("https://as.example", "alice");
    let agent = Agent::builder(family_model(), "m", engine).principal(alice.clone()).build();
    assert_eq!(agent.principal().map(|p| p.subject.as_str()), Some("alice"));
    finished(agent.run("parent").await.unwrap());
    let events = audit.take();
    let tools: Vec<&str> = events.iter().map(|e| e.tool.as_str()).collect();
    assert!(tools.contains(&"spawn_many") && tools.contains(&"return_result"), "{tools:?}");
    assert!(events.iter().all(|e| e.principal.as_ref() == Some(&alice)), "{events:?}");
}
