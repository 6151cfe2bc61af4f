//! Multi Round-Trip Requests: how a call asks a 2026-07-28 client a question.
//!
//! From the 2026-07-28 revision on, a server does not send requests of its
//! own in the middle of a call. It answers the call with an
//! `input_required` result: the questions (`inputRequests`: elicitation,
//! sampling, roots) and an opaque `requestState`. The client answers them and
//! sends the same call again with `inputResponses` and the state echoed.
//!
//! An [`InputRound`] is one such round as a tool sees it, in the call's
//! extensions. The server makes it and seals the state it leaves; a gateway's
//! imported tool reads it to put a remote server's questions to the client.
//! The approvals a round carries are each bound to one call id, tool and
//! arguments hash, usable once.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, InputRequests, InputResponses};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How long a sealed `requestState` is accepted after it was handed out.
pub const STATE_TTL: Duration = Duration::from_secs(10 * 60);

/// One round of a `tools/call` from a client on the 2026-07-28 revision or
/// later, in the call's extensions:
/// `cx.extensions().get::<InputRound>()`.
///
/// A tool (or an approver) reads the answers the client sent with
/// [`response`](Self::response) and the state it left for itself in an
/// earlier round with [`state`](Self::state); to ask a question it calls
/// [`ask`](Self::ask), and the server answers the call with an
/// `input_required` result instead of the tool's output (which is then
/// discarded). Clients on earlier revisions have no `InputRound`: ask them
/// through the connection (`Peer<RoleServer>`) as before.
#[derive(Debug)]
pub struct InputRound {
    responses: InputResponses,
    state: Option<Value>,
    capabilities: Option<ClientCapabilities>,
    asked: Mutex<Option<(InputRequests, Value)>>,
    missing: Mutex<Option<ClientCapabilities>>,
    /// The approvals this round holds and which of them were used.
    approvals: Mutex<Approvals>,
}

/// An approval a person gave in a round: for one call (its id), one tool
/// and one set of arguments (their [`ArgumentsHash`], hex), and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Approved {
    pub(crate) call: String,
    pub(crate) tool: String,
    pub(crate) hash: String,
}

/// The approvals of one round: those carried from the rounds before it
/// (each usable once in this round), whether the answer to this round's
/// question was used, and what was used in this round (carried on to the
/// next round if this one asks again: the call's result is then discarded
/// and it runs again).
#[derive(Debug, Default)]
struct Approvals {
    carried: Vec<(Approved, bool)>,
    answer_used: bool,
    used: Vec<Approved>,
}

/// The key under which a round's state travels with the approvals it carries
/// (only the server writes a state: it is sealed, or kept in memory by a task).
const CARRIED: &str = "toolreg_round";

impl InputRound {
    pub(crate) fn new(
        responses: InputResponses,
        state: Option<Value>,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        let (state, carried) = unwrap_state(state);
        InputRound {
            responses,
            state,
            capabilities,
            asked: Mutex::new(None),
            missing: Mutex::new(None),
            approvals: Mutex::new(Approvals {
                carried: carried.into_iter().map(|a| (a, false)).collect(),
                ..Approvals::default()
            }),
        }
    }

    /// Use an approval carried from an earlier round for exactly this call,
    /// tool and arguments hash, once in this round.
    pub(crate) fn use_carried(&self, approved: &Approved) -> bool {
        let mut approvals = self.approvals.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = approvals.carried.iter().position(|(a, used)| !*used && a == approved) else { return false };
        approvals.carried[at].1 = true;
        approvals.used.push(approved.clone());
        true
    }

    /// Take the answer to this round's approval question, for the call it
    /// was asked about: once per round. `approved` is recorded as used when
    /// the answer approves it.
    pub(crate) fn use_answer(&self, approved: Option<&Approved>) -> bool {
        let mut approvals = self.approvals.lock().unwrap_or_else(PoisonError::into_inner);
        if approvals.answer_used {
            return false;
        }
        approvals.answer_used = true;
        approvals.used.extend(approved.cloned());
        true
    }

    /// The client's answer to the question asked under `key` in the previous
    /// round, as the client sent it (an elicitation, sampling or roots
    /// result): check its shape before trusting it, and ask again if it is
    /// missing or malformed.
    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses.get(key)
    }

    /// Every answer the client sent with this round.
    pub fn responses(&self) -> &InputResponses {
        &self.responses
    }

    /// The state given to [`ask`](Self::ask) in the previous round, verified
    /// (the client cannot have changed it); `None` in the first round.
    pub fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// What the client declared it can answer (elicitation, sampling, roots),
    /// from the request's metadata.
    pub fn client_capabilities(&self) -> Option<&ClientCapabilities> {
        self.capabilities.as_ref()
    }

    /// Answer this call with `requests` for the client, keeping `state` (sealed)
    /// for the next round. The last call wins.
    pub fn ask(&self, requests: InputRequests, state: Value) {
        *self.asked.lock().unwrap_or_else(PoisonError::into_inner) = Some((requests, state));
    }

    /// Whether a question was asked in this round.
    pub fn asked(&self) -> bool {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The call cannot go on without `required`, which the client did not
    /// declare: the server answers it with the protocol's
    /// `MissingRequiredClientCapability` error (-32021, HTTP 400) naming
    /// them, instead of the tool's output. Takes precedence over
    /// [`ask`](Self::ask).
    pub fn require(&self, required: ClientCapabilities) {
        *self.missing.lock().unwrap_or_else(PoisonError::into_inner) = Some(required);
    }

    /// The capabilities [`require`](Self::require) found missing, taken.
    pub(crate) fn take_missing(&self) -> Option<ClientCapabilities> {
        self.missing.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// The questions asked in this round and the state kept with them, taken;
    /// with the approvals used in this round, whose calls run again in the
    /// next one (each still bound to its call, tool and arguments, and
    /// usable once there).
    pub(crate) fn take_asked(&self) -> Option<(InputRequests, Value)> {
        let (requests, state) = self.asked.lock().unwrap_or_else(PoisonError::into_inner).take()?;
        let used = std::mem::take(&mut self.approvals.lock().unwrap_or_else(PoisonError::into_inner).used);
        if used.is_empty() {
            return Some((requests, state));
        }
        Some((requests, serde_json::json!({CARRIED: {"state": state, "approved": used}})))
    }
}

/// A round's state as a tool left it, and the approvals carried with it.
fn unwrap_state(state: Option<Value>) -> (Option<Value>, Vec<Approved>) {
    match state {
        Some(Value::Object(mut map)) if map.len() == 1 && map.contains_key(CARRIED) => {
            let Some(Value::Object(mut carried)) = map.remove(CARRIED) else { return (None, Vec::new()) };
            let approved = carried.remove("approved").and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
            (carried.remove("state"), approved)
        }
        other => (other, Vec::new()),
    }
}
