//! `shell`: run a command with `sh -c` in the workspace root.
//!
//! Each command runs in a process group of its own, with a cleared
//! environment (plus an allow-list), standard input closed, and its output
//! captured head and tail within a cap. When it times out or the call is
//! cancelled — or the call's future is dropped — the whole process group is
//! killed. After a normal exit the group is killed too, before the command is
//! reaped, so its process-group id cannot have been reused.
//!
//! On Linux, unless confinement is [`Confinement::Off`], the command is
//! confined in two layers:
//!
//! - **Namespaces** (needs `CAP_SYS_ADMIN`, as root or in a container's
//!   root): the command is PID 1 of a PID namespace of its own, so when it
//!   ends or is killed the kernel kills everything it started, even a
//!   daemon that left the group with `setsid`. It sees a `/proc` of its own
//!   namespace only: the toolreg process's environment and memory
//!   (`/proc/<pid>/environ`, `/proc/<pid>/mem`) are out of its reach. In a
//!   mount namespace of its own, every mount outside the root is read-only,
//!   so outside the root nothing can be written, created or removed, and no
//!   file can have its mode, owner or times changed (`chmod`, `chown`,
//!   `touch`). As an init, the command ignores signals it sends itself
//!   (`kill $$`), as under `unshare --pid --fork`.
//! - **[Landlock]** where the kernel supports it: the command may read and
//!   execute anything but write only beneath the root (and `/dev/null`), and
//!   may not mount or unmount, so it cannot uncover the host's `/proc` or
//!   make a mount writable again.
//!
//! **The host's own files.** In its mount namespace, the command finds the
//! host's files that lie inside the root ([`ShellOptions::reserve`], and the
//! root's `.toolreg` directory) covered: an empty read-only directory over
//! each directory, `/dev/null` over each file. Without a mount namespace
//! they cannot be hidden — Landlock grants access by directory tree and
//! cannot take one subtree back out of the root it grants — so a command
//! can read and change them, and the result's `confinement` says so; keep
//! host state outside the root there, as the `toolreg` command does by
//! default. A `.toolreg` directory deeper in the tree is not looked for.
//!
//! Both are set up by a fresh thread that then spawns the command and ends,
//! so no other thread of the process is touched. The result's `isolated`,
//! `confined` and `confinement` fields say what was in force and why not.
//! Where the namespaces cannot be made (not root), [`Confinement::BestEffort`]
//! runs the command under Landlock alone and says so; there, a daemon that
//! left the group with `setsid` can outlive the call. Output it still holds
//! open is waited for two seconds, and what was read until then is returned.
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

use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolreg::exec::ToolOutput;
use toolreg::{CallContext, ToolArgs, ToolRegistration, tools};

mod capture;
mod command;
mod confine;
mod process;

use capture::{Capture, capture, drain};
use process::{GroupGuard, spawn};

/// The category of the shell tool.
pub const CATEGORY: &str = "shell";

/// Variables passed through from the host's environment by default.
pub const DEFAULT_ENV_ALLOW: [&str; 9] =
    ["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME"];

/// Whether to confine commands: namespaces of their own and Landlock (see
/// the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Confinement {
    /// Use what the kernel and the process's privileges allow; what is
    /// missing is said in the result.
    #[default]
    BestEffort,
    /// Refuse to run a command unless both the namespaces and Landlock are
    /// in force ([`ShellError::Unconfined`]).
    Required,
    /// Neither: the command runs with the host's `/proc` and mounts, and
    /// only its process group is killed.
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
    /// Whether to confine commands (namespaces and Landlock).
    pub confinement: Confinement,
    /// The host's own files and directories, hidden from commands where
    /// they lie inside the root (see [`ShellOptions::reserve`]); the root's
    /// `.toolreg` directory is hidden besides.
    pub reserved: Vec<PathBuf>,
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
            reserved: Vec::new(),
        }
    }

    /// Hide `path`, a file or directory of the host's own (its key and
    /// store, an audit file), from every command, should it lie inside the
    /// root: in the command's mount namespace an empty read-only directory
    /// is mounted over a directory, and `/dev/null` over a file, so that it
    /// reads nothing of it and changes nothing in it; Landlock keeps it from
    /// unmounting them. The root's `.toolreg` directory is hidden the same
    /// way without being named.
    ///
    /// This holds only where the command gets a mount namespace
    /// (`isolated` in the result: root, or a container's root). Without
    /// one, a command can read and change whatever of the host's lies
    /// inside the root, and the result's `confinement` text says so; keep
    /// host state outside the root (toolreg's default) there.
    pub fn reserve(mut self, path: impl Into<PathBuf>) -> Self {
        self.reserved.push(path.into());
        self
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

    /// Set whether to confine commands.
    pub fn confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }
}

/// Arguments of `shell`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, ToolArgs)]
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
    /// Whether the command ran in namespaces of its own: its own PID
    /// namespace and `/proc`, every mount outside the root read-only.
    #[serde(default)]
    pub isolated: bool,
    /// The confinement in words (which mechanisms, or why there was none).
    pub confinement: String,
}

impl ShellResult {
    /// The text a model reads: how the command ended, then its standard
    /// output and standard error as they were written, each under a
    /// heading that says how much was cut from its middle.
    ///
    /// ```
    /// use toolreg_builtins::shell::{ShellArgs, ShellOptions, ShellTool};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let shell = ShellTool::new(ShellOptions::new("."))?;
    /// let result = shell.run(&ShellArgs::new("echo hi"), std::future::pending()).await?;
    /// assert!(result.text().starts_with("exit code 0"));
    /// assert!(result.text().ends_with("--- stdout ---\nhi\n"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn text(&self) -> String {
        let mut text = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("ended by signal {signal}"),
            (None, None) => "ended".to_owned(),
        };
        text.push_str(&format!(" in {} ms", self.duration_ms));
        if self.stdout.is_empty() && self.stderr.is_empty() {
            text.push_str(", no output");
        }
        for (name, output, dropped) in
            [("stdout", &self.stdout, self.stdout_dropped_bytes), ("stderr", &self.stderr, self.stderr_dropped_bytes)]
        {
            if output.is_empty() && dropped == 0 {
                continue;
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("--- {name} "));
            if dropped > 0 {
                text.push_str(&format!("({dropped} bytes cut from the middle) "));
            }
            text.push_str("---\n");
            text.push_str(output);
        }
        text
    }

    /// As a tool result: [`text`](Self::text) as the one text block a model
    /// reads, the whole result as the structured value, for programs.
    pub fn into_output(self) -> ToolOutput {
        let text = self.text();
        // `ShellResult` holds only strings, integers and booleans.
        ToolOutput::from(toolreg::exec::Content::text(text)).with_value(serde_json::to_value(self).unwrap_or_default())
    }
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
    /// Confinement is required and not (wholly) in force.
    #[error("confinement is required but not in force: {reason}; the command was not run")]
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
        self.shell_tool()
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
        let (stdout_capture, stderr_capture) = (Capture::default(), Capture::default());
        let stdout = tokio::spawn(capture(stdout.and_then(Result::ok), half, Arc::clone(&stdout_capture)));
        let stderr = tokio::spawn(capture(stderr.and_then(Result::ok), half, Arc::clone(&stderr_capture)));

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
        let (stdout, stdout_dropped_bytes) = drain(stdout, stdout_capture).await;
        let (stderr, stderr_dropped_bytes) = drain(stderr, stderr_capture).await;
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
                isolated: confinement.isolated,
                confinement: confinement.text,
            }),
        }
    }
}

#[tools]
impl ShellTool {
    /// Run a shell command with `sh -c` in the workspace root. Standard input
    /// is closed; long output is cut in the middle. Returns the exit code (or
    /// signal) and the output.
    #[tool(safety = "dangerous", category = "shell", scope = "core")]
    async fn shell(&self, #[context] cx: &CallContext, #[args] args: ShellArgs) -> Result<ToolOutput, ShellError> {
        self.run(&args, cx.cancelled()).await.map(ShellResult::into_output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(stdout: &str, stderr: &str) -> ShellResult {
        ShellResult {
            exit_code: Some(0),
            signal: None,
            stdout: stdout.into(),
            stdout_dropped_bytes: 0,
            stderr: stderr.into(),
            stderr_dropped_bytes: 0,
            duration_ms: 7,
            confined: true,
            isolated: true,
            confinement: "namespaces and Landlock".into(),
        }
    }

    /// What a model reads of a command: how it ended, then each stream as
    /// written (quotes, tabs and newlines as they are, not JSON escapes);
    /// programs keep the whole result as the structured value.
    #[test]
    fn a_model_reads_the_output_as_text_and_programs_the_result() {
        let out = result("a \"quoted\"\n\tline\n", "warning\n").into_output();
        assert_eq!(out.text(), "exit code 0 in 7 ms\n--- stdout ---\na \"quoted\"\n\tline\n--- stderr ---\nwarning\n");
        let value = out.structured().unwrap();
        assert_eq!((value["stdout"].as_str(), value["exit_code"].as_i64()), (Some("a \"quoted\"\n\tline\n"), Some(0)));
        assert_eq!(result("", "").text(), "exit code 0 in 7 ms, no output");
        let mut cut = result("head…tail", "");
        (cut.exit_code, cut.signal, cut.stdout_dropped_bytes) = (None, Some(9), 1000);
        assert_eq!(cut.text(), "ended by signal 9 in 7 ms\n--- stdout (1000 bytes cut from the middle) ---\nhead…tail");
    }
}
