//! [`Agent::resume`]: a suspended run continued, once, with the host's
//! decisions and answers.

use std::collections::HashMap;
use std::sync::PoisonError;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolreg::{ToolCall, ToolError, ToolOutput, ToolResult};
use toolreg_store::StoreError;

use super::approval::ApprovalRound;
use super::conversation::Conversation;
use super::state::LoopState;
use super::suspend::Waiting;
use super::{Agent, AgentError, Resolution, RunOutcome, Suspended};
use crate::model::{Message, ToolResultMessage};

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
    ) -> Result<RunOutcome, AgentError> {
        self.traced(self.resume_untraced(suspended, resolutions, cancel)).await
    }

    async fn resume_untraced(
        &self,
        suspended: Suspended,
        resolutions: Vec<Resolution>,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, AgentError> {
        self.check_post_process()?;
        let by_id: HashMap<&str, &Resolution> = resolutions.iter().map(|r| (r.call_id(), r)).collect();
        check_complete(&suspended, &by_id)?;
        // Checked above, so a refused resume consumes nothing.
        self.claim(&suspended.id, approved(&suspended, &resolutions)).await?;
        let Suspended { transcript, calls, done, approvals, external, usage, steps, loaded, checkpoints, .. } =
            suspended;
        let mut answers: HashMap<String, ToolResultMessage> =
            done.into_iter().map(|r| (r.call_id.clone(), r)).collect();
        answers.extend(host_answers(&external, &by_id));
        let mut state = LoopState::new(Conversation::new(self, transcript, loaded), usage, steps);
        let run = state.run_state(self, &cancel);
        // The calls that wait for a decision, and the calls stopped part-way
        // at one of their own (which run again from their checkpoints),
        // through the agent's engine, with the recorded decisions where
        // `SuspendForApproval` looks for them.
        let rerun: Vec<ToolCall> = calls
            .iter()
            .filter(|c| approvals.iter().any(|p| p.call_id == c.id) || checkpoints.contains_key(&c.id))
            .cloned()
            .collect();
        if !rerun.is_empty() {
            let round = ApprovalRound::resuming(&resolutions, checkpoints);
            let (answered, held) = self.call_batch(&self.engine(), rerun, &run, round, None).await;
            answers.extend(answered.into_iter().map(|m| (m.call_id.clone(), m)));
            // A call stopped part-way may stop again, at a later call of its
            // own: the run is suspended again, with what it saved.
            if !held.approvals.is_empty() {
                self.announce(&held);
                let waiting = Waiting { calls, done: answers.into_values().collect(), held, external: Vec::new() };
                return Ok(RunOutcome::Suspended(state.suspended(waiting)));
            }
        }
        state.conversation.push(Message::Tool { results: in_call_order(&calls, answers) });
        if let Some(value) = self.finish_if_returned(&mut state, &run).await {
            return Ok(RunOutcome::Finished(state.finished(value)));
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

/// Refuse a resume that leaves a call without what it waits for: each
/// pending call needs a decision or an answer, an external tool's call an
/// answer.
fn check_complete(suspended: &Suspended, by_id: &HashMap<&str, &Resolution>) -> Result<(), AgentError> {
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
    Ok(())
}

/// The calls of `suspended` that `resolutions` approve.
fn approved<'a>(suspended: &'a Suspended, resolutions: &'a [Resolution]) -> impl Iterator<Item = &'a str> {
    resolutions.iter().filter_map(|r| match r {
        Resolution::Approve { call_id, .. } if suspended.approvals.iter().any(|p| &p.call_id == call_id) => {
            Some(call_id.as_str())
        }
        _ => None,
    })
}

/// The host's answers for the calls of the tools it runs itself (each
/// checked present), by call id.
fn host_answers(
    external: &[ToolCall],
    by_id: &HashMap<&str, &Resolution>,
) -> impl Iterator<Item = (String, ToolResultMessage)> {
    external.iter().filter_map(|call| {
        let Some(Resolution::Answer { result, .. }) = by_id.get(call.id.as_str()) else { return None };
        let outcome = match result {
            Ok(value) => Ok(ToolOutput::new(value.clone())),
            Err(text) => Err(ToolError::failed(text.clone())),
        };
        let result = ToolResult { id: call.id.clone(), name: call.name.clone(), outcome };
        Some((call.id.clone(), ToolResultMessage::from(&result)))
    })
}

/// Every answer, in the order of the turn's `calls`; what is left answers
/// calls that never ran (tools the request did not declare): they go back
/// too, every call needs its answer.
fn in_call_order(calls: &[ToolCall], mut answers: HashMap<String, ToolResultMessage>) -> Vec<ToolResultMessage> {
    let mut results: Vec<ToolResultMessage> = calls.iter().filter_map(|c| answers.remove(&c.id)).collect();
    let mut refused: Vec<ToolResultMessage> = answers.into_values().collect();
    refused.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    results.extend(refused);
    results
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
