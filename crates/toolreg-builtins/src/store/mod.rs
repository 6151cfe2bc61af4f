//! The context store: named JSON values an agent keeps outside its context
//! window and hands to sub-agents by reference.
//!
//! - [`ContextStore`] is the backend trait; [`SqliteStore`] is the embedded
//!   default (one SQLite file in WAL mode, or `:memory:`), and
//!   `PostgresStore` (feature `postgres`) the one several hosts share. One
//!   conformance suite runs against both, so they behave alike.
//! - [`Namespace`] is what agents use: one namespace per agent run, so
//!   concurrent runs never see each other's keys. Its [`Namespace::registrations`]
//!   are the six model-facing tools (`store_set`, `store_get`, `store_ref`,
//!   `store_list`, `store_summarize`, `store_delete`).
//! - Every write makes a new version; a [`StoreRef`] `{key, version}` names
//!   one version for good.
//!
//! ```
//! use serde_json::json;
//! use toolreg_builtins::store::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), toolreg_builtins::store::StoreError> {
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
use std::sync::Arc;

use serde_json::Value;
use toolreg::exec::ToolOutput;

mod error;
mod output;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
mod tools;
mod types;
mod value;

pub use error::StoreError;
pub use output::OUTPUT_TAG;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
pub use sqlite::{SqliteOptions, SqliteStore, Synchronous};
pub use tools::{DeleteOutcome, SetOutcome, TOOL_NAMES};
pub use types::{
    Key, ListEntry, ListPage, ListQuery, MAX_KEY_LEN, MAX_NAMESPACE_LEN, NamespaceName, StoreLimits, StoreRef,
    StoredValue, Usage,
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
    fn set<'a>(&'a self, namespace: &'a NamespaceName, key: &'a Key, value: EncodedValue) -> StoreFuture<'a, StoreRef>;

    /// Store `value` as the first version of `key` only if the key holds
    /// nothing, atomically: of several hosts creating one key at once,
    /// exactly one succeeds and the others get [`StoreError::Exists`]. What
    /// a host claims once (a suspended run's resumption) is a `create`.
    fn create<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a Key,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef>;

    /// Read the latest version of `key`, or exactly `version`.
    fn get<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a Key,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredValue>;

    /// The handle of the latest version of `key`, without reading the value.
    fn latest<'a>(&'a self, namespace: &'a NamespaceName, key: &'a Key) -> StoreFuture<'a, StoreRef>;

    /// One page of keys (latest version of each), in byte order.
    fn list<'a>(&'a self, namespace: &'a NamespaceName, query: ListQuery) -> StoreFuture<'a, ListPage>;

    /// Delete every version of `key`; returns how many there were.
    fn delete<'a>(&'a self, namespace: &'a NamespaceName, key: &'a Key) -> StoreFuture<'a, u64>;

    /// What the namespace holds, as its quotas count it.
    fn usage<'a>(&'a self, namespace: &'a NamespaceName) -> StoreFuture<'a, Usage>;
}

/// One namespace of a store: the handle agents and tools work through.
///
/// Cheap to clone. Each method checks its input (key rule, size, depth)
/// before the backend sees it.
#[derive(Clone)]
pub struct Namespace {
    store: Arc<dyn ContextStore>,
    name: NamespaceName,
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Namespace").field("name", &self.name).field("store", &self.store).finish()
    }
}

impl Namespace {
    /// The namespace `name` of `store`.
    pub fn new(store: Arc<dyn ContextStore>, name: &str) -> Result<Self, StoreError> {
        Ok(Namespace { store, name: NamespaceName::new(name)? })
    }

    /// Its name.
    pub fn name(&self) -> &NamespaceName {
        &self.name
    }

    /// The store behind it.
    pub fn store(&self) -> &Arc<dyn ContextStore> {
        &self.store
    }

    /// Store `value` as `key`'s first version, only if the key holds
    /// nothing ([`StoreError::Exists`] otherwise): atomic, so of several
    /// hosts creating one key at once exactly one succeeds.
    pub async fn create(&self, key: &str, value: &Value) -> Result<StoreRef, StoreError> {
        let key = Key::new(key)?;
        let encoded = EncodedValue::encode(&key, value, self.store.limits())?;
        self.store.create(&self.name, &key, encoded).await
    }

    /// Store `value` as a new version of `key`.
    pub async fn set(&self, key: &str, value: &Value) -> Result<StoreRef, StoreError> {
        self.set_sized(key, value).await.map(|(handle, _)| handle)
    }

    /// [`Namespace::set`], also giving the stored size in bytes.
    pub(crate) async fn set_sized(&self, key: &str, value: &Value) -> Result<(StoreRef, u64), StoreError> {
        let key = Key::new(key)?;
        let encoded = EncodedValue::encode(&key, value, self.store.limits())?;
        let size = encoded.size();
        Ok((self.store.set(&self.name, &key, encoded).await?, size))
    }

    /// Store `value` and describe it: the handle and [`Summary`] to give a
    /// model in place of a result too long for its context.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolreg_builtins::store::SqliteStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), toolreg_builtins::store::StoreError> {
    /// let run = SqliteStore::in_memory().await?.namespace("run-42")?;
    /// let rows: Vec<_> = (0..10_000).map(|i| json!({"row": i})).collect();
    /// let (handle, summary) = run.offload("results/call-7", &json!(rows)).await?;
    /// assert_eq!(summary.length, Some(10_000));
    /// assert_eq!(run.get_ref(&handle).await?.value[9_999], json!({"row": 9_999}));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn offload(&self, key: &str, value: &Value) -> Result<(StoreRef, Summary), StoreError> {
        let (handle, size) = self.set_sized(key, value).await?;
        let summary = Summary::of_value(&handle.key, handle.version, size, value);
        Ok((handle, summary))
    }

    /// Store a tool's output — its content blocks (images, documents,
    /// audio, …) and its value, not its host-only metadata — as a new
    /// version of `key`. The handle can then stand for the output: `store_get`
    /// of it returns the blocks, [`StoredValue::output`] reads it back, and
    /// `store_summarize` previews it as the blocks' summaries. Bytes are kept
    /// in base64, so [`StoreLimits::max_value_bytes`] (16 MiB by default)
    /// holds about 12 MiB of them.
    ///
    /// ```
    /// use toolreg::exec::{Content, ToolOutput};
    /// use toolreg_builtins::store::SqliteStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), toolreg_builtins::store::StoreError> {
    /// let run = SqliteStore::in_memory().await?.namespace("run-42")?;
    /// let chart = ToolOutput::from(Content::image(vec![0x89, b'P', b'N', b'G'], "image/png"));
    /// let handle = run.set_output("charts/q3", &chart).await?;
    /// assert_eq!(run.get_ref(&handle).await?.output(), Some(chart));
    /// assert_eq!(run.summarize("charts/q3", None).await?.preview, "[image: image/png, 4 bytes]");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn set_output(&self, key: &str, output: &ToolOutput) -> Result<StoreRef, StoreError> {
        self.set(key, &output::encode(output)).await
    }

    /// The latest version of `key`.
    pub async fn get(&self, key: &str) -> Result<StoredValue, StoreError> {
        let key = Key::new(key)?;
        self.store.get(&self.name, &key, None).await
    }

    /// Exactly `version` of `key`.
    pub async fn get_version(&self, key: &str, version: u64) -> Result<StoredValue, StoreError> {
        let key = Key::new(key)?;
        self.store.get(&self.name, &key, Some(version)).await
    }

    /// The version a handle names.
    pub async fn get_ref(&self, handle: &StoreRef) -> Result<StoredValue, StoreError> {
        self.get_version(&handle.key, handle.version).await
    }

    /// A handle to the latest version of `key`.
    pub async fn reference(&self, key: &str) -> Result<StoreRef, StoreError> {
        let key = Key::new(key)?;
        self.store.latest(&self.name, &key).await
    }

    /// One page of keys starting with `prefix`.
    pub async fn list(&self, prefix: &str, limit: u64, cursor: Option<&str>) -> Result<ListPage, StoreError> {
        let max = self.store.limits().max_list_limit;
        let query = ListQuery::new(prefix, limit, cursor.map(str::to_owned), max)?;
        self.store.list(&self.name, query).await
    }

    /// Type, size, shape and a bounded preview of `key` (latest, or `version`).
    pub async fn summarize(&self, key: &str, version: Option<u64>) -> Result<Summary, StoreError> {
        let key = Key::new(key)?;
        let stored = self.store.get(&self.name, &key, version).await?;
        Ok(Summary::of(&stored))
    }

    /// Delete every version of `key`; returns how many there were.
    pub async fn delete(&self, key: &str) -> Result<u64, StoreError> {
        let key = Key::new(key)?;
        self.store.delete(&self.name, &key).await
    }

    /// What the namespace holds, as its quotas count it.
    pub async fn usage(&self) -> Result<Usage, StoreError> {
        self.store.usage(&self.name).await
    }
}

/// Over-budget results go into the store: with
/// `OutputBudget::new(n).overflow_to(namespace)`, a result longer than the
/// budget is kept whole under `results/<tool>/<call id>` and the model reads
/// a handle and a summary instead of a cut text; `store_get` with the handle
/// returns all of it.
impl toolreg::engine::Overflow for Namespace {
    fn keep<'a>(
        &'a self,
        tool: &'a str,
        call_id: Option<&'a str>,
        value: &'a Value,
    ) -> futures_util::future::BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let key = overflow_key(tool, call_id);
            let (handle, summary) = self.offload(&key, value).await.map_err(|e| e.to_string())?;
            Ok(serde_json::json!({
                "stored": handle,
                "summary": summary,
                "note": "The result was too long to show here; it is kept whole in the context store. \
                         Read it with store_get and this handle.",
            }))
        })
    }
}

/// A store key for a kept result: `results/<tool>/<call id>`, with any
/// character the key rule does not allow written as `_`.
fn overflow_key(tool: &str, call_id: Option<&str>) -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = match call_id {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("call-{}", COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
    };
    let clean = |s: &str| -> String {
        s.chars()
            .take(100)
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') { c } else { '_' })
            .collect()
    };
    format!("results/{}/{}", clean(tool), clean(&id))
}

/// Now, in milliseconds since the Unix epoch: how both backends keep times
/// (`created_ms`), for callers that compare their own times with them.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)).unwrap_or(0)
}

/// A count or version read back from the database (never negative there).
fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
