//! How the server runs tasks and where it keeps them.

use std::time::Duration;

use toolreg_store::Namespace;

/// How the server runs tasks, and where it keeps them.
///
/// ```
/// use toolreg_store::SqliteStore;
/// use toolreg_mcp::server::{ServerOptions, TaskOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = SqliteStore::in_memory().await?;
/// let options = ServerOptions::default().tasks(TaskOptions::new(store.namespace("mcp-tasks")?));
/// # let _ = options;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskOptions {
    /// Where task state lives: every replica that should answer for a task
    /// must share this namespace of one store.
    pub namespace: Namespace,
    /// Tasks running at once on this process (default 64); more are refused.
    pub max_live: usize,
    /// Tasks running at once on this process for one session (default 16,
    /// a quarter of `max_live`): a client that starts more is refused while
    /// other sessions still get slots. Tasks owned by no session (stateless
    /// HTTP) share `max_live` only.
    pub max_per_session: usize,
    /// The largest result a task keeps, as JSON (default 4 MiB); a larger
    /// one ends the task as failed.
    pub max_result_bytes: usize,
    /// How long a task is kept after it was created (`ttlMs`, default 1 hour).
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`, default 1 s).
    pub poll_interval: Duration,
    /// How often a runner writes its heartbeat and looks for a cancellation
    /// from another replica (default 2 s).
    pub heartbeat: Duration,
    /// A task whose heartbeat is older than this is failed: its runner died
    /// (default 30 s; keep it well above `heartbeat` and the hosts' clock skew).
    pub lease: Duration,
}

impl TaskOptions {
    /// Keep tasks in `namespace`, with the default bounds.
    pub fn new(namespace: Namespace) -> Self {
        TaskOptions {
            namespace,
            max_live: 64,
            max_per_session: 16,
            max_result_bytes: 4 << 20,
            ttl: Duration::from_secs(60 * 60),
            poll_interval: Duration::from_secs(1),
            heartbeat: Duration::from_secs(2),
            lease: Duration::from_secs(30),
        }
    }

    /// Set the most tasks running at once on this process (at least one).
    pub fn max_live(mut self, max_live: usize) -> Self {
        self.max_live = max_live.max(1);
        self
    }

    /// Set the most tasks running at once on this process for one session
    /// (at least one; `max_live` still bounds them all).
    pub fn max_per_session(mut self, max_per_session: usize) -> Self {
        self.max_per_session = max_per_session.max(1);
        self
    }

    /// Set the largest result kept, in bytes of JSON.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// Set how long a task is kept after its creation.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Set the polling interval suggested to clients (at least 1 ms).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Set the heartbeat interval (at least 10 ms) and the lease after which
    /// a silent runner counts as dead (at least twice the heartbeat).
    pub fn heartbeat(mut self, heartbeat: Duration, lease: Duration) -> Self {
        self.heartbeat = heartbeat.max(Duration::from_millis(10));
        self.lease = lease.max(self.heartbeat * 2);
        self
    }
}
