//! The integration tests of `toolreg-mcp`, as one test program: servers and
//! clients over real stdio and HTTP, against this crate's own side, rmcp's,
//! and a scripted Python server (`tests/servers`).

mod client;
mod deferred;
mod export;
mod gateway;
mod http;
mod oauth;
mod server;
mod support;
mod tasks;
