//! Durability of the SQLite store against real processes: a writer killed
//! with SIGKILL, and two processes writing one file while tasks of a third
//! write it too.
//!
//! The writing process is this test binary itself, running the ignored test
//! `child_writer`, which prints `ACK <key> <version>` once each write returned `Ok`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::json;
use toolreg_store::{SqliteStore, StoreRef};

const NAMESPACE: &str = "durable";

/// Writes `<prefix>/<i>` = `{"i": i}` in a loop and acknowledges each on stdout.
/// Run only as a child of the tests below.
#[tokio::test]
#[ignore = "run as a child process by the durability tests"]
async fn child_writer() {
    let path = std::env::var("STORE_CHILD_DB").expect("STORE_CHILD_DB");
    let prefix = std::env::var("STORE_CHILD_PREFIX").expect("STORE_CHILD_PREFIX");
    let count: u64 = std::env::var("STORE_CHILD_COUNT").expect("STORE_CHILD_COUNT").parse().expect("a count");
    let store = SqliteStore::open(&path).await.expect("open");
    let ns = store.namespace(NAMESPACE).expect("namespace");
    let mut i = 0;
    while count == 0 || i < count {
        let key = format!("{prefix}/{i}");
        let handle = ns.set(&key, &json!({"i": i, "pad": "x".repeat(64)})).await.expect("set");
        // std's stdout is line-buffered: the line is out before the next write starts.
        println!("ACK {} {}", handle.key, handle.version);
        i += 1;
    }
}

fn spawn_writer(path: &Path, prefix: &str, count: u64) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["durability::child_writer", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("STORE_CHILD_DB", path)
        .env("STORE_CHILD_PREFIX", prefix)
        .env("STORE_CHILD_COUNT", count.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the writer")
}

fn parse_ack(line: &str) -> Option<StoreRef> {
    // The test harness may print `test child_writer ... ` on the same line as the first one.
    let start = line.find("ACK ")?;
    let mut parts = line[start + 4..].split(' ');
    let key = parts.next()?.to_owned();
    let version = parts.next()?.parse().ok()?;
    Some(StoreRef { key, version })
}

fn integrity(path: &Path) -> String {
    let conn = rusqlite::Connection::open(path).expect("open for the check");
    conn.busy_timeout(std::time::Duration::from_secs(10)).expect("busy timeout");
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0)).expect("integrity_check")
}

async fn assert_all_present(path: &Path, acks: &[StoreRef]) {
    let store = SqliteStore::open(path).await.expect("reopen");
    let ns = store.namespace(NAMESPACE).expect("namespace");
    for ack in acks {
        let stored = ns.get_ref(ack).await.unwrap_or_else(|e| panic!("acknowledged write {ack:?} lost: {e}"));
        let i: u64 = ack.key.rsplit('/').next().and_then(|i| i.parse().ok()).expect("index in key");
        assert_eq!(stored.value["i"], json!(i), "{ack:?}");
    }
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    use std::os::unix::process::ExitStatusExt;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut child = spawn_writer(&path, "kill", 0);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acks = Vec::new();
    while acks.len() < 300 {
        match lines.next() {
            Some(Ok(line)) => acks.extend(parse_ack(&line)),
            _ => {
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                panic!("the writer stopped after {} writes: {stderr}", acks.len());
            }
        }
    }
    // SIGKILL, mid-loop: the writer gets no chance to close anything.
    child.kill().unwrap();
    // Lines already in the pipe were acknowledged too.
    acks.extend(lines.map_while(Result::ok).filter_map(|line| parse_ack(&line)));
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");

    assert_eq!(integrity(&path), "ok");
    assert_all_present(&path, &acks).await;
    // The store takes new writes after the crash, with a version above every acknowledged one.
    let store = SqliteStore::open(&path).await.unwrap();
    let next = store.namespace(NAMESPACE).unwrap().set("after", &json!(1)).await.unwrap();
    assert!(acks.iter().all(|ack| ack.version < next.version));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_and_several_tasks_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let children = [spawn_writer(&path, "p1", 200), spawn_writer(&path, "p2", 200)];

    // Meanwhile, four tasks of this process write the same namespace.
    let store = SqliteStore::open(&path).await.unwrap();
    let ns = store.namespace(NAMESPACE).unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let ns = ns.clone();
            tokio::spawn(async move {
                let mut acks = Vec::new();
                for i in 0..100u64 {
                    acks.push(ns.set(&format!("t{t}/{i}"), &json!({"i": i})).await.unwrap());
                }
                acks
            })
        })
        .collect();
    let mut acks = Vec::new();
    for task in tasks {
        acks.extend(task.await.unwrap());
    }
    for mut child in children {
        let mut stdout = String::new();
        child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "writer failed: {stderr}");
        acks.extend(stdout.lines().filter_map(parse_ack));
    }
    assert_eq!(acks.len(), 800);

    // No version was handed out twice across the three processes.
    let versions: BTreeSet<u64> = acks.iter().map(|a| a.version).collect();
    assert_eq!(versions.len(), acks.len());
    // Each key's versions grow in the order its writer made them.
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    for ack in &acks {
        let prefix = ack.key.split('/').next().unwrap();
        let previous = last.insert(prefix, ack.version).unwrap_or(0);
        assert!(ack.version > previous, "{ack:?}");
    }

    drop(ns);
    drop(store);
    assert_eq!(integrity(&path), "ok");
    assert_all_present(&path, &acks).await;
    let store = SqliteStore::open(&path).await.unwrap();
    let usage = store.namespace(NAMESPACE).unwrap().usage().await.unwrap();
    assert_eq!(usage.keys, 800);
}
