//! Built-in tools.

pub mod files;
