//! The plain data a store takes and returns: names, handles, pages, limits.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;

/// The longest key, in bytes.
pub const MAX_KEY_LEN: usize = 256;

/// The longest namespace name, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 128;

const ALLOWED: &str = "A-Z, a-z, 0-9 and _ - . / :";

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':')
}

/// Bytes of a rejected name quoted in its error: the error repeats what was
/// given, and what was given may be megabytes long.
const SHOWN_NAME_BYTES: usize = 64;

/// A rejected name as its error quotes it: whole when it is within `max`
/// bytes, else its first [`SHOWN_NAME_BYTES`] bytes and its length.
fn shown(mut name: String, max: usize) -> String {
    if name.len() <= max {
        return name;
    }
    let len = name.len();
    let mut end = SHOWN_NAME_BYTES;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name.truncate(end);
    name.push_str(&format!("… ({len} bytes in all)"));
    name
}

/// Checks a name against the shared rule; `None` when it passes.
fn name_problem(name: &str, max: usize, what: &str) -> Option<String> {
    if name.is_empty() {
        return Some(format!("a {what} must not be empty"));
    }
    if name.len() > max {
        return Some(format!("a {what} may have at most {max} bytes, this one has {}", name.len()));
    }
    name.chars().find(|c| !allowed(*c)).map(|c| format!("character {c:?} is not allowed; use only {ALLOWED}"))
}

/// A checked key: 1 to [`MAX_KEY_LEN`] bytes of `A-Z a-z 0-9 _ - . / :`.
///
/// The rule keeps keys printable, free of SQL `LIKE` wildcards and path
/// tricks, and sortable byte by byte, so prefixes list in order.
///
/// ```
/// use toolreg_store::StoreKey;
///
/// assert!(StoreKey::new("notes/plan.v2").is_ok());
/// assert!(StoreKey::new("two words").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

impl StoreKey {
    /// Check `key` against the rule.
    pub fn new(key: impl Into<String>) -> Result<Self, StoreError> {
        let key = key.into();
        match name_problem(&key, MAX_KEY_LEN, "key") {
            Some(reason) => Err(StoreError::InvalidKey { key: shown(key, MAX_KEY_LEN), reason }),
            None => Ok(StoreKey(key)),
        }
    }

    /// The key text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A checked namespace name: the same characters as a key, at most
/// [`MAX_NAMESPACE_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NamespaceName(String);

impl NamespaceName {
    /// Check `name` against the rule.
    pub fn new(name: impl Into<String>) -> Result<Self, StoreError> {
        let namespace = name.into();
        match name_problem(&namespace, MAX_NAMESPACE_LEN, "namespace") {
            Some(reason) => {
                Err(StoreError::InvalidNamespace { namespace: shown(namespace, MAX_NAMESPACE_LEN), reason })
            }
            None => Ok(NamespaceName(namespace)),
        }
    }

    /// The name text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NamespaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A small handle to one version of one key, passed to a sub-agent instead
/// of the value. Reading it gives exactly that version, even after later
/// writes to the key.
///
/// Versions grow with every write in a namespace, so a key's versions
/// increase but need not be consecutive; a version is never reused, not even
/// after the key is deleted and written again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct StoreRef {
    /// The key.
    pub key: String,
    /// The version.
    pub version: u64,
}

/// A value read back from the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredValue {
    /// The key.
    pub key: String,
    /// Which version this is.
    pub version: u64,
    /// Size of the value as compact JSON text, in bytes.
    pub size: u64,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The value.
    pub value: Value,
}

impl StoredValue {
    /// Build one (for backends).
    pub fn new(key: String, version: u64, size: u64, created_ms: i64, value: Value) -> Self {
        StoredValue { key, version, size, created_ms, value }
    }

    /// The handle to this version.
    pub fn handle(&self) -> StoreRef {
        StoreRef { key: self.key.clone(), version: self.version }
    }

    /// The tool output this version holds, when it was stored as one
    /// ([`Namespace::set_output`](super::Namespace::set_output), or any value
    /// of that shape: see [`OUTPUT_TAG`](super::OUTPUT_TAG)); `None` for a
    /// plain value.
    pub fn output(&self) -> Option<toolreg::exec::ToolOutput> {
        super::output::decode(&self.value)
    }
}

/// One page request of [`crate::ContextStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListQuery {
    /// Only keys starting with this text (empty: every key).
    pub prefix: String,
    /// Keys per page, from 1 to the store's `max_list_limit`.
    pub limit: u64,
    /// Where the previous page stopped: its [`ListPage::next_cursor`].
    pub cursor: Option<String>,
}

impl ListQuery {
    /// A query after checking its prefix, limit and cursor against the rules
    /// and `max_limit`.
    pub fn new(
        prefix: impl Into<String>,
        limit: u64,
        cursor: Option<String>,
        max_limit: u64,
    ) -> Result<Self, StoreError> {
        let prefix = prefix.into();
        if !prefix.is_empty()
            && let Some(reason) = name_problem(&prefix, MAX_KEY_LEN, "prefix")
        {
            return Err(StoreError::InvalidPrefix { prefix: shown(prefix, MAX_KEY_LEN), reason });
        }
        if limit == 0 || limit > max_limit {
            return Err(StoreError::InvalidLimit { limit, max: max_limit });
        }
        if let Some(cursor) = &cursor {
            if let Some(reason) = name_problem(cursor, MAX_KEY_LEN, "cursor") {
                return Err(StoreError::InvalidCursor { cursor: shown(cursor.clone(), MAX_KEY_LEN), reason });
            }
            if !cursor.starts_with(&prefix) {
                let reason = format!("it does not belong to a listing of prefix `{prefix}`");
                return Err(StoreError::InvalidCursor { cursor: cursor.clone(), reason });
            }
        }
        Ok(ListQuery { prefix, limit, cursor })
    }

    /// The smallest text sorting after every key that starts with the prefix.
    ///
    /// Every key character is below `0x7f`, so the prefix followed by `0x7f`
    /// bounds the range; no `LIKE` (whose `_` is a key character) is needed.
    pub fn upper_bound(&self) -> String {
        let mut upper = String::with_capacity(self.prefix.len() + 1);
        upper.push_str(&self.prefix);
        upper.push('\u{7f}');
        upper
    }
}

/// One key in a listing: its latest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListEntry {
    /// The key.
    pub key: String,
    /// Its latest version.
    pub version: u64,
    /// Size of that version in bytes.
    pub size: u64,
    /// When that version was written, in milliseconds since the Unix epoch.
    pub created_ms: i64,
}

impl ListEntry {
    /// Build one (for backends).
    pub fn new(key: String, version: u64, size: u64, created_ms: i64) -> Self {
        ListEntry { key, version, size, created_ms }
    }
}

/// A page of keys, in byte order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListPage {
    /// The keys of this page.
    pub entries: Vec<ListEntry>,
    /// Pass this as the cursor to get the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl ListPage {
    /// Build one (for backends).
    pub fn new(entries: Vec<ListEntry>, next_cursor: Option<String>) -> Self {
        ListPage { entries, next_cursor }
    }
}

/// What a namespace holds, as its quotas count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NamespaceUsage {
    /// Keys with at least one version.
    pub keys: u64,
    /// Bytes of every version of every key.
    pub bytes: u64,
}

impl NamespaceUsage {
    /// Build one (for backends).
    pub fn new(keys: u64, bytes: u64) -> Self {
        NamespaceUsage { keys, bytes }
    }
}

/// Limits every backend enforces, each with a typed error.
///
/// ```
/// use toolreg_store::StoreLimits;
///
/// let limits = StoreLimits::default().with_max_value_bytes(1 << 20).with_max_namespace_keys(500);
/// assert_eq!(limits.max_value_bytes, 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreLimits {
    /// Largest value as compact JSON text, in bytes (default 16 MiB).
    pub max_value_bytes: u64,
    /// Deepest nesting of arrays and objects (default 64, at most 128 so
    /// that every stored value reads back with `serde_json`).
    pub max_depth: usize,
    /// Bytes one namespace may hold over every version of every key
    /// (default 1 GiB).
    pub max_namespace_bytes: u64,
    /// Keys one namespace may hold (default 100,000).
    pub max_namespace_keys: u64,
    /// Largest page of a listing (default 1,000).
    pub max_list_limit: u64,
}

/// The deepest nesting `serde_json` reads back.
pub(crate) const DEPTH_CEILING: usize = 128;

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_value_bytes: 16 << 20,
            max_depth: 64,
            max_namespace_bytes: 1 << 30,
            max_namespace_keys: 100_000,
            max_list_limit: 1_000,
        }
    }
}

impl StoreLimits {
    /// Set the value size limit in bytes.
    pub fn with_max_value_bytes(mut self, bytes: u64) -> Self {
        self.max_value_bytes = bytes;
        self
    }

    /// Set the nesting limit (capped at 128).
    pub fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth.min(DEPTH_CEILING);
        self
    }

    /// Set the byte quota of each namespace.
    pub fn with_max_namespace_bytes(mut self, bytes: u64) -> Self {
        self.max_namespace_bytes = bytes;
        self
    }

    /// Set the key quota of each namespace.
    pub fn with_max_namespace_keys(mut self, keys: u64) -> Self {
        self.max_namespace_keys = keys;
        self
    }

    /// Set the largest page of a listing.
    pub fn with_max_list_limit(mut self, limit: u64) -> Self {
        self.max_list_limit = limit.max(1);
        self
    }
}
