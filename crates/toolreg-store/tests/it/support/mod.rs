//! What the store tests share: the conformance suite both backends pass,
//! and a PostgreSQL server to run it on.

#![allow(dead_code, unused_imports, unused_macros)]

pub mod conformance;
#[cfg(feature = "postgres")]
pub mod postgres;
