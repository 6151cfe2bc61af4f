//! The SQL of the PostgreSQL store: its migrations and its statements.
//!
//! Writes are PL/pgSQL functions, so each is one round trip and one
//! implicit transaction: the namespace's counter row is locked first (an
//! upsert), and every later statement in the function sees what committed
//! before the lock was granted. Writers to one namespace therefore queue on
//! that row, which is what makes quotas exact and `create` claim a key once,
//! on any number of hosts.

/// The schema version this build writes. A database whose
/// `toolreg_schema` row is higher was written by a newer build and is
/// refused rather than misread.
pub(super) const SCHEMA_VERSION: i32 = 1;

/// The key of the transaction-scoped advisory lock held while migrating,
/// so replicas starting at once migrate one after the other ("toolreg" in
/// ASCII, then 1).
pub(super) const MIGRATION_LOCK: i64 = 0x746f_6f6c_7265_6701;

/// Created before anything else, under the lock: which migrations ran.
pub(super) const SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS toolreg_schema (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
)";

/// Migration `i` takes the schema from version `i` to `i + 1`.
///
/// Keys and namespaces use the "C" collation: they sort byte by byte, as in
/// SQLite, whatever the database's locale, so pages and cursors agree.
/// Values are the same compact JSON text SQLite keeps.
pub(super) const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE toolreg_store_values (
    namespace  TEXT COLLATE "C" NOT NULL,
    key        TEXT COLLATE "C" NOT NULL,
    version    BIGINT NOT NULL,
    size       BIGINT NOT NULL,
    created_ms BIGINT NOT NULL,
    value      TEXT   NOT NULL,
    PRIMARY KEY (namespace, key, version)
);
CREATE TABLE toolreg_store_namespaces (
    namespace    TEXT COLLATE "C" PRIMARY KEY,
    bytes        BIGINT NOT NULL,
    keys         BIGINT NOT NULL,
    next_version BIGINT NOT NULL
);
CREATE FUNCTION toolreg_store_set(
    p_ns TEXT, p_key TEXT, p_value TEXT, p_size BIGINT, p_created_ms BIGINT,
    p_max_bytes BIGINT, p_max_keys BIGINT, p_if_absent BOOLEAN
) RETURNS TABLE (out_outcome TEXT, out_version BIGINT, out_used BIGINT, out_keys BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_bytes  BIGINT;
    v_keys   BIGINT;
    v_next   BIGINT;
    v_exists BOOLEAN;
BEGIN
    -- Lock the namespace's row (creating it if new): writers queue here.
    INSERT INTO toolreg_store_namespaces AS n (namespace, bytes, keys, next_version)
    VALUES (p_ns, 0, 0, 1)
    ON CONFLICT (namespace) DO UPDATE SET namespace = n.namespace
    RETURNING n.bytes, n.keys, n.next_version INTO v_bytes, v_keys, v_next;
    -- A new statement: it sees every write committed before the lock.
    v_exists := EXISTS (SELECT 1 FROM toolreg_store_values s WHERE s.namespace = p_ns AND s.key = p_key);
    IF v_exists AND p_if_absent THEN
        RETURN QUERY SELECT 'exists'::TEXT, 0::BIGINT, v_bytes, v_keys;
        RETURN;
    END IF;
    IF v_bytes + p_size > p_max_bytes THEN
        RETURN QUERY SELECT 'full'::TEXT, 0::BIGINT, v_bytes, v_keys;
        RETURN;
    END IF;
    IF NOT v_exists AND v_keys >= p_max_keys THEN
        RETURN QUERY SELECT 'too_many_keys'::TEXT, 0::BIGINT, v_bytes, v_keys;
        RETURN;
    END IF;
    INSERT INTO toolreg_store_values (namespace, key, version, size, created_ms, value)
    VALUES (p_ns, p_key, v_next, p_size, p_created_ms, p_value);
    UPDATE toolreg_store_namespaces
    SET bytes = v_bytes + p_size,
        keys = v_keys + (CASE WHEN v_exists THEN 0 ELSE 1 END),
        next_version = v_next + 1
    WHERE namespace = p_ns;
    RETURN QUERY SELECT 'ok'::TEXT, v_next, v_bytes, v_keys;
END
$$;
CREATE FUNCTION toolreg_store_delete(p_ns TEXT, p_key TEXT) RETURNS TABLE (out_count BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    v_count BIGINT;
    v_freed BIGINT;
BEGIN
    -- The same lock as a write, so counters never drift under a racing set.
    PERFORM 1 FROM toolreg_store_namespaces WHERE namespace = p_ns FOR UPDATE;
    WITH gone AS (DELETE FROM toolreg_store_values WHERE namespace = p_ns AND key = p_key RETURNING size)
    SELECT COUNT(*), COALESCE(SUM(size), 0) INTO v_count, v_freed FROM gone;
    IF v_count > 0 THEN
        UPDATE toolreg_store_namespaces
        SET bytes = GREATEST(bytes - v_freed, 0), keys = GREATEST(keys - 1, 0)
        WHERE namespace = p_ns;
    END IF;
    RETURN QUERY SELECT v_count;
END
$$;
"#];

pub(super) const SET: &str = "SELECT out_outcome, out_version, out_used, out_keys \
                              FROM toolreg_store_set($1, $2, $3, $4, $5, $6, $7, $8)";

pub(super) const DELETE: &str = "SELECT out_count FROM toolreg_store_delete($1, $2)";

pub(super) const GET_LATEST: &str = "SELECT version, size, created_ms, value FROM toolreg_store_values \
                                     WHERE namespace = $1 AND key = $2 ORDER BY version DESC LIMIT 1";

pub(super) const GET_VERSION: &str = "SELECT version, size, created_ms, value FROM toolreg_store_values \
                                      WHERE namespace = $1 AND key = $2 AND version = $3";

pub(super) const LATEST: &str = "SELECT MAX(version) FROM toolreg_store_values WHERE namespace = $1 AND key = $2";

pub(super) const LIST: &str = "SELECT DISTINCT ON (key) key, version, size, created_ms FROM toolreg_store_values \
                               WHERE namespace = $1 AND key >= $2 AND key < $3 AND key > $4 \
                               ORDER BY key, version DESC LIMIT $5";

pub(super) const USAGE: &str = "SELECT keys, bytes FROM toolreg_store_namespaces WHERE namespace = $1";
