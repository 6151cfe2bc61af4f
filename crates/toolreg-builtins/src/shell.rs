//! `shell`: run a command with `sh -c` in the workspace root.
//!
//! Each command runs in a process group of its own, with a cleared
//! environment (plus an allow-list), standard input closed, and its output
//! captured head and tail within a cap. When it times out or the call is
//! cancelled — or the call's future is dropped — the whole process group is
//! killed, so a background grandchild cannot outlive the call. After a normal
//! exit the group is killed too, before the command is reaped, so nothing it
//! left behind keeps running and its process-group id cannot have been reused.
//!
//! On Linux the command runs under [Landlock] where the kernel supports it:
//! it may read and execute anything, but write only beneath the root (and
//! `/dev/null`). Landlock restricts the calling thread and its future
//! children, so the command is spawned from a fresh thread that restricts
//! itself first and then ends; the process's other threads are untouched.
//! The result says whether the confinement was in force.
//!
//! ```no_run
//! use toolreg_builtins::shell::{ShellArgs, ShellOptions, ShellTool};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let shell = ShellTool::new(ShellOptions::new("/srv/workspace"))?;
//! let out = shell.run(&ShellArgs::new("ls -la"), std::future::pending()).await?;
//! println!("exit {:?}, confined: {}\n{}", out.exit_code, out.confined, out.stdout);
//! # Ok(())
//! # }
//! ```
//!
//! [Landlock]: https://docs.kernel.org/userspace-api/landlock.html

use std::collections::VecDeque;
use std::future::Future;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use toolreg::{CallContext, SafetyLevel, Scope, ToolDeclaration, ToolRegistration};

/// The category of the shell tool.
pub const CATEGORY: &str = "shell";

/// Variables passed through from the host's environment by default.
pub const DEFAULT_ENV_ALLOW: [&str; 9] =
    ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME"];

/// `PATH` when the host has none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long the output pipes may stay open after the group was killed (a
/// process that left the group with `setsid` can hold them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Whether to run commands under Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Confinement {
    /// Use Landlock where the kernel supports it; run unconfined where it
    /// does not, and say so in the result.
    #[default]
    BestEffort,
    /// Refuse to run a command unless Landlock is in force.
    Required,
    /// Do not use Landlock.
    Off,
}

/// How the shell tool runs commands. Start from [`ShellOptions::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShellOptions {
    /// The working directory, and the only place a confined command may write.
    pub root: PathBuf,
    /// Time limit per command (60 s); a call may ask for less, never more.
    pub timeout: Duration,
    /// Host variables passed through ([`DEFAULT_ENV_ALLOW`]); the rest are cleared.
    pub env_allow: Vec<String>,
    /// Variables set for every command, after the allow-list.
    pub env_set: Vec<(String, String)>,
    /// Bytes kept of each stream (64 KiB): the first half and the last half.
    pub max_output_bytes: usize,
    /// Whether to use Landlock.
    pub confinement: Confinement,
}

impl ShellOptions {
    /// Defaults for commands run in `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ShellOptions {
            root: root.into(),
            timeout: Duration::from_secs(60),
            env_allow: DEFAULT_ENV_ALLOW.iter().map(|s| (*s).to_owned()).collect(),
            env_set: Vec::new(),
            max_output_bytes: 64 * 1024,
            confinement: Confinement::default(),
        }
    }

    /// Set the time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Pass one more host variable through.
    pub fn allow_env(mut self, name: impl Into<String>) -> Self {
        self.env_allow.push(name.into());
        self
    }

    /// Set a variable for every command.
    pub fn set_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env_set.push((name.into(), value.into()));
        self
    }

    /// Set the bytes kept of each stream.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Set whether to use Landlock.
    pub fn confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }
}

/// Arguments of `shell`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ShellArgs {
    /// The command line, run with `sh -c` in the workspace root.
    pub command: String,
    /// Seconds before the command is killed; at most the configured limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

impl ShellArgs {
    /// Run `command` with the configured time limit.
    pub fn new(command: impl Into<String>) -> Self {
        ShellArgs { command: command.into(), timeout_secs: None }
    }

    /// Ask for a shorter time limit.
    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.timeout_secs = Some(secs);
        self
    }
}

/// What `shell` returns for a command that ran to its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ShellResult {
    /// The exit code, when the command exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Standard output, head and tail within the cap.
    pub stdout: String,
    /// Bytes of standard output left out between head and tail.
    pub stdout_dropped_bytes: u64,
    /// Standard error, head and tail within the cap.
    pub stderr: String,
    /// Bytes of standard error left out between head and tail.
    pub stderr_dropped_bytes: u64,
    /// Wall-clock time, in milliseconds.
    pub duration_ms: u64,
    /// Whether Landlock confined the command's writes to the root.
    pub confined: bool,
    /// The confinement in words (which mechanism, or why there was none).
    pub confinement: String,
}

/// Why `shell` did not return a [`ShellResult`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShellError {
    /// The command is empty.
    #[error("the command is empty")]
    EmptyCommand,
    /// The command contains a NUL byte, which no command line may contain.
    #[error("the command contains a NUL byte, which no command line may contain")]
    NulByte,
    /// The timeout asked for is zero.
    #[error("timeout_secs must be at least 1")]
    ZeroTimeout,
    /// The root cannot be used.
    #[error("the shell root `{root}` cannot be used: {reason}")]
    Root {
        /// The root as given.
        root: String,
        /// Why.
        reason: String,
    },
    /// Landlock is required and not in force.
    #[error("Landlock confinement is required but not in force: {reason}; the command was not run")]
    Unconfined {
        /// Why.
        reason: String,
    },
    /// The command could not be started.
    #[error("the command could not be started: {message}")]
    Spawn {
        /// The operating system's message.
        message: String,
    },
    /// The command ran out of time; its process group was killed.
    #[error(
        "the command did not finish within {}s and its process group was killed.\nstdout:\n{stdout}\nstderr:\n{stderr}",
        after.as_secs()
    )]
    TimedOut {
        /// The limit reached.
        after: Duration,
        /// Standard output so far, capped.
        stdout: String,
        /// Standard error so far, capped.
        stderr: String,
    },
    /// The call was cancelled; the command's process group was killed.
    #[error("the command was cancelled and its process group was killed")]
    Cancelled,
}

/// The `shell` tool over one root. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct ShellTool {
    options: Arc<ShellOptions>,
}

impl ShellTool {
    /// Check the root (an existing directory) and keep the options.
    pub fn new(options: ShellOptions) -> Result<Self, ShellError> {
        let shown = options.root.display().to_string();
        let root = std::fs::canonicalize(&options.root)
            .map_err(|e| ShellError::Root { root: shown.clone(), reason: e.to_string() })?;
        if !root.is_dir() {
            return Err(ShellError::Root { root: shown, reason: "it is not a directory".to_owned() });
        }
        Ok(ShellTool { options: Arc::new(ShellOptions { root, ..options }) })
    }

    /// The options in force (the root canonicalised).
    pub fn options(&self) -> &ShellOptions {
        &self.options
    }

    /// The `shell` tool, ready to register: dangerous, category `shell`,
    /// stopped by the call's cancellation.
    pub fn registration(&self) -> ToolRegistration {
        let declaration = ToolDeclaration::for_args::<ShellArgs>(
            "shell",
            "Run a shell command with `sh -c` in the workspace root. Standard input is closed; long output \
             is cut in the middle. Returns the exit code (or signal) and the output.",
        )
        .with_safety(SafetyLevel::Dangerous)
        .with_category(CATEGORY)
        .with_scope(Scope::Core);
        let tool = self.clone();
        ToolRegistration::from_async_with_context(
            "shell",
            move |cx: CallContext, args: ShellArgs| {
                let tool = tool.clone();
                async move { tool.run(&args, cx.cancelled()).await }
            },
            declaration,
        )
    }

    /// Run one command; `cancel` completing stops it.
    pub async fn run(&self, args: &ShellArgs, cancel: impl Future<Output = ()>) -> Result<ShellResult, ShellError> {
        if args.command.trim().is_empty() {
            return Err(ShellError::EmptyCommand);
        }
        if args.command.contains('\0') {
            return Err(ShellError::NulByte);
        }
        let timeout = match args.timeout_secs {
            Some(0) => return Err(ShellError::ZeroTimeout),
            Some(secs) => Duration::from_secs(secs).min(self.options.timeout),
            None => self.options.timeout,
        };
        let started = Instant::now();
        let (mut child, confinement) = spawn(Arc::clone(&self.options), args.command.clone()).await?;
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(|e| ShellError::Spawn { message: e.to_string() })?);
        let half = self.options.max_output_bytes / 2;
        let stdout = child.stdout.take().map(tokio::process::ChildStdout::from_std);
        let stderr = child.stderr.take().map(tokio::process::ChildStderr::from_std);
        let mut guard = GroupGuard { pgid: pid, child: Some(child) };
        let stdout = tokio::spawn(capture(stdout.and_then(Result::ok), half));
        let stderr = tokio::spawn(capture(stderr.and_then(Result::ok), half));

        // Wait for the exit without reaping, so the group id stays ours
        // until the group has been killed.
        let mut exited = tokio::task::spawn_blocking(move || {
            waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT).map(drop)
        });
        enum End {
            Exited,
            TimedOut,
            Cancelled,
        }
        let end = tokio::select! {
            _ = &mut exited => End::Exited,
            () = tokio::time::sleep(timeout) => End::TimedOut,
            () = cancel => End::Cancelled,
        };
        let _ = killpg(pid, Signal::SIGKILL);
        if !matches!(end, End::Exited) {
            let _ = exited.await;
        }
        let status = guard.reap();
        let (stdout, stdout_dropped_bytes) = drain(stdout).await;
        let (stderr, stderr_dropped_bytes) = drain(stderr).await;
        match end {
            End::TimedOut => Err(ShellError::TimedOut { after: timeout, stdout, stderr }),
            End::Cancelled => Err(ShellError::Cancelled),
            End::Exited => Ok(ShellResult {
                exit_code: status.as_ref().and_then(std::process::ExitStatus::code),
                signal: status.as_ref().and_then(ExitStatusExt::signal),
                stdout,
                stdout_dropped_bytes,
                stderr,
                stderr_dropped_bytes,
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                confined: confinement.confined,
                confinement: confinement.text,
            }),
        }
    }
}

/// Kills the process group and reaps the leader if the call ends early
/// (its future dropped), so no command outlives its call.
struct GroupGuard {
    pgid: Pid,
    child: Option<Child>,
}

impl GroupGuard {
    fn reap(&mut self) -> Option<std::process::ExitStatus> {
        // The group was killed and the leader has exited: this does not block.
        self.child.take().and_then(|mut child| child.wait().ok())
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            // Reap off the async thread; the kill makes this quick.
            let _ = std::thread::Builder::new().name("toolreg-shell-reap".into()).spawn(move || child.wait());
        }
    }
}

/// Whether the command ran confined, and how, in words.
struct Confined {
    confined: bool,
    text: String,
}

/// Spawn the command from a fresh thread that first restricts itself with
/// Landlock (so only the command inherits the restriction) and then ends.
async fn spawn(options: Arc<ShellOptions>, command: String) -> Result<(Child, Confined), ShellError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("toolreg-shell-spawn".into())
        .spawn(move || {
            let _ = tx.send(spawn_here(&options, &command));
        })
        .map_err(|e| ShellError::Spawn { message: e.to_string() })?;
    rx.await.unwrap_or_else(|_| Err(ShellError::Spawn { message: "the spawning thread ended early".to_owned() }))
}

fn spawn_here(options: &ShellOptions, command: &str) -> Result<(Child, Confined), ShellError> {
    let confinement = match options.confinement {
        Confinement::Off => Confined { confined: false, text: "none: confinement is off".to_owned() },
        Confinement::BestEffort => restrict_thread(&options.root),
        Confinement::Required => {
            let confined = restrict_thread(&options.root);
            if !confined.confined {
                return Err(ShellError::Unconfined { reason: confined.text });
            }
            confined
        }
    };
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&options.root)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in &options.env_allow {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    if std::env::var_os("PATH").is_none() || !options.env_allow.iter().any(|n| n == "PATH") {
        cmd.env("PATH", FALLBACK_PATH);
    }
    cmd.env("PWD", &options.root);
    for (name, value) in &options.env_set {
        cmd.env(name, value);
    }
    let child = cmd.spawn().map_err(|e| ShellError::Spawn { message: e.to_string() })?;
    Ok((child, confinement))
}

fn restrict_thread(root: &Path) -> Confined {
    use landlock::{
        ABI, Access, AccessFs, LandlockStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        path_beneath_rules,
    };
    let abi = ABI::V5;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi))))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_file(abi))))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules([root], AccessFs::from_all(abi))))
        .and_then(|ruleset| ruleset.restrict_self());
    match status {
        Ok(status) => match status.ruleset {
            RulesetStatus::FullyEnforced => {
                Confined { confined: true, text: "landlock: writes confined to the root (fully enforced)".to_owned() }
            }
            RulesetStatus::PartiallyEnforced => Confined {
                confined: true,
                text: "landlock: writes confined to the root (partially enforced: this kernel's Landlock \
                       lacks some newer rights)"
                    .to_owned(),
            },
            RulesetStatus::NotEnforced => {
                let why = match status.landlock {
                    LandlockStatus::NotEnabled => "Landlock is built into this kernel but not enabled",
                    LandlockStatus::NotImplemented => "this kernel does not support Landlock",
                    _ => "this kernel does not enforce the Landlock rules",
                };
                Confined { confined: false, text: format!("none: {why}") }
            }
        },
        Err(e) => Confined { confined: false, text: format!("none: Landlock could not be set up: {e}") },
    }
}

/// The first `half` bytes and the last `half` bytes of a stream, and its length.
struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

async fn capture(stream: Option<impl AsyncRead + Unpin>, half: usize) -> Captured {
    let mut out = Captured { head: Vec::new(), tail: VecDeque::new(), total: 0 };
    let Some(mut stream) = stream else { return out };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        out.total += n as u64;
        let mut chunk = &buf[..n];
        let room = half.saturating_sub(out.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            out.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.len() >= half {
            out.tail.clear();
            out.tail.extend(&chunk[chunk.len() - half..]);
        } else {
            let overflow = (out.tail.len() + chunk.len()).saturating_sub(half);
            out.tail.drain(..overflow);
            out.tail.extend(chunk);
        }
    }
    out
}

/// Wait briefly for a capture to finish and render it, with the bytes dropped.
async fn drain(task: tokio::task::JoinHandle<Captured>) -> (String, u64) {
    let abort = task.abort_handle();
    let mut captured = match tokio::time::timeout(DRAIN_GRACE, task).await {
        Ok(Ok(captured)) => captured,
        _ => {
            abort.abort();
            return (String::new(), 0);
        }
    };
    let kept = captured.head.len() + captured.tail.len();
    let dropped = captured.total - kept as u64;
    let mut text = String::from_utf8_lossy(&captured.head).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n… [{dropped} bytes dropped] …\n"));
    }
    text.push_str(&String::from_utf8_lossy(captured.tail.make_contiguous()));
    (text, dropped)
}
