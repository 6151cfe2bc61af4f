//! The integration tests of `toolreg-builtins`, as one test program: one
//! module per tool. `files_memory` is a program of its own:
//! it measures the peak memory of its whole process.

mod files;
mod files_attacks;
mod files_media;
mod shell;
mod store_tools;
mod user;
