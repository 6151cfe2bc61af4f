//! The SQL of the SQLite store: its schema, and one function per operation
//! on one connection. The threads that own the connections, and the group
//! commit that wraps each write in a savepoint, are in the parent module.

use crate::{now_ms, to_u64};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde_json::Value;

use super::super::{
    EncodedValue, ListEntry, ListPage, ListQuery, NamespaceUsage, StoreError, StoreLimits, StoreRef, StoredValue,
};

/// The tables: every version of every value, and each namespace's counters.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store_values (
    namespace  TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    UNIQUE (namespace, key, version)
);
CREATE TABLE IF NOT EXISTS store_namespaces (
    namespace    TEXT PRIMARY KEY,
    bytes        INTEGER NOT NULL,
    keys         INTEGER NOT NULL,
    next_version INTEGER NOT NULL
) WITHOUT ROWID;
";

pub(super) fn map_err(operation: &'static str, error: &rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
        _ => StoreError::backend(operation, error.to_string()),
    }
}

pub(super) fn sql(operation: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| map_err(operation, &e)
}

/// Whether a write adds a version, or only a first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteMode {
    Always,
    IfAbsent,
}

pub(super) fn set_value(
    conn: &Connection,
    limits: &StoreLimits,
    ns: &str,
    key: &str,
    value: &EncodedValue,
    mode: WriteMode,
) -> Result<StoreRef, StoreError> {
    // One statement for the namespace's counters and whether the key exists.
    let (bytes, keys, next_version, exists) = conn
        .prepare_cached(
            "SELECT COALESCE(n.bytes, 0), COALESCE(n.keys, 0), COALESCE(n.next_version, 1),
                    EXISTS (SELECT 1 FROM store_values WHERE namespace = ?1 AND key = ?2)
             FROM (SELECT 1) LEFT JOIN store_namespaces n ON n.namespace = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([ns, key], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get::<_, i64>(2)?, row.get::<_, bool>(3)?))
            })
        })
        .map_err(sql("read the namespace"))?;
    if exists && mode == WriteMode::IfAbsent {
        return Err(StoreError::Exists { key: key.to_owned() });
    }
    let (used, keys) = (to_u64(bytes), to_u64(keys));
    let size = value.size();
    if used.saturating_add(size) > limits.max_namespace_bytes {
        return Err(StoreError::NamespaceFull {
            namespace: ns.to_owned(),
            used,
            needed: size,
            quota: limits.max_namespace_bytes,
        });
    }
    if !exists && keys >= limits.max_namespace_keys {
        return Err(StoreError::TooManyKeys { namespace: ns.to_owned(), keys });
    }
    let size_i64 = i64::try_from(size).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO store_values (namespace, key, version, size, created_ms, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut stmt| stmt.execute(params![ns, key, next_version, size_i64, now_ms(), value.as_str()]))
    .map_err(sql("insert the value"))?;
    let keys_after = if exists { keys } else { keys + 1 };
    conn.prepare_cached(
        "INSERT INTO store_namespaces (namespace, bytes, keys, next_version) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (namespace) DO UPDATE SET
             bytes = excluded.bytes, keys = excluded.keys, next_version = excluded.next_version",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            ns,
            i64::try_from(used + size).unwrap_or(i64::MAX),
            i64::try_from(keys_after).unwrap_or(i64::MAX),
            next_version + 1
        ])
    })
    .map_err(sql("update the namespace"))?;
    Ok(StoreRef { key: key.to_owned(), version: to_u64(next_version) })
}

pub(super) fn delete_key(conn: &Connection, ns: &str, key: &str) -> Result<u64, StoreError> {
    let (count, freed) = conn
        .prepare_cached("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM store_values WHERE namespace = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.query_row([ns, key], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))))
        .map_err(sql("look up the key"))?;
    if count == 0 {
        return Err(StoreError::NotFound { key: key.to_owned() });
    }
    conn.prepare_cached("DELETE FROM store_values WHERE namespace = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.execute([ns, key]))
        .map_err(sql("delete the key"))?;
    conn.prepare_cached(
        "UPDATE store_namespaces SET bytes = MAX(bytes - ?2, 0), keys = MAX(keys - 1, 0) WHERE namespace = ?1",
    )
    .and_then(|mut stmt| stmt.execute(params![ns, freed]))
    .map_err(sql("update the namespace"))?;
    Ok(to_u64(count))
}

pub(super) fn latest_version(conn: &Connection, ns: &str, key: &str) -> Result<Option<u64>, StoreError> {
    conn.prepare_cached("SELECT MAX(version) FROM store_values WHERE namespace = ?1 AND key = ?2")
        .and_then(|mut stmt| stmt.query_row([ns, key], |row| row.get::<_, Option<i64>>(0)))
        .map(|v| v.map(to_u64))
        .map_err(sql("look up the key"))
}

pub(super) fn get_value(
    conn: &Connection,
    ns: &str,
    key: &str,
    version: Option<u64>,
) -> Result<StoredValue, StoreError> {
    const COLUMNS: &str = "SELECT version, size, created_ms, value FROM store_values WHERE namespace = ?1 AND key = ?2";
    let decode = |row: &rusqlite::Row<'_>| -> rusqlite::Result<(i64, i64, i64, Result<Value, String>)> {
        let text = row
            .get_ref(3)?
            .as_str()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, Box::new(e)))?;
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, serde_json::from_str(text).map_err(|e| e.to_string())))
    };
    let found = match version {
        None => conn
            .prepare_cached(&format!("{COLUMNS} ORDER BY version DESC LIMIT 1"))
            .and_then(|mut stmt| stmt.query_row([ns, key], decode).optional()),
        Some(version) => match i64::try_from(version) {
            Ok(v) => conn
                .prepare_cached(&format!("{COLUMNS} AND version = ?3"))
                .and_then(|mut stmt| stmt.query_row(params![ns, key, v], decode).optional()),
            Err(_) => Ok(None),
        },
    }
    .map_err(sql("read the value"))?;
    match (found, version) {
        (Some((v, size, created_ms, value)), _) => {
            let value =
                value.map_err(|reason| StoreError::Corrupt { key: key.to_owned(), version: to_u64(v), reason })?;
            Ok(StoredValue::new(key.to_owned(), to_u64(v), to_u64(size), created_ms, value))
        }
        (None, None) => Err(StoreError::NotFound { key: key.to_owned() }),
        (None, Some(version)) => {
            let latest = latest_version(conn, ns, key)?;
            Err(StoreError::VersionNotFound { key: key.to_owned(), version, latest })
        }
    }
}

pub(super) fn list_keys(conn: &Connection, ns: &str, query: &ListQuery) -> Result<ListPage, StoreError> {
    let limit = usize::try_from(query.limit).unwrap_or(usize::MAX);
    let fetch = i64::try_from(query.limit.saturating_add(1)).unwrap_or(i64::MAX);
    let after = query.cursor.as_deref().unwrap_or("");
    // With a single MAX() aggregate, SQLite takes the bare columns from the
    // row holding the maximum: the latest version's size and time.
    let mut entries = conn
        .prepare_cached(
            "SELECT key, MAX(version), size, created_ms FROM store_values
             WHERE namespace = ?1 AND key >= ?2 AND key < ?3 AND key > ?4
             GROUP BY key ORDER BY key LIMIT ?5",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![ns, query.prefix, query.upper_bound(), after, fetch], |row| {
                Ok(ListEntry::new(row.get(0)?, to_u64(row.get(1)?), to_u64(row.get(2)?), row.get(3)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(sql("list the keys"))?;
    let next_cursor = if entries.len() > limit {
        entries.truncate(limit);
        entries.last().map(|e| e.key.clone())
    } else {
        None
    };
    Ok(ListPage::new(entries, next_cursor))
}

pub(super) fn usage(conn: &Connection, ns: &str) -> Result<NamespaceUsage, StoreError> {
    conn.prepare_cached("SELECT keys, bytes FROM store_namespaces WHERE namespace = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([ns], |row| Ok(NamespaceUsage::new(to_u64(row.get(0)?), to_u64(row.get(1)?)))).optional()
        })
        .map(Option::unwrap_or_default)
        .map_err(sql("read the namespace"))
}
