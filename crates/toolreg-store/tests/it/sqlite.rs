//! The SQLite store: the conformance suite, then what only a SQLite file
//! does.

use serde_json::json;
use toolreg_store::{SqliteOptions, SqliteStore, StoreError, StoreLimits};

mod conformance {
    crate::support::conformance::suite!(crate::support::conformance::Backend::sqlite);
}

#[tokio::test]
async fn a_file_store_keeps_everything_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let handle = {
        let store = SqliteStore::open(&path).await.unwrap();
        let ns = store.namespace("run-1").unwrap();
        ns.set("a", &json!({"x": [1, 2, 3]})).await.unwrap();
        ns.set("a", &json!("second")).await.unwrap()
    };
    let store = SqliteStore::open(&path).await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    assert_eq!(ns.reference("a").await.unwrap(), handle);
    assert_eq!(ns.get_version("a", handle.version - 1).await.unwrap().value, json!({"x": [1, 2, 3]}));
    let next = ns.set("a", &json!(3)).await.unwrap();
    assert!(next.version > handle.version);
    let mode: String =
        rusqlite::Connection::open(&path).unwrap().query_row("PRAGMA journal_mode", [], |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

/// The store holds other clients' task results and suspended transcripts:
/// a file it makes, with its write-ahead log and index, is its owner's only,
/// whatever the process's umask.
#[cfg(unix)]
#[tokio::test]
async fn a_new_store_file_and_its_wal_and_shm_are_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).await.unwrap();
    store.namespace("n").unwrap().set("a", &json!(1)).await.unwrap();
    for name in ["store.db", "store.db-wal", "store.db-shm"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
    }
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_a_backend_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not.db");
    std::fs::write(&path, b"this is not an SQLite database, just some text that is long enough").unwrap();
    let err = SqliteStore::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err}");
}

#[tokio::test]
async fn damaged_values_are_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    let handle = ns.set("k", &json!({"ok": true})).await.unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    raw.execute("UPDATE store_values SET value = '{broken' WHERE key = 'k'", []).unwrap();
    let err = ns.get_ref(&handle).await.unwrap_err();
    assert!(matches!(&err, StoreError::Corrupt { version, .. } if *version == handle.version), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_writes_in_a_batch_leave_their_neighbours_committed() {
    let dir = tempfile::tempdir().unwrap();
    let limits = StoreLimits::default().with_max_namespace_keys(5);
    let options = SqliteOptions::default().with_limits(limits);
    let store = SqliteStore::open_with(dir.path().join("store.db"), options).await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    // Twenty new keys at once: the writer commits them in batches, each
    // write in its own savepoint, so exactly five fit.
    let writes = (0..20).map(|i| {
        let ns = ns.clone();
        tokio::spawn(async move { (i, ns.set(&format!("k{i:02}"), &json!(i)).await) })
    });
    let mut stored = Vec::new();
    for write in writes {
        match write.await.unwrap() {
            (i, Ok(handle)) => stored.push((i, handle)),
            (_, Err(StoreError::TooManyKeys { keys: 5, .. })) => {}
            (i, Err(other)) => panic!("write {i}: {other}"),
        }
    }
    assert_eq!(stored.len(), 5);
    assert_eq!(ns.usage().await.unwrap().keys, 5);
    for (i, handle) in stored {
        assert_eq!(ns.get_ref(&handle).await.unwrap().value, json!(i));
    }
    assert_eq!(ns.list("", 100, None).await.unwrap().entries.len(), 5);
}
