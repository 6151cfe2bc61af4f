//! The command line a call runs: `/bin/sh -c` in the root, in a process
//! group of its own, with a cleared environment and only the variables the
//! options pass through.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::{ShellError, ShellOptions};

/// `PATH` when the host has none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// `/bin/sh -c <command>` in the root with the configured environment.
pub(super) fn plain_command(options: &ShellOptions, command: &str) -> Command {
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
    cmd
}

pub(super) fn spawn_error(e: std::io::Error) -> ShellError {
    ShellError::Spawn { message: e.to_string() }
}
