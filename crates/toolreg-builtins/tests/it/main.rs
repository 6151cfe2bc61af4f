//! The integration tests of `toolreg-builtins`, as one test program: one
//! module per tool or store concern. `files_memory` is a program of its own:
//! it measures the peak memory of its whole process.

mod files;
mod files_attacks;
mod files_media;
mod shell;
mod store;
mod store_durability;
mod store_postgres;
mod store_tools;
mod support;
mod user;
