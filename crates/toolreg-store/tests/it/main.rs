//! The context store's tests, as one program: the conformance suite on each
//! backend, then what only a SQLite file or a PostgreSQL server does.
//!
//! The PostgreSQL tests (feature `postgres`) run when a server can be found:
//! see `support/postgres.rs`.

mod support;

#[cfg(unix)]
mod durability;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
