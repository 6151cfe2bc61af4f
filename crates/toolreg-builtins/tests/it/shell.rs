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

/// Poll until no process has `marker` in its command line, for at most five
/// seconds. A pid the command prints may be its namespace's, not the host's,
/// so the tests find their processes by a marker instead.
async fn gone_marked(marker: &str) -> bool {
    for _ in 0..100 {
        if processes_with(marker).is_empty() {
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
    if out.isolated {
        // The command is PID 1 of its namespace, and an init ignores the
        // signals it sends itself, as `unshare --pid --fork` does too.
        assert_eq!((out.exit_code, out.signal), (Some(0), None));
    } else {
        assert_eq!((out.exit_code, out.signal), (None, Some(15)));
    }
    let off = ShellTool::new(ShellOptions::new(dir.path()).confinement(Confinement::Off)).unwrap();
    let out = off.run(&ShellArgs::new("kill -TERM $$"), pending()).await.unwrap();
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
    let err = tool.run(&ShellArgs::new("sleep 300.101 & echo $!; wait").timeout_secs(1), pending()).await.unwrap_err();
    let ShellError::TimedOut { stdout, .. } = &err else { panic!("expected a timeout, got {err}") };
    pid_in(stdout);
    assert!(gone_marked("300.101").await, "the sleeping grandchild is still running");
    assert!(err.to_string().contains("process group was killed"));
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let cancel = tokio::time::sleep(Duration::from_millis(500));
    let err = tool.run(&ShellArgs::new("sleep 300.102 & echo $! > pid; wait"), cancel).await.unwrap_err();
    assert_eq!(err, ShellError::Cancelled);
    pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone_marked("300.102").await, "the sleeping grandchild is still running");
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let args = ShellArgs::new("sleep 300.103 & echo $! > pid; wait");
    let run = tool.run(&args, pending());
    assert!(tokio::time::timeout(Duration::from_millis(500), run).await.is_err());
    pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone_marked("300.103").await, "the sleeping grandchild is still running");
}

#[tokio::test]
async fn a_background_process_does_not_outlive_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let out = tool.run(&ShellArgs::new("sleep 300.104 >/dev/null 2>&1 & echo $!"), pending()).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    pid_in(&out.stdout);
    assert!(gone_marked("300.104").await, "the background sleep is still running");
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
    let options = toolreg::CallOptions::new().cancel(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let args = json!({"command": "sleep 300.105 & echo $! > pid; wait"});
    let call = toolreg::ToolCall::new("c1", "shell", args);
    let err = toolreg::ToolExecutor::execute_call(&registry, call, options).await.outcome.unwrap_err();
    canceller.await.unwrap();
    assert!(err.to_string().contains("cancelled"), "{}", err.to_string());
    pid_in(&std::fs::read_to_string(dir.path().join("pid")).unwrap());
    assert!(gone_marked("300.105").await);
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

/// Whether this process may create namespaces (root, as on CI). Elsewhere the
/// shell falls back to Landlock alone and says so, which the tests check.
fn can_isolate() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Host pids of processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|cmd| String::from_utf8_lossy(&cmd).replace('\0', " ").contains(marker))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[tokio::test]
async fn the_host_process_environment_is_out_of_the_commands_sight() {
    let dir = tempfile::tempdir().unwrap();
    // Cargo sets CARGO_PKG_NAME in this process's environment: a secret the
    // command must not find, by its parent's pid or by scanning /proc.
    let me = std::process::id();
    let command = format!(
        "cat /proc/$PPID/environ /proc/{me}/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | \
         grep -c '^CARGO_PKG_NAME='; ls /proc | grep -cE '^[0-9]+$'"
    );
    let out = shell(dir.path()).run(&ShellArgs::new(command), pending()).await.unwrap();
    if !can_isolate() {
        assert!(!out.isolated && out.confinement.contains("no namespaces"), "{}", out.confinement);
        return;
    }
    assert!(out.isolated, "{}", out.confinement);
    assert!(out.confinement.contains("its own PID namespace and /proc"), "{}", out.confinement);
    let counts: Vec<u32> = out.stdout.lines().map(|l| l.trim().parse().unwrap()).collect();
    assert_eq!(counts[0], 0, "the host's environment was readable: {}", out.stdout);
    assert!(counts[1] <= 4, "the command saw {} processes in /proc", counts[1]);
}

#[tokio::test]
async fn metadata_outside_the_root_cannot_be_changed() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "x").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    let command = format!(
        "chmod 600 {v}; chown 1:1 {v}; touch -d 2001-01-01 {v}; touch inside && chmod 600 inside && echo inside-ok",
        v = victim.display()
    );
    let out = shell(dir.path()).run(&ShellArgs::new(command), pending()).await.unwrap();
    assert_eq!(out.stdout, "inside-ok\n", "{}", out.stderr);
    if !can_isolate() {
        return;
    }
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o644, "chmod outside the root took effect: {}", out.stderr);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()), "chown outside the root took effect");
    assert_eq!(after.mtime(), before.mtime(), "touch outside the root took effect");
    assert!(out.stderr.contains("Read-only file system"), "{}", out.stderr);
}

#[tokio::test]
async fn a_setsid_daemon_does_not_outlive_the_call() {
    if !can_isolate() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // One daemon with the output pipes closed, one holding standard output.
    let command = "setsid sleep 31.4159201 </dev/null >/dev/null 2>&1 & setsid sleep 31.4159202 & echo started";
    let started = std::time::Instant::now();
    let out = shell(dir.path()).run(&ShellArgs::new(command), pending()).await.unwrap();
    assert_eq!(out.stdout, "started\n");
    // The pipe holder died with the namespace, so nothing waited out the grace.
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    for _ in 0..100 {
        if processes_with("31.41592").is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("daemons outlived the call: {:?}", processes_with("31.41592"));
}

#[tokio::test]
async fn output_held_open_by_an_escaped_process_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    // Without confinement a daemon escapes the process group and holds the
    // pipe past the grace; what was read until then is still returned.
    let off = ShellTool::new(ShellOptions::new(dir.path()).confinement(Confinement::Off)).unwrap();
    // The daemon writes `sid` once it has its own session, out of the
    // group's reach; the command waits for that before it exits.
    let command = "echo before; setsid sh -c 'echo $$ > sid; exec sleep 3.1415' & \
                   while [ ! -s sid ]; do sleep 0.05; done; exit 0";
    let out = off.run(&ShellArgs::new(command), pending()).await.unwrap();
    assert_eq!(out.stdout, "before\n");
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn a_call_dropped_while_its_command_is_spawned_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let tool = shell(dir.path());
    let args = ShellArgs::new("sleep 300.106");
    for _ in 0..5 {
        // Dropped at once: the spawning thread finishes on its own and finds
        // nobody to hand the command to.
        let run = tool.run(&args, pending());
        assert!(tokio::time::timeout(Duration::from_micros(1), run).await.is_err());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(gone_marked("300.106").await, "a command outlived its dropped call");
}

/// The host's key and audit file inside the root are hidden from a command
/// in its own mount namespace: it reads nothing of them and changes
/// nothing in them. Without a namespace they cannot be hidden, and the
/// result says so.
#[tokio::test]
async fn the_hosts_own_files_inside_the_root_are_hidden_from_commands() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(root.join(".toolreg")).unwrap();
    std::fs::write(root.join(".toolreg/key"), "HOST-KEY").unwrap();
    std::fs::create_dir(root.join("state")).unwrap();
    std::fs::write(root.join("state/store.db"), "HOST-STORE").unwrap();
    std::fs::write(root.join("audit.jsonl"), "AUDIT-LINE\n").unwrap();
    let options = ShellOptions::new(&root).reserve(root.join("state")).reserve(root.join("audit.jsonl"));
    let tool = ShellTool::new(options).unwrap();
    let command = "cat .toolreg/key state/store.db audit.jsonl; ls -A .toolreg state; \
                   echo forged > .toolreg/key; echo forged > audit.jsonl; rm -f state/store.db; echo done";
    let out = tool.run(&ShellArgs::new(command), pending()).await.unwrap();
    if !can_isolate() {
        assert!(out.confinement.contains("the host's own files inside the root are not hidden"), "{}", out.confinement);
        return;
    }
    assert!(out.isolated, "{}", out.confinement);
    assert!(out.confinement.contains("the host's own files inside the root hidden"), "{}", out.confinement);
    assert!(out.stdout.ends_with("done\n"), "{}", out.stdout);
    for secret in ["HOST-KEY", "HOST-STORE", "AUDIT-LINE", "key", "store.db"] {
        assert!(!out.stdout.contains(secret), "{secret} reached the command: {}", out.stdout);
    }
    assert_eq!(std::fs::read_to_string(root.join(".toolreg/key")).unwrap(), "HOST-KEY");
    assert_eq!(std::fs::read_to_string(root.join("state/store.db")).unwrap(), "HOST-STORE");
    assert_eq!(std::fs::read_to_string(root.join("audit.jsonl")).unwrap(), "AUDIT-LINE\n");
    // Landlock keeps the cover on: no unmounting it.
    if out.confined {
        let out = tool.run(&ShellArgs::new("umount .toolreg; umount -l .toolreg; cat .toolreg/key"), pending()).await;
        assert!(!out.unwrap().stdout.contains("HOST-KEY"));
    }
}
