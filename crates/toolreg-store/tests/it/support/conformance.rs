//! The context store's contract, as functions over `Arc<dyn ContextStore>`:
//! `suite!` runs every case once per backend, so SQLite and PostgreSQL
//! behave alike by construction.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use toolreg_store::{
    ContextStore, JsonType, Namespace, NamespaceUsage, SqliteOptions, SqliteStore, StoreError, StoreLimits, StoreRef,
};

/// Where a case's store lives; [`Backend::open`] gives another handle on
/// the same data (another process's connection, another host's pool).
pub enum Backend {
    Sqlite {
        path: PathBuf,
        _dir: tempfile::TempDir,
    },
    #[cfg(feature = "postgres")]
    Postgres {
        url: String,
    },
}

impl Backend {
    /// A fresh SQLite file.
    pub async fn sqlite() -> Option<Backend> {
        let dir = tempfile::tempdir().unwrap();
        Some(Backend::Sqlite { path: dir.path().join("store.db"), _dir: dir })
    }

    /// A fresh schema on a PostgreSQL server, or `None` (the case is
    /// skipped) when there is none.
    #[cfg(feature = "postgres")]
    pub async fn postgres() -> Option<Backend> {
        let base = super::postgres::base_url()?;
        Some(Backend::Postgres { url: super::postgres::fresh_url(&base).await })
    }

    /// A handle on this backend's data, enforcing `limits`.
    pub async fn open(&self, limits: StoreLimits) -> Arc<dyn ContextStore> {
        match self {
            Backend::Sqlite { path, .. } => {
                Arc::new(SqliteStore::open_with(path, SqliteOptions::default().with_limits(limits)).await.unwrap())
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres { url } => {
                use toolreg_store::{PostgresOptions, PostgresStore};
                let options = PostgresOptions::default().with_limits(limits);
                Arc::new(PostgresStore::connect_with(url, options).await.unwrap())
            }
        }
    }

    /// A handle with the default limits.
    pub async fn store(&self) -> Arc<dyn ContextStore> {
        self.open(StoreLimits::default()).await
    }
}

fn ns(store: &Arc<dyn ContextStore>, name: &str) -> Namespace {
    Namespace::new(Arc::clone(store), name).unwrap()
}

/// One `#[tokio::test]` per case, on the backend `$backend` makes.
macro_rules! suite {
    ($backend:path) => {
        $crate::support::conformance::suite!(@cases $backend;
            every_set_makes_a_new_version_and_handles_keep_theirs,
            create_writes_only_a_first_version_and_exactly_one_of_many_wins,
            concurrent_creates_through_one_pool_have_one_winner,
            versions_are_never_reused_after_a_delete,
            namespaces_never_see_each_other,
            list_pages_through_a_prefix_in_order,
            list_orders_keys_byte_by_byte,
            bad_list_arguments_get_typed_errors,
            summarize_describes_shape_size_and_preview,
            an_over_long_name_is_cut_in_its_error,
            bad_keys_and_namespaces_are_refused_and_change_nothing,
            value_limits_are_typed_and_leave_the_store_unchanged,
            the_default_value_limit_is_16_mib,
            namespace_quotas_are_enforced_per_namespace,
            quotas_hold_under_concurrent_writers,
            delete_of_a_missing_key_is_not_found,
            concurrent_tasks_never_lose_an_acknowledged_write,
            a_store_works_behind_the_trait_object,
            a_second_handle_sees_every_acknowledged_write,
        );
    };
    (@cases $backend:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some(backend) = $backend().await else { return };
                $crate::support::conformance::$case(&backend).await;
            }
        )*
    };
}
pub(crate) use suite;

pub async fn every_set_makes_a_new_version_and_handles_keep_theirs(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
    let v1 = ns.set("plan", &json!({"step": 1})).await.unwrap();
    let v2 = ns.set("plan", &json!({"step": 2})).await.unwrap();
    assert!(v2.version > v1.version);
    assert_eq!(ns.get("plan").await.unwrap().value, json!({"step": 2}));
    assert_eq!(ns.get_ref(&v1).await.unwrap().value, json!({"step": 1}));
    assert_eq!(ns.reference("plan").await.unwrap(), v2);
    let stored = ns.get_version("plan", v2.version).await.unwrap();
    assert_eq!((stored.version, stored.size), (v2.version, 10));
    assert!(stored.created_ms > 1_600_000_000_000, "{}", stored.created_ms);
}

/// `create` writes a key's first version only: of many writers at once,
/// each with its own handle (a process, a host), one wins, the others are
/// told the key exists, and the value stays.
pub async fn create_writes_only_a_first_version_and_exactly_one_of_many_wins(backend: &Backend) {
    let store = backend.store().await;
    let claims = ns(&store, "claims");
    let first = claims.create("run/1", &json!("host-a")).await.unwrap();
    let again = claims.create("run/1", &json!("host-b")).await;
    assert!(matches!(again, Err(StoreError::Exists { ref key }) if key == "run/1"), "{again:?}");
    assert_eq!(claims.get("run/1").await.unwrap().value, json!("host-a"));
    assert_eq!(claims.reference("run/1").await.unwrap(), first);
    assert_eq!(claims.usage().await.unwrap().keys, 1);

    let mut handles = Vec::new();
    for _ in 0..8 {
        handles.push(backend.store().await);
    }
    let writers = handles.into_iter().enumerate().map(|(i, store)| {
        tokio::spawn(async move { Namespace::new(store, "claims").unwrap().create("run/2", &json!(i)).await })
    });
    let mut won = 0;
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => won += 1,
            Err(StoreError::Exists { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(claims.usage().await.unwrap().keys, 2);
}

/// Many creates of one key through one handle at once (on PostgreSQL,
/// several connections of one pool): exactly one wins.
pub async fn concurrent_creates_through_one_pool_have_one_winner(backend: &Backend) {
    let store = backend.store().await;
    for round in 0..5 {
        let key = format!("claim/{round}");
        let writers = (0..16).map(|i| {
            let (claims, key) = (ns(&store, "claims"), key.clone());
            tokio::spawn(async move { (i, claims.create(&key, &json!(i)).await) })
        });
        let mut winners = Vec::new();
        for writer in writers {
            match writer.await.unwrap() {
                (i, Ok(handle)) => winners.push((i, handle)),
                (_, Err(StoreError::Exists { .. })) => {}
                (_, Err(other)) => panic!("{other:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        let (i, handle) = &winners[0];
        assert_eq!(ns(&store, "claims").get(&key).await.unwrap().value, json!(i));
        assert_eq!(ns(&store, "claims").reference(&key).await.unwrap(), *handle);
    }
    assert_eq!(ns(&store, "claims").usage().await.unwrap().keys, 5);
}

pub async fn versions_are_never_reused_after_a_delete(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
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
    let err = ns.get_version("k", u64::MAX).await.unwrap_err();
    assert!(matches!(err, StoreError::VersionNotFound { latest: Some(_), .. }), "{err}");
}

pub async fn namespaces_never_see_each_other(backend: &Backend) {
    let store = backend.store().await;
    let a = ns(&store, "run-a");
    let b = ns(&store, "run-b");
    let handle = a.set("secret", &json!(1)).await.unwrap();
    assert!(matches!(b.get("secret").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(b.get_ref(&handle).await, Err(StoreError::VersionNotFound { latest: None, .. })));
    assert!(b.list("", 10, None).await.unwrap().entries.is_empty());
    assert!(matches!(b.delete("secret").await, Err(StoreError::NotFound { .. })));
    assert_eq!(b.usage().await.unwrap(), NamespaceUsage::default());
    assert_eq!(a.get("secret").await.unwrap().value, json!(1));
}

pub async fn list_pages_through_a_prefix_in_order(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
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
        seen.extend(page.entries.iter().map(|e| (e.key.clone(), e.version, e.size)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let keys: Vec<_> = seen.iter().map(|(k, _, _)| k.clone()).collect();
    assert_eq!(keys, (0..25).map(|i| format!("doc/{i:02}")).collect::<Vec<_>>());
    // The listing shows the latest version of a rewritten key, and its size.
    let latest = ns.reference("doc/05").await.unwrap();
    assert!(seen.contains(&("doc/05".to_owned(), latest.version, 11)), "{seen:?}");

    let all = ns.list("", 1000, None).await.unwrap();
    assert_eq!(all.entries.len(), 28);
    assert!(all.next_cursor.is_none());
}

/// Keys sort by their bytes, not by a locale: upper case before lower,
/// punctuation by its code.
pub async fn list_orders_keys_byte_by_byte(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "order");
    let mut keys = vec!["b", "B", "a", "A", "_x", "-x", ".x", "/x", ":x", "0", "Z9", "a-b", "a_b", "a.b", "ab"];
    for key in &keys {
        ns.set(key, &json!(1)).await.unwrap();
    }
    keys.sort_unstable();
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let page = ns.list("", 4, cursor.as_deref()).await.unwrap();
        listed.extend(page.entries.into_iter().map(|e| e.key));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, keys);
}

pub async fn bad_list_arguments_get_typed_errors(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
    assert!(matches!(ns.list("", 0, None).await, Err(StoreError::InvalidLimit { limit: 0, max: 1000 })));
    assert!(matches!(ns.list("", 1001, None).await, Err(StoreError::InvalidLimit { .. })));
    assert!(matches!(ns.list("a b", 10, None).await, Err(StoreError::InvalidPrefix { .. })));
    assert!(matches!(ns.list("a/", 10, Some("b/1")).await, Err(StoreError::InvalidCursor { .. })));
    assert!(matches!(ns.list("", 10, Some("%")).await, Err(StoreError::InvalidCursor { .. })));
}

pub async fn summarize_describes_shape_size_and_preview(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
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

pub async fn an_over_long_name_is_cut_in_its_error(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
    let huge = "k".repeat(1 << 20);
    let err = ns.set(&huge, &json!(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::InvalidKey { .. }));
    let text = err.to_string();
    assert!(text.len() < 500, "{} bytes", text.len());
    assert!(text.contains(&format!("{} bytes in all", 1 << 20)), "{text}");
    let err = Namespace::new(Arc::clone(&store), &huge).unwrap_err().to_string();
    assert!(err.len() < 500, "{} bytes", err.len());
    let err = ns.list(&huge, 10, None).await.unwrap_err().to_string();
    assert!(err.len() < 500, "{} bytes", err.len());
}

pub async fn bad_keys_and_namespaces_are_refused_and_change_nothing(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
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
        assert!(matches!(Namespace::new(Arc::clone(&store), bad), Err(StoreError::InvalidNamespace { .. })), "{bad:?}");
    }
    let err = ns.set("two words", &json!(1)).await.unwrap_err().to_string();
    assert!(err.contains("' '") && err.contains("A-Z"), "{err}");
}

pub async fn value_limits_are_typed_and_leave_the_store_unchanged(backend: &Backend) {
    let store = backend.open(StoreLimits::default().with_max_value_bytes(100).with_max_depth(3)).await;
    let ns = ns(&store, "run-1");
    let kept = ns.set("k", &json!("small")).await.unwrap();

    let err = ns.set("k", &json!("x".repeat(200))).await.unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { size: 202, max: 100, .. }), "{err}");
    let err = ns.set("k", &json!([[[[1]]]])).await.unwrap_err();
    assert!(matches!(err, StoreError::TooDeep { depth: 4, max: 3, .. }), "{err}");

    assert_eq!(ns.reference("k").await.unwrap(), kept);
    assert_eq!(ns.usage().await.unwrap(), NamespaceUsage::new(1, 7));
}

pub async fn the_default_value_limit_is_16_mib(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "big");
    let just_under = "x".repeat((16 << 20) - 2);
    let handle = ns.set("big", &json!(just_under)).await.unwrap();
    let stored = ns.get_ref(&handle).await.unwrap();
    assert_eq!(stored.size, 16 << 20);
    assert_eq!(stored.value.as_str().map(str::len), Some((16 << 20) - 2));
    let err = ns.set("big", &json!(format!("{just_under}x"))).await.unwrap_err();
    assert!(matches!(err, StoreError::ValueTooLarge { size, max, .. } if size == (16 << 20) + 1 && max == 16 << 20));
}

pub async fn namespace_quotas_are_enforced_per_namespace(backend: &Backend) {
    let store = backend.open(StoreLimits::default().with_max_namespace_bytes(30).with_max_namespace_keys(2)).await;
    let run = ns(&store, "run-1");
    run.set("a", &json!("0123456789")).await.unwrap(); // 12 bytes
    run.set("b", &json!(1)).await.unwrap(); // 1 byte
    let err = run.set("c", &json!(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::TooManyKeys { keys: 2, .. }), "{err}");
    // Overwriting an existing key needs no new key.
    run.set("b", &json!(2)).await.unwrap(); // 14 bytes used
    let err = run.set("a", &json!("0123456789abcdef")).await.unwrap_err();
    assert!(matches!(err, StoreError::NamespaceFull { used: 14, needed: 18, quota: 30, .. }), "{err}");
    let err = run.create("c", &json!(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::TooManyKeys { keys: 2, .. }), "{err}");
    assert_eq!(run.usage().await.unwrap(), NamespaceUsage::new(2, 14));

    // Another namespace has its own quota.
    ns(&store, "run-2").set("c", &json!(1)).await.unwrap();

    // Deleting frees both keys and bytes.
    assert_eq!(run.delete("b").await.unwrap(), 2);
    assert_eq!(run.usage().await.unwrap(), NamespaceUsage::new(1, 12));
    run.set("c", &json!("0123456789abcd")).await.unwrap();
    assert_eq!(run.usage().await.unwrap(), NamespaceUsage::new(2, 28));
}

/// Twenty new keys at once against a quota of five: exactly five are
/// stored, each readable, and the refused ones left nothing behind.
pub async fn quotas_hold_under_concurrent_writers(backend: &Backend) {
    let store = backend.open(StoreLimits::default().with_max_namespace_keys(5)).await;
    let writes = (0..20).map(|i| {
        let run = ns(&store, "run-1");
        tokio::spawn(async move { (i, run.set(&format!("k{i:02}"), &json!(i)).await) })
    });
    let mut stored = Vec::new();
    for write in writes {
        match write.await.unwrap() {
            (i, Ok(handle)) => stored.push((i, handle)),
            (_, Err(StoreError::TooManyKeys { keys: 5, .. })) => {}
            (i, Err(other)) => panic!("write {i}: {other}"),
        }
    }
    let run = ns(&store, "run-1");
    assert_eq!(stored.len(), 5);
    assert_eq!(run.usage().await.unwrap().keys, 5);
    for (i, handle) in stored {
        assert_eq!(run.get_ref(&handle).await.unwrap().value, json!(i));
    }
    assert_eq!(run.list("", 100, None).await.unwrap().entries.len(), 5);
}

pub async fn delete_of_a_missing_key_is_not_found(backend: &Backend) {
    let store = backend.store().await;
    let ns = ns(&store, "run-1");
    let err = ns.delete("nothing").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }));
    assert!(err.to_string().contains("store_list"));
    assert!(matches!(ns.reference("nothing").await, Err(StoreError::NotFound { .. })));
    assert!(matches!(ns.get("nothing").await, Err(StoreError::NotFound { .. })));
}

pub async fn concurrent_tasks_never_lose_an_acknowledged_write(backend: &Backend) {
    let store = backend.store().await;
    let shared = ns(&store, "shared");
    let mut tasks = Vec::new();
    for task in 0..8 {
        let ns = shared.clone();
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
            let stored = shared.get_ref(&handle).await.unwrap();
            assert_eq!(stored.value["i"], json!(i));
            versions.push(handle.version);
        }
    }
    versions.sort_unstable();
    versions.dedup();
    assert_eq!(versions.len(), 400, "every write has its own version");
    assert_eq!(shared.usage().await.unwrap().keys, 80);
}

pub async fn a_store_works_behind_the_trait_object(backend: &Backend) {
    let store = backend.store().await;
    let handle = ns(&store, "dyn").set("k", &json!(true)).await.unwrap();
    assert_eq!(handle, StoreRef { key: "k".into(), version: 1 });
    assert_eq!(store.limits().max_value_bytes, 16 << 20);
}

/// What one handle acknowledged, another (another host) reads at once,
/// and versions keep growing across handles.
pub async fn a_second_handle_sees_every_acknowledged_write(backend: &Backend) {
    let (one, two) = (backend.store().await, backend.store().await);
    let first = ns(&one, "shared").set("k", &json!("from one")).await.unwrap();
    assert_eq!(ns(&two, "shared").get("k").await.unwrap().value, json!("from one"));
    let second = ns(&two, "shared").set("k", &json!("from two")).await.unwrap();
    assert!(second.version > first.version);
    assert_eq!(ns(&one, "shared").reference("k").await.unwrap(), second);
    assert_eq!(ns(&one, "shared").delete("k").await.unwrap(), 2);
    assert!(matches!(ns(&two, "shared").get("k").await, Err(StoreError::NotFound { .. })));
}
