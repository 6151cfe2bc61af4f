//! The file tools on real files: what each does, and each bad input
//! answered with a typed error and the files left as they were.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;

use serde_json::json;
use toolreg::{FunctionRegistry, SafetyLevel, Scope};
use toolreg_builtins::files::{
    Edit, EditArgs, FileError, FileOptions, FileTools, ListArgs, ReadArgs, SearchArgs, WriteArgs,
};

fn setup() -> (tempfile::TempDir, FileTools) {
    let dir = tempfile::tempdir().unwrap();
    let tools = FileTools::open(dir.path()).unwrap();
    (dir, tools)
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn read_returns_numbered_line_ranges_and_where_to_continue() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("f.txt"), lines(10)).unwrap();
    let all = files.read(&ReadArgs::new("f.txt")).unwrap();
    assert_eq!((all.start_line, all.end_line, all.total_lines, all.next_offset), (1, 10, Some(10), None));
    assert!(all.content.starts_with("     1\tline 1\n     2\tline 2\n"));

    let page = files.read(&ReadArgs::new("f.txt").offset(4).limit(3)).unwrap();
    assert_eq!(page.content, "     4\tline 4\n     5\tline 5\n     6\tline 6\n");
    assert_eq!((page.start_line, page.end_line, page.total_lines, page.next_offset), (4, 6, Some(10), Some(7)));

    let past = files.read(&ReadArgs::new("f.txt").offset(50)).unwrap();
    assert_eq!((past.content.as_str(), past.start_line, past.total_lines), ("", 0, Some(10)));
    assert_eq!(files.read(&ReadArgs::new("f.txt").offset(0)).unwrap_err(), FileError::BadOffset { offset: 0 });
}

#[test]
fn read_stops_at_the_byte_cap_and_cuts_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = FileOptions::default();
    options.max_read_bytes = 100;
    options.max_line_bytes = 10;
    let files = FileTools::with_options(dir.path(), options).unwrap();
    std::fs::write(dir.path().join("f.txt"), lines(100)).unwrap();
    let read = files.read(&ReadArgs::new("f.txt")).unwrap();
    assert!(read.content.len() <= 100);
    assert_eq!(read.next_offset, Some(read.end_line + 1));
    assert_eq!(read.total_lines, Some(100));

    std::fs::write(dir.path().join("long.txt"), format!("{}\nshort\n", "é".repeat(20))).unwrap();
    let read = files.read(&ReadArgs::new("long.txt")).unwrap();
    assert_eq!(read.content, format!("     1\t{} … [line cut: 30 more bytes]\n     2\tshort\n", "é".repeat(5)));
    assert_eq!(read.cut_lines, [1]);
}

#[test]
fn binary_files_are_refused_with_size_and_type_and_bad_utf8_is_reported() {
    let (dir, files) = setup();
    let png = [b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".as_slice(), &[0u8; 100]].concat();
    std::fs::write(dir.path().join("img.png"), &png).unwrap();
    assert_eq!(
        files.read(&ReadArgs::new("img.png")).unwrap_err(),
        FileError::Binary { path: "img.png".into(), size: png.len() as u64, kind: "PNG image" }
    );
    std::fs::write(dir.path().join("data.bin"), b"abc\0def").unwrap();
    let err = files.read(&ReadArgs::new("data.bin")).unwrap_err();
    assert_eq!(err.to_string(), "`data.bin` is a binary file (binary data, 7 bytes) and is not shown as text");

    std::fs::write(dir.path().join("latin1.txt"), b"ok\ncaf\xe9\n").unwrap();
    let read = files.read(&ReadArgs::new("latin1.txt")).unwrap();
    assert_eq!(read.non_utf8_lines, [2]);
    assert_eq!(read.content, "     1\tok\n     2\tcaf\u{fffd}\n");
    let edit = EditArgs::new("latin1.txt", [Edit::new("ok", "fine")]);
    assert_eq!(files.edit(&edit).unwrap_err(), FileError::NotUtf8 { path: "latin1.txt".into(), line: 2 });
}

#[test]
fn write_is_atomic_keeps_permissions_and_creates_parents_only_on_request() {
    let (dir, files) = setup();
    let err = files.write(&WriteArgs::new("a/b/c.txt", "x")).unwrap_err();
    assert_eq!(err, FileError::ParentMissing { parent: "a/b".into() });
    assert!(!dir.path().join("a").exists());

    let done = files.write(&WriteArgs::new("a/b/c.txt", "first").create_parents(true)).unwrap();
    assert!(done.created);
    let path = dir.path().join("a/b/c.txt");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let done = files.write(&WriteArgs::new("a/b/c.txt", "second")).unwrap();
    assert!(!done.created);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    // No temporary file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1);
}

#[test]
fn write_refuses_content_over_the_cap_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = FileOptions::default();
    options.max_write_bytes = 4;
    let files = FileTools::with_options(dir.path(), options).unwrap();
    std::fs::write(dir.path().join("f.txt"), "old").unwrap();
    assert_eq!(
        files.write(&WriteArgs::new("f.txt", "12345")).unwrap_err(),
        FileError::ContentTooLarge { size: 5, limit: 4 }
    );
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "old");
    std::fs::create_dir(dir.path().join("d")).unwrap();
    assert_eq!(
        files.write(&WriteArgs::new("d", "x")).unwrap_err(),
        FileError::NotAFile { path: "d".into(), kind: "directory" }
    );
}

#[test]
fn edit_replaces_exact_text_and_returns_a_unified_diff() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("f.rs"), "fn a() {}\nfn b() {}\nlet x = 1;\nlet x = 1;\n").unwrap();
    let done = files
        .edit(&EditArgs::new(
            "f.rs",
            [Edit::new("fn b() {}", "fn b() { a() }"), Edit::new("let x = 1;", "let x = 2;").replace_all(true)],
        ))
        .unwrap();
    assert_eq!(done.replacements, 3);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "fn a() {}\nfn b() { a() }\nlet x = 2;\nlet x = 2;\n"
    );
    assert_eq!(
        done.diff,
        "--- a/f.rs\n+++ b/f.rs\n@@ -1,4 +1,4 @@\n fn a() {}\n-fn b() {}\n-let x = 1;\n-let x = 1;\n\
         +fn b() { a() }\n+let x = 2;\n+let x = 2;\n"
    );
}

#[test]
fn edit_match_errors_quote_line_numbers_and_leave_the_file_alone() {
    let (dir, files) = setup();
    let original = "alpha\n  beta gamma\nalpha\nalpha\n";
    std::fs::write(dir.path().join("f.txt"), original).unwrap();
    let many = EditArgs::new("f.txt", [Edit::new("alpha", "omega")]);
    assert_eq!(
        files.edit(&many).unwrap_err(),
        FileError::ManyMatches { path: "f.txt".into(), index: 1, count: 3, lines: vec![1, 3, 4] }
    );
    let none = EditArgs::new("f.txt", [Edit::new("beta  gamma\nalpha", "x")]);
    let err = files.edit(&none).unwrap_err();
    assert_eq!(err, FileError::NoMatch { path: "f.txt".into(), index: 1, candidates: vec![] });
    let none = EditArgs::new("f.txt", [Edit::new("beta gamma \n", "x")]);
    let err = files.edit(&none).unwrap_err();
    assert_eq!(err, FileError::NoMatch { path: "f.txt".into(), index: 1, candidates: vec![2] });
    assert!(err.to_string().contains("lines that contain its first line: 2"));
    // The second edit fails: the first is not applied either.
    let half = EditArgs::new("f.txt", [Edit::new("beta", "BETA"), Edit::new("missing", "x")]);
    assert!(matches!(files.edit(&half).unwrap_err(), FileError::NoMatch { index: 2, .. }));
    let bad = [
        (EditArgs::new("f.txt", []), FileError::EditCount { count: 0, limit: 100 }),
        (EditArgs::new("f.txt", [Edit::new("", "x")]), FileError::EmptyOld { index: 1 }),
        (EditArgs::new("f.txt", [Edit::new("beta", "beta")]), FileError::NoChange { index: 1 }),
        (EditArgs::new("nope.txt", [Edit::new("a", "b")]), FileError::NotFound { path: "nope.txt".into() }),
    ];
    for (args, expected) in bad {
        assert_eq!(files.edit(&args).unwrap_err(), expected);
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), original);
}

#[test]
fn previews_show_the_diff_without_writing() {
    let (dir, files) = setup();
    std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
    let preview = files.preview_edit(&EditArgs::new("f.txt", [Edit::new("two", "2")])).unwrap();
    assert!(preview.diff.contains("-two\n+2\n"));
    let diff = files.preview("write_file", &json!({"path": "new.txt", "content": "hi\n"})).unwrap().unwrap();
    assert!(diff.contains("+++ b/new.txt") && diff.contains("+hi\n"));
    assert_eq!(files.preview("read_file", &json!({"path": "f.txt"})).unwrap(), None);
    assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "one\ntwo\n");
    assert!(!dir.path().join("new.txt").exists());
}

#[test]
fn list_respects_gitignore_hidden_files_patterns_and_the_cap() {
    let (dir, files) = setup();
    let root = dir.path();
    for path in ["src/main.rs", "src/lib.rs", "target/debug/app", "notes.md", ".env", "src/gen/out.rs", "keep.log"] {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n!keep.log\n").unwrap();
    std::fs::write(root.join("src/.gitignore"), "gen/\n").unwrap();
    let listed = files.list(&ListArgs::new()).unwrap();
    assert_eq!(listed.files, ["keep.log", "notes.md", "src/lib.rs", "src/main.rs"]);
    assert!(!listed.truncated);

    let hidden = files.list(&ListArgs::new().include_hidden(true)).unwrap();
    assert!(hidden.files.contains(&".env".to_owned()) && hidden.files.contains(&".gitignore".to_owned()));
    let rust = files.list(&ListArgs::new().pattern("*.rs")).unwrap();
    assert_eq!(rust.files, ["src/lib.rs", "src/main.rs"]);
    let under = files.list(&ListArgs::new().path("src").pattern("main.*")).unwrap();
    assert_eq!(under.files, ["src/main.rs"]);

    let mut capped = ListArgs::new();
    capped.limit = Some(2);
    let capped = files.list(&capped).unwrap();
    assert_eq!((capped.files.len(), capped.truncated), (2, true));
    let err = files.list(&ListArgs::new().pattern("[")).unwrap_err();
    assert!(matches!(err, FileError::InvalidGlob { .. }), "{err}");
    assert!(matches!(files.list(&ListArgs::new().path("notes.md")).unwrap_err(), FileError::NotADirectory { .. }));
}

#[test]
fn search_returns_file_line_text_with_a_cap() {
    let (dir, files) = setup();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "fn main() {}\n// TODO one\n").unwrap();
    std::fs::write(dir.path().join("src/b.txt"), "todo two\nTODO three\n").unwrap();
    std::fs::write(dir.path().join("blob.bin"), b"TODO\0binary").unwrap();
    let found = files.search(&SearchArgs::new("TODO")).unwrap();
    assert_eq!(found.matches, ["src/a.rs:2:// TODO one", "src/b.txt:2:TODO three"]);
    assert_eq!((found.files_searched, found.files_skipped), (2, 1));

    let mut ci = SearchArgs::new("todo").glob("*.txt");
    ci.case_insensitive = true;
    assert_eq!(files.search(&ci).unwrap().matches, ["src/b.txt:1:todo two", "src/b.txt:2:TODO three"]);
    let one = files.search(&SearchArgs::new("fn").path("src/a.rs")).unwrap();
    assert_eq!(one.matches, ["src/a.rs:1:fn main() {}"]);
    let mut capped = SearchArgs::new("(?i)todo");
    capped.limit = Some(1);
    let capped = files.search(&capped).unwrap();
    assert_eq!((capped.matches.len(), capped.truncated), (1, true));
    assert!(matches!(files.search(&SearchArgs::new("(")).unwrap_err(), FileError::InvalidRegex { .. }));
}

#[tokio::test]
async fn registered_tools_carry_safety_category_scope_and_exclusive_key() {
    let (dir, files) = setup();
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, files.registrations()).unwrap();
    for (name, safety, exclusive) in [
        ("read_file", SafetyLevel::Safe, None),
        ("write_file", SafetyLevel::Dangerous, Some("path")),
        ("edit_file", SafetyLevel::Dangerous, Some("path")),
        ("list_files", SafetyLevel::Safe, None),
        ("search_files", SafetyLevel::Safe, None),
    ] {
        let decl = registry.get(name).unwrap().declaration();
        assert_eq!(decl.safety, safety, "{name}");
        assert_eq!(decl.categories, ["fs"], "{name}");
        assert_eq!(decl.scope, Scope::Core, "{name}");
        assert_eq!(decl.exclusive_key.as_deref(), exclusive, "{name}");
    }
    let out = registry.execute("write_file", json!({"path": "x.txt", "content": "hi\n"})).await.unwrap();
    assert_eq!(out.value, json!({"path": "x.txt", "bytes": 3, "created": true}));
    let out = registry.execute("read_file", json!({"path": "x.txt"})).await.unwrap();
    assert_eq!(out.text(), "x.txt: line 1 of 1\n     1\thi\n");
    // Unknown fields are refused before the tool runs.
    let err = registry.execute("write_file", json!({"path": "y.txt", "content": "", "mode": 7})).await.unwrap_err();
    assert!(err.to_string().contains("mode"), "{}", err.to_string());
    assert!(!dir.path().join("y.txt").exists());
}

/// The approver of an engine sees the diff of an edit before it happens,
/// and a denied edit changes nothing.
#[tokio::test]
async fn approvers_see_the_edit_diff_before_the_write() {
    use std::sync::{Arc, Mutex};
    use toolreg::policy::{ApprovalRequest, approver_fn};

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello\nworld\n").unwrap();
    let mut registry = toolreg::FunctionRegistry::new();
    toolreg_builtins::Builtins::new().files(root.path()).register(&mut registry).unwrap();
    let shown = Arc::new(Mutex::new(None));
    let seen = Arc::clone(&shown);
    let engine = toolreg::ToolEngine::builder(&registry)
        .approver(approver_fn("test", move |request: ApprovalRequest| {
            *seen.lock().unwrap() = request.preview().map(str::to_owned);
            let decision = request.deny("not now");
            async move { decision }
        }))
        .build();
    let call = toolreg::ToolCall::new(
        "c1",
        "edit_file",
        serde_json::json!({"path": "a.txt", "edits": [{"old_string": "world", "new_string": "there"}]}),
    );
    let result = toolreg::ToolExecutor::execute_call(&engine, call, toolreg::CallOptions::default()).await;
    assert!(result.is_error());
    let diff = shown.lock().unwrap().clone().expect("a preview");
    assert!(diff.contains("-world\n+there\n"), "{diff}");
    assert_eq!(std::fs::read_to_string(root.path().join("a.txt")).unwrap(), "hello\nworld\n");
}

/// Lines ending in `\r\n`, a last line without a newline, and an empty line
/// read the same as before lines were read in bounded pieces.
#[test]
fn line_endings_and_cut_lines_read_in_bounded_pieces() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = FileOptions::default();
    options.max_line_bytes = 4;
    let files = FileTools::with_options(dir.path(), options).unwrap();
    std::fs::write(dir.path().join("f.txt"), "abcd\r\n\r\nabcdef\r\nxy").unwrap();
    let read = files.read(&ReadArgs::new("f.txt")).unwrap();
    assert_eq!(read.content, "     1\tabcd\n     2\t\n     3\tabcd … [line cut: 2 more bytes]\n     4\txy\n");
    assert_eq!((read.cut_lines.as_slice(), read.total_lines), ([3].as_slice(), Some(4)));
    let read = files.read(&ReadArgs::new("f.txt").offset(3)).unwrap();
    assert_eq!(read.start_line, 3);
}

/// A legal name of 255 bytes can be written: the temporary file beside it
/// does not borrow its name.
#[test]
fn write_accepts_the_longest_legal_name() {
    let (dir, files) = setup();
    let name = "n".repeat(255);
    files.write(&WriteArgs::new(name.as_str(), "x")).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join(&name)).unwrap(), "x");
    files.write(&WriteArgs::new(name.as_str(), "y")).unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join(&name)).unwrap(), "y");
}

/// Edits of one file that arrive at the same time, as an MCP server runs
/// them, are all in the file when they all report success.
#[test]
fn concurrent_edits_of_one_file_are_all_kept() {
    let (dir, files) = setup();
    let n = 24;
    let text: String = (0..n).map(|i| format!("slot{i}\n")).collect();
    std::fs::write(dir.path().join("shared.txt"), &text).unwrap();
    let start = std::sync::Arc::new(std::sync::Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (files, start) = (files.clone(), std::sync::Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                // Two spellings of one file share its lock.
                let path = if i % 2 == 0 { "shared.txt" } else { "./shared.txt" };
                files.edit(&EditArgs::new(path, [Edit::new(format!("slot{i}\n"), format!("done{i}\n"))]))
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    let after = std::fs::read_to_string(dir.path().join("shared.txt")).unwrap();
    let missing: Vec<usize> = (0..n).filter(|i| !after.contains(&format!("done{i}\n"))).collect();
    assert!(missing.is_empty(), "edits lost: {missing:?}");
}
