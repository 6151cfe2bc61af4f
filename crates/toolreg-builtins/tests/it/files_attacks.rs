//! Escape attempts against the file tools and the shell's root. Nothing
//! outside the root may be read, written or created, and each attempt must
//! be refused with an error that names the rule it broke.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use toolreg::FunctionRegistry;
use toolreg::exec::Content;
use toolreg_builtins::Builtins;
use toolreg_builtins::files::{FileError, FileTools, ListArgs, ReadArgs, ReadOutput, SearchArgs, WriteArgs};
use toolreg_builtins::shell::{ShellArgs, ShellOptions, ShellTool};

const SECRET: &str = "SECRET-OUTSIDE-THE-ROOT";

/// A workspace `root` beside an `outside` directory holding a sentinel file,
/// with every kind of trap planted inside the root.
struct Sandbox {
    _dir: tempfile::TempDir,
    top: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(dir.path()).unwrap();
        let root = top.join("root");
        let outside = top.join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(outside.join("dir")).unwrap();
        std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
        std::fs::write(outside.join("dir/inner.txt"), SECRET).unwrap();
        // A PDF, which read_file would return whole as a block: no less confined.
        std::fs::write(outside.join("secret.pdf"), format!("%PDF-1.4\n{SECRET}\n")).unwrap();
        std::fs::write(root.join("a.txt"), "inside\n").unwrap();
        std::fs::write(root.join("sub/b.txt"), "also inside\n").unwrap();
        symlink(&outside, root.join("link_out")).unwrap();
        symlink(outside.join("secret.txt"), root.join("link_file_out")).unwrap();
        symlink(outside.join("secret.pdf"), root.join("link_pdf_out")).unwrap();
        symlink("/etc/passwd", root.join("abs_link")).unwrap();
        symlink("/proc/self/root", root.join("proc_link")).unwrap();
        symlink("/proc/self/cwd", root.join("cwd_link")).unwrap();
        symlink("../outside", root.join("dotdot_link")).unwrap();
        symlink("chain2", root.join("chain1")).unwrap();
        symlink("sub/../../outside", root.join("chain2")).unwrap();
        symlink("/dev/zero", root.join("dev_link")).unwrap();
        symlink("a.txt", root.join("inside_link")).unwrap();
        let status = std::process::Command::new("mkfifo").arg(root.join("fifo")).status().unwrap();
        assert!(status.success());
        let listener = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
        std::mem::forget(listener);
        Sandbox { _dir: dir, top, root, outside }
    }

    /// Everything outside the root: each path with its content (or kind).
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.top.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path == self.root {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                let value = if meta.is_dir() {
                    stack.push(path.clone());
                    "dir".to_owned()
                } else if meta.is_symlink() {
                    format!("link to {}", std::fs::read_link(&path).unwrap().display())
                } else {
                    std::fs::read_to_string(&path).unwrap()
                };
                out.insert(path, value);
            }
        }
        out
    }

    fn registry(&self) -> FunctionRegistry {
        let mut registry = FunctionRegistry::new();
        Builtins::new().files(&self.root).register(&mut registry).unwrap();
        registry
    }
}

/// One attempt: the tool, its arguments, and words the refusal must contain.
struct Attack {
    tool: &'static str,
    args: Value,
    rule: &'static str,
}

fn attack(tool: &'static str, args: Value, rule: &'static str) -> Attack {
    Attack { tool, args, rule }
}

const DOTDOT: &str = "contains `..`";
const ABSOLUTE: &str = "is absolute";
const LINK_OUT: &str = "leads outside the workspace root through a symbolic link";
const IS_LINK: &str = "is a symbolic link";
const NUL: &str = "NUL byte";

fn file_attacks(outside: &Path) -> Vec<Attack> {
    let abs_secret = outside.join("secret.txt").display().to_string();
    let edit = |path: &str| json!({"path": path, "edits": [{"old_string": "SECRET", "new_string": "PWNED"}]});
    vec![
        // read_file
        attack("read_file", json!({"path": "../outside/secret.txt"}), DOTDOT),
        attack("read_file", json!({"path": "sub/../../outside/secret.txt"}), DOTDOT),
        attack("read_file", json!({"path": "./.."}), DOTDOT),
        attack("read_file", json!({"path": "/etc/passwd"}), ABSOLUTE),
        attack("read_file", json!({"path": abs_secret}), ABSOLUTE),
        attack("read_file", json!({"path": "/proc/self/root/etc/passwd"}), ABSOLUTE),
        attack("read_file", json!({"path": "//etc/passwd"}), ABSOLUTE),
        attack("read_file", json!({"path": "link_out/secret.txt"}), LINK_OUT),
        attack("read_file", json!({"path": "link_file_out"}), LINK_OUT),
        attack("read_file", json!({"path": "link_pdf_out"}), LINK_OUT),
        attack("read_file", json!({"path": "link_out/secret.pdf"}), LINK_OUT),
        attack("read_file", json!({"path": "../outside/secret.pdf"}), DOTDOT),
        attack("read_file", json!({"path": "abs_link"}), LINK_OUT),
        attack("read_file", json!({"path": "proc_link/etc/passwd"}), LINK_OUT),
        attack("read_file", json!({"path": "cwd_link/Cargo.toml"}), LINK_OUT),
        attack("read_file", json!({"path": "dotdot_link/secret.txt"}), LINK_OUT),
        attack("read_file", json!({"path": "chain1/secret.txt"}), LINK_OUT),
        attack("read_file", json!({"path": "dev_link"}), LINK_OUT),
        attack("read_file", json!({"path": "a.txt\u{0}../../outside/secret.txt"}), NUL),
        attack("read_file", json!({"path": "fifo"}), "is a FIFO, not a regular file"),
        attack("read_file", json!({"path": "sock"}), "is a socket, not a regular file"),
        attack("read_file", json!({"path": "sub"}), "is a directory, not a regular file"),
        attack("read_file", json!({"path": ""}), "the path is empty"),
        // write_file
        attack("write_file", json!({"path": "../outside/new.txt", "content": "x"}), DOTDOT),
        attack("write_file", json!({"path": "/tmp/toolreg-escape.txt", "content": "x"}), ABSOLUTE),
        attack("write_file", json!({"path": outside.join("new.txt").display().to_string(), "content": "x"}), ABSOLUTE),
        attack("write_file", json!({"path": "link_out/new.txt", "content": "x"}), LINK_OUT),
        attack(
            "write_file",
            json!({"path": "link_out/deep/new.txt", "content": "x", "create_parents": true}),
            LINK_OUT,
        ),
        attack("write_file", json!({"path": "dotdot_link/new.txt", "content": "x", "create_parents": true}), LINK_OUT),
        attack("write_file", json!({"path": "chain1/dir/new.txt", "content": "x"}), LINK_OUT),
        attack("write_file", json!({"path": "proc_link/tmp/new.txt", "content": "x"}), LINK_OUT),
        attack("write_file", json!({"path": "link_file_out", "content": "x"}), IS_LINK),
        attack("write_file", json!({"path": "abs_link", "content": "x"}), IS_LINK),
        attack("write_file", json!({"path": "fifo", "content": "x"}), "is a FIFO, not a regular file"),
        attack("write_file", json!({"path": "new\u{0}.txt", "content": "x"}), NUL),
        attack("write_file", json!({"path": "sub/../../new.txt", "content": "x", "create_parents": true}), DOTDOT),
        // edit_file
        attack("edit_file", edit("../outside/secret.txt"), DOTDOT),
        attack("edit_file", edit(&abs_secret), ABSOLUTE),
        attack("edit_file", edit("link_out/secret.txt"), LINK_OUT),
        attack("edit_file", edit("link_file_out"), IS_LINK),
        attack("edit_file", edit("chain1/secret.txt"), LINK_OUT),
        // list_files
        attack("list_files", json!({"path": "link_out"}), LINK_OUT),
        attack("list_files", json!({"path": ".."}), DOTDOT),
        attack("list_files", json!({"path": "/"}), ABSOLUTE),
        attack("list_files", json!({"path": "proc_link"}), LINK_OUT),
        attack("list_files", json!({"path": "dotdot_link/dir"}), LINK_OUT),
        // search_files
        attack("search_files", json!({"regex": "SECRET", "path": "link_out"}), LINK_OUT),
        attack("search_files", json!({"regex": "SECRET", "path": "../outside"}), DOTDOT),
        attack("search_files", json!({"regex": "root", "path": "/etc"}), ABSOLUTE),
        attack("search_files", json!({"regex": "SECRET", "path": "link_file_out"}), LINK_OUT),
    ]
}

#[tokio::test]
async fn every_file_escape_is_refused_with_its_rule_and_touches_nothing_outside() {
    let sandbox = Sandbox::new();
    let registry = sandbox.registry();
    let before = sandbox.snapshot();
    let attacks = file_attacks(&sandbox.outside);
    assert!(attacks.len() >= 40, "the corpus has {} attacks", attacks.len());
    let mut failures = Vec::new();
    for Attack { tool, args, rule } in &attacks {
        match registry.execute(tool, args.clone()).await {
            Ok(out) => failures.push(format!("{tool} {args} succeeded: {}", out.text())),
            Err(err) => {
                let text = err.to_string();
                if !text.contains(rule) || text.contains(SECRET) {
                    failures.push(format!("{tool} {args}: expected `{rule}`, got `{text}`"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(sandbox.snapshot(), before, "something outside the root changed");
    assert!(!Path::new("/tmp/toolreg-escape.txt").exists());
}

#[tokio::test]
async fn listing_and_searching_never_follow_links_out() {
    let sandbox = Sandbox::new();
    let registry = sandbox.registry();
    let listed = registry.execute("list_files", json!({})).await.unwrap().value;
    let files: Vec<&str> = listed["files"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(files.contains(&"a.txt") && files.contains(&"sub/b.txt"), "{files:?}");
    assert!(files.contains(&"link_out (symlink)"), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("secret") || f.contains("inner")), "{files:?}");

    let found = registry.execute("search_files", json!({"regex": "SECRET|inside"})).await.unwrap().value;
    let matches: Vec<&str> = found["matches"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(matches, ["a.txt:1:inside", "sub/b.txt:1:also inside"]);
    let glob = registry.execute("search_files", json!({"regex": "SECRET", "glob": "../**"})).await.unwrap().value;
    assert_eq!(glob["matches"], json!([]));
}

#[test]
fn links_inside_the_root_are_followed_for_reading() {
    let sandbox = Sandbox::new();
    let files = FileTools::open(&sandbox.root).unwrap();
    assert_eq!(files.read(&ReadArgs::new("inside_link")).unwrap().content, "     1\tinside\n");
}

#[test]
fn kernel_interfaces_are_refused_as_roots() {
    for root in ["/proc", "/proc/self", "/sys", "/dev"] {
        assert!(matches!(FileTools::open(root), Err(FileError::Root { .. })), "{root} was accepted");
    }
}

/// A directory swapped for a link pointing out, over and over, while the
/// tools read and write through it: the kernel-side resolution must refuse
/// every attempt that lands on the link, whatever the timing.
#[test]
fn a_directory_swapped_for_a_link_mid_call_never_leaks() {
    let sandbox = Sandbox::new();
    let files = FileTools::open(&sandbox.root).unwrap();
    let real = sandbox.root.join("swap");
    let parked = sandbox.root.join("swap_real");
    let link = sandbox.root.join("swap_link");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("secret.txt"), "inside\n").unwrap();
    std::fs::write(real.join("secret.pdf"), "%PDF-1.4\ninside\n").unwrap();
    symlink(&sandbox.outside, &link).unwrap();
    let before = sandbox.snapshot();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (real, parked, link) = (real.clone(), parked.clone(), link.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // swap -> link to outside, then back to the real directory.
                std::fs::rename(&real, &parked).unwrap();
                std::fs::rename(&link, &real).unwrap();
                std::fs::rename(&real, &link).unwrap();
                std::fs::rename(&parked, &real).unwrap();
            }
        })
    };
    let mut refused = 0;
    for i in 0..3000 {
        match files.read(&ReadArgs::new("swap/secret.txt")) {
            Ok(read) => assert_eq!(read.content, "     1\tinside\n"),
            Err(FileError::OutsideRoot { .. } | FileError::NotFound { .. }) => refused += 1,
            Err(other) => panic!("unexpected error {other}"),
        }
        // A PDF is read whole, through the same confined handle.
        match files.read_content(&ReadArgs::new("swap/secret.pdf")) {
            Ok(ReadOutput::Media(Content::File(pdf))) => assert_eq!(pdf.data.as_ref(), b"%PDF-1.4\ninside\n"),
            Ok(other) => panic!("unexpected read {other:?}"),
            Err(FileError::OutsideRoot { .. } | FileError::NotFound { .. }) => refused += 1,
            Err(other) => panic!("unexpected error {other}"),
        }
        let write = WriteArgs::new(format!("swap/new{i}.txt"), "x");
        match files.write(&write) {
            Ok(_)
            | Err(FileError::OutsideRoot { .. } | FileError::NotFound { .. } | FileError::ParentMissing { .. }) => {}
            Err(other) => panic!("unexpected error {other}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(sandbox.snapshot(), before, "something outside the root changed");
    // Not a timing assertion: with 3000 tries some land on the link.
    eprintln!("{refused} of 6000 reads landed on the link and were refused");
}

#[tokio::test]
async fn shell_writes_outside_the_root_are_refused_when_confined() {
    let sandbox = Sandbox::new();
    let shell = ShellTool::new(ShellOptions::new(&sandbox.root)).unwrap();
    let probe = shell.run(&ShellArgs::new("true"), std::future::pending()).await.unwrap();
    if !probe.confined {
        // Without Landlock the shell cannot confine writes; it must say so.
        assert!(probe.confinement.starts_with("none:"), "{}", probe.confinement);
        eprintln!("Landlock is not available here ({}); shell attacks skipped", probe.confinement);
        return;
    }
    let out = sandbox.outside.display().to_string();
    let tmp_marker = format!("/tmp/toolreg-shell-escape-{}", std::process::id());
    let attacks = [
        "echo x > ../outside/pwned".to_owned(),
        format!("echo x > {out}/pwned"),
        "echo x > link_out/pwned".to_owned(),
        "echo x >> link_file_out".to_owned(),
        "echo x > dotdot_link/pwned".to_owned(),
        "mkdir ../outside/newdir".to_owned(),
        "rm ../outside/secret.txt".to_owned(),
        "mv a.txt ../outside/moved".to_owned(),
        "ln -s a.txt ../outside/lnk".to_owned(),
        "cp a.txt link_out/".to_owned(),
        "truncate -s 0 link_file_out".to_owned(),
        format!("touch {tmp_marker}"),
        "cd .. && echo x > outside/pwned".to_owned(),
        "echo x > proc_link/tmp/toolreg-shell-escape".to_owned(),
    ];
    let before = sandbox.snapshot();
    for command in &attacks {
        let result = shell.run(&ShellArgs::new(command.clone()), std::future::pending()).await.unwrap();
        assert_ne!(result.exit_code, Some(0), "`{command}` succeeded");
        assert!(
            // Landlock refuses with EACCES or EPERM; the read-only mounts
            // of the command's namespace with EROFS, checked first.
            ["Permission denied", "Operation not permitted", "Read-only file system"]
                .iter()
                .any(|refusal| result.stderr.contains(refusal)),
            "`{command}`: {}",
            result.stderr
        );
    }
    assert_eq!(sandbox.snapshot(), before, "something outside the root changed");
    assert!(!Path::new(&tmp_marker).exists());
    assert!(sandbox.root.join("a.txt").exists());
    // Inside the root, writing works.
    let ok = shell.run(&ShellArgs::new("echo fine > inside.txt && cat inside.txt"), std::future::pending()).await;
    assert_eq!(ok.unwrap().stdout, "fine\n");
}

/// An ignore file of thousands of wildcard-heavy patterns costs a bounded
/// budget, not seconds per file; what it skipped is said, and patterns
/// within the budget still apply.
#[test]
fn hostile_ignore_files_cost_a_bounded_budget() {
    let dir = tempfile::tempdir().unwrap();
    let hostile: String = (0..11_000).map(|i| format!("**/{}/**/{}{i}\n", "*a".repeat(20), "b*".repeat(20))).collect();
    std::fs::write(dir.path().join(".gitignore"), format!("secret.txt\n{hostile}")).unwrap();
    for sub in ["a", "b", "c"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join(".gitignore"), &hostile).unwrap();
        std::fs::write(dir.path().join(sub).join("keep.txt"), "needle\n").unwrap();
    }
    std::fs::write(dir.path().join("secret.txt"), "needle\n").unwrap();
    let files = FileTools::open(dir.path()).unwrap();

    let started = std::time::Instant::now();
    let listed = files.list(&ListArgs::new()).unwrap();
    let found = files.search(&SearchArgs::new("needle")).unwrap();
    let took = started.elapsed();

    assert_eq!(listed.files, ["a/keep.txt", "b/keep.txt", "c/keep.txt"]);
    assert_eq!(found.matches.len(), 3, "{:?}", found.matches);
    assert!(listed.ignore_patterns_skipped > 40_000, "{}", listed.ignore_patterns_skipped);
    assert_eq!(found.ignore_patterns_skipped, listed.ignore_patterns_skipped);
    // Unbounded, this took about 9 s per hostile file in a debug build.
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}

const HOST_KEY: &str = "HOST-KEY-0123456789abcdef";
const AUDIT_LINE: &str = "AUDIT-TRAIL-LINE";
const RESERVED: &str = "is the host's own state";

/// A root holding what a host keeps of its own: an earlier toolreg's
/// `.toolreg/` (key and store), a state directory and an audit file the
/// builder reserves, and links inside the root pointing at each.
fn host_state_root() -> (tempfile::TempDir, PathBuf, FunctionRegistry) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join(".toolreg")).unwrap();
    std::fs::write(root.join(".toolreg/key"), HOST_KEY).unwrap();
    std::fs::write(root.join(".toolreg/store.db"), HOST_KEY).unwrap();
    std::fs::create_dir_all(root.join("var/state")).unwrap();
    std::fs::write(root.join("var/state/key"), HOST_KEY).unwrap();
    std::fs::write(root.join("audit.jsonl"), format!("{AUDIT_LINE}\n")).unwrap();
    std::fs::create_dir_all(root.join("sub/.toolreg")).unwrap();
    std::fs::write(root.join("sub/.toolreg/key"), HOST_KEY).unwrap();
    std::fs::write(root.join("notes.txt"), "notes\n").unwrap();
    symlink(".toolreg/key", root.join("key_link")).unwrap();
    symlink(".toolreg", root.join("dir_link")).unwrap();
    symlink("var", root.join("var_link")).unwrap();
    symlink("audit.jsonl", root.join("audit_link")).unwrap();
    let mut registry = FunctionRegistry::new();
    Builtins::new()
        .files(&root)
        .reserve(root.join("var/state"))
        .reserve(root.join("audit.jsonl"))
        // Reserved before it exists: caught all the same once it does.
        .reserve(root.join("var/later"))
        .register(&mut registry)
        .unwrap();
    (dir, root, registry)
}

/// The host's key, store and audit file inside the root are read, written,
/// listed and searched by no file tool, by any spelling: the sealing key is
/// what makes approvals and stored runs trustworthy.
#[tokio::test]
async fn the_hosts_own_files_are_reached_by_no_file_tool() {
    let (_dir, root, registry) = host_state_root();
    let edit = |path: &str| json!({"path": path, "edits": [{"old_string": "AUDIT", "new_string": "FORGED"}]});
    let write = |path: &str| json!({"path": path, "content": "forged", "create_parents": true});
    let attacks = [
        ("read_file", json!({"path": ".toolreg/key"})),
        ("read_file", json!({"path": "./.toolreg//key"})),
        ("read_file", json!({"path": ".TOOLREG/key"})),
        ("read_file", json!({"path": ".toolreg/store.db"})),
        ("read_file", json!({"path": "sub/.toolreg/key"})),
        ("read_file", json!({"path": "key_link"})),
        ("read_file", json!({"path": "dir_link/key"})),
        ("read_file", json!({"path": "var/state/key"})),
        ("read_file", json!({"path": "var_link/state/key"})),
        ("read_file", json!({"path": "audit.jsonl"})),
        ("read_file", json!({"path": "audit_link"})),
        ("write_file", write(".toolreg/key")),
        ("write_file", write(".toolreg/store.db")),
        ("write_file", write(".toolreg")),
        ("write_file", write("new/.toolreg/key")),
        ("write_file", write("var/state/key")),
        ("write_file", write("var/later/key")),
        ("write_file", write("var_link/state/store.db")),
        ("write_file", write("audit.jsonl")),
        ("edit_file", edit("audit.jsonl")),
        ("edit_file", edit("audit_link")),
        ("edit_file", edit(".toolreg/key")),
        ("list_files", json!({"path": ".toolreg", "include_hidden": true})),
        ("list_files", json!({"path": "dir_link", "include_hidden": true})),
        ("list_files", json!({"path": "var/state"})),
        ("search_files", json!({"regex": "HOST", "path": ".toolreg"})),
        ("search_files", json!({"regex": "HOST", "path": "key_link"})),
        ("search_files", json!({"regex": "AUDIT", "path": "audit.jsonl"})),
        ("search_files", json!({"regex": "HOST", "path": "var_link/state"})),
    ];
    let mut failures = Vec::new();
    for (tool, args) in &attacks {
        match registry.execute(tool, args.clone()).await {
            Ok(out) => failures.push(format!("{tool} {args} succeeded: {}", out.text())),
            Err(err) => {
                let text = err.to_string();
                if !text.contains(RESERVED) || text.contains(HOST_KEY) || text.contains(AUDIT_LINE) {
                    failures.push(format!("{tool} {args}: expected `{RESERVED}`, got `{text}`"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(std::fs::read_to_string(root.join(".toolreg/key")).unwrap(), HOST_KEY);
    assert_eq!(std::fs::read_to_string(root.join("var/state/key")).unwrap(), HOST_KEY);
    assert_eq!(std::fs::read_to_string(root.join("audit.jsonl")).unwrap(), format!("{AUDIT_LINE}\n"));
    assert!(!root.join("new/.toolreg").exists() && !root.join("var/later").exists());

    // Listed nowhere, hidden files included; found by no search.
    let listed = registry.execute("list_files", json!({"include_hidden": true})).await.unwrap().value;
    let files: Vec<&str> = listed["files"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(files.contains(&"notes.txt") && files.contains(&"key_link (symlink)"), "{files:?}");
    for file in &files {
        assert!(!file.contains(".toolreg") && !file.starts_with("var/state") && *file != "audit.jsonl", "{files:?}");
    }
    let found = registry.execute("search_files", json!({"regex": "HOST|AUDIT|notes"})).await.unwrap().value;
    assert_eq!(found["matches"], json!(["notes.txt:1:notes"]), "{found}");
    // The files beside them are served as before.
    let read = registry.execute("read_file", json!({"path": "notes.txt"})).await.unwrap();
    assert!(read.text().contains("notes"));
    registry.execute("write_file", json!({"path": "var/other.txt", "content": "fine"})).await.unwrap();
}

/// A regular expression whose automaton would be huge is refused at once,
/// naming the limit, instead of searching for seconds.
#[test]
fn a_pathological_regex_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), format!("{}\n", "a".repeat(6000)).repeat(50)).unwrap();
    let files = FileTools::open(dir.path()).unwrap();
    let started = std::time::Instant::now();
    let refused = files.search(&SearchArgs::new("(?:a?){3000}a{3000}"));
    let took = started.elapsed();
    match refused {
        Err(error @ FileError::RegexTooLarge { .. }) => {
            assert!(error.to_string().contains("too large"), "{error}");
        }
        other => panic!("expected RegexTooLarge, got {other:?}"),
    }
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    // Ordinary patterns still work, Unicode classes included.
    let found = files.search(&SearchArgs::new(r"^\w+\s*$")).unwrap();
    assert_eq!(found.matches.len(), 50);
    files.search(&SearchArgs::new(r"fn\s+\w+\s*\(|(?i)error:\s+\S+|\p{L}{3,}|[0-9A-Za-z_]{1,40}")).unwrap();
}
