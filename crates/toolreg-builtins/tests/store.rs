//! The context store's behaviour on real SQLite: in memory and in files.

use std::sync::Arc;

use serde_json::{Value, json};
use toolreg_builtins::store::{
    ContextStore, JsonType, SqliteOptions, SqliteStore, StoreError, StoreLimits, StoreRef, Usage,
};

async fn memory() -> SqliteStore {
    SqliteStore::in_memory().await.expect("in-memory store")
}

#[tokio::test]
async fn every_set_makes_a_new_version_and_handles_keep_theirs() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let v1 = ns.set("plan", &json!({"step": 1})).await.unwrap();
    let v2 = ns.set("plan", &json!({"step": 2})).await.unwrap();
    assert!(v2.version > v1.version);
    assert_eq!(ns.get("plan").await.unwrap().value, json!({"step": 2}));
    assert_eq!(ns.get_ref(&v1).await.unwrap().value, json!({"step": 1}));
    assert_eq!(ns.reference("plan").await.unwrap(), v2);
    let stored = ns.get_version("plan", v2.version).await.unwrap();
    assert_eq!((stored.version, stored.size), (v2.version, 10));
}

/// `create` writes a key's first version only: of many writers at once,
/// one wins, the others are told the key exists, and the value stays.
#[tokio::test]
async fn create_writes_only_a_first_version_and_exactly_one_of_many_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let ns = store.namespace("claims").unwrap();
    let first = ns.create("run/1", &json!("host-a")).await.unwrap();
    let again = ns.create("run/1", &json!("host-b")).await;
    assert!(matches!(again, Err(StoreError::Exists { ref key }) if key == "run/1"), "{again:?}");
    assert_eq!(ns.get("run/1").await.unwrap().value, json!("host-a"));
    assert_eq!(ns.reference("run/1").await.unwrap(), first);
    assert_eq!(ns.usage().await.unwrap().keys, 1);

    // Eight writers, each with its own connection to the file.
    let mut writers = Vec::new();
    for i in 0..8 {
        let path = path.clone();
        writers.push(tokio::spawn(async move {
            let store = SqliteStore::open(&path).await.unwrap();
            store.namespace("claims").unwrap().create("run/2", &json!(i)).await
        }));
    }
    let mut won = 0;
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => won += 1,
            Err(StoreError::Exists { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn versions_are_never_reused_after_a_delete() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let old = ns.set("k", &json!("old")).await.unwrap();
    assert_eq!(ns.delete("k").await.unwrap(), 1);
    let new = ns.set("k", &json!("new")).await.unwrap();
    assert!(new.version > old.version);
    let err = ns.get_ref(&old).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::VersionNotFound { version, latest: Some(l), .. } if *version == old.version && *l == new.version),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("the latest is {}", new.version)));
}

#[tokio::test]
async fn namespaces_never_see_each_other() {
    let store = memory().await;
    let a = store.namespace("run-a").unwrap();
    let b = store.namespace("run-b").unwrap();
    let handle = a.set("secret", &json!(1)).await.unwrap();
    assert!(matches!(b.get("secret").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(b.get_ref(&handle).await, Err(StoreError::VersionNotFound { latest: None, .. })));
    assert!(b.list("", 10, None).await.unwrap().entries.is_empty());
    assert!(matches!(b.delete("secret").await, Err(StoreError::NotFound { .. })));
    assert_eq!(a.get("secret").await.unwrap().value, json!(1));
}

#[tokio::test]
async fn list_pages_through_a_prefix_in_order() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    for i in (0..25).rev() {
        ns.set(&format!("doc/{i:02}"), &json!(i)).await.unwrap();
    }
    ns.set("doc/05", &json!("rewritten")).await.unwrap();
    // Neighbours that a careless prefix match would include.
    ns.set("doc", &json!(0)).await.unwrap();
    ns.set("doc_x", &json!(0)).await.unwrap();
    ns.set("dob/1", &json!(0)).await.unwrap();

    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = ns.list("doc/", 10, cursor.as_deref()).await.unwrap();
        assert!(page.entries.len() <= 10);
        seen.extend(page.entries.iter().map(|e| (e.key.clone(), e.version)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let keys: Vec<_> = seen.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(keys, (0..25).map(|i| format!("doc/{i:02}")).collect::<Vec<_>>());
    // The listing shows the latest version of a rewritten key.
    let latest = ns.reference("doc/05").await.unwrap();
    assert!(seen.contains(&("doc/05".to_owned(), latest.version)));

    let all = ns.list("", 1000, None).await.unwrap();
    assert_eq!(all.entries.len(), 28);
    assert!(all.next_cursor.is_none());
}

#[tokio::test]
async fn bad_list_arguments_get_typed_errors() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    assert!(matches!(ns.list("", 0, None).await, Err(StoreError::InvalidLimit { limit: 0, max: 1000 })));
    assert!(matches!(ns.list("", 1001, None).await, Err(StoreError::InvalidLimit { .. })));
    assert!(matches!(ns.list("a b", 10, None).await, Err(StoreError::InvalidPrefix { .. })));
    assert!(matches!(ns.list("a/", 10, Some("b/1")).await, Err(StoreError::InvalidCursor { .. })));
    assert!(matches!(ns.list("", 10, Some("%")).await, Err(StoreError::InvalidCursor { .. })));
}

#[tokio::test]
async fn summarize_describes_shape_size_and_preview() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let rows: Vec<Value> = (0..1000).map(|i| json!({"id": i, "name": format!("row {i}")})).collect();
    let handle = ns.set("rows", &Value::Array(rows)).await.unwrap();
    ns.set("rows", &json!("replaced")).await.unwrap();

    let summary = ns.summarize("rows", Some(handle.version)).await.unwrap();
    assert_eq!(summary.kind, JsonType::Array);
    assert_eq!(summary.length, Some(1000));
    assert_eq!(summary.element_types, Some(vec![JsonType::Object]));
    assert_eq!(summary.depth, 2);
    assert_eq!(summary.size, ns.get_ref(&handle).await.unwrap().size);
    assert!(summary.size > 20_000);
    assert!(summary.preview.starts_with(r#"[{"id":0,"name":"row 0"}"#));
    assert!(summary.preview_truncated);

    let latest = ns.summarize("rows", None).await.unwrap();
    assert_eq!((latest.kind, latest.length, latest.preview.as_str()), (JsonType::String, Some(8), "\"replaced\""));

    let keys: serde_json::Map<String, Value> = (0..200).map(|i| (format!("k{i:03}"), json!(i))).collect();
    ns.set("wide", &Value::Object(keys)).await.unwrap();
    let wide = ns.summarize("wide", None).await.unwrap();
    assert_eq!(wide.key_count, Some(200));
    assert_eq!(wide.keys.as_ref().map(Vec::len), Some(50));
    assert_eq!(wide.keys.as_ref().and_then(|k| k.first()).map(String::as_str), Some("k000"));
}

#[tokio::test]
async fn an_over_long_name_is_cut_in_its_error() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let huge = "k".repeat(1 << 20);
    let err = ns.set(&huge, &json!(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidKey { .. }));
    let text = err.to_string();
    assert!(text.len() < 500, "{} bytes", text.len());
    assert!(text.contains(&format!("{} bytes in all", 1 << 20)), "{text}");
    let err = store.namespace(&huge).unwrap_err().to_string();
    assert!(err.len() < 500, "{} bytes", err.len());
    let err = ns.list(&huge, 10, None).await.unwrap_err().to_string();
    assert!(err.len() < 500, "{} bytes", err.len());
}

#[tokio::test]
async fn bad_keys_and_namespaces_are_refused_and_change_nothing() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let long = "k".repeat(257);
    for bad in ["", "two words", "semi;colon", "quote'", "percent%", "nul\0", "é", long.as_str()] {
        let err = ns.set(bad, &json!(1)).await.unwrap_err();
        assert!(matches!(err, StoreError::InvalidKey { .. }), "{bad:?}: {err}");
        assert!(matches!(ns.get(bad).await, Err(StoreError::InvalidKey { .. })));
        assert!(matches!(ns.delete(bad).await, Err(StoreError::InvalidKey { .. })));
    }
    assert!(ns.set(&"k".repeat(256), &json!(1)).await.is_ok());
    assert_eq!(ns.usage().await.unwrap().keys, 1);
    for bad in ["", "a b", &"n".repeat(129)] {
        assert!(matches!(store.namespace(bad), Err(StoreError::InvalidNamespace { .. })), "{bad:?}");
    }
    let err = ns.set("two words", &json!(1)).await.unwrap_err().to_string();
    assert!(err.contains("' '") && err.contains("A-Z"), "{err}");
}

#[tokio::test]
async fn value_limits_are_typed_and_leave_the_store_unchanged() {
    let limits = StoreLimits::default().with_max_value_bytes(100).with_max_depth(3);
    let store = SqliteStore::in_memory_with(SqliteOptions::default().with_limits(limits)).await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    let kept = ns.set("k", &json!("small")).await.unwrap();

    let err = ns.set("k", &json!("x".repeat(200))).await.unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { size: 202, max: 100, .. }), "{err}");
    let err = ns.set("k", &json!([[[[1]]]])).await.unwrap_err();
    assert!(matches!(err, StoreError::TooDeep { depth: 4, max: 3, .. }), "{err}");

    assert_eq!(ns.reference("k").await.unwrap(), kept);
    assert_eq!(ns.usage().await.unwrap(), Usage::new(1, 7));
}

#[tokio::test]
async fn the_default_value_limit_is_16_mib() {
    let store = memory().await;
    let ns = store.namespace("big").unwrap();
    let just_under = "x".repeat((16 << 20) - 2);
    let handle = ns.set("big", &json!(just_under)).await.unwrap();
    assert_eq!(ns.get_ref(&handle).await.unwrap().size, 16 << 20);
    let err = ns.set("big", &json!(format!("{just_under}x"))).await.unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { size, max, .. } if size == (16 << 20) + 1 && max == 16 << 20));
}

#[tokio::test]
async fn namespace_quotas_are_enforced_per_namespace() {
    let limits = StoreLimits::default().with_max_namespace_bytes(30).with_max_namespace_keys(2);
    let store = SqliteStore::in_memory_with(SqliteOptions::default().with_limits(limits)).await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    ns.set("a", &json!("0123456789")).await.unwrap(); // 12 bytes
    ns.set("b", &json!(1)).await.unwrap(); // 1 byte
    let err = ns.set("c", &json!(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::TooManyKeys { keys: 2, .. }), "{err}");
    // Overwriting an existing key needs no new key.
    ns.set("b", &json!(2)).await.unwrap(); // 14 bytes used
    let err = ns.set("a", &json!("0123456789abcdef")).await.unwrap_err();
    assert!(matches!(err, StoreError::NamespaceFull { used: 14, needed: 18, quota: 30, .. }), "{err}");
    assert_eq!(ns.usage().await.unwrap(), Usage::new(2, 14));

    // Another namespace has its own quota.
    store.namespace("run-2").unwrap().set("c", &json!(1)).await.unwrap();

    // Deleting frees both keys and bytes.
    assert_eq!(ns.delete("b").await.unwrap(), 2);
    assert_eq!(ns.usage().await.unwrap(), Usage::new(1, 12));
    ns.set("c", &json!("0123456789abcd")).await.unwrap();
    assert_eq!(ns.usage().await.unwrap(), Usage::new(2, 28));
}

#[tokio::test]
async fn delete_of_a_missing_key_is_not_found() {
    let store = memory().await;
    let ns = store.namespace("run-1").unwrap();
    let err = ns.delete("nothing").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }));
    assert!(err.to_string().contains("store_list"));
    assert!(matches!(ns.reference("nothing").await, Err(StoreError::NotFound { .. })));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_tasks_never_lose_an_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("store.db")).await.unwrap();
    let ns = store.namespace("shared").unwrap();
    let mut tasks = Vec::new();
    for task in 0..8 {
        let ns = ns.clone();
        tasks.push(tokio::spawn(async move {
            let mut handles = Vec::new();
            for i in 0..50 {
                let key = format!("t{task}/k{}", i % 10);
                let handle = ns.set(&key, &json!({"task": task, "i": i})).await.unwrap();
                // A read right after the write sees it.
                assert_eq!(ns.get_ref(&handle).await.unwrap().value, json!({"task": task, "i": i}));
                handles.push((handle, i));
            }
            handles
        }));
    }
    let mut versions = Vec::new();
    for task in tasks {
        for (handle, i) in task.await.unwrap() {
            let stored = ns.get_ref(&handle).await.unwrap();
            assert_eq!(stored.value["i"], json!(i));
            versions.push(handle.version);
        }
    }
    versions.sort_unstable();
    versions.dedup();
    assert_eq!(versions.len(), 400, "every write has its own version");
    assert_eq!(ns.usage().await.unwrap().keys, 80);
}

#[tokio::test]
async fn a_store_works_behind_the_trait_object() {
    let store: Arc<dyn ContextStore> = Arc::new(memory().await);
    let ns = toolreg_builtins::store::Namespace::new(Arc::clone(&store), "dyn").unwrap();
    let handle = ns.set("k", &json!(true)).await.unwrap();
    assert_eq!(handle, StoreRef { key: "k".into(), version: 1 });
    assert_eq!(store.limits().max_value_bytes, 16 << 20);
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
