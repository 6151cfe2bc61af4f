//! The integration tests of `toolreg-llm`, as one test program: the clients
//! against local servers that answer as each provider documents, and the
//! agent loop. A resumption "in a fresh process" runs this program again as
//! a child, with `--exact` and the test's path.

mod agent;
mod clients;
mod deferred_http;
mod hosted_code;
mod native_search;
