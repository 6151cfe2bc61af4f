//! The PostgreSQL store: the conformance suite, then what only it does
//! (migrations, the server's URL, a server that goes away). Runs when a
//! server can be found (see `support/postgres.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::postgres::{Private, base_url, fresh_url, skip};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use toolreg_store::{PostgresOptions, PostgresStore, StoreError};

mod conformance {
    crate::support::conformance::suite!(crate::support::conformance::Backend::postgres);
}

async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starts_migrate_once_and_restarts_change_nothing() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base).await;
    // Eight replicas starting at once on an empty schema.
    let starts = (0..8).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { PostgresStore::connect(&url).await })
    });
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.unwrap().unwrap());
    }
    let handle = stores[3].namespace("run").unwrap().set("k", &json!(1)).await.unwrap();
    assert_eq!(stores[5].namespace("run").unwrap().get_ref(&handle).await.unwrap().value, json!(1));

    let client = raw(&url).await;
    let version: i32 = client.query_one("SELECT version FROM toolreg_schema", &[]).await.unwrap().get(0);
    assert_eq!(version, 1);
    // A restart finds the schema current and keeps the data.
    let again = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(again.namespace("run").unwrap().reference("k").await.unwrap(), handle);
}

#[tokio::test]
async fn a_schema_from_a_newer_build_is_refused_with_a_clear_message() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base).await;
    PostgresStore::connect(&url).await.unwrap();
    raw(&url).await.execute("UPDATE toolreg_schema SET version = 99", &[]).await.unwrap();
    let err = PostgresStore::connect(&url).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StoreError::Backend { .. }), "{text}");
    assert!(text.contains("newer toolreg") && text.contains("version 99") && text.contains("up to 1"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}

#[tokio::test]
async fn a_bad_or_unreachable_url_is_one_line_at_start_without_the_password() {
    let err = PostgresStore::connect("postgres://user@host:notaport/db").await.unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err}");
    assert!(err.to_string().contains("PostgreSQL URL") && err.to_string().contains("port"), "{err}");

    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://someone:hunter2@127.0.0.1:{port}/db");
    let started = Instant::now();
    let err =
        PostgresStore::connect_with(&url, PostgresOptions::default().with_connect_timeout(Duration::from_secs(2)))
            .await
            .unwrap_err();
    let text = err.to_string();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(matches!(err, StoreError::Unavailable { .. }), "{text}");
    assert!(err.retryable());
    assert!(text.contains(&format!("someone@127.0.0.1:{port}/db")), "{text}");
    // Refused, or reset when another test's server takes the port at once.
    let cause = text.to_lowercase();
    assert!(cause.contains("refused") || cause.contains("reset"), "the cause is given: {text}");
    assert!(!text.contains("hunter2") && !text.contains('\n'), "{text}");

    // A server that is there, and a database that is not.
    let Some(base) = base_url() else { return };
    let missing = base.rsplit_once('/').map(|(server, _)| format!("{server}/no_such_database")).unwrap();
    let err = PostgresStore::connect(&missing).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("database \"no_such_database\" does not exist") && !text.contains('\n'), "{text}");
}

/// The store keeps the same compact JSON text SQLite keeps; a value damaged
/// in the table is reported, not panicked on.
#[tokio::test]
async fn values_are_compact_json_text_and_damage_is_reported() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base).await;
    let run = PostgresStore::connect(&url).await.unwrap().namespace("run-1").unwrap();
    let handle = run.set("k", &json!({"b": [1, 2.5, "x"], "a": null})).await.unwrap();
    let client = raw(&url).await;
    let row = client
        .query_one("SELECT value, size FROM toolreg_store_values WHERE namespace = 'run-1' AND key = 'k'", &[])
        .await
        .unwrap();
    let (text, size): (String, i64) = (row.get(0), row.get(1));
    assert_eq!(text, serde_json::to_string(&json!({"b": [1, 2.5, "x"], "a": null})).unwrap());
    assert_eq!(size, i64::try_from(text.len()).unwrap());

    client.execute("UPDATE toolreg_store_values SET value = '{broken' WHERE key = 'k'", &[]).await.unwrap();
    let err = run.get_ref(&handle).await.unwrap_err();
    assert!(matches!(&err, StoreError::Corrupt { version, .. } if *version == handle.version), "{err}");
}

/// The server going away fails calls promptly with a retryable error; when
/// it is back, the pool reconnects and nothing acknowledged was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_fails_calls_cleanly_and_the_store_recovers() {
    // Its own server, to stop and start.
    let server = match Private::start(false) {
        Ok(server) => server,
        Err(why) => return skip(&why),
    };
    let options = PostgresOptions::default()
        .with_connect_timeout(Duration::from_secs(2))
        .with_wait_timeout(Duration::from_secs(3));
    let store = PostgresStore::connect_with(&server.url, options).await.unwrap();
    let run = store.namespace("run-1").unwrap();
    let kept = run.set("k", &json!("before")).await.unwrap();

    server.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let err = run.set("k", &json!("during")).await.unwrap_err();
        assert!(matches!(err, StoreError::Unavailable { .. }), "{err}");
        assert!(err.retryable());
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        let err = run.get("k").await.unwrap_err();
        assert!(err.retryable(), "{err}");
    }

    server.resume().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let value = loop {
        match run.get("k").await {
            Ok(stored) => break stored,
            Err(e) if e.retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!((value.version, value.value), (kept.version, json!("before")));
    let next = run.set("k", &json!("after")).await.unwrap();
    assert!(next.version > kept.version);
}

/// The URL form the README gives for a Unix socket connects.
#[tokio::test]
async fn a_unix_socket_url_connects() {
    let server = match Private::start(false) {
        Ok(server) => server,
        Err(why) => return skip(&why),
    };
    assert!(PostgresStore::is_url(&server.socket_url));
    let store = PostgresStore::connect(&server.socket_url).await.unwrap();
    assert!(store.target().starts_with("toolreg@/"), "{}", store.target());
    let run = store.namespace("run-1").unwrap();
    run.set("k", &json!(1)).await.unwrap();
    assert_eq!(run.get("k").await.unwrap().value, json!(1));
}

/// A statement held up by a lock another host keeps is cancelled by the
/// server at the statement timeout: a retryable error, and the store works
/// again (its counters intact) once the lock is gone.
#[tokio::test]
async fn a_statement_held_up_past_its_timeout_fails_cleanly() {
    let Some(base) = base_url() else { return };
    let url = fresh_url(&base).await;
    let options = PostgresOptions::default().with_statement_timeout(Duration::from_millis(500));
    let store = PostgresStore::connect_with(&url, options).await.unwrap();
    let run = store.namespace("run-1").unwrap();
    run.set("k", &json!("before")).await.unwrap();

    // Another host holds the namespace's row, in a transaction left open.
    let other = raw(&url).await;
    other
        .batch_execute("BEGIN; SELECT * FROM toolreg_store_namespaces WHERE namespace = 'run-1' FOR UPDATE")
        .await
        .unwrap();
    let started = Instant::now();
    let err = run.set("k", &json!("during")).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }) && err.retryable(), "{err}");
    assert!(err.to_string().contains("statement timeout"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    other.batch_execute("ROLLBACK").await.unwrap();
    run.set("k", &json!("after")).await.unwrap();
    assert_eq!(run.get("k").await.unwrap().value, json!("after"));
    let usage = run.usage().await.unwrap();
    assert_eq!(usage.keys, 1);
}

/// A relay to the server that can be made to stop passing bytes without
/// closing anything: a server that froze, or a network that drops packets.
struct Relay {
    url: String,
    frozen: Arc<AtomicBool>,
}

async fn relay(url: &str) -> Relay {
    // `postgres://user@127.0.0.1:PORT/db`: the same through the relay's port.
    let (head, rest) = url.rsplit_once(':').unwrap();
    let (port, db) = rest.split_once('/').unwrap();
    let upstream = format!("127.0.0.1:{port}");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("{head}:{}/{db}", listener.local_addr().unwrap().port());
    let frozen = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&frozen);
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = TcpStream::connect(&upstream).await else { continue };
            let (from_client, to_client) = inbound.into_split();
            let (from_server, to_server) = outbound.into_split();
            tokio::spawn(pass(from_client, to_server, Arc::clone(&flag)));
            tokio::spawn(pass(from_server, to_client, Arc::clone(&flag)));
        }
    });
    Relay { url, frozen }
}

async fn pass(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, frozen: Arc<AtomicBool>) {
    let mut buffer = vec![0; 16 << 10];
    while let Ok(read @ 1..) = from.read(&mut buffer).await {
        while frozen.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// A server that stops answering mid-statement: the call gives up a little
/// after the statement timeout with a retryable error naming the server,
/// the connection is not reused, and once the server answers again the
/// store does too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_fails_calls_and_the_store_recovers() {
    let Some(base) = base_url() else { return };
    let relay = relay(&fresh_url(&base).await).await;
    let options = PostgresOptions::default()
        .with_statement_timeout(Duration::from_millis(500))
        .with_connect_timeout(Duration::from_secs(1))
        .with_wait_timeout(Duration::from_secs(2));
    let store = PostgresStore::connect_with(&relay.url, options).await.unwrap();
    let run = store.namespace("run-1").unwrap();
    run.set("k", &json!("before")).await.unwrap();

    relay.frozen.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let err = run.get("k").await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }) && err.retryable(), "{err}");
    assert!(err.to_string().contains("no answer within"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(6), "{:?}", started.elapsed());

    relay.frozen.store(false, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(20);
    let value = loop {
        match run.get("k").await {
            Ok(stored) => break stored.value,
            Err(e) if e.retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(value, json!("before"));
}
