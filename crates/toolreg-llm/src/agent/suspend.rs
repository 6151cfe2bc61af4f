//! [`Suspended`]: a run stopped for something from outside (an approval
//! deferred by [`SuspendForApproval`](super::SuspendForApproval), a tool the
//! host runs itself), as a value that serialises with the whole
//! conversation and resumes later, in any process (see
//! [`Agent::resume`](super::Agent::resume)).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::ToolCall;

use super::PendingApproval;
use super::approval::Held;
use crate::model::{Message, ToolResultMessage, Usage};

/// A run stopped to wait for the outside, ready to be stored and resumed
/// (once: see [`Agent::resume`](super::Agent::resume)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Suspended {
    /// This suspension's id, unique to it: what [`Agent::resume`](super::Agent::resume) records
    /// as consumed. (A stored suspension without one cannot be resumed.)
    #[serde(default)]
    pub id: String,
    /// The conversation, ending with the model's calls.
    pub transcript: Vec<Message>,
    /// The calls of the last turn, in order.
    pub calls: Vec<ToolCall>,
    /// Results already obtained for some of them.
    pub done: Vec<ToolResultMessage>,
    /// Dangerous calls waiting for an approval.
    pub approvals: Vec<PendingApproval>,
    /// Calls of tools the host runs itself.
    pub external: Vec<ToolCall>,
    /// Tokens used so far.
    pub usage: Usage,
    /// Model requests made so far.
    pub steps: usize,
    /// Deferred tools the model has loaded (see [`Deferral`](super::Deferral)): offered again on resume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded: Vec<String>,
    /// Calls stopped part-way, by call id: what each saved to go on (a
    /// program in code mode, waiting at one of its own calls, keeps the
    /// record of the calls it made). Such a call runs again on resume and
    /// finds its state; its waiting calls are among `approvals`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checkpoints: BTreeMap<String, Value>,
}

/// What a suspension waits on, beside the run's state: the turn's calls,
/// the answers it has, and the calls that wait.
pub(super) struct Waiting {
    /// The calls of the last turn, in order.
    pub(super) calls: Vec<ToolCall>,
    /// The answers obtained.
    pub(super) done: Vec<ToolResultMessage>,
    /// The calls waiting for an approval, and those stopped part-way.
    pub(super) held: Held,
    /// Calls of tools the host runs itself.
    pub(super) external: Vec<ToolCall>,
}

/// A new suspension's id: the clock, the process and a counter, so no two
/// suspensions share one.
pub(super) fn suspension_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("s{nanos:x}-{:x}-{:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}
