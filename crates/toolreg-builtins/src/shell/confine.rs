//! How a command is confined: a PID and a mount namespace of its own (its
//! own `/proc`, everything outside the root read-only, everything it
//! started dying with it) and Landlock on top. Kept apart from the tool's
//! running and capturing, which do not depend on how the confinement works.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use super::command::{plain_command, spawn_error};
use super::{Confinement, ShellError, ShellOptions};

/// Whether the command ran confined, and how, in words.
pub(super) struct Confined {
    /// Landlock was in force.
    pub(super) confined: bool,
    /// The command ran in namespaces of its own (see `confine::spawn_isolated`).
    pub(super) isolated: bool,
    pub(super) text: String,
}

/// Why the isolated spawn did not give a running command.
pub(super) enum Isolation {
    /// The namespaces could not be set up; nothing was started.
    Unavailable(String),
    /// The command must not or could not run at all.
    Refused(ShellError),
}

/// The script the command's first process runs: it waits until its own
/// `/proc` is mounted (a line on standard input), then replaces itself with
/// the command, keeping PID 1 and closing standard input.
const GATE: &str = "read -r gate || exit 125; exec /bin/sh -c \"$0\" </dev/null";

/// Spawn the command, on this (fresh) thread, in a PID and a mount namespace
/// of its own, with everything outside the root read-only, its own `/proc`,
/// and Landlock on top.
///
/// The command's first process is PID 1 of its namespace: when it ends, or
/// is killed, the kernel kills every process left in the namespace, even one
/// that left the process group with `setsid`. Its `/proc` shows only its own
/// namespace's processes, so nothing of the host's (its environment, its
/// memory) can be read through it. Landlock forbids `mount` and `umount`, so
/// the command cannot uncover the host's `/proc` or make a mount writable.
///
/// A `/proc` for the new namespace can only be mounted once its first
/// process exists, and the command must be Landlocked before it is spawned,
/// while a Landlocked thread may not mount. So a helper thread, made before
/// this one changes at all, enters the command's mount namespace and mounts
/// it while the first process waits at [`GATE`].
pub(super) fn spawn_isolated(options: &ShellOptions, command: &str) -> Result<(Child, Confined), Isolation> {
    use nix::sched::{CloneFlags, unshare};

    // Made first: once this thread has a PID namespace for its children it
    // can no longer start threads, and once it is Landlocked neither it nor
    // its threads may mount.
    let (pid_tx, pid_rx) = std::sync::mpsc::channel::<u32>();
    let mounter = std::thread::Builder::new()
        .name("toolreg-shell-proc".into())
        .spawn(move || -> Result<(), String> {
            let Ok(pid) = pid_rx.recv() else { return Ok(()) };
            mount_own_proc(pid)
        })
        .map_err(|e| Isolation::Unavailable(format!("starting the mount helper: {e}")))?;
    let give_up = |mounter: std::thread::JoinHandle<Result<(), String>>, pid_tx, why| {
        drop(pid_tx);
        let _ = mounter.join();
        why
    };

    if let Err(e) = unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID) {
        let why = format!("creating the namespaces (needs CAP_SYS_ADMIN): {}", e.desc());
        return Err(give_up(mounter, pid_tx, Isolation::Unavailable(why)));
    }
    if let Err(why) = read_only_outside(&options.root).and_then(|()| hide(&host_paths(options))) {
        return Err(give_up(mounter, pid_tx, Isolation::Unavailable(why)));
    }

    let landlock = restrict_thread(&options.root);
    if options.confinement == Confinement::Required && !landlock.confined {
        let refused = ShellError::Unconfined { reason: landlock.text };
        return Err(give_up(mounter, pid_tx, Isolation::Refused(refused)));
    }
    let mut cmd = plain_command(options, GATE);
    cmd.arg(command).stdin(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Err(give_up(mounter, pid_tx, Isolation::Refused(spawn_error(e)))),
    };
    let _ = pid_tx.send(child.id());
    let mounted = mounter.join().unwrap_or_else(|_| Err("the mount helper panicked".to_owned()));
    let opened = mounted.and_then(|()| {
        let mut gate = child.stdin.take().ok_or("the gate pipe is missing")?;
        std::io::Write::write_all(&mut gate, b"go\n").map_err(|e| format!("opening the gate: {e}"))
    });
    if let Err(why) = opened {
        // The command has not run: its first process still waits at the gate.
        let _ = child.kill();
        let _ = child.wait();
        return Err(Isolation::Unavailable(why));
    }
    let mut text = format!(
        "{}; namespaces: its own PID namespace and /proc, everything outside the root read-only",
        landlock.text
    );
    if !host_paths(options).is_empty() {
        text.push_str("; the host's own files inside the root hidden");
    }
    Ok((child, Confined { confined: landlock.confined, isolated: true, text }))
}

/// From the helper thread: enter the mount namespace of the command's first
/// process (`pid`) and mount a `/proc` of its PID namespace over `/proc`.
fn mount_own_proc(pid: u32) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, setns, unshare};

    let namespace = std::fs::File::open(format!("/proc/{pid}/ns/mnt"))
        .map_err(|e| format!("opening the command's mount namespace: {e}"))?;
    // A thread sharing its filesystem context with others may not change its
    // mount namespace; this thread ends right after.
    unshare(CloneFlags::CLONE_FS).map_err(|e| format!("unsharing the helper's filesystem context: {}", e.desc()))?;
    setns(&namespace, CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("entering the command's mount namespace: {}", e.desc()))?;
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let data = format!("pidns=/proc/{pid}/ns/pid");
    mount(Some("proc"), "/proc", Some("proc"), flags, Some(data.as_str()))
        .map_err(|e| format!("mounting its own /proc (the kernel may lack proc's pidns option): {}", e.desc()))
}

/// In this thread's new mount namespace, make every mount read-only except
/// the root and what is mounted beneath it, so that no file outside the root
/// can be written, created, removed, or have its mode, owner or times
/// changed. Nothing propagates back to the host's mounts.
fn read_only_outside(root: &Path) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};

    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("making the mounts private: {}", e.desc()))?;
    // This thread's view, not the process's: it has its own mount namespace now.
    let table =
        std::fs::read_to_string("/proc/thread-self/mountinfo").map_err(|e| format!("reading the mount table: {e}"))?;
    for line in table.lines() {
        let Some(point) = line.split(' ').nth(4).map(unescape_mount_path) else { continue };
        // The root stays writable; /proc is covered by the command's own.
        if point.starts_with(root) || point.starts_with("/proc") {
            continue;
        }
        remount(&point, true).map_err(|e| format!("making {} read-only: {}", point.display(), e.desc()))?;
    }
    mount(Some(root), root, none, MsFlags::MS_BIND | MsFlags::MS_REC, none)
        .map_err(|e| format!("binding the root: {}", e.desc()))?;
    remount(root, false).map_err(|e| format!("making the root writable: {}", e.desc()))
}

/// The host's own paths that exist inside the root, canonical: those
/// [`ShellOptions::reserve`] named, and the root's `.toolreg` directory.
pub(super) fn host_paths(options: &ShellOptions) -> Vec<PathBuf> {
    let legacy = options.root.join(crate::files::RESERVED_NAME);
    let mut found: Vec<PathBuf> = options
        .reserved
        .iter()
        .chain(std::iter::once(&legacy))
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .filter(|path| path.starts_with(&options.root) && path != &options.root)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// In this thread's mount namespace, cover each of `paths` (inside the
/// root): a directory with an empty read-only tmpfs, a file with a
/// read-only bind of `/dev/null`. The command then reads nothing of them
/// and changes nothing in them; Landlock keeps it from unmounting them.
fn hide(paths: &[PathBuf]) -> Result<(), String> {
    use nix::mount::{MsFlags, mount};

    let none: Option<&str> = None;
    for path in paths {
        let failed = |e: nix::Error| format!("hiding {}: {}", path.display(), e.desc());
        if path.is_dir() {
            let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
            mount(Some("tmpfs"), path, Some("tmpfs"), flags, Some("size=4k,mode=0555")).map_err(failed)?;
        } else {
            mount(Some("/dev/null"), path, none, MsFlags::MS_BIND, none).map_err(failed)?;
            let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
            mount(none, path, none, flags, none).map_err(failed)?;
        }
    }
    Ok(())
}

/// Remount the mount at `point` read-only or writable, keeping its other
/// restrictions (nosuid, nodev, noexec, atime) as they are.
fn remount(point: &Path, read_only: bool) -> nix::Result<()> {
    use nix::mount::{MsFlags, mount};
    use nix::sys::statvfs::{FsFlags, statvfs};

    let kept = statvfs(point)?.flags();
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT;
    for (has, set) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if kept.contains(has) {
            flags |= set;
        }
    }
    // Neither flag means strict atime; say so, or the kernel picks relatime
    // (which a container's locked mount refuses).
    if !kept.intersects(FsFlags::ST_RELATIME | FsFlags::ST_NOATIME) {
        flags |= MsFlags::MS_STRICTATIME;
    }
    if read_only {
        flags |= MsFlags::MS_RDONLY;
    }
    let none: Option<&str> = None;
    mount(none, point, none, flags, none)
}

/// A mount point as `mountinfo` writes it, with its octal escapes (`\040`
/// for a space) undone.
fn unescape_mount_path(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8).wrapping_add(b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

pub(super) fn restrict_thread(root: &Path) -> Confined {
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
            RulesetStatus::FullyEnforced => Confined {
                confined: true,
                isolated: false,
                text: "landlock: writes confined to the root (fully enforced)".to_owned(),
            },
            RulesetStatus::PartiallyEnforced => Confined {
                confined: true,
                isolated: false,
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
                Confined { confined: false, isolated: false, text: format!("none: {why}") }
            }
        },
        Err(e) => {
            Confined { confined: false, isolated: false, text: format!("none: Landlock could not be set up: {e}") }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped_as_mountinfo_writes_them() {
        assert_eq!(unescape_mount_path("/a\\040b\\011c\\134d"), Path::new("/a b\tc\\d"));
        // A backslash not followed by three octal digits is kept as it is.
        assert_eq!(unescape_mount_path("/x\\9y\\04"), Path::new("/x\\9y\\04"));
    }
}
