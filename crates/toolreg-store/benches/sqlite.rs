//! The context store against raw rusqlite on the same file, in the same run.
//!
//! Both sides use the same pragmas (WAL, `synchronous = NORMAL`) and do the
//! same work a caller needs:
//! - get: the latest version of a key by the same indexed query on the same
//!   table, text parsed into a `serde_json::Value`;
//! - set: a new version of a ~100-byte value, encoded from a `Value`,
//!   committed in its own transaction; raw rusqlite inserts into a plain
//!   `(rowid, key, value)` table, the floor of any versioned write, while the
//!   store also checks the namespace's quotas and counts its version.
//!
//! `raw_rusqlite` calls rusqlite inline on the bench thread: the floor.
//! `raw_same_sql` (set only) runs the store's own statements by hand,
//! inline: what versions and quotas cost before any threading.
//! `raw_spawn_blocking` is the same call as an async caller must make it,
//! off its async threads through `spawn_blocking`: the fair
//! comparison for a store whose SQLite work never runs on async threads.
//!
//! Latency is one call at a time. Throughput is 64 calls in flight from one
//! task against 64 calls in a row on the raw connection: the store's readers
//! run in parallel and its writer commits queued writes together.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::future::join_all;
use rusqlite::Connection;
use serde_json::{Value, json};
use toolreg_store::{Namespace, SqliteStore};

const KEYS: usize = 1_000;
const IN_FLIGHT: usize = 64;

fn value(i: usize) -> Value {
    json!({"id": i, "title": format!("note {i}"), "tags": ["a", "b"], "body": "x".repeat(40)})
}

fn raw_get(conn: &Connection, key: &str) -> Value {
    let mut stmt = conn
        .prepare_cached(
            "SELECT value FROM store_values WHERE namespace = ?1 AND key = ?2 ORDER BY version DESC LIMIT 1",
        )
        .unwrap();
    stmt.query_row(["bench", key], |row| Ok(serde_json::from_str::<Value>(row.get_ref(0)?.as_str()?).unwrap())).unwrap()
}

fn raw_set(conn: &Connection, key: &str, value: &Value) {
    let text = serde_json::to_string(value).unwrap();
    let mut stmt = conn.prepare_cached("INSERT INTO raw_values (key, value) VALUES (?1, ?2)").unwrap();
    stmt.execute([key, text.as_str()]).unwrap();
}

/// The store's own write, by hand: the same statements in one transaction,
/// inline. What a caller of rusqlite pays for versions and quotas.
fn raw_same_sql(conn: &Connection, key: &str, value: &Value) {
    let text = serde_json::to_string(value).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (bytes, keys, next, _exists) = conn
        .prepare_cached(
            "SELECT COALESCE(n.bytes, 0), COALESCE(n.keys, 0), COALESCE(n.next_version, 1),
                    EXISTS (SELECT 1 FROM store_values WHERE namespace = ?1 AND key = ?2)
             FROM (SELECT 1) LEFT JOIN store_namespaces n ON n.namespace = ?1",
        )
        .unwrap()
        .query_row(["bench", key], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, i64>(2)?, row.get::<_, bool>(3)?))
        })
        .unwrap();
    conn.prepare_cached(
        "INSERT INTO store_values (namespace, key, version, size, created_ms, value) VALUES (?1, ?2, ?3, ?4, 0, ?5)",
    )
    .unwrap()
    .execute(rusqlite::params!["bench", key, next, text.len() as i64, text])
    .unwrap();
    conn.prepare_cached("UPDATE store_namespaces SET bytes = ?2, keys = ?3, next_version = ?4 WHERE namespace = ?1")
        .unwrap()
        .execute(rusqlite::params!["bench", bytes + text.len() as i64, keys, next + 1])
        .unwrap();
    conn.execute_batch("COMMIT").unwrap();
}

fn bench_store(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let store = rt.block_on(SqliteStore::open(&path)).unwrap();
    let ns: Namespace = store.namespace("bench").unwrap();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("notes/{i:04}")).collect();
    rt.block_on(async {
        for (i, key) in keys.iter().enumerate() {
            ns.set(key, &value(i)).await.unwrap();
        }
    });
    let raw = Connection::open(&path).unwrap();
    raw.busy_timeout(Duration::from_secs(5)).unwrap();
    raw.pragma_update(None, "synchronous", "NORMAL").unwrap();
    raw.execute_batch("CREATE TABLE IF NOT EXISTS raw_values (key TEXT NOT NULL, value TEXT NOT NULL)").unwrap();
    let payload = value(7);
    let shared = Arc::new(Mutex::new(Connection::open(&path).unwrap()));
    shared.lock().unwrap().busy_timeout(Duration::from_secs(5)).unwrap();
    shared.lock().unwrap().pragma_update(None, "synchronous", "NORMAL").unwrap();

    let mut group = c.benchmark_group("store_get");
    let mut i = 0;
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(raw_get(&raw, &keys[i]))
        })
    });
    group.bench_function("raw_spawn_blocking", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            let (conn, key) = (Arc::clone(&shared), keys[i].clone());
            black_box(rt.block_on(rt.spawn_blocking(move || raw_get(&conn.lock().unwrap(), &key))).unwrap())
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(rt.block_on(ns.get(&keys[i])).unwrap())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("store_set");
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            raw_set(&raw, &keys[i], &payload)
        })
    });
    group.bench_function("raw_same_sql", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            raw_same_sql(&raw, &keys[i], &payload)
        })
    });
    group.bench_function("raw_spawn_blocking", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            let (conn, key, payload) = (Arc::clone(&shared), keys[i].clone(), payload.clone());
            rt.block_on(rt.spawn_blocking(move || raw_set(&conn.lock().unwrap(), &key, &payload))).unwrap()
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(rt.block_on(ns.set(&keys[i], &payload)).unwrap())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("store_get_throughput");
    group.throughput(Throughput::Elements(IN_FLIGHT as u64));
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| {
            for n in 0..IN_FLIGHT {
                black_box(raw_get(&raw, &keys[(i + n * 13) % KEYS]));
            }
            i = (i + 1) % KEYS;
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            let gets = (0..IN_FLIGHT).map(|n| ns.get(&keys[(i + n * 13) % KEYS]));
            black_box(rt.block_on(join_all(gets)));
            i = (i + 1) % KEYS;
        })
    });
    group.finish();

    let mut group = c.benchmark_group("store_set_throughput");
    group.throughput(Throughput::Elements(IN_FLIGHT as u64));
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| {
            for n in 0..IN_FLIGHT {
                raw_set(&raw, &keys[(i + n * 13) % KEYS], &payload);
            }
            i = (i + 1) % KEYS;
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            let sets = (0..IN_FLIGHT).map(|n| ns.set(&keys[(i + n * 13) % KEYS], &payload));
            black_box(rt.block_on(join_all(sets)));
            i = (i + 1) % KEYS;
        })
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4))
}

criterion_group! { name = benches; config = config(); targets = bench_store }
criterion_main!(benches);
