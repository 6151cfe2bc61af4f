//! Approvals from outside the run: [`SuspendForApproval`], the approver that
//! defers a call to the host, and the approval round it defers to.
//!
//! This is the one way a pending approval reaches the agent loop. Each batch
//! of the model's calls carries an `ApprovalRound` in its extensions;
//! `SuspendForApproval` records there each call it defers (with what the host
//! needs to decide: the arguments, their hash, a preview), and a call stopped
//! part-way (a program in code mode, waiting at one of its own calls) leaves
//! its checkpoint there. When the batch is done the loop closes the round:
//! what it holds is what the run suspends on, and nothing else is. (The
//! engine answers each deferred call with
//! [`ToolError::Pending`](toolreg::ToolError::Pending), as it answers any
//! caller; the loop does not read it. A call another approver leaves pending
//! is not in the round, so the model reads that it did not run.) On resume,
//! the round holds the host's decisions, each bound to its call and used
//! once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::policy::{ApprovalRequest, Approver, Decision as EngineDecision};
use toolreg::{BoxFuture, Checkpoints, Extensions, ToolResult};

/// A dangerous call waiting for an approval, with the exact (validated)
/// arguments and their hash the approval will be bound to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments as validated (defaults filled in).
    pub arguments: Value,
    /// Their hash: an approval is for these arguments only.
    pub arguments_hash: String,
    /// What the call would do, in words, where the tool says (a diff, a
    /// command line): shown to whoever decides, beside the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// What the code-mode program making the call printed before it, shown
    /// to whoever decides (kept in the sealed record with the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printed_before: Option<String>,
}

impl PendingApproval {
    /// Approve this call, bound to its id, its tool and its arguments hash.
    pub fn approve(&self) -> Resolution {
        Resolution::Approve {
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            arguments_hash: self.arguments_hash.clone(),
        }
    }

    /// Refuse this call, with a reason the model reads.
    pub fn deny(&self, reason: impl Into<String>) -> Resolution {
        Resolution::Deny { call_id: self.call_id.clone(), reason: reason.into() }
    }
}

/// What the host decided or answered for one pending call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Resolution {
    /// Run the call: valid only for this tool and these arguments.
    Approve {
        /// The call.
        call_id: String,
        /// The tool approved.
        tool: String,
        /// The hash of the arguments approved.
        arguments_hash: String,
    },
    /// Do not run it.
    Deny {
        /// The call.
        call_id: String,
        /// Why, for the model.
        reason: String,
    },
    /// The result of a tool the host ran itself.
    Answer {
        /// The call.
        call_id: String,
        /// The result (`Err`: the text of a failure).
        result: Result<Value, String>,
    },
}

impl Resolution {
    /// The result of an external tool's call.
    pub fn answer(call_id: impl Into<String>, result: Result<Value, String>) -> Self {
        Resolution::Answer { call_id: call_id.into(), result }
    }

    pub(super) fn call_id(&self) -> &str {
        match self {
            Resolution::Approve { call_id, .. }
            | Resolution::Deny { call_id, .. }
            | Resolution::Answer { call_id, .. } => call_id,
        }
    }
}

/// The approver that defers to the host: a call it is asked about stops
/// the agent's run with [`RunOutcome::Suspended`](super::RunOutcome::Suspended), and the host's decision,
/// given to [`Agent::resume`](super::Agent::resume), settles it — in this process or another.
///
/// Set it on the agent's engine builder as its approver, alone or as the
/// fallback of a policy (`PolicyApprover::new().approve_tool("read_db")
/// .otherwise(SuspendForApproval)`), exactly where a live approver would
/// go. It defers only the calls a model made in an agent run; any other
/// call it is asked about (outside a run, a merge or post-processing
/// function the agent calls itself) is denied, with the reason for the
/// model. In a sub-agent's run the sub-agent stops, and its parent's model
/// reads that it needed an approval from outside.
///
/// A recorded decision binds as a live one does: to the call's id, its
/// tool and its arguments hash, and it is used once.
#[derive(Debug, Clone, Copy, Default)]
pub struct SuspendForApproval;

impl Approver for SuspendForApproval {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, EngineDecision> {
        let decision = match request.extensions().get::<ApprovalRound>() {
            Some(round) => round.decide(&request),
            None => request.deny(
                "this call needs an approval from outside, and nothing here can wait for one (only the calls a \
                 model makes in an agent run can)",
            ),
        };
        Box::pin(std::future::ready(decision))
    }

    fn name(&self) -> std::borrow::Cow<'_, str> {
        std::borrow::Cow::Borrowed("suspend")
    }
}

/// Where [`SuspendForApproval`] defers to, in the extensions of one batch of
/// a run's calls: the calls waiting for the host, what the calls stopped
/// part-way saved, and (on resume) the host's recorded decisions, each bound
/// to a call id and usable once.
#[derive(Debug, Default)]
pub(super) struct ApprovalRound {
    pending: Mutex<Vec<PendingApproval>>,
    recorded: Mutex<HashMap<String, RecordedDecision>>,
    /// Where calls that stop part-way leave their state (and, on resume,
    /// find it): in the calls' extensions beside the round.
    checkpoints: Arc<Checkpoints>,
}

/// An approval's (tool, arguments hash), or a denial's reason.
type RecordedDecision = Result<(String, String), String>;

/// What a closed round holds back: the calls waiting for an approval, and
/// what the calls stopped part-way saved. These calls answer on resume.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// The calls waiting for the host, in the order the model made them.
    pub(super) approvals: Vec<PendingApproval>,
    /// What each call stopped part-way saved, by call id.
    pub(super) checkpoints: BTreeMap<String, Value>,
}

impl Held {
    /// Whether call `id` is held back (its result is not an answer yet).
    pub(super) fn holds(&self, id: &str) -> bool {
        self.checkpoints.contains_key(id) || self.approvals.iter().any(|p| p.call_id == id)
    }
}

impl ApprovalRound {
    /// A round resuming a run: the host's decisions in `resolutions`, and
    /// what the calls stopped part-way saved.
    pub(super) fn resuming(resolutions: &[Resolution], checkpoints: BTreeMap<String, Value>) -> Self {
        let recorded = resolutions
            .iter()
            .filter_map(|r| match r {
                Resolution::Approve { call_id, tool, arguments_hash } => {
                    Some((call_id.clone(), Ok((tool.clone(), arguments_hash.clone()))))
                }
                Resolution::Deny { call_id, reason } => Some((call_id.clone(), Err(reason.clone()))),
                Resolution::Answer { .. } => None,
            })
            .collect();
        ApprovalRound {
            pending: Mutex::default(),
            recorded: Mutex::new(recorded),
            checkpoints: Arc::new(Checkpoints::restoring(checkpoints)),
        }
    }

    /// Put the round where the batch's calls find it: itself for
    /// [`SuspendForApproval`], its checkpoints for calls that stop part-way.
    pub(super) fn attach(self: &Arc<Self>, extensions: &mut Extensions) {
        extensions.insert_arc(Arc::clone(self));
        extensions.insert_arc(Arc::clone(&self.checkpoints));
    }

    /// The batch is done (its `results` in the order the model made the
    /// calls): what the round holds back.
    pub(super) fn close(&self, results: &[ToolResult]) -> Held {
        let mut approvals = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        // Approvers are asked concurrently, so they push in no set order;
        // whoever decides reads the calls in the order the model made them
        // (a program's calls, `c1/2`, after their `run_code` call `c1`).
        let position = |id: &str| {
            let call = id.split('/').next().unwrap_or(id);
            results.iter().position(|result| result.id == call).unwrap_or(usize::MAX)
        };
        approvals.sort_by(|a, b| {
            (position(&a.call_id), a.call_id.len(), &a.call_id).cmp(&(
                position(&b.call_id),
                b.call_id.len(),
                &b.call_id,
            ))
        });
        Held { approvals, checkpoints: self.checkpoints.take_saved() }
    }

    fn decide(&self, request: &ApprovalRequest) -> EngineDecision {
        let id = request.call_id().unwrap_or_default();
        let recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        match recorded {
            Some(Ok((tool, _))) if tool != request.tool() => {
                request.deny("the approval was given for another tool; this call was not approved")
            }
            Some(Ok((_, hash))) if hash == request.arguments_hash().to_string() => request.approve(),
            Some(Ok(_)) => request.deny("the approval was given for other arguments; this call was not approved"),
            Some(Err(reason)) => request.deny(reason),
            None => {
                let pending = PendingApproval {
                    call_id: id.to_owned(),
                    tool: request.tool().to_owned(),
                    arguments: request.arguments().clone(),
                    arguments_hash: request.arguments_hash().to_string(),
                    preview: request.preview().map(str::to_owned),
                    printed_before: request.printed_before().map(str::to_owned),
                };
                self.pending.lock().unwrap_or_else(PoisonError::into_inner).push(pending);
                request.pending("waiting for an approval from outside the run")
            }
        }
    }
}
