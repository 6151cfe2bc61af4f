//! What the CLI tests share: `toolreg serve` as a child process over stdio.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

/// `toolreg ARGS` started in `dir` with piped stdio and `env` added: the
/// child, its input, and the JSON messages it writes, read on a thread of
/// their own (lines that are not JSON are skipped).
pub fn serve_stdio(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Child, ChildStdin, mpsc::Receiver<Value>) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("toolreg"))
        .current_dir(dir)
        .args(args)
        .env_remove("TOOLREG_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str(&line)
                && tx.send(message).is_err()
            {
                return;
            }
        }
    });
    (child, stdin, lines)
}

/// The sentence model of hybrid search (`scripts/fetch_search_model.sh`),
/// or `None` when it is absent and not required (`TOOLREG_REQUIRE_SEARCH_MODEL`
/// unset), having said so.
pub fn search_model() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/search-model/all-MiniLM-L6-v2");
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("TOOLREG_REQUIRE_SEARCH_MODEL").is_none(),
        "TOOLREG_REQUIRE_SEARCH_MODEL is set and {} holds no model: run scripts/fetch_search_model.sh",
        dir.display()
    );
    eprintln!("skipped: no search model in {} (scripts/fetch_search_model.sh fetches it)", dir.display());
    None
}
