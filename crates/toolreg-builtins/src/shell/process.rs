//! Starting a command in a process group of its own, confined where the
//! kernel allows, and making sure no process outlives its call.

use std::process::Child;
use std::sync::Arc;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::command::{plain_command, spawn_error};
use super::confine::{Confined, Isolation, host_paths, restrict_thread, spawn_isolated};
use super::{Confinement, ShellError, ShellOptions};

/// Kills the process group and reaps the leader if the call ends early
/// (its future dropped), so no command outlives its call.
pub(super) struct GroupGuard {
    pub(super) pgid: Pid,
    pub(super) child: Option<Child>,
}

impl GroupGuard {
    pub(super) fn reap(&mut self) -> Option<std::process::ExitStatus> {
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

/// Spawn the command: in namespaces of its own and under Landlock where the
/// kernel and our privileges allow, else (with `BestEffort`) under Landlock
/// alone, saying why.
pub(super) async fn spawn(options: Arc<ShellOptions>, command: String) -> Result<(Child, Confined), ShellError> {
    if options.confinement == Confinement::Off {
        let off = Confined { confined: false, isolated: false, text: "none: confinement is off".to_owned() };
        let (tx, rx) = tokio::sync::oneshot::channel();
        on_fresh_thread(move || {
            hand_over(tx, plain_command(&options, &command).spawn().map(|child| (child, off)));
        })?;
        return rx.await.unwrap_or_else(|_| Err(thread_ended())).map_err(spawn_error);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (first, first_command) = (Arc::clone(&options), command.clone());
    on_fresh_thread(move || {
        hand_over(tx, spawn_isolated(&first, &first_command));
    })?;
    let why_not = match rx.await.unwrap_or_else(|_| Err(Isolation::Refused(spawn_error(thread_ended())))) {
        Ok(spawned) => return Ok(spawned),
        Err(Isolation::Refused(error)) => return Err(error),
        Err(Isolation::Unavailable(why)) => why,
    };
    if options.confinement == Confinement::Required {
        return Err(ShellError::Unconfined { reason: format!("no namespaces of its own: {why_not}") });
    }
    // The isolated attempt started nothing (its thread's PID namespace is
    // spent either way): start again on a fresh thread, with Landlock only.
    let (tx, rx) = tokio::sync::oneshot::channel();
    on_fresh_thread(move || {
        let mut confined = restrict_thread(&options.root);
        confined.text.push_str(&format!(
            "; no namespaces of its own ({why_not}): other processes' /proc entries are readable and \
             metadata outside the root (mode, owner, times) can be changed"
        ));
        if !host_paths(&options).is_empty() {
            confined.text.push_str("; the host's own files inside the root are not hidden");
        }
        hand_over(tx, plain_command(&options, &command).spawn().map(|child| (child, confined)));
    })?;
    rx.await.unwrap_or_else(|_| Err(thread_ended())).map_err(spawn_error)
}

/// Send the spawned command to the call; if the call is gone (its future
/// dropped while the command was being spawned), kill the command's group
/// and reap it here, so it never runs unattended.
fn hand_over<E>(tx: tokio::sync::oneshot::Sender<Result<(Child, Confined), E>>, spawned: Result<(Child, Confined), E>) {
    if let Err(Ok((mut child, _))) = tx.send(spawned) {
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn thread_ended() -> std::io::Error {
    std::io::Error::other("the spawning thread ended early")
}

/// Run `f` on a thread of its own, which ends with it: whatever `f` does to
/// its thread (Landlock, namespaces) touches no other thread of the process.
fn on_fresh_thread(f: impl FnOnce() + Send + 'static) -> Result<(), ShellError> {
    std::thread::Builder::new().name("toolreg-shell-spawn".into()).spawn(f).map(drop).map_err(spawn_error)
}
