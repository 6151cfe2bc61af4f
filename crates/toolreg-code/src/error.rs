//! [`CodeError`]: why a program did not produce a result, in words the
//! model can act on.

use serde::{Deserialize, Serialize};

/// Why a program did not produce a result. Each limit of
/// [`Limits`](crate::Limits) has its own variant; the text (its
/// `Display`) is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CodeError {
    /// The program does not parse.
    #[error("the program is not valid JavaScript: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// The program threw and did not catch it.
    #[error("the program threw an uncaught exception: {message}")]
    Exception {
        /// The exception's text (and stack, when there is one).
        message: String,
    },
    /// The program ran past its time limit.
    #[error("the program ran longer than its limit of {limit_ms} ms and was stopped")]
    Timeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The program ran past its step limit.
    #[error("the program ran more than its limit of {limit} steps (an endless loop?) and was stopped")]
    StepLimit {
        /// The limit.
        limit: u64,
    },
    /// The program ran out of memory.
    #[error("the program used more than its memory limit of {limit_bytes} bytes")]
    MemoryLimit {
        /// The limit.
        limit_bytes: usize,
    },
    /// The program recursed too deeply.
    #[error("the program recursed too deeply (its stack is limited to {limit_bytes} bytes)")]
    StackOverflow {
        /// The limit.
        limit_bytes: usize,
    },
    /// The program printed too much.
    #[error("the program printed more than its limit of {limit_bytes} bytes and was stopped")]
    OutputLimit {
        /// The limit.
        limit_bytes: usize,
    },
    /// The program made too many tool calls.
    #[error("the program made more than its limit of {limit} tool calls and was stopped")]
    CallLimit {
        /// The limit.
        limit: usize,
    },
    /// The program's source is too large.
    #[error("the program is {bytes} bytes, more than its limit of {limit_bytes}")]
    ProgramTooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// The program's return value cannot be returned (not JSON, or too large).
    #[error("the program's result cannot be returned: {message}")]
    BadResult {
        /// Why.
        message: String,
    },
    /// The program waits for something that never comes (a promise nothing
    /// will settle).
    #[error("the program is waiting for a promise that nothing will settle, so it cannot finish")]
    Stalled,
    /// The caller cancelled the program.
    #[error("the program was cancelled")]
    Cancelled,
    /// On resume, the program made a call other than the one it made
    /// before: the program or the recorded calls changed. Nothing ran.
    #[error(
        "the program diverged from its recorded run at call {call}: it now calls `{found}`, the record says `{expected}` \
         (same tool and arguments expected); nothing was run again"
    )]
    ReplayDiverged {
        /// The call's number in the program (1-based).
        call: u64,
        /// What the record holds (tool and arguments hash).
        expected: String,
        /// What the program called now.
        found: String,
    },
    /// A saved program state failed its authentication: changed, made for
    /// another call or program, or sealed with another key.
    #[error("the saved program state is not authentic ({reason}); it was not used")]
    StateRejected {
        /// Why.
        reason: String,
    },
    /// The sandbox itself failed: the worker could not start, died, or
    /// broke the protocol.
    #[error("the sandbox failed: {message}")]
    Sandbox {
        /// What happened.
        message: String,
    },
}
