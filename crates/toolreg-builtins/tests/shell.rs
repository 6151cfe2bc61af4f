//! The shell tool against real child processes.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use toolreg::{FunctionRegistry, SafetyLevel};
use toolreg_builtins::shell::{Confinement, ShellArgs, ShellError, ShellOptions, ShellTool};

/// A cancellation that never comes.
fn pending() -> std::future::Pending<()> {
    std::future::pending()
}

fn shell(root: &Path) -> ShellTool {
    ShellTool::new(ShellOptions::new(root)).unwrap()
}

/// Whether a process with this pid is still running (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Poll until the process is gone, for at most five seconds.
async fn gone(pid: i32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn pid_in(text: &str) -> i32 {
    text.split_whitespace().find_map(|w| w.parse().ok()).unwrap_or_else(|| panic!("no pid in {text:?}"))
}

#[tokio::test]
async fn runs_in_the_root_with_a_cleared_environment_and_closed_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ShellTool::new(ShellOptions::new(dir.path()).set_env("GREETING", "hi")).unwrap();
    // Cargo sets CARGO_PKG_NAME for this test; no allow-list names it.
    let out = tool
        .run(&ShellArgs::new("pwd; echo \"[$GREETING][${CARGO_PKG_NAME:-unset}]\"; cat; echo done"), pending())
        .await
        .unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(out.stdout, format!("{}\n[hi][unset]\ndone\n", root.display()));
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.signal, None);
}

#[tokio::test]
async fn exit_status_and_signal_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let out = tool.run(&ShellArgs::new("echo oops >&2; exit 3"), pending()).await.unwrap();
    assert_eq!((out.exit_code, out.signal), (Some(3), None));
    assert_eq!(out.stderr, "oops\n");
    let out = tool.run(&ShellArgs::new("kill -TERM $$"), pending()).await.unwrap();
    assert_eq!((out.exit_code, out.signal), (None, Some(15)));
}

#[tokio::test]
async fn output_is_capped_head_and_tail_with_the_bytes_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ShellTool::new(ShellOptions::new(dir.path()).max_output_bytes(20)).unwrap();
    let args = ShellArgs::new("printf 'HEAD'; head -c 100000 /dev/zero | tr '\\0' x; printf 'TAIL'");
    let out = tool.run(&args, pending()).await.unwrap();
    assert!(out.stdout.starts_with("HEADxxxxxx"), "{}", out.stdout);
    assert!(out.stdout.ends_with("xxxxxxTAIL"), "{}", out.stdout);
    assert_eq!(out.stdout_dropped_bytes, 100_008 - 20);
    assert!(out.stdout.contains(&format!("[{} bytes dropped]", 100_008 - 20)));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let err = tool.run(&ShellArgs::new("sleep 300 & echo $!; wait").timeout_secs(1), pending()).await.unwrap_err();
    let ShellError::TimedOut { stdout, .. } = &err else { panic!("expected a timeout, got {err}") };
    let grandchild = pid_in(stdout);
    assert!(gone(grandchild).await, "the sleeping grandchild {grandchild} is still running");
    assert!(err.to_string().contains("process group was killed"));
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let cancel = tokio::time::sleep(Duration::from_millis(500));
    let err = tool.run(&ShellArgs::new("sleep 300 & echo $! > pid; wait"), cancel).await.unwrap_err();
    assert_eq!(err, ShellError::Cancelled);
    let grandchild = pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone(grandchild).await, "the sleeping grandchild {grandchild} is still running");
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let args = ShellArgs::new("sleep 300 & echo $! > pid; wait");
    let run = tool.run(&args, pending());
    assert!(tokio::time::timeout(Duration::from_millis(500), run).await.is_err());
    let grandchild = pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone(grandchild).await, "the sleeping grandchild {grandchild} is still running");
}

#[tokio::test]
async fn a_background_process_does_not_outlive_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let out = tool.run(&ShellArgs::new("sleep 300 >/dev/null 2>&1 & echo $!"), pending()).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    let grandchild = pid_in(&out.stdout);
    assert!(gone(grandchild).await, "the background sleep {grandchild} is still running");
}

#[tokio::test]
async fn the_registered_tool_is_stopped_by_the_calls_cancellation() {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = FunctionRegistry::new();
    registry.register(shell(dir.path()).registration()).unwrap();
    let decl = registry.get("shell").unwrap().declaration();
    assert_eq!(decl.safety, SafetyLevel::Dangerous);
    assert_eq!(decl.categories, ["shell"]);

    let token = tokio_util::sync::CancellationToken::new();
    let cx = toolreg::CallContext::new("c1").with_cancellation(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let args = json!({"command": "sleep 300 & echo $! > pid; wait"});
    let err = registry.execute_with("shell", args, cx).await.unwrap_err();
    canceller.await.unwrap();
    assert!(err.to_string().contains("cancelled"), "{}", err.to_string());
    let grandchild = pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone(grandchild).await);
}

#[tokio::test]
async fn bad_inputs_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let marker = "touch ran";
    assert_eq!(tool.run(&ShellArgs::new("  "), pending()).await.unwrap_err(), ShellError::EmptyCommand);
    assert_eq!(tool.run(&ShellArgs::new(format!("{marker}\0")), pending()).await.unwrap_err(), ShellError::NulByte);
    let zero = ShellArgs::new(marker).timeout_secs(0);
    assert_eq!(tool.run(&zero, pending()).await.unwrap_err(), ShellError::ZeroTimeout);
    assert!(!dir.path().join("ran").exists());
    assert!(matches!(
        ShellTool::new(ShellOptions::new(dir.path().join("missing"))).unwrap_err(),
        ShellError::Root { .. }
    ));
}

#[tokio::test]
async fn confinement_is_reported_and_can_be_required_or_off() {
    let dir = tempfile::tempdir().unwrap();
    let out = shell(dir.path()).run(&ShellArgs::new("true"), pending()).await.unwrap();
    assert!(out.confinement.starts_with(if out.confined { "landlock" } else { "none" }), "{}", out.confinement);

    let off = ShellTool::new(ShellOptions::new(dir.path()).confinement(Confinement::Off)).unwrap();
    let out = off.run(&ShellArgs::new("true"), pending()).await.unwrap();
    assert!(!out.confined);
    assert_eq!(out.confinement, "none: confinement is off");

    let required = ShellTool::new(ShellOptions::new(dir.path()).confinement(Confinement::Required)).unwrap();
    match required.run(&ShellArgs::new("touch ran"), pending()).await {
        Ok(out) => assert!(out.confined && dir.path().join("ran").exists()),
        Err(ShellError::Unconfined { .. }) => assert!(!dir.path().join("ran").exists()),
        Err(other) => panic!("unexpected {other}"),
    }
}
