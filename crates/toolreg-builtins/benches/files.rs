//! File tool costs on real files in a temporary directory.
//!
//! - `read_file/1MB`: a 1 MiB text file of 80-byte lines, read as one page
//!   large enough to hold it (numbering, UTF-8 checks, line counting).
//! - `edit_file/10k_lines`: one exact replacement in the middle of a
//!   10,000-line file: read, match, unified diff, atomic replace (temporary
//!   file, fsync, rename). The fsync dominates on most disks.
//! - `preview_edit/10k_lines`: the same edit without writing, which is what
//!   an approver pays to show the diff.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolreg_builtins::files::{Edit, EditArgs, FileOptions, FileTools, ReadArgs};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut options = FileOptions::default();
    options.max_read_bytes = 4 * 1024 * 1024;
    options.default_read_lines = 1_000_000;
    let files = FileTools::with_options(dir.path(), options).expect("root");

    let line = format!("{:079}\n", 0);
    let megabyte: String = line.repeat(1024 * 1024 / line.len());
    std::fs::write(dir.path().join("big.txt"), &megabyte).expect("write");
    c.bench_function("read_file/1MB", |b| {
        b.iter(|| black_box(files.read(&ReadArgs::new("big.txt")).expect("read")));
    });

    let text: String = (0..10_000).map(|i| format!("let value_{i} = compute({i});\n")).collect();
    std::fs::write(dir.path().join("code.rs"), &text).expect("write");
    let forward = EditArgs::new("code.rs", [Edit::new("let value_5000 =", "let renamed_5000 =")]);
    let back = EditArgs::new("code.rs", [Edit::new("let renamed_5000 =", "let value_5000 =")]);
    // Criterion calls the routine several times; the file's state must carry over.
    let renamed = std::cell::Cell::new(false);
    c.bench_function("edit_file/10k_lines", |b| {
        b.iter(|| {
            let args = if renamed.get() { &back } else { &forward };
            renamed.set(!renamed.get());
            black_box(files.edit(args).expect("edit"))
        });
    });
    std::fs::write(dir.path().join("code.rs"), &text).expect("write");
    c.bench_function("preview_edit/10k_lines", |b| {
        b.iter(|| black_box(files.preview_edit(&forward).expect("preview")));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
