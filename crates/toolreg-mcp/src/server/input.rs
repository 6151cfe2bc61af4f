//! Multi Round-Trip Requests: how a call asks a 2026-07-28 client a question.
//!
//! From the 2026-07-28 revision on, a server does not send requests of its
//! own in the middle of a call. It answers the call with an
//! `input_required` result: the questions (`inputRequests`: elicitation,
//! sampling, roots) and an opaque `requestState`. The client answers them and
//! sends the same call again with `inputResponses` and the state echoed.
//!
//! The server seals that state with a key only it knows (an HMAC, rmcp's
//! [`RequestStateCodec`]), bound to the tool and the hash of its canonical
//! arguments and valid for [`STATE_TTL`]: a client cannot forge it, change
//! it, or move it to another call. The first round's call id travels in the
//! sealed state and every later round runs under it, so an approval given in
//! one round is bound to the call id and arguments it was asked for, as every
//! approval is. A state is good for one retry: the server remembers the
//! states it accepted until they expire, so an approval cannot be replayed to
//! run the call again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ErrorData, InputRequests, InputRequiredResult, InputResponses, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::policy::ArgumentsHash;

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
}

impl InputRound {
    pub(crate) fn new(
        responses: InputResponses,
        state: Option<Value>,
        capabilities: Option<ClientCapabilities>,
    ) -> Self {
        InputRound { responses, state, capabilities, asked: Mutex::new(None), missing: Mutex::new(None) }
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

    /// The questions asked in this round and the state kept with them, taken.
    pub(crate) fn take_asked(&self) -> Option<(InputRequests, Value)> {
        self.take()
    }

    fn take(&self) -> Option<(InputRequests, Value)> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// What the sealed `requestState` holds.
#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The call id of the first round.
    call: String,
    /// The state the call left for its next round.
    state: Value,
    /// What the tool saved to go on where it stopped ([`Checkpoints`](toolreg::Checkpoints): a
    /// code-mode program's record of the calls it made), by call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    checkpoints: BTreeMap<String, Value>,
}

/// What a later round gets back of the first: its call id, the approval
/// stage's state, and the tools' checkpoints.
pub(crate) struct Reopened {
    pub(crate) call: String,
    pub(crate) state: Value,
    pub(crate) checkpoints: BTreeMap<String, Value>,
}

/// Seals and opens `requestState` with a key made when the server starts
/// (so a state outlives neither the process nor [`STATE_TTL`]).
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
    /// The states already accepted, with when: each is good for one retry.
    spent: Mutex<HashMap<String, Instant>>,
}

/// Spent states remembered at most (the oldest are forgotten past it, so
/// memory stays bounded under any load; a state is remembered until it
/// expires unless this many are accepted within [`STATE_TTL`]).
const SPENT_STATES: usize = 100_000;

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSeal")
    }
}

impl StateSeal {
    pub(crate) fn new() -> Self {
        let mut key = [0u8; 32];
        if getrandom::fill(&mut key).is_err() {
            // No system randomness: a key nobody knows is still needed; the
            // per-process hasher seeds are random enough to be unguessable
            // from outside, and this path is not expected on any platform
            // the server runs on.
            use std::hash::{BuildHasher, RandomState};
            for (i, chunk) in key.chunks_mut(8).enumerate() {
                chunk.copy_from_slice(&RandomState::new().hash_one(i).to_le_bytes());
            }
        }
        StateSeal { codec: RequestStateCodec::new_unchecked(key.to_vec()), spent: Mutex::new(HashMap::new()) }
    }

    /// The `input_required` result for a round that asked, or `None`; the
    /// protocol error for one that found a capability missing.
    pub(crate) fn answer(
        &self,
        round: &InputRound,
        call: &str,
        tool: &str,
        arguments: &Value,
        checkpoints: BTreeMap<String, Value>,
    ) -> Result<Option<InputRequiredResult>, ErrorData> {
        if let Some(required) = round.missing.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return Err(ErrorData::missing_required_client_capability(required));
        }
        let Some((requests, state)) = round.take() else { return Ok(None) };
        let envelope = Envelope { call: call.to_owned(), state, checkpoints };
        let bound = binding(tool, arguments);
        let sealed =
            self.codec.seal_json_with(&envelope, &SealOptions::new().associated_data(&bound).ttl(STATE_TTL)).map_err(
                |error| ErrorData::internal_error(format!("could not seal the request state: {error}"), None),
            )?;
        Ok(Some(InputRequiredResult::new(Some(requests), Some(sealed))))
    }

    /// Open a `requestState` the client echoed for a call of `tool` with
    /// `arguments`: the first round's call id and the state it left. A state
    /// is accepted once.
    pub(crate) fn open(&self, sealed: &str, tool: &str, arguments: &Value) -> Result<Reopened, ErrorData> {
        let bound = binding(tool, arguments);
        let envelope: Envelope = self.codec.open_json_with(sealed, &bound).map_err(|error| {
            ErrorData::invalid_params(
                format!(
                    "requestState was refused ({error}): it must be echoed unchanged, for the same tool and \
                     arguments, within {} minutes",
                    STATE_TTL.as_secs() / 60
                ),
                None,
            )
        })?;
        let now = Instant::now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if spent.contains_key(sealed) {
            return Err(ErrorData::invalid_params(
                "requestState was refused: it was already used (each state is good for one retry)",
                None,
            ));
        }
        if spent.len() >= SPENT_STATES {
            spent.retain(|_, at| now.duration_since(*at) < STATE_TTL);
            if spent.len() >= SPENT_STATES
                && let Some(oldest) = spent.iter().min_by_key(|(_, at)| **at).map(|(state, _)| state.clone())
            {
                spent.remove(&oldest);
            }
        }
        spent.insert(sealed.to_owned(), now);
        Ok(Reopened { call: envelope.call, state: envelope.state, checkpoints: envelope.checkpoints })
    }
}

/// What a sealed state is bound to: the tool and its canonical arguments.
fn binding(tool: &str, arguments: &Value) -> Vec<u8> {
    let mut bound = b"tools/call\0".to_vec();
    bound.extend_from_slice(tool.as_bytes());
    bound.push(0);
    bound.extend_from_slice(ArgumentsHash::of(arguments).as_bytes());
    bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_sealed_state_opens_only_for_its_tool_and_arguments() {
        let seal = StateSeal::new();
        let round = InputRound::new(InputResponses::new(), None, None);
        round.ask(InputRequests::new(), json!({"step": 2}));
        let args = json!({"path": "a"});
        let kept = BTreeMap::from([("7".to_owned(), json!({"journal": 1}))]);
        let answer = seal.answer(&round, "7", "rm", &args, kept.clone()).unwrap().unwrap();
        let sealed = answer.request_state.unwrap();
        assert!(seal.open(&sealed, "rm", &json!({"path": "b"})).is_err());
        assert!(seal.open(&sealed, "write", &args).is_err());
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert!(seal.open(&String::from_utf8(tampered).unwrap(), "rm", &args).is_err());
        // Another server's key (a restart) does not open it.
        assert!(StateSeal::new().open(&sealed, "rm", &args).is_err());
        // Untouched, for its tool and arguments, it opens once.
        let reopened = seal.open(&sealed, "rm", &json!({"path": "a"})).unwrap();
        assert_eq!((reopened.call, reopened.state, reopened.checkpoints), ("7".to_owned(), json!({"step": 2}), kept));
        assert!(seal.open(&sealed, "rm", &args).is_err());
        // A round that did not ask has no answer.
        assert!(seal.answer(&round, "7", "rm", &args, BTreeMap::new()).unwrap().is_none());
    }
}
