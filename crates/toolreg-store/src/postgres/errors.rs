//! What the PostgreSQL store says when something goes wrong: errors in one
//! line that name the server but never the password, sorted into what a
//! caller can retry (`Unavailable`, `Busy`) and what it cannot (`Backend`).

use deadpool_postgres::PoolError;
use tokio_postgres::Config;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

use crate::StoreError;

/// `user@host:port/dbname`, for messages: everything but the password.
pub(super) fn describe_target(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let db = config.get_dbname().or(config.get_user()).unwrap_or("");
    format!("{user}{host}:{port}/{db}")
}

/// An error's text and its causes on one line (the driver's own text is
/// only the kind, "db error"; the server's DETAIL and HINT lines joined).
pub(super) fn one_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

/// Map a driver error: a lost or refused connection is
/// [`StoreError::Unavailable`], a conflict the server asks to retry is
/// [`StoreError::Busy`], anything else [`StoreError::Backend`].
fn map_pg(operation: &'static str, error: &tokio_postgres::Error) -> StoreError {
    let reason = || one_line(error);
    if error.is_closed() {
        return StoreError::Unavailable { operation, reason: reason() };
    }
    match error.code() {
        Some(code)
            if *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::LOCK_NOT_AVAILABLE =>
        {
            StoreError::Busy
        }
        // The statement timeout (or an operator) cancelled it.
        Some(code) if *code == SqlState::QUERY_CANCELED => StoreError::Unavailable { operation, reason: reason() },
        Some(code)
            if code.code().starts_with("08")
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
                || *code == SqlState::TOO_MANY_CONNECTIONS =>
        {
            StoreError::Unavailable { operation, reason: reason() }
        }
        Some(_) => StoreError::backend(operation, reason()),
        // No server error: the socket failed (refused, reset, timed out).
        None => StoreError::Unavailable { operation, reason: reason() },
    }
}

pub(super) fn pg(operation: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| map_pg(operation, &e)
}

pub(super) fn pool_error(error: PoolError) -> StoreError {
    match error {
        PoolError::Backend(e) => map_pg("connect to PostgreSQL", &e),
        PoolError::Timeout(kind) => StoreError::Unavailable {
            operation: "get a database connection",
            reason: format!("timed out ({kind:?}): the server is slow, unreachable or every connection is busy"),
        },
        PoolError::Closed => StoreError::Closed,
        other => StoreError::backend("get a database connection", other.to_string()),
    }
}
