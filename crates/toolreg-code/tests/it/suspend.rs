//! A program stopped at a dangerous call: the agent run is suspended with
//! the program's sealed record of calls, and resumes — in another process
//! — exactly where it stopped: every tool runs once across the runs.

use std::path::{Path, PathBuf};

use crate::support::{Runs, registry, runs, worker};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolreg::ToolEngine;
use toolreg::policy::MemorySink;
use toolreg_code::{CodeMode, SealingKey};
use toolreg_llm::agent::{Agent, Resolution, RunOutcome, SuspendForApproval};
use toolreg_llm::scripted::ScriptedClient;
use toolreg_llm::{Message, Suspended};

const PROGRAM: &str = "const sum = await tools.add({a: 1, b: 2});\nconst first = await tools.delete({path: 'a.txt'});\n\
                       let second;\ntry { second = await tools.delete({path: 'b.txt'}); } catch (e) { second = \
                       e.kind; }\nreturn [sum, first, second];";

/// The same key in every process: the host's secret.
fn code() -> CodeMode {
    CodeMode::new(worker()).key(SealingKey::new([42; 32]))
}

fn agent(model: ScriptedClient, runs: &Runs, audit: &std::sync::Arc<MemorySink>) -> Agent {
    let engine = ToolEngine::builder(&registry(runs)).approver(SuspendForApproval).audit(audit.clone()).build();
    Agent::builder(model, "m", code().attach(&engine).unwrap().to_builder()).build()
}

fn results(messages: &[Message]) -> Vec<(String, String, bool)> {
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

/// What a child process reports: the tools it ran, and how the run ended.
#[derive(serde::Serialize, serde::Deserialize)]
struct Report {
    runs: Vec<(String, Value)>,
    suspended: Option<Suspended>,
    results: Vec<(String, String, bool)>,
    audit: Vec<String>,
}

/// In the child: resume the suspension in `path` with the decisions beside it.
async fn child(path: &str) {
    let suspended: Suspended = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let resolutions: Vec<Resolution> =
        serde_json::from_str(&std::fs::read_to_string(format!("{path}.decisions")).unwrap()).unwrap();
    let runs = runs();
    let audit = std::sync::Arc::new(MemorySink::new());
    let agent = agent(ScriptedClient::new().then_text("all done"), &runs, &audit);
    let outcome = agent.resume(suspended, resolutions, CancellationToken::new()).await.unwrap();
    let (suspended, results) = match outcome {
        RunOutcome::Suspended(s) => (Some(s), Vec::new()),
        RunOutcome::Finished(done) => (None, results(&done.transcript)),
    };
    let audit = audit.events().iter().map(|e| format!("{} {} {}", e.call_id, e.tool, e.outcome)).collect();
    let report = Report { runs: runs.lock().unwrap().clone(), suspended, results, audit };
    std::fs::write(format!("{path}.out"), serde_json::to_string(&report).unwrap()).unwrap();
}

fn resume_in_child(dir: &Path, name: &str, suspended: &Suspended, resolutions: Vec<Resolution>) -> Report {
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, serde_json::to_string(suspended).unwrap()).unwrap();
    std::fs::write(format!("{}.decisions", path.display()), serde_json::to_string(&resolutions).unwrap()).unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suspend::a_program_suspends_at_each_dangerous_call_and_resumes_in_another_process",
            "--nocapture",
        ])
        .env("TOOLREG_CODE_RESUME_FROM", &path)
        .status()
        .unwrap();
    assert!(status.success());
    serde_json::from_str(&std::fs::read_to_string(format!("{}.out", path.display())).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_suspends_at_each_dangerous_call_and_resumes_in_another_process() {
    if let Ok(path) = std::env::var("TOOLREG_CODE_RESUME_FROM") {
        child(&path).await;
        return;
    }
    let runs = runs();
    let audit = std::sync::Arc::new(MemorySink::new());
    let model = ScriptedClient::new().then_call("c1", "run_code", json!({ "code": PROGRAM }));
    let RunOutcome::Suspended(first) = agent(model, &runs, &audit).run("clean up").await.unwrap() else {
        panic!("not suspended")
    };
    // Stopped at the program's second call; the first ran, here, once.
    assert_eq!(first.approvals.len(), 1);
    assert_eq!(first.approvals[0].call_id, "c1/2");
    assert_eq!(first.approvals[0].tool, "delete");
    assert_eq!(first.approvals[0].arguments, json!({"path": "a.txt"}));
    assert!(first.checkpoints.contains_key("c1"));
    assert!(first.done.is_empty(), "run_code has not answered yet");
    assert_eq!(runs.lock().unwrap().iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(), ["add"]);
    let ids: Vec<String> = audit.events().iter().map(|e| format!("{} {}", e.call_id, e.outcome)).collect();
    assert_eq!(ids, ["c1/1 ok", "c1/2 pending", "c1 pending"]);

    let dir = tempfile::tempdir().unwrap();
    // Approved: the resumed program replays `add` (not run again), runs the
    // approved delete, and stops again at the next dangerous call.
    let second = resume_in_child(dir.path(), "one.json", &first, vec![first.approvals[0].approve()]);
    assert_eq!(second.runs, [("delete".to_owned(), json!({"path": "a.txt"}))]);
    let second = second.suspended.expect("stopped again at the second delete");
    assert_eq!(second.approvals[0].call_id, "c1/3");
    assert_eq!(second.approvals[0].arguments, json!({"path": "b.txt"}));

    // Denied in a third process: the program catches it and finishes;
    // nothing it did before runs again.
    let third = resume_in_child(dir.path(), "two.json", &second, vec![second.approvals[0].deny("not that one")]);
    assert!(third.runs.is_empty(), "{:?}", third.runs);
    let (id, content, is_error) = &third.results[0];
    assert_eq!((id.as_str(), *is_error), ("c1", false));
    let value: Value = serde_json::from_str(content).unwrap();
    assert_eq!(value["result"], json!([3, {"deleted": "a.txt"}, "denied"]));
    assert!(third.audit.iter().any(|a| a == "c1/3 delete denied"), "{:?}", third.audit);

    // The same suspension resumed twice by one host: the second is refused
    // and runs nothing (across hosts, the agent's store-backed claims do this).
    let host = agent(ScriptedClient::new(), &runs, &audit);
    let before = runs.lock().unwrap().len();
    let once = host.resume(first.clone(), vec![first.approvals[0].approve()], CancellationToken::new()).await;
    assert!(matches!(once, Ok(RunOutcome::Suspended(_))), "{once:?}");
    let twice = host.resume(first.clone(), vec![first.approvals[0].approve()], CancellationToken::new()).await;
    assert!(matches!(twice, Err(toolreg_llm::AgentError::AlreadyResumed { .. })), "{twice:?}");
    assert_eq!(runs.lock().unwrap().len(), before + 1);

    // A changed record: refused before anything runs.
    let mut tampered = first.clone();
    let sealed = tampered.checkpoints.get_mut("c1").unwrap();
    let text = sealed["journal"].as_str().unwrap().replace("3", "4");
    sealed["journal"] = json!(text);
    let report = resume_in_child(dir.path(), "tampered.json", &tampered, vec![first.approvals[0].approve()]);
    assert!(report.runs.is_empty(), "{:?}", report.runs);
    assert!(report.results[0].2 && report.results[0].1.contains("not authentic"), "{:?}", report.results);

    // A changed program: refused as well.
    let mut changed = first.clone();
    changed.calls[0].arguments = json!({ "code": PROGRAM.replace("a.txt", "c.txt") }).into();
    let report = resume_in_child(dir.path(), "changed.json", &changed, vec![first.approvals[0].approve()]);
    assert!(report.runs.is_empty(), "{:?}", report.runs);
    assert!(report.results[0].2 && report.results[0].1.contains("not authentic"), "{:?}", report.results);
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_program_printed_before_it_stopped_goes_with_the_suspension() {
    let program = "console.log('sum', await tools.add({a: 1, b: 2}));\nconsole.log('now removing a.txt');\nawait \
                   tools.delete({path: 'a.txt'});\nreturn 'done';";
    let runs = runs();
    let audit = std::sync::Arc::new(MemorySink::new());
    let model = ScriptedClient::new().then_call("c1", "run_code", json!({ "code": program }));
    let RunOutcome::Suspended(stopped) = agent(model, &runs, &audit).run("clean up").await.unwrap() else {
        panic!("not suspended")
    };
    assert_eq!(stopped.approvals[0].call_id, "c1/2");
    let state = &stopped.checkpoints["c1"];
    // What the person asked to approve `delete a.txt` is shown.
    assert_eq!(code().printed_at_stop("c1", program, state).unwrap(), "sum 3\nnow removing a.txt\n");
    // Read from the sealed record only: another key, call or program, or a
    // changed record, is refused.
    let refused = |r: Result<String, toolreg_code::CodeError>| {
        assert!(matches!(r, Err(toolreg_code::CodeError::StateRejected { .. })), "{r:?}")
    };
    refused(CodeMode::new(worker()).key(SealingKey::new([7; 32])).printed_at_stop("c1", program, state));
    refused(code().printed_at_stop("c2", program, state));
    refused(code().printed_at_stop("c1", "return 1;", state));
    let mut changed = state.clone();
    changed["journal"] = json!(changed["journal"].as_str().unwrap().replace("a.txt", "b.txt"));
    refused(code().printed_at_stop("c1", program, &changed));
}
