//! `toolreg search-eval`: the search measured on a catalog file or on the
//! imported servers' tools, and every bad input refused saying where.

use assert_cmd::Command;
use serde_json::{Value, json};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../toolreg-mcp/tests/servers/fake_server.py");

fn toolreg(root: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("toolreg").unwrap();
    cmd.current_dir(root)
        .env("TOOLREG_STATE_DIR", root.join("state"))
        .env_remove("TOOLREG_STORE")
        .env_remove("TOOLREG_LOG")
        .env("NO_COLOR", "1");
    cmd
}

/// Two servers as their `tools/list` gives them: one as a bare array, one as a result.
fn catalog() -> Value {
    let tool = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": {}}});
    json!({
        "tracker": [
            tool("create_issue", "Open a new issue in a project"),
            tool("close_issue", "Close an issue that is done"),
            {"name": "list_projects", "title": "Projects", "description": "Every project you can see",
             "inputSchema": {"type": "object", "properties": {"owner": {"type": "string", "description": "Whose"}}}},
        ],
        "mail": {"tools": [
            tool("send_email", "Send an email message to someone"),
            tool("search_inbox", "Find messages in the inbox"),
        ]},
    })
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn lines(requests: &[Value]) -> String {
    requests.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn recall_and_mrr_are_reported_overall_and_by_kind_with_the_misses() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write(dir.path(), "catalog.json", &catalog().to_string());
    let queries = write(
        dir.path(),
        "q.jsonl",
        &lines(&[
            json!({"request": "open an issue about the crash", "tools": ["tracker__create_issue"]}),
            json!({"request": "send an email to the team", "tools": ["mail__send_email"], "kind": "literal"}),
            // Shares no word with any tool: not found.
            json!({"request": "quantum chromodynamics", "tools": ["tracker__list_projects"], "kind": "paraphrase"}),
            json!({"request": "find messages from Ana", "tools": ["mail__search_inbox", "mail__send_email"], "kind": "literal"}),
        ]),
    );
    let out = toolreg(dir.path())
        .args(["search-eval", "--json", "--catalog"])
        .arg(&catalog)
        .arg("--queries")
        .arg(&queries)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tools"], 5);
    assert_eq!(report["all"]["requests"], 4);
    assert_eq!(report["all"]["recall@1"], 75.0, "{report}");
    assert_eq!(report["all"]["recall@10"], 75.0, "{report}");
    assert_eq!(report["all"]["mrr"], 0.75, "{report}");
    assert_eq!(report["kinds"]["literal"]["recall@1"], 100.0, "{report}");
    assert_eq!(report["kinds"]["paraphrase"]["recall@5"], 0.0, "{report}");
    assert_eq!(report["missed"], 1);
    assert_eq!(report["misses"][0]["request"], "quantum chromodynamics");
    assert_eq!(report["misses"][0]["rank"], Value::Null);
    assert!(report["search"].as_str().unwrap().starts_with("keyword (BM25)"), "{report}");

    // The table says the same, and which search answered.
    let out = toolreg(dir.path())
        .args(["search-eval", "--catalog"])
        .arg(&catalog)
        .arg("--queries")
        .arg(&queries)
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("search: keyword (BM25)"), "{table}");
    assert!(table.contains("| all | 4 | 75.0% | 75.0% | 75.0% | 75.0% | 0.750 |"), "{table}");
    assert!(table.contains("| paraphrase | 1 | 0.0% |"), "{table}");
    assert!(table.contains("\"quantum chromodynamics\" wants tracker__list_projects (not in the top 10)"), "{table}");
}

#[test]
fn a_recall_under_the_floor_fails_the_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write(dir.path(), "catalog.json", &catalog().to_string());
    let queries = write(
        dir.path(),
        "q.jsonl",
        &lines(&[
            json!({"request": "close the issue", "tools": ["tracker__close_issue"]}),
            json!({"request": "quantum chromodynamics", "tools": ["mail__send_email"]}),
        ]),
    );
    let run = |floors: &[&str]| {
        let mut cmd = toolreg(dir.path());
        cmd.args(["search-eval", "--misses", "0", "--catalog"]).arg(&catalog).arg("--queries").arg(&queries);
        for floor in floors {
            cmd.args(["--min-recall", floor]);
        }
        cmd.output().unwrap()
    };
    assert!(run(&["5=50"]).status.success());
    let out = run(&["1=50", "5=60"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "toolreg: search-eval: recall@5 is 50.0%, under 60%\n");
    // The report is still printed.
    assert!(String::from_utf8(out.stdout).unwrap().contains("| all | 2 | 50.0% |"));
    let out = run(&["11=50"]);
    assert_eq!(out.status.code(), Some(2), "a rank past ten is a usage error");
    assert!(String::from_utf8(out.stderr).unwrap().contains("K is a rank from 1 to 10, not 11"));
}

#[test]
fn bad_catalogs_and_requests_are_refused_saying_where() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write(dir.path(), "catalog.json", &catalog().to_string());
    let good =
        write(dir.path(), "good.jsonl", &lines(&[json!({"request": "close it", "tools": ["tracker__close_issue"]})]));
    let refused = |catalog: &std::path::Path, queries: &std::path::Path| {
        let out = toolreg(dir.path())
            .args(["search-eval", "--catalog"])
            .arg(catalog)
            .arg("--queries")
            .arg(queries)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };

    let unknown = write(
        dir.path(),
        "unknown.jsonl",
        &format!("\n{}", lines(&[json!({"request": "close it", "tools": ["tracker__close_issues"]})])),
    );
    let error = refused(&catalog, &unknown);
    assert!(
        error.contains("unknown.jsonl line 2: `tracker__close_issues` is not a tool of the catalog searched"),
        "{error}"
    );
    let broken = write(dir.path(), "broken.jsonl", "{\"request\": \"x\"}\n");
    assert!(refused(&catalog, &broken).contains("broken.jsonl line 1: expected {\"request\""));
    let empty = write(dir.path(), "empty.jsonl", "\n\n");
    assert!(refused(&catalog, &empty).contains("holds no requests"));
    let no_tools = write(dir.path(), "none.jsonl", &lines(&[json!({"request": "x", "tools": []})]));
    assert!(refused(&catalog, &no_tools).contains("at least one tool"));

    let not_object = write(dir.path(), "list.json", "[1, 2]");
    assert!(refused(&not_object, &good).contains("not a JSON object of servers"));
    let bad_server = write(dir.path(), "bad.json", &json!({"tracker": "nope"}).to_string());
    assert!(refused(&bad_server, &good).contains("server `tracker`: expected its tools"));
    let bad_tool = write(dir.path(), "badtool.json", &json!({"tracker": [{"description": "no name"}]}).to_string());
    assert!(refused(&bad_tool, &good).contains("server `tracker`, tool 1:"));
    let missing = dir.path().join("missing.json");
    assert!(refused(&missing, &good).contains("cannot read the catalog"));
}

#[test]
fn without_a_catalog_the_imported_servers_tools_are_searched_not_the_built_ins() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "servers.json",
        &json!({"mcpServers": {"fake": {"command": "python3", "args": ["-u", FAKE]}}}).to_string(),
    );
    let queries =
        write(dir.path(), "q.jsonl", &lines(&[json!({"request": "echo the arguments back", "tools": ["fake__echo"]})]));
    let out = toolreg(dir.path())
        .args(["search-eval", "--json", "--queries"])
        .arg(&queries)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["all"]["recall@1"], 100.0, "{report}");
    // A built-in is not among what is searched, so it cannot be an answer.
    let builtin = write(dir.path(), "b.jsonl", &lines(&[json!({"request": "read a file", "tools": ["read_file"]})]));
    let out = toolreg(dir.path())
        .args(["search-eval", "--queries"])
        .arg(&builtin)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("`read_file` is not a tool of the catalog searched"));

    // No catalog and no servers: nothing to search.
    let out = toolreg(dir.path()).args(["search-eval", "--queries"]).arg(&queries).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("no tools to search"));
}

#[test]
fn dense_and_hybrid_need_a_model_and_with_one_say_which_search_answered() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write(dir.path(), "catalog.json", &catalog().to_string());
    let queries = write(
        dir.path(),
        "q.jsonl",
        &lines(&[
            json!({"request": "write to Ana", "tools": ["mail__send_email"], "kind": "paraphrase"}),
            json!({"request": "open an issue", "tools": ["tracker__create_issue"], "kind": "literal"}),
        ]),
    );
    let out = toolreg(dir.path())
        .args(["search-eval", "--search", "dense", "--catalog"])
        .arg(&catalog)
        .arg("--queries")
        .arg(&queries)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("need a search model (--search-model DIR)"));

    let Some(model) = crate::support::search_model() else { return };
    for (search, named) in [("hybrid", "hybrid (BM25 and all-MiniLM-L6-v2-"), ("dense", "dense (all-MiniLM-L6-v2-")] {
        let out = toolreg(dir.path())
            .arg("--search-model")
            .arg(&model)
            .args(["search-eval", "--json", "--search", search, "--catalog"])
            .arg(&catalog)
            .arg("--queries")
            .arg(&queries)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(report["search"].as_str().unwrap().starts_with(named), "{report}");
        assert_eq!(report["all"]["recall@3"], 100.0, "{report}");
    }
}
