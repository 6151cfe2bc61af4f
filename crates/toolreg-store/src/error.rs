//! [`StoreError`]: every way a store operation can fail.

use std::error::Error as StdError;

/// Why a store operation failed. The store is unchanged by a failed write.
///
/// The `Display` text is written for a model to act on: it names the rule
/// that was broken and what to do instead, so a tool can return it verbatim.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key breaks the key rule (see [`crate::StoreKey`]).
    #[error("invalid key `{key}`: {reason}")]
    InvalidKey {
        /// The key as given, cut to its first 64 bytes and its length when
        /// it is over the length limit.
        key: String,
        /// Which part of the rule it breaks.
        reason: String,
    },
    /// The namespace name breaks the namespace rule.
    #[error("invalid namespace `{namespace}`: {reason}")]
    InvalidNamespace {
        /// The name as given.
        namespace: String,
        /// Which part of the rule it breaks.
        reason: String,
    },
    /// A list prefix that no key could start with.
    #[error("invalid prefix `{prefix}`: {reason}")]
    InvalidPrefix {
        /// The prefix as given.
        prefix: String,
        /// Which part of the rule it breaks.
        reason: String,
    },
    /// A list cursor that this store did not hand out for this prefix.
    #[error("invalid cursor `{cursor}`: {reason}; start again without a cursor")]
    InvalidCursor {
        /// The cursor as given.
        cursor: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A page size of zero or above the store's maximum.
    #[error("invalid limit {limit}: use a limit from 1 to {max}")]
    InvalidLimit {
        /// The limit asked for.
        limit: u64,
        /// The largest page this store returns.
        max: u64,
    },
    /// The value's JSON text is larger than the store accepts.
    #[error("value for key `{key}` is {size} bytes, over the limit of {max} bytes; store it in smaller parts")]
    ValueTooLarge {
        /// The key it was meant for.
        key: String,
        /// Its size as compact JSON text, in bytes.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The value nests arrays and objects deeper than the store accepts.
    #[error("value for key `{key}` nests {depth} levels deep, over the limit of {max}; flatten it")]
    TooDeep {
        /// The key it was meant for.
        key: String,
        /// How deep it nests (at least `max + 1`; counting stops there).
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// Storing the value would take the namespace over its byte quota.
    #[error(
        "namespace `{namespace}` is full: it holds {used} bytes and this value needs {needed} more, over the quota of \
         {quota} bytes; delete keys you no longer need"
    )]
    NamespaceFull {
        /// The namespace.
        namespace: String,
        /// Bytes it holds now (every version of every key).
        used: u64,
        /// Bytes the write would add.
        needed: u64,
        /// The quota.
        quota: u64,
    },
    /// A new key would take the namespace over its key quota.
    #[error(
        "namespace `{namespace}` already has {keys} keys, the most it may hold; delete keys you no longer need or \
         overwrite an existing one"
    )]
    TooManyKeys {
        /// The namespace.
        namespace: String,
        /// Keys it holds now.
        keys: u64,
    },
    /// No value is stored under the key.
    #[error("no value stored under key `{key}`; use store_list to see the keys there are")]
    NotFound {
        /// The key.
        key: String,
    },
    /// [`ContextStore::create`](super::ContextStore::create): the key
    /// already holds a value, so nothing was written.
    #[error("key `{key}` already holds a value; it was not written")]
    Exists {
        /// The key.
        key: String,
    },
    /// The key exists but not at this version.
    #[error("key `{key}` has no version {version}{}", latest_text(*.latest))]
    VersionNotFound {
        /// The key.
        key: String,
        /// The version asked for.
        version: u64,
        /// The newest version there is, if the key still exists.
        latest: Option<u64>,
    },
    /// A stored value could not be read back as JSON.
    #[error("the value of key `{key}` version {version} is damaged: {reason}")]
    Corrupt {
        /// The key.
        key: String,
        /// The version.
        version: u64,
        /// What the decoder said.
        reason: String,
    },
    /// Another writer held the store for longer than the busy timeout.
    #[error("the store is busy with another writer; try again")]
    Busy,
    /// The store's database could not be reached (a shared backend whose
    /// server is down, restarting or out of connections). Retryable: the
    /// pool reconnects when the server is back. A write that fails this way
    /// may or may not have been applied, as with any lost connection.
    #[error("the store's database cannot be reached while trying to {operation}: {reason}; try again shortly")]
    Unavailable {
        /// What the store was doing.
        operation: &'static str,
        /// What the connection reported.
        reason: String,
    },
    /// The store's worker threads have stopped; no operation can run.
    #[error("the store is closed")]
    Closed,
    /// The backend failed (I/O error, full disk, unreadable file).
    #[error("store backend failed while trying to {operation}: {source}")]
    Backend {
        /// What the store was doing.
        operation: &'static str,
        /// The backend's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
}

fn latest_text(latest: Option<u64>) -> String {
    match latest {
        Some(v) => format!(" (the latest is {v})"),
        None => String::new(),
    }
}

impl StoreError {
    /// Whether the same operation may succeed if tried again unchanged.
    ///
    /// ```
    /// use toolreg_store::StoreError;
    ///
    /// assert!(StoreError::Busy.retryable());
    /// assert!(!StoreError::NotFound { key: "k".into() }.retryable());
    /// ```
    pub fn retryable(&self) -> bool {
        matches!(self, StoreError::Busy | StoreError::Unavailable { .. })
    }

    /// A backend error from any error type (for backends other than SQLite).
    pub fn backend(operation: &'static str, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        StoreError::Backend { operation, source: source.into() }
    }
}
