//! The context store on PostgreSQL against raw `tokio-postgres` on the same
//! tables, in the same run, over loopback TCP.
//!
//! The server is the one `TOOLREG_TEST_POSTGRES_URL` names, or a private
//! one started from the PostgreSQL binaries as the tests start it (with
//! `fsync` on, as a real server runs); with neither the bench says so and
//! measures nothing.
//!
//! - get: the latest version of one of 1,000 keys; raw runs the store's
//!   own prepared query on one dedicated connection and parses the text into
//!   a `serde_json::Value`, as the store does.
//! - set: a new version of a ~100-byte value, encoded from a `Value`, in its
//!   own transaction. `raw_insert` is one prepared `INSERT` of a row into the
//!   same table (its version from a local counter, in a namespace of its
//!   own): the floor of any versioned write, with no quota and no counters.
//!   `raw_same_sql` calls the store's own write function on one dedicated
//!   connection: what the store pays for versions and quotas, without its
//!   pool, trait object or checks.
//!
//! The store goes through its pool (`deadpool-postgres`), the boxed trait
//! future, and its key and value checks; latency is one call at a time.

#[path = "../tests/it/support/postgres.rs"]
mod pg;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::future::join_all;
use serde_json::{Value, json};
use toolreg_store::{Namespace, PostgresStore};

const KEYS: usize = 1_000;
const IN_FLIGHT: usize = 16;

const GET_LATEST: &str = "SELECT version, size, created_ms, value FROM toolreg_store_values \
                          WHERE namespace = $1 AND key = $2 ORDER BY version DESC LIMIT 1";
const INSERT: &str = "INSERT INTO toolreg_store_values (namespace, key, version, size, created_ms, value) \
                      VALUES ('raw', $1, $2, $3, 0, $4)";
const SAME_SQL: &str = "SELECT out_outcome, out_version FROM \
                        toolreg_store_set('raw-same', $1, $2, $3, 0, 9223372036854775807, 9223372036854775807, false)";

fn value(i: usize) -> Value {
    json!({"id": i, "title": format!("note {i}"), "tags": ["a", "b"], "body": "x".repeat(40)})
}

fn bench_postgres(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Kept alive for the whole run when it is ours.
    let (url, _server) = match std::env::var(pg::URL_VAR).ok().filter(|u| !u.is_empty()) {
        Some(url) => (url, None),
        None => match pg::Private::start(true) {
            Ok(server) => (server.url.clone(), Some(server)),
            Err(why) => {
                eprintln!("skipped: the PostgreSQL store bench ({why}); set {}=postgres://… to run it", pg::URL_VAR);
                return;
            }
        },
    };
    let url = rt.block_on(pg::fresh_url(&url));
    let store = rt.block_on(PostgresStore::connect(&url)).unwrap();
    let ns: Namespace = store.namespace("bench").unwrap();
    let keys: Vec<String> = (0..KEYS).map(|i| format!("notes/{i:04}")).collect();
    rt.block_on(async {
        for (i, key) in keys.iter().enumerate() {
            ns.set(key, &value(i)).await.unwrap();
        }
    });
    let raw = rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
    });
    let (get, insert, same) = rt.block_on(async {
        (
            raw.prepare(GET_LATEST).await.unwrap(),
            raw.prepare(INSERT).await.unwrap(),
            raw.prepare(SAME_SQL).await.unwrap(),
        )
    });
    let raw_get = |key: &str| {
        let row = rt.block_on(raw.query_one(&get, &[&"bench", &key])).unwrap();
        let text: &str = row.get(3);
        serde_json::from_str::<Value>(text).unwrap()
    };
    let payload = value(7);
    let mut next_raw_version = 0i64;
    let mut i = 0;

    let mut group = c.benchmark_group("postgres_get");
    group.bench_function("raw_tokio_postgres", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(raw_get(&keys[i]))
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(rt.block_on(ns.get(&keys[i])).unwrap())
        })
    });
    group.finish();

    let mut group = c.benchmark_group("postgres_set");
    group.bench_function("raw_insert", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            next_raw_version += 1;
            let text = serde_json::to_string(&payload).unwrap();
            let size = text.len() as i64;
            rt.block_on(raw.execute(&insert, &[&keys[i], &next_raw_version, &size, &text])).unwrap()
        })
    });
    group.bench_function("raw_same_sql", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            let text = serde_json::to_string(&payload).unwrap();
            let size = text.len() as i64;
            black_box(rt.block_on(raw.query_one(&same, &[&keys[i], &text, &size])).unwrap())
        })
    });
    group.bench_function("store", |b| {
        b.iter(|| {
            i = (i + 1) % KEYS;
            black_box(rt.block_on(ns.set(&keys[i], &payload)).unwrap())
        })
    });
    group.finish();

    // Calls in flight: the store spreads them over its pool's connections;
    // raw pipelines them on its one connection.
    let mut group = c.benchmark_group("postgres_get_throughput");
    group.throughput(Throughput::Elements(IN_FLIGHT as u64));
    group.bench_function("raw_tokio_postgres", |b| {
        b.iter(|| {
            let gets = (0..IN_FLIGHT).map(|n| {
                let key = &keys[(i + n * 13) % KEYS];
                let (raw, get) = (&raw, &get);
                async move { raw.query_one(get, &[&"bench", key]).await }
            });
            black_box(rt.block_on(join_all(gets)));
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
}

fn config() -> Criterion {
    Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4))
}

criterion_group! { name = benches; config = config(); targets = bench_postgres }
criterion_main!(benches);
