//! `read_file` keeps a bounded part of a line, however long the line is.
//! Alone in its binary, so that the peak memory it measures is its own.
#![cfg(target_os = "linux")]

use toolreg_builtins::files::{FileTools, ReadArgs};

/// The process's peak resident memory, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_huge_line_costs_the_line_limit_not_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one-line.txt");
    // 8 KiB of text, then a sparse hole: one line of 256 MiB that takes no disk.
    std::fs::write(&path, "a".repeat(8192)).unwrap();
    let size = 256u64 << 20;
    std::fs::File::options().write(true).open(&path).unwrap().set_len(size).unwrap();
    let files = FileTools::open(dir.path()).unwrap();

    let before = peak_kib();
    let read = files.read(&ReadArgs::new("one-line.txt")).unwrap();
    let grown_mib = (peak_kib() - before) / 1024;

    assert!(grown_mib < 32, "reading one long line raised peak memory by {grown_mib} MiB");
    let max_line = files.options().max_line_bytes as u64;
    assert!(
        read.content.ends_with(&format!(" … [line cut: {} more bytes]\n", size - max_line)),
        "{}",
        &read.content[..80]
    );
    assert_eq!((read.cut_lines.as_slice(), read.total_lines), ([1].as_slice(), Some(1)));
}
