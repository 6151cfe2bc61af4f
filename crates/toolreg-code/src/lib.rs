//! Code mode for toolreg: a model writes one short program, the program
//! calls the tools as functions, and only its result comes back — one model
//! round trip instead of one per call, and no intermediate result carried
//! through the conversation.
//!
//! - **The sandbox.** Programs are JavaScript, run by QuickJS
//!   ([`rquickjs`]) in a separate worker process ([`worker`], started as
//!   [`Worker`]) with an empty environment, a capped address space and CPU
//!   time, and (on Linux with Landlock) no file-system or network access.
//!   The program has no module loader, no clock, no randomness (a
//!   fixed-seed `Math.random`), no `eval`: only `tools`, `console` and the
//!   language. Every limit of [`Limits`] ends it with its own
//!   [`CodeError`]. Why QuickJS, and not Monty or Boa: see the crate's
//!   README.
//! - **The registry as an API.** Each tool the engine offers is
//!   `tools.<name>(args)`, an async function, described to the model as a
//!   TypeScript declaration written from its declaration ([`stubs`]).
//!   Every call goes through the engine — selection, validation, approval,
//!   hooks, audit (call id `<run_code id>/<n>`), timeouts, cancellation —
//!   and calls the program starts together (`Promise.all`) run as one
//!   batch. A failed call throws a `ToolError` the program can catch.
//! - **Suspension.** In an agent run whose approver defers to the host
//!   (`SuspendForApproval`), a dangerous call stops the whole program: the
//!   run is suspended, holding the program's record of calls (sealed with
//!   the host's [`SealingKey`]). On resume the program runs again and every call
//!   it already made is answered from the record, checked call by call, so
//!   each tool runs exactly once.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolreg::{FunctionRegistry, ToolEngine};
//! use toolreg_code::{CodeMode, Worker};
//!
//! let registry = FunctionRegistry::new(); // your tools
//! let engine = ToolEngine::builder(&registry).build();
//! let code = CodeMode::new(Worker::new("toolreg-code-worker"));
//! let engine = code.attach(&engine)?; // the engine's tools plus `run_code`
//! # let _ = engine; Ok(()) }
//! ```

mod error;
mod host;
mod journal;
mod limits;
mod mode;
mod protocol;
pub mod stubs;
pub mod worker;

pub use error::CodeError;
pub use host::{ProgramOutput, Worker};
pub use limits::Limits;
pub use mode::{CodeMode, RUN_CODE};
/// The host's key that seals a suspended program's record (the core's).
pub use toolreg::seal::SealingKey;
