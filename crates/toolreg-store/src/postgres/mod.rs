//! [`PostgresStore`]: the shared backend, for several agent hosts or server
//! replicas reading and writing one store.
//!
//! Built on `tokio-postgres` with a `deadpool-postgres` pool rather than
//! `sqlx`: the store runs a handful of fixed statements, which the pool
//! prepares once per connection (`prepare_cached`); `sqlx` would bring a
//! second SQL toolkit, macros and its own runtime glue for no gain here, and
//! `tokio-postgres` is the driver the raw baseline in the benches uses, so
//! the comparison measures only what this module adds.

use crate::{now_ms, to_u64};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::{Config, NoTls, Row};

use super::{
    ContextStore, EncodedValue, ListEntry, ListPage, ListQuery, Namespace, NamespaceName, NamespaceUsage, StoreError,
    StoreFuture, StoreKey, StoreLimits, StoreRef, StoredValue,
};

mod errors;
mod sql;

use errors::{describe_target, one_line, pg, pool_error};

/// How a [`PostgresStore`] connects.
///
/// ```
/// use std::time::Duration;
/// use toolreg_store::{PostgresOptions, StoreLimits};
///
/// let options = PostgresOptions::default()
///     .with_pool_size(32)
///     .with_connect_timeout(Duration::from_secs(2))
///     .with_limits(StoreLimits::default().with_max_namespace_keys(1_000));
/// assert_eq!(options.pool_size, 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// Limits on keys, values and namespaces.
    pub limits: StoreLimits,
    /// Connections the pool keeps open at most (default 16).
    pub pool_size: usize,
    /// How long opening one connection may take (default 5 s), unless the
    /// URL sets `connect_timeout` itself.
    pub connect_timeout: Duration,
    /// How long a call waits for a free connection (default 10 s) before
    /// failing with [`StoreError::Unavailable`].
    pub wait_timeout: Duration,
    /// How long one statement may run (default 30 s): the server cancels it
    /// past this (`statement_timeout`, unless the URL's `options` set it),
    /// and a server that stops answering altogether is given up on a little
    /// later. Either way the call fails with [`StoreError::Unavailable`].
    pub statement_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            limits: StoreLimits::default(),
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            wait_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresOptions {
    /// Set the limits.
    pub fn with_limits(mut self, limits: StoreLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the most connections the pool opens (at least 1).
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Set how long opening a connection may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Set how long a call waits for a free connection.
    pub fn with_wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// Set how long one statement may run.
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }
}

/// The context store on PostgreSQL: what several hosts share.
///
/// It behaves exactly as [`SqliteStore`](super::SqliteStore) does — one
/// conformance suite runs against both — with these differences of place:
/// - [`PostgresStore::connect`] takes a URL (`postgres://user@host/db`,
///   `postgresql://…`, or `host=… dbname=…`), connects once to check it,
///   and migrates the schema: idempotently, under a transaction-scoped
///   advisory lock, so replicas starting at once do not race. A database
///   written by a newer schema version is refused with an error saying so.
/// - Each write is one statement (a PL/pgSQL function) that first locks
///   the namespace's counter row: quotas hold exactly and
///   [`ContextStore::create`] claims a key once across every host.
/// - When the server goes away, calls fail with
///   [`StoreError::Unavailable`] (retryable) instead of hanging past the
///   pool's wait timeout; the pool drops dead connections and opens new
///   ones when the server is back. A statement that runs past
///   [`PostgresOptions::statement_timeout`] (a lock held elsewhere, a
///   server that froze) fails the same way.
/// - Connections are unencrypted (`NoTls`): reach the server over a Unix
///   socket, a private network, or a TLS-terminating proxy.
///
/// Its tables are `toolreg_store_values`, `toolreg_store_namespaces` and
/// `toolreg_schema`, in the connection's `search_path` (so
/// `?options=-c%20search_path%3Dmy_schema` in the URL puts them elsewhere).
///
/// ```no_run
/// use serde_json::json;
/// use toolreg_store::PostgresStore;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), toolreg_store::StoreError> {
/// let store = PostgresStore::connect("postgres://toolreg@db.internal/toolreg").await?;
/// let run = store.namespace("run-42")?;
/// let handle = run.set("plan", &json!(["read", "write"])).await?;
/// assert_eq!(run.get_ref(&handle).await?.value, json!(["read", "write"]));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    limits: StoreLimits,
    target: String,
    /// How long a statement's answer is awaited: the statement timeout and
    /// [`ANSWER_GRACE`].
    answer_timeout: Duration,
}

/// How much longer than the statement timeout an answer is awaited before
/// the server is taken for gone (it cancels a statement itself at the
/// timeout; one that does not answer at all has frozen or vanished).
const ANSWER_GRACE: Duration = Duration::from_secs(2);

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore").field("target", &self.inner.target).finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Whether `location` is a PostgreSQL URL (`postgres://` or
    /// `postgresql://`) rather than a file path.
    ///
    /// ```
    /// use toolreg_store::PostgresStore;
    ///
    /// assert!(PostgresStore::is_url("postgres://toolreg@localhost/toolreg"));
    /// assert!(!PostgresStore::is_url("./store.db"));
    /// ```
    pub fn is_url(location: &str) -> bool {
        location.starts_with("postgres://") || location.starts_with("postgresql://")
    }

    /// Connect with default options and migrate the schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connect and migrate the schema.
    ///
    /// A URL that does not parse, a server that cannot be reached, a login
    /// that is refused, or a schema from a newer build is an error here, in
    /// one line that names the server but never the password.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let mut config =
            Config::from_str(url).map_err(|e| StoreError::backend("read the PostgreSQL URL", one_line(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("toolreg");
        }
        let given = config.get_options().unwrap_or_default().to_owned();
        if !given.contains("statement_timeout") {
            let millis = options.statement_timeout.as_millis().max(1);
            config.options(format!("{given} -c statement_timeout={millis}").trim_start());
        }
        let target = describe_target(&config);
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.wait_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|e| StoreError::backend("set up the connection pool", e.to_string()))?;
        let answer_timeout = options.statement_timeout + ANSWER_GRACE;
        let store = PostgresStore { inner: Arc::new(Inner { pool, limits: options.limits, target, answer_timeout }) };
        store.migrate().await.map_err(|e| store.at_start(e))?;
        Ok(store)
    }

    /// The namespace `name` of this store.
    pub fn namespace(&self, name: &str) -> Result<Namespace, StoreError> {
        Namespace::new(Arc::new(self.clone()), name)
    }

    /// The server and database, as `user@host:port/dbname` (never the
    /// password): for messages and logs.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// An error at start, saying which server it was about.
    fn at_start(&self, error: StoreError) -> StoreError {
        let target = &self.inner.target;
        match error {
            StoreError::Unavailable { reason, .. } => {
                StoreError::Unavailable { operation: "connect to PostgreSQL", reason: format!("{target}: {reason}") }
            }
            StoreError::Backend { operation, source } => {
                StoreError::backend(operation, format!("{target}: {}", one_line(&*source)))
            }
            other => other,
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.inner.pool.get().await.map_err(pool_error)
    }

    /// Create or upgrade the tables: one migrating host at a time, under an
    /// advisory lock that the transaction's end releases even if this
    /// process dies halfway.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(pg("begin the migration"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&sql::MIGRATION_LOCK])
            .await
            .map_err(pg("take the migration lock"))?;
        tx.batch_execute(sql::SCHEMA_TABLE).await.map_err(pg("create the schema table"))?;
        let found: i32 = tx
            .query_opt("SELECT version FROM toolreg_schema WHERE id = 1", &[])
            .await
            .map_err(pg("read the schema version"))?
            .map(|row| row.get(0))
            .unwrap_or(0);
        if found > sql::SCHEMA_VERSION {
            return Err(StoreError::backend(
                "open the store",
                format!(
                    "the database was written by a newer toolreg (store schema version {found}; this build knows \
                     versions up to {}): upgrade toolreg to use it",
                    sql::SCHEMA_VERSION
                ),
            ));
        }
        if found == sql::SCHEMA_VERSION {
            return Ok(());
        }
        for step in sql::MIGRATIONS.iter().skip(usize::try_from(found).unwrap_or(0)) {
            tx.batch_execute(step).await.map_err(pg("migrate the schema"))?;
        }
        tx.execute(
            "INSERT INTO toolreg_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = $1",
            &[&sql::SCHEMA_VERSION],
        )
        .await
        .map_err(pg("record the schema version"))?;
        tx.commit().await.map_err(pg("commit the migration"))
    }

    async fn query_opt(
        &self,
        operation: &'static str,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        let client = self.client().await?;
        self.answered(client, operation, async |client| {
            let statement = client.prepare_cached(statement).await?;
            client.query_opt(&statement, params).await
        })
        .await
    }

    async fn query(
        &self,
        operation: &'static str,
        statement: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let client = self.client().await?;
        self.answered(client, operation, async |client| {
            let statement = client.prepare_cached(statement).await?;
            client.query(&statement, params).await
        })
        .await
    }

    /// Run `work` on `client`, awaiting its answer no longer than the
    /// answer timeout. A connection whose answer never came is not given
    /// back to the pool: whatever it was waiting for would answer the next
    /// statement sent on it.
    async fn answered<T>(
        &self,
        client: deadpool_postgres::Object,
        operation: &'static str,
        work: impl AsyncFnOnce(&deadpool_postgres::Object) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.inner.answer_timeout, work(&client)).await {
            Ok(answer) => answer.map_err(pg(operation)),
            Err(_) => {
                drop(deadpool_postgres::Object::take(client));
                Err(StoreError::Unavailable {
                    operation,
                    reason: format!(
                        "{}: no answer within {} s (the server froze or the network dropped the connection)",
                        self.inner.target,
                        self.inner.answer_timeout.as_secs()
                    ),
                })
            }
        }
    }

    async fn write(
        &self,
        namespace: &NamespaceName,
        key: &StoreKey,
        value: EncodedValue,
        if_absent: bool,
    ) -> Result<StoreRef, StoreError> {
        let limits = &self.inner.limits;
        let size = i64::try_from(value.size()).unwrap_or(i64::MAX);
        let (max_bytes, max_keys) = (clamp(limits.max_namespace_bytes), clamp(limits.max_namespace_keys));
        let row = self
            .query_opt(
                "write the value",
                sql::SET,
                &[
                    &namespace.as_str(),
                    &key.as_str(),
                    &value.as_str(),
                    &size,
                    &now_ms(),
                    &max_bytes,
                    &max_keys,
                    &if_absent,
                ],
            )
            .await?
            .ok_or_else(|| StoreError::backend("write the value", "the write returned no row"))?;
        let outcome: &str = row.try_get(0).map_err(pg("write the value"))?;
        let (version, used, keys): (i64, i64, i64) = (row.get(1), row.get(2), row.get(3));
        match outcome {
            "ok" => Ok(StoreRef { key: key.as_str().to_owned(), version: to_u64(version) }),
            "exists" => Err(StoreError::Exists { key: key.as_str().to_owned() }),
            "full" => Err(StoreError::NamespaceFull {
                namespace: namespace.as_str().to_owned(),
                used: to_u64(used),
                needed: value.size(),
                quota: limits.max_namespace_bytes,
            }),
            "too_many_keys" => {
                Err(StoreError::TooManyKeys { namespace: namespace.as_str().to_owned(), keys: to_u64(keys) })
            }
            other => Err(StoreError::backend("write the value", format!("unexpected outcome `{other}`"))),
        }
    }

    async fn latest_version(&self, namespace: &NamespaceName, key: &StoreKey) -> Result<Option<u64>, StoreError> {
        let row = self.query_opt("look up the key", sql::LATEST, &[&namespace.as_str(), &key.as_str()]).await?;
        let latest: Option<i64> = match row {
            Some(row) => row.try_get(0).map_err(pg("look up the key"))?,
            None => None,
        };
        Ok(latest.map(to_u64))
    }

    async fn read(
        &self,
        namespace: &NamespaceName,
        key: &StoreKey,
        version: Option<u64>,
    ) -> Result<StoredValue, StoreError> {
        let (ns, k) = (namespace.as_str(), key.as_str());
        let row = match version {
            None => self.query_opt("read the value", sql::GET_LATEST, &[&ns, &k]).await?,
            Some(version) => match i64::try_from(version) {
                Ok(v) => self.query_opt("read the value", sql::GET_VERSION, &[&ns, &k, &v]).await?,
                Err(_) => None,
            },
        };
        let Some(row) = row else {
            return match version {
                None => Err(StoreError::NotFound { key: k.to_owned() }),
                Some(version) => {
                    let latest = self.latest_version(namespace, key).await?;
                    Err(StoreError::VersionNotFound { key: k.to_owned(), version, latest })
                }
            };
        };
        let (v, size, created_ms): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        let text: &str = row.try_get(3).map_err(pg("read the value"))?;
        let value = serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            key: k.to_owned(),
            version: to_u64(v),
            reason: e.to_string(),
        })?;
        Ok(StoredValue::new(k.to_owned(), to_u64(v), to_u64(size), created_ms, value))
    }

    async fn list_keys(&self, namespace: &NamespaceName, query: ListQuery) -> Result<ListPage, StoreError> {
        let limit = usize::try_from(query.limit).unwrap_or(usize::MAX);
        let fetch = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
        let after = query.cursor.as_deref().unwrap_or("");
        let upper = query.upper_bound();
        let rows = self
            .query("list the keys", sql::LIST, &[&namespace.as_str(), &query.prefix, &upper, &after, &fetch])
            .await?;
        let mut entries = rows
            .iter()
            .map(|row| {
                let key: String = row.try_get(0)?;
                let (version, size, created_ms): (i64, i64, i64) = (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                Ok(ListEntry::new(key, to_u64(version), to_u64(size), created_ms))
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(pg("list the keys"))?;
        let next_cursor = if entries.len() > limit {
            entries.truncate(limit);
            entries.last().map(|e| e.key.clone())
        } else {
            None
        };
        Ok(ListPage::new(entries, next_cursor))
    }

    async fn remove(&self, namespace: &NamespaceName, key: &StoreKey) -> Result<u64, StoreError> {
        let row = self.query_opt("delete the key", sql::DELETE, &[&namespace.as_str(), &key.as_str()]).await?;
        let count: i64 = match row {
            Some(row) => row.try_get(0).map_err(pg("delete the key"))?,
            None => 0,
        };
        if count == 0 {
            return Err(StoreError::NotFound { key: key.as_str().to_owned() });
        }
        Ok(to_u64(count))
    }

    async fn namespace_usage(&self, namespace: &NamespaceName) -> Result<NamespaceUsage, StoreError> {
        let row = self.query_opt("read the namespace", sql::USAGE, &[&namespace.as_str()]).await?;
        Ok(match row {
            Some(row) => {
                let (keys, bytes): (i64, i64) = (row.get(0), row.get(1));
                NamespaceUsage::new(to_u64(keys), to_u64(bytes))
            }
            None => NamespaceUsage::default(),
        })
    }
}

impl ContextStore for PostgresStore {
    fn limits(&self) -> &StoreLimits {
        &self.inner.limits
    }

    fn set<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef> {
        Box::pin(self.write(namespace, key, value, false))
    }

    fn create<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef> {
        Box::pin(self.write(namespace, key, value, true))
    }

    fn get<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredValue> {
        Box::pin(self.read(namespace, key, version))
    }

    fn latest<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, StoreRef> {
        Box::pin(async move {
            match self.latest_version(namespace, key).await? {
                Some(version) => Ok(StoreRef { key: key.as_str().to_owned(), version }),
                None => Err(StoreError::NotFound { key: key.as_str().to_owned() }),
            }
        })
    }

    fn list<'a>(&'a self, namespace: &'a NamespaceName, query: ListQuery) -> StoreFuture<'a, ListPage> {
        Box::pin(self.list_keys(namespace, query))
    }

    fn delete<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, u64> {
        Box::pin(self.remove(namespace, key))
    }

    fn usage<'a>(&'a self, namespace: &'a NamespaceName) -> StoreFuture<'a, NamespaceUsage> {
        Box::pin(self.namespace_usage(namespace))
    }
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
