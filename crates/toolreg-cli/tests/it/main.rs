//! The integration tests of `toolreg-cli`, as one test program: each module
//! runs the `toolreg` binary as its users do, as a command or as a server
//! over stdio.

mod cli;
mod code_mode;
mod deferred;
mod gateway;
mod oauth;
mod otel;
mod policy;
mod resume;
mod search_eval;
mod store_postgres;
mod support;
