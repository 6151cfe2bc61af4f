//! Suspension: a run that stops for something from outside (an approval
//! deferred by [`SuspendForApproval`], a tool the host runs itself) as a
//! [`Suspended`] value, and [`Agent::resume`], which continues it once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::policy::{ApprovalRequest, Approver, Decision as EngineDecision};
use toolreg::{BoxFuture, CallOptions, Checkpoints, ToolCall, ToolError, ToolOutput, ToolResult};
use toolreg_store::StoreError;

use super::run::{LoopState, extensions};
use super::{Agent, AgentError, AgentEvent, Outcome};
use crate::model::{Message, ToolResultMessage, Usage};

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

    fn call_id(&self) -> &str {
        match self {
            Resolution::Approve { call_id, .. }
            | Resolution::Deny { call_id, .. }
            | Resolution::Answer { call_id, .. } => call_id,
        }
    }
}

/// A run stopped to wait for the outside, ready to be stored and resumed
/// (once: see [`Agent::resume`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Suspended {
    /// This suspension's id, unique to it: what [`Agent::resume`] records
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

impl Agent {
    /// Continue a suspended run with the host's decisions and answers: every
    /// pending call needs one. An approval runs its call only if the call's
    /// id, tool and arguments hash are the ones approved.
    ///
    /// A suspension resumes once: before anything runs, its id and each
    /// (suspension, call) it approves are recorded as consumed, and a
    /// suspension seen before is [`AgentError::AlreadyResumed`]. Claims are
    /// scoped to the suspension, so two runs whose models used the same call
    /// id both resume. A resume refused for a missing decision, or whose
    /// claim could not be recorded, consumes nothing.
    pub async fn resume(
        &self,
        suspended: Suspended,
        resolutions: Vec<Resolution>,
        cancel: CancellationToken,
    ) -> Result<Outcome, AgentError> {
        self.traced(self.resume_untraced(suspended, resolutions, cancel)).await
    }

    async fn resume_untraced(
        &self,
        suspended: Suspended,
        resolutions: Vec<Resolution>,
        cancel: CancellationToken,
    ) -> Result<Outcome, AgentError> {
        self.check_post_process()?;
        let by_id: HashMap<&str, &Resolution> = resolutions.iter().map(|r| (r.call_id(), r)).collect();
        for pending in suspended.approvals.iter().map(|p| &p.call_id).chain(suspended.external.iter().map(|c| &c.id)) {
            if !by_id.contains_key(pending.as_str()) {
                return Err(AgentError::Resume(format!("no decision or answer for call `{pending}`")));
            }
        }
        if let Some(call) =
            suspended.external.iter().find(|c| !matches!(by_id.get(c.id.as_str()), Some(Resolution::Answer { .. })))
        {
            return Err(AgentError::Resume(format!("call `{}` is an external tool's: it needs an answer", call.id)));
        }
        // Checked above, so a refused resume consumes nothing.
        let approved = resolutions.iter().filter_map(|r| match r {
            Resolution::Approve { call_id, .. } if suspended.approvals.iter().any(|p| &p.call_id == call_id) => {
                Some(call_id.as_str())
            }
            _ => None,
        });
        self.claim(&suspended.id, approved).await?;
        let mut done: HashMap<String, ToolResultMessage> =
            suspended.done.into_iter().map(|r| (r.call_id.clone(), r)).collect();
        // External tools: the host's answers (each checked present above).
        for call in &suspended.external {
            if let Some(Resolution::Answer { result, .. }) = by_id.get(call.id.as_str()) {
                let outcome = match result {
                    Ok(value) => Ok(ToolOutput::new(value.clone())),
                    Err(text) => Err(ToolError::failed(text.clone())),
                };
                let result = ToolResult { id: call.id.clone(), name: call.name.clone(), outcome };
                done.insert(call.id.clone(), ToolResultMessage::from(&result));
            }
        }
        // Approvals: the pending calls again, through the agent's engine, with
        // the recorded decisions where `SuspendForApproval` looks for them.
        let deferred = Deferred {
            pending: Mutex::default(),
            recorded: Mutex::new(
                resolutions
                    .iter()
                    .filter_map(|r| match r {
                        Resolution::Approve { call_id, tool, arguments_hash } => {
                            Some((call_id.clone(), Ok((tool.clone(), arguments_hash.clone()))))
                        }
                        Resolution::Deny { call_id, reason } => Some((call_id.clone(), Err(reason.clone()))),
                        Resolution::Answer { .. } => None,
                    })
                    .collect::<HashMap<_, _>>(),
            ),
            checkpoints: Arc::new(Checkpoints::restoring(suspended.checkpoints.clone())),
        };
        // The calls that wait for a decision, and the calls stopped part-way
        // at one of their own (which run again from their checkpoints).
        let approved_calls: Vec<ToolCall> = suspended
            .calls
            .iter()
            .filter(|c| {
                suspended.approvals.iter().any(|p| p.call_id == c.id) || suspended.checkpoints.contains_key(&c.id)
            })
            .cloned()
            .collect();
        let mut state = LoopState {
            messages: suspended.transcript,
            usage: suspended.usage,
            steps: suspended.steps,
            started: Instant::now(),
            loaded: suspended.loaded,
        };
        let run = self.run_state(&cancel, &state);
        if !approved_calls.is_empty() {
            let engine = self.engine();
            let deferred = Arc::new(deferred);
            let options = CallOptions::new().cancel(cancel.child_token()).extensions(extensions(&run, Some(&deferred)));
            let results = engine.execute_batch_with(approved_calls, options).await;
            // A call stopped part-way may stop again, at a later call of its
            // own: the run is suspended again, with what it saved.
            let waiting = deferred.take_pending(&results);
            let checkpoints = deferred.take_checkpoints();
            for result in &results {
                if checkpoints.contains_key(&result.id) || waiting.iter().any(|p| p.call_id == result.id) {
                    continue;
                }
                let message = ToolResultMessage::from(result);
                self.emit(&AgentEvent::ToolResult(message.clone()));
                done.insert(result.id.clone(), message);
            }
            if !waiting.is_empty() {
                for pending in &waiting {
                    self.emit(&AgentEvent::ApprovalNeeded(pending.clone()));
                }
                let done = done.into_values().collect();
                return Ok(Outcome::Suspended(Suspended {
                    id: suspension_id(),
                    transcript: state.messages,
                    calls: suspended.calls,
                    done,
                    approvals: waiting,
                    external: Vec::new(),
                    usage: state.usage,
                    steps: state.steps,
                    loaded: state.loaded,
                    checkpoints,
                }));
            }
        }
        let mut results: Vec<ToolResultMessage> = suspended.calls.iter().filter_map(|c| done.remove(&c.id)).collect();
        // What is left answers calls that never ran (tools the request did
        // not declare): they go back too, every call needs its answer.
        let mut refused: Vec<ToolResultMessage> = done.into_values().collect();
        refused.sort_by(|a, b| a.call_id.cmp(&b.call_id));
        results.extend(refused);
        state.messages.push(Message::Tool { results });
        if let Some(value) = run.finish.get()
            && let Some(value) = self.accept(&mut state, value.clone(), &run).await
        {
            return Ok(Outcome::Finished(self.finished(state, value)));
        }
        self.drive(state, cancel).await
    }

    /// Record the suspension `id` and the calls it approves as consumed,
    /// or refuse if the suspension was consumed before (fail closed: a
    /// store that cannot record it refuses the resume).
    ///
    /// The claims are the suspension's and, under it, each approved call's
    /// (suspension, call): call ids come from the model (`call_1` from many
    /// a local server, ids derived from a call's content), so two runs may
    /// share one, and neither claim may stand in the other's way. The
    /// suspension is claimed first, so calls under it cannot be claimed
    /// before; a claim that fails part-way takes back what it recorded, so a
    /// failure that is not "already resumed" leaves the run resumable.
    async fn claim(&self, id: &str, approved: impl Iterator<Item = &str>) -> Result<(), AgentError> {
        if id.is_empty() {
            return Err(AgentError::Resume("the suspended run has no id, so it cannot be resumed safely".into()));
        }
        let run = claim_key(&["run", &hex(id)])?;
        let mut keys = vec![run];
        for call in approved {
            let key = claim_key(&["call", &hex(id), &hex(call)])?;
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        {
            let mut consumed = self.inner.consumed.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(key) = keys.iter().find(|k| consumed.contains(*k)) {
                return Err(AgentError::AlreadyResumed { what: key.clone() });
            }
            consumed.extend(keys.iter().cloned());
        }
        let Some(claims) = &self.inner.claims else { return Ok(()) };
        // Each key is created, never overwritten: the store makes the check
        // and the write one atomic step, so of several hosts resuming one
        // suspension at once exactly one gets through.
        for (at, key) in keys.iter().enumerate() {
            let error = match claims.create(key, &Value::Bool(true)).await {
                Ok(_) => continue,
                Err(StoreError::Exists { .. }) if at == 0 => {
                    return Err(AgentError::AlreadyResumed { what: key.clone() });
                }
                Err(StoreError::Exists { .. }) => AgentError::AlreadyResumed { what: key.clone() },
                Err(e) => AgentError::Resume(format!("cannot record the resumption: {e}")),
            };
            // Take back what this attempt recorded.
            for made in &keys[..at] {
                let _ = claims.delete(made).await;
            }
            let mut consumed = self.inner.consumed.lock().unwrap_or_else(PoisonError::into_inner);
            for key in &keys {
                consumed.remove(key);
            }
            return Err(error);
        }
        Ok(())
    }
}

/// A new suspension's id: the clock, the process and a counter, so no two
/// suspensions share one.
pub(super) fn suspension_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("s{nanos:x}-{:x}-{:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The store key recording a resumption: `resumed/` and the parts (hex,
/// since ids may hold any character).
fn claim_key(parts: &[&str]) -> Result<String, AgentError> {
    let key = format!("resumed/{}", parts.join("/"));
    if key.len() > toolreg_store::MAX_KEY_LEN {
        return Err(AgentError::Resume(format!("the {} id is too long to record ({} bytes)", parts[0], key.len())));
    }
    Ok(key)
}

fn hex(id: &str) -> String {
    id.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The approver that defers to the host: a call it is asked about stops
/// the agent's run with [`Outcome::Suspended`], and the host's decision,
/// given to [`Agent::resume`], settles it — in this process or another.
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
        let decision = match request.extensions().get::<Deferred>() {
            Some(deferred) => deferred.decide(&request),
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
/// a run's calls: the calls waiting for the host, and (on resume) the
/// host's recorded decisions, each bound to a call id and usable once.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    pending: Mutex<Vec<PendingApproval>>,
    recorded: Mutex<HashMap<String, RecordedDecision>>,
    /// Where calls that stop part-way leave their state (and, on resume,
    /// find it): in the calls' extensions beside this.
    pub(super) checkpoints: Arc<Checkpoints>,
}

/// An approval's (tool, arguments hash), or a denial's reason.
type RecordedDecision = Result<(String, String), String>;

impl Deferred {
    /// The calls that wait for the host.
    pub(super) fn take_pending(&self, results: &[ToolResult]) -> Vec<PendingApproval> {
        let mut pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        // Approvers are asked concurrently, so they push in no set order;
        // whoever decides reads the calls in the order the model made them
        // (a program's calls, `c1/2`, after their `run_code` call `c1`).
        let position = |id: &str| {
            let call = id.split('/').next().unwrap_or(id);
            results.iter().position(|result| result.id == call).unwrap_or(usize::MAX)
        };
        pending.sort_by(|a, b| {
            (position(&a.call_id), a.call_id.len(), &a.call_id).cmp(&(
                position(&b.call_id),
                b.call_id.len(),
                &b.call_id,
            ))
        });
        pending
    }

    /// What the calls stopped part-way saved.
    pub(super) fn take_checkpoints(&self) -> BTreeMap<String, Value> {
        self.checkpoints.take_saved()
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
