//! What one `shell` call costs, end to end, for the command `true`: spawning
//! `/bin/sh`, capturing its (empty) output, waiting for it and killing its
//! group.
//!
//! - `shell/true/confined`: the default. As root: a PID and a mount
//!   namespace of its own (every mount outside the root remounted read-only,
//!   its own `/proc` mounted by a helper thread while the command waits at a
//!   gate) plus Landlock. Without the privilege: Landlock alone, after a
//!   failed attempt at the namespaces.
//! - `shell/true/off`: no confinement, for comparison.

#[cfg(target_os = "linux")]
fn bench(c: &mut criterion::Criterion) {
    use toolreg_builtins::shell::{Confinement, ShellArgs, ShellOptions, ShellTool};

    let dir = tempfile::tempdir().expect("temporary directory");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    for (name, confinement) in [("shell/true/confined", Confinement::BestEffort), ("shell/true/off", Confinement::Off)]
    {
        let tool = ShellTool::new(ShellOptions::new(dir.path()).confinement(confinement)).expect("root");
        let args = ShellArgs::new("true");
        c.bench_function(name, |b| {
            b.iter(|| runtime.block_on(tool.run(&args, std::future::pending())).expect("ran"));
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn bench(_: &mut criterion::Criterion) {}

criterion::criterion_group! {
    name = benches;
    config = criterion::Criterion::default().sample_size(30);
    targets = bench
}
criterion::criterion_main!(benches);
