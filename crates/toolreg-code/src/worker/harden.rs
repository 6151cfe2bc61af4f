//! The worker's second wall: limits the kernel enforces on the process
//! itself, whatever the interpreter does.

use crate::Limits;

/// Cap this process: its address space a margin above the heap limit, its
/// CPU time a margin above the time limit, no new files; and, where the
/// kernel has Landlock, no file-system or network access at all. Each step
/// is best effort: the interpreter has no file, network or process access
/// of its own, so these are a second wall, not the first.
pub(super) fn harden(limits: &Limits) {
    #[cfg(target_os = "linux")]
    {
        use landlock::{ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr};
        let abi = ABI::V5;
        let _ = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
            .and_then(|r| r.create())
            .and_then(|r| r.restrict_self());
    }
    // After Landlock: making its ruleset takes a file descriptor.
    #[cfg(unix)]
    {
        use nix::sys::resource::{Resource, setrlimit};
        let address_space = u64::try_from(limits.memory_bytes).unwrap_or(u64::MAX).saturating_add(1 << 30);
        let _ = setrlimit(Resource::RLIMIT_AS, address_space, address_space);
        // The soft limit's SIGXCPU ends the worker as a timeout; were the
        // hard limit the same, the kernel would send SIGKILL instead, which
        // the host cannot tell from any other death.
        let cpu = limits.time.as_secs().saturating_add(2);
        let _ = setrlimit(Resource::RLIMIT_CPU, cpu, cpu.saturating_add(1));
        let _ = setrlimit(Resource::RLIMIT_NOFILE, 3, 3);
        let _ = setrlimit(Resource::RLIMIT_NPROC, 0, 0);
    }
}
