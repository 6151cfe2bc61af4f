//! The messages between the host and its worker process: one JSON object
//! per line, on the worker's stdin and stdout.
//!
//! ```text
//! host → worker   {"type":"start","program":…,"tools":[…],"limits":{…}}
//! worker → host   {"type":"calls","calls":[{"id":1,"tool":"read","args":{…}}, …],"printed":"…"}
//! host → worker   {"type":"results","results":[{"id":1,"ok":…} | {"id":1,"error":{…}}, …]}
//!   … (as many rounds as the program makes)
//! worker → host   {"type":"done","value":…,"output":"…"}
//!               | {"type":"failed","error":{"kind":…},"output":"…"}
//! ```
//!
//! Calls the program starts before it waits for any of them (with
//! `Promise.all`) arrive in one `calls` message: the host runs them as one
//! batch.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{CodeError, Limits};

/// What the host sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// Run this program with these tools.
    Start {
        /// The program's source.
        program: String,
        /// The names the program may call as `tools.<name>`.
        tools: Vec<String>,
        /// Its limits.
        limits: Limits,
    },
    /// The answers to the last `calls` message, one per call.
    Results {
        /// In any order, by id.
        results: Vec<Reply>,
    },
}

/// What the worker sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// Calls the program made and now waits for.
    Calls {
        /// In the order the program made them.
        calls: Vec<ProgramCall>,
        /// What the program printed since the last `calls` message: the
        /// host keeps it, so a program that stops at one of these calls
        /// still shows what it printed before.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        printed: String,
    },
    /// The program finished.
    Done {
        /// Its return value.
        value: Value,
        /// What it printed.
        output: String,
    },
    /// The program failed.
    Failed {
        /// Why.
        error: CodeError,
        /// What it printed before.
        output: String,
    },
}

/// One call the program made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ProgramCall {
    /// The call's number in the program, from 1, in the order made.
    pub(crate) id: u64,
    /// The tool.
    pub(crate) tool: String,
    /// Its arguments.
    pub(crate) args: Value,
}

/// The answer to one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Reply {
    /// The call's number.
    pub(crate) id: u64,
    /// What the program sees.
    #[serde(flatten)]
    pub(crate) outcome: Answer,
}

/// A call's value, or the error the program catches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Answer {
    /// The call's result, as the program sees it.
    Ok(Value),
    /// The call failed: thrown as a `ToolError`.
    Error {
        /// The [`ToolError`](toolreg::ToolError) kind (`"denied"`, …).
        kind: String,
        /// The text the model would read.
        message: String,
    },
}
