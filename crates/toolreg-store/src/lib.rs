//! # toolreg-store
//!
//! The context store: named JSON values an agent keeps outside its context
//! window and hands to sub-agents by reference. Hosts keep their own records
//! here too (MCP tasks, request state, suspended agent runs).
//!
//! - [`ContextStore`] is the backend trait. [`SqliteStore`] (feature
//!   `sqlite`, on by default) is the embedded one: one SQLite file in WAL
//!   mode, or `:memory:`. `PostgresStore` (feature `postgres`) is the one
//!   several hosts share. One conformance suite runs against both, so they
//!   behave alike.
//! - [`Namespace`] is what agents and hosts use: one namespace per agent
//!   run, so concurrent runs never see each other's keys. The model-facing
//!   tools over a namespace (`store_set`, `store_get`, …) are in
//!   `toolreg-builtins`.
//! - Every write makes a new version; a [`StoreRef`] `{key, version}` names
//!   one version for good.
//!
//! A crate that only passes a [`Namespace`] around (an agent, a server)
//! depends on this crate without default features, and compiles no
//! database.
//!
//! ```
//! use serde_json::json;
//! use toolreg_store::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolreg_store::StoreError> {
//! let store = SqliteStore::in_memory().await?;
//! let run = store.namespace("run-42")?;
//! let first = run.set("plan", &json!(["read", "write"])).await?;
//! run.set("plan", &json!(["read", "test", "write"])).await?;
//!
//! // The latest value by key, an exact version by handle.
//! assert_eq!(run.get("plan").await?.value, json!(["read", "test", "write"]));
//! assert_eq!(run.get_ref(&first).await?.value, json!(["read", "write"]));
//!
//! // Other namespaces see nothing.
//! assert!(store.namespace("run-43")?.get("plan").await.is_err());
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;

mod error;
mod namespace;
mod output;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod types;
mod value;

pub use error::StoreError;
pub use namespace::Namespace;
pub use output::OUTPUT_TAG;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};
pub use types::{
    ListEntry, ListPage, ListQuery, MAX_KEY_LEN, MAX_NAMESPACE_LEN, NamespaceName, NamespaceUsage, StoreKey,
    StoreLimits, StoreRef, StoredValue,
};
pub use value::{EncodedValue, JsonType, SUMMARY_MAX_KEYS, SUMMARY_PREVIEW_BYTES, Summary, depth_within};

/// The future every [`ContextStore`] method returns.
///
/// Boxed so the trait stays usable as `Arc<dyn ContextStore>`: a host picks
/// its backend at run time, and the tools do not change with it.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A backend for the context store.
///
/// Inputs arrive checked: keys and namespace names by their types, values
/// already encoded within the size and depth limits ([`EncodedValue`]). A
/// backend enforces what needs its own state, atomically with the write:
/// the namespace quotas of [`StoreLimits`].
///
/// A backend for several agent hosts sharing one store (PostgreSQL, Redis)
/// implements the same methods; the contract each must keep:
/// - a write that returned `Ok` is durable and visible to every later read;
/// - versions only grow within a namespace and are never reused;
/// - a failed write changes nothing.
pub trait ContextStore: Send + Sync + fmt::Debug + 'static {
    /// The limits this store enforces.
    fn limits(&self) -> &StoreLimits;

    /// Store a new version of `key`; returns its handle.
    fn set<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef>;

    /// Store `value` as the first version of `key` only if the key holds
    /// nothing, atomically: of several hosts creating one key at once,
    /// exactly one succeeds and the others get [`StoreError::Exists`]. What
    /// a host claims once (a suspended run's resumption) is a `create`.
    fn create<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef>;

    /// Read the latest version of `key`, or exactly `version`.
    fn get<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredValue>;

    /// The handle of the latest version of `key`, without reading the value.
    fn latest<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, StoreRef>;

    /// One page of keys (latest version of each), in byte order.
    fn list<'a>(&'a self, namespace: &'a NamespaceName, query: ListQuery) -> StoreFuture<'a, ListPage>;

    /// Delete every version of `key`; returns how many there were.
    fn delete<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, u64>;

    /// What the namespace holds, as its quotas count it.
    fn usage<'a>(&'a self, namespace: &'a NamespaceName) -> StoreFuture<'a, NamespaceUsage>;
}

/// Now, in milliseconds since the Unix epoch: how both backends keep times
/// (`created_ms`), for callers that compare their own times with them.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// A count or version read back from the database (never negative there).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
