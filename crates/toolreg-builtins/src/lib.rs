//! Built-in tools.

pub mod files;
#[cfg(target_os = "linux")]
pub mod shell;
