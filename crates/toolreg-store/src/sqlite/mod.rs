//! [`SqliteStore`]: the embedded default backend, one SQLite file in WAL mode.
//!
//! No SQLite call runs on the caller's thread. One writer thread owns the
//! write connection and commits whatever writes are queued in one
//! transaction (group commit), each write in its own savepoint so a refused
//! write leaves the others alone; no caller hears `Ok` before the commit.
//! Reads run on a few reader threads with their own connections, which WAL
//! lets read while the writer writes. An in-memory store has one connection,
//! so its reads queue on the writer thread.
//!
//! Several processes may open one file: every write transaction starts with
//! `BEGIN IMMEDIATE`, and a writer waits out another's lock for the busy
//! timeout before reporting [`StoreError::Busy`].

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};
use tokio::sync::oneshot;

use super::{
    ContextStore, EncodedValue, ListPage, ListQuery, Namespace, NamespaceName, NamespaceUsage, StoreError, StoreFuture,
    StoreKey, StoreLimits, StoreRef, StoredValue,
};

mod sql;
use sql::{SCHEMA, WriteMode, delete_key, get_value, latest_version, list_keys, map_err, set_value, sql, usage};

/// How many queued writes one transaction commits at most.
const MAX_BATCH: usize = 256;

/// SQLite's `synchronous` setting: what a committed write survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Synchronous {
    /// Survives the process being killed at any moment (`kill -9`, a
    /// crash); a power loss or OS crash may take back the last commits. The
    /// usual choice for WAL mode.
    #[default]
    Normal,
    /// Also survives power loss: every commit waits for `fsync`.
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// How a [`SqliteStore`] opens its file.
///
/// ```
/// use std::time::Duration;
/// use toolreg_store::{SqliteOptions, StoreLimits, Synchronous};
///
/// let options = SqliteOptions::default()
///     .with_synchronous(Synchronous::Full)
///     .with_busy_timeout(Duration::from_secs(10))
///     .with_limits(StoreLimits::default().with_max_namespace_keys(1_000));
/// assert_eq!(options.readers, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Limits on keys, values and namespaces.
    pub limits: StoreLimits,
    /// What a committed write survives (default [`Synchronous::Normal`]).
    pub synchronous: Synchronous,
    /// How long a write waits for another process's lock (default 5 s).
    pub busy_timeout: Duration,
    /// Reader threads for a file store (default 2; at least 1).
    pub readers: usize,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            limits: StoreLimits::default(),
            synchronous: Synchronous::default(),
            busy_timeout: Duration::from_secs(5),
            readers: 2,
        }
    }
}

impl SqliteOptions {
    /// Set the limits.
    pub fn with_limits(mut self, limits: StoreLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the durability of a commit.
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Set the busy timeout.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Set the number of reader threads.
    pub fn with_readers(mut self, readers: usize) -> Self {
        self.readers = readers.max(1);
        self
    }
}

/// The context store on SQLite: one file in WAL mode, or `:memory:`.
///
/// Cheap to clone; the worker threads stop when the last clone is dropped.
/// Opening happens on the worker threads too, so `open` is `async`.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Sender<Job>,
    /// `None` for `:memory:`, whose one connection is the writer's.
    readers: Option<Sender<ReadJob>>,
    limits: StoreLimits,
    location: Option<PathBuf>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let location = match &self.inner.location {
            Some(path) => path.display().to_string(),
            None => ":memory:".to_owned(),
        };
        f.debug_struct("SqliteStore").field("location", &location).finish_non_exhaustive()
    }
}

type ReadJob = Box<dyn FnOnce(&Connection) + Send>;

enum Job {
    Write(Box<dyn PendingWrite>),
    Read(ReadJob),
}

/// A queued write: run inside the batch's transaction, answered after it.
trait PendingWrite: Send {
    /// Apply the write; `false` if it failed (and must be rolled back).
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Answer the caller: with the write's own outcome once committed, or
    /// with the commit's failure.
    fn answer(self: Box<Self>, commit: Result<(), &rusqlite::Error>);
}

type WriteOp<T> = Box<dyn FnOnce(&Connection) -> Result<T, StoreError> + Send>;

struct Write<T> {
    op: Option<WriteOp<T>>,
    outcome: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T: Send + 'static> PendingWrite for Write<T> {
    fn apply(&mut self, conn: &Connection) -> bool {
        let outcome = match self.op.take() {
            Some(op) => catch_unwind(AssertUnwindSafe(|| op(conn)))
                .unwrap_or_else(|_| Err(StoreError::backend("write", "the write panicked"))),
            None => Err(StoreError::backend("write", "the write ran twice")),
        };
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn answer(self: Box<Self>, commit: Result<(), &rusqlite::Error>) {
        let result = match (commit, self.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err(StoreError::backend("write", "the write never ran")),
            // A write refused on its own account keeps its reason.
            (Err(_), Some(Err(own))) => Err(own),
            (Err(e), _) => Err(map_err("commit", e)),
        };
        // The caller may have stopped waiting; the write stands regardless.
        let _ = self.reply.send(result);
    }
}

impl SqliteStore {
    /// Open (or create) the store in the file at `path`, with default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// A store that lives in memory and ends with the last clone: for tests.
    pub async fn in_memory() -> Result<Self, StoreError> {
        Self::in_memory_with(SqliteOptions::default()).await
    }

    /// An in-memory store with `options` (its limits apply; it has no readers).
    pub async fn in_memory_with(options: SqliteOptions) -> Result<Self, StoreError> {
        Self::start(None, options).await
    }

    /// Open (or create) the store in the file at `path`.
    ///
    /// A file made here is readable and writable by its owner only (0600 on
    /// Unix), and so are the `-wal` and `-shm` files beside it, which SQLite
    /// creates with the database file's mode: the store holds other
    /// clients' task results and suspended transcripts. An existing file
    /// keeps its mode.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        create_private(path).map_err(|e| StoreError::backend("create the database file", e))?;
        Self::start(Some(path.to_path_buf()), options).await
    }

    async fn start(location: Option<PathBuf>, options: SqliteOptions) -> Result<Self, StoreError> {
        let (writer, jobs) = mpsc::channel::<Job>();
        let (ready, opened) = oneshot::channel();
        let writer_options = options.clone();
        let writer_location = location.clone();
        thread::Builder::new()
            .name("toolreg-store-writer".into())
            .spawn(move || {
                let conn = match open_writer(writer_location.as_deref(), &writer_options) {
                    Ok(conn) => conn,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                if ready.send(Ok(())).is_ok() {
                    writer_loop(&conn, &jobs);
                }
            })
            .map_err(|e| StoreError::backend("start the writer thread", e))?;
        opened.await.map_err(|_| StoreError::Closed)??;

        let readers = match &location {
            Some(path) => Some(start_readers(path, &options).await?),
            None => None,
        };
        let inner = Inner { writer, readers, limits: options.limits, location };
        Ok(SqliteStore { inner: Arc::new(inner) })
    }

    /// The namespace `name` of this store.
    pub fn namespace(&self, name: &str) -> Result<Namespace, StoreError> {
        Namespace::new(Arc::new(self.clone()), name)
    }

    /// The file behind the store, `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.inner.location.as_deref()
    }

    fn write<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let (reply, answer) = oneshot::channel();
        let job = Job::Write(Box::new(Write { op: Some(Box::new(op)), outcome: None, reply }));
        let sent = self.inner.writer.send(job).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(StoreError::Closed);
            }
            answer.await.map_err(|_| StoreError::Closed)?
        })
    }

    fn read<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let (reply, answer) = oneshot::channel();
        let job: ReadJob = Box::new(move |conn| {
            let result = catch_unwind(AssertUnwindSafe(|| op(conn)))
                .unwrap_or_else(|_| Err(StoreError::backend("read", "the read panicked")));
            let _ = reply.send(result);
        });
        let sent = match &self.inner.readers {
            Some(readers) => readers.send(job).is_ok(),
            None => self.inner.writer.send(Job::Read(job)).is_ok(),
        };
        Box::pin(async move {
            if !sent {
                return Err(StoreError::Closed);
            }
            answer.await.map_err(|_| StoreError::Closed)?
        })
    }
}

/// Run `step` until it stops reporting a busy database or `timeout` passes.
/// Needed where SQLite returns `SQLITE_BUSY` without calling the busy
/// handler: switching to WAL and creating the schema while another process
/// does the same.
fn retry_busy<T>(timeout: Duration, mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match step() {
            Err(e)
                if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
                    && Instant::now() < deadline =>
            {
                thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Make an empty file at `path`, owner-only, unless something is there (an
/// empty file is an empty SQLite database). SQLite would make it with the
/// process's umask, 0644 commonly.
fn create_private(path: &Path) -> std::io::Result<()> {
    if path == Path::new(":memory:") {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn open_connection(location: Option<&Path>, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let conn = match location {
        Some(path) => Connection::open(path),
        None => Connection::open_in_memory(),
    }
    .map_err(sql("open the database"))?;
    conn.busy_timeout(options.busy_timeout).map_err(sql("set the busy timeout"))?;
    Ok(conn)
}

fn open_writer(location: Option<&Path>, options: &SqliteOptions) -> Result<Connection, StoreError> {
    let conn = open_connection(location, options)?;
    if location.is_some() {
        let mode: String =
            retry_busy(options.busy_timeout, || conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)))
                .map_err(sql("switch to WAL mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::backend("switch to WAL mode", format!("the file stays in `{mode}` mode")));
        }
    }
    conn.pragma_update(None, "synchronous", options.synchronous.pragma()).map_err(sql("set synchronous"))?;
    retry_busy(options.busy_timeout, || {
        conn.execute_batch(&format!("BEGIN IMMEDIATE; {SCHEMA} COMMIT;")).inspect_err(|_| {
            let _ = conn.execute_batch("ROLLBACK");
        })
    })
    .map_err(sql("create the tables"))?;
    Ok(conn)
}

async fn start_readers(path: &Path, options: &SqliteOptions) -> Result<Sender<ReadJob>, StoreError> {
    let (sender, jobs) = mpsc::channel::<ReadJob>();
    let jobs = Arc::new(Mutex::new(jobs));
    for _ in 0..options.readers.max(1) {
        let (ready, opened) = oneshot::channel();
        let (jobs, path, options) = (Arc::clone(&jobs), path.to_path_buf(), options.clone());
        thread::Builder::new()
            .name("toolreg-store-reader".into())
            .spawn(move || {
                let conn = open_connection(Some(&path), &options).and_then(|conn| {
                    conn.pragma_update(None, "query_only", true).map_err(sql("make a reader read-only"))?;
                    Ok(conn)
                });
                match conn {
                    Ok(conn) => {
                        if ready.send(Ok(())).is_ok() {
                            reader_loop(&conn, &jobs);
                        }
                    }
                    Err(e) => {
                        let _ = ready.send(Err(e));
                    }
                }
            })
            .map_err(|e| StoreError::backend("start a reader thread", e))?;
        opened.await.map_err(|_| StoreError::Closed)??;
    }
    Ok(sender)
}

fn reader_loop(conn: &Connection, jobs: &Mutex<Receiver<ReadJob>>) {
    loop {
        // The lock is held only while waiting for the next job.
        let job = match jobs.lock() {
            Ok(jobs) => jobs.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(conn),
            Err(_) => return,
        }
    }
}

fn writer_loop(conn: &Connection, jobs: &Receiver<Job>) {
    let mut batch: Vec<Box<dyn PendingWrite>> = Vec::new();
    while let Ok(first) = jobs.recv() {
        let mut next = Some(first);
        while let Some(job) = next.take() {
            match job {
                Job::Write(write) => batch.push(write),
                Job::Read(read) => {
                    // Reads see every write queued before them.
                    commit(conn, &mut batch);
                    read(conn);
                }
            }
            if batch.len() < MAX_BATCH {
                next = jobs.try_recv().ok();
            }
        }
        commit(conn, &mut batch);
    }
}

/// Commit `batch` in one transaction, each write in its own savepoint, then
/// answer every caller.
fn commit(conn: &Connection, batch: &mut Vec<Box<dyn PendingWrite>>) {
    if batch.is_empty() {
        return;
    }
    let run = |statement: &str| conn.prepare_cached(statement).and_then(|mut stmt| stmt.execute([])).map(|_| ());
    let result = (|| {
        run("BEGIN IMMEDIATE")?;
        if let [write] = batch.as_mut_slice() {
            // Alone in its transaction, a write needs no savepoint: if it
            // fails, the transaction is rolled back as a whole.
            if !write.apply(conn) {
                return run("ROLLBACK");
            }
        } else {
            for write in batch.iter_mut() {
                run("SAVEPOINT w")?;
                if write.apply(conn) {
                    run("RELEASE w")?;
                } else {
                    run("ROLLBACK TO w")?;
                    run("RELEASE w")?;
                }
            }
        }
        run("COMMIT")
    })();
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    if let Err(e) = &result {
        tracing::warn!(error = %e, writes = batch.len(), "context store commit failed");
    }
    for write in batch.drain(..) {
        write.answer(result.as_ref().map(|_| ()));
    }
}

impl ContextStore for SqliteStore {
    fn limits(&self) -> &StoreLimits {
        &self.inner.limits
    }

    fn set<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef> {
        let (ns, key, limits) = (namespace.as_str().to_owned(), key.as_str().to_owned(), self.inner.limits);
        self.write(move |conn| set_value(conn, &limits, &ns, &key, &value, WriteMode::Always))
    }

    fn create<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        value: EncodedValue,
    ) -> StoreFuture<'a, StoreRef> {
        let (ns, key, limits) = (namespace.as_str().to_owned(), key.as_str().to_owned(), self.inner.limits);
        // The check and the insert are in one write transaction, and every
        // write transaction takes the file's write lock first: atomic
        // across processes too.
        self.write(move |conn| set_value(conn, &limits, &ns, &key, &value, WriteMode::IfAbsent))
    }

    fn get<'a>(
        &'a self,
        namespace: &'a NamespaceName,
        key: &'a StoreKey,
        version: Option<u64>,
    ) -> StoreFuture<'a, StoredValue> {
        let (ns, key) = (namespace.as_str().to_owned(), key.as_str().to_owned());
        self.read(move |conn| get_value(conn, &ns, &key, version))
    }

    fn latest<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, StoreRef> {
        let (ns, key) = (namespace.as_str().to_owned(), key.as_str().to_owned());
        self.read(move |conn| match latest_version(conn, &ns, &key)? {
            Some(version) => Ok(StoreRef { key, version }),
            None => Err(StoreError::NotFound { key }),
        })
    }

    fn list<'a>(&'a self, namespace: &'a NamespaceName, query: ListQuery) -> StoreFuture<'a, ListPage> {
        let ns = namespace.as_str().to_owned();
        self.read(move |conn| list_keys(conn, &ns, &query))
    }

    fn delete<'a>(&'a self, namespace: &'a NamespaceName, key: &'a StoreKey) -> StoreFuture<'a, u64> {
        let (ns, key) = (namespace.as_str().to_owned(), key.as_str().to_owned());
        self.write(move |conn| delete_key(conn, &ns, &key))
    }

    fn usage<'a>(&'a self, namespace: &'a NamespaceName) -> StoreFuture<'a, NamespaceUsage> {
        let ns = namespace.as_str().to_owned();
        self.read(move |conn| usage(conn, &ns))
    }
}
