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
//! approval is. A round asks about one call at a time, and its answer covers
//! that call only (its id, tool and arguments hash), once: the calls of a
//! code-mode program, which share the round, are each asked about in a round
//! of their own. An approval used in a round that then asks a question (the
//! call's result is discarded, and it runs again) goes on in the sealed state
//! to the next round, for that call only. A state is good for one retry: the server remembers the
//! states it accepted until they expire, so an approval cannot be replayed to
//! run the call again.
//!
//! Replicas behind a load balancer share both halves with
//! [`RequestStates::shared`]: the key that seals states (so a retry may
//! reach any replica) and a store namespace where each state's one use is
//! claimed atomically (so no replica accepts a state another already did).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{ErrorData, InputRequiredResult, RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolreg::policy::ArgumentsHash;
use toolreg::seal::SealingKey;
use toolreg_store::{Namespace, StoreError};

use crate::protocol::{InputRound, STATE_TTL};

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
    /// When it stops being accepted, in milliseconds since the epoch: where
    /// uses are claimed in a store, the claims are kept in this order and
    /// dropped once past it.
    #[serde(default)]
    expires_ms: u64,
}

/// What a later round gets back of the first: its call id, the approval
/// stage's state, and the tools' checkpoints.
pub(crate) struct Reopened {
    pub(crate) call: String,
    pub(crate) state: Value,
    pub(crate) checkpoints: BTreeMap<String, Value>,
}

/// How a server seals `requestState` and remembers which states were used:
/// by default a key made when it starts and a memory of its own, so a
/// client's retry must reach the same process; [`shared`](Self::shared) for
/// replicas behind a load balancer.
#[derive(Clone)]
pub struct RequestStates {
    key: SealingKey,
    spent: Option<Namespace>,
}

impl RequestStates {
    /// A key nobody else has and uses remembered in this process.
    pub fn local() -> Self {
        RequestStates { key: SealingKey::random(), spent: None }
    }

    /// Sealed with `key` and each use claimed in `spent`: every server
    /// given the same key and a namespace of the same store opens the
    /// others' states, and accepts each of them once between them. A state
    /// whose use cannot be recorded (the store is down or full) is refused.
    pub fn shared(key: SealingKey, spent: Namespace) -> Self {
        RequestStates { key, spent: Some(spent) }
    }
}

impl Default for RequestStates {
    fn default() -> Self {
        Self::local()
    }
}

impl std::fmt::Debug for RequestStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let spent = self.spent.as_ref().map(|n| n.name().as_str().to_owned());
        f.debug_struct("RequestStates").field("spent", &spent).finish_non_exhaustive()
    }
}

/// Seals and opens `requestState` as [`RequestStates`] says (a state
/// outlives neither its key nor [`STATE_TTL`]).
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
    /// The states already accepted here, with when: each is good for one
    /// retry.
    spent: Mutex<HashMap<String, Instant>>,
    /// Where uses are claimed instead, when shared.
    shared: Option<Namespace>,
    /// Claims made, to prune the expired ones now and then.
    claims: AtomicU32,
}

/// Spent states remembered at most (the oldest are forgotten past it, so
/// memory stays bounded under any load; a state is remembered until it
/// expires unless this many are accepted within [`STATE_TTL`]).
const SPENT_STATES: usize = 100_000;

/// A shared store's expired claims are pruned every this many claims, at
/// most [`PRUNED_AT_ONCE`] of them each time.
const PRUNE_EVERY: u32 = 64;
const PRUNED_AT_ONCE: u64 = 200;

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSeal")
    }
}

impl StateSeal {
    pub(crate) fn new(states: &RequestStates) -> Self {
        // The codec's key is derived from the host's, never the key itself,
        // so a state sealed here cannot pass for anything else it seals.
        let derived = states.key.seal(&[b"toolreg mcp requestState"]);
        StateSeal {
            codec: RequestStateCodec::new_unchecked(derived.into_bytes()),
            spent: Mutex::new(HashMap::new()),
            shared: states.spent.clone(),
            claims: AtomicU32::new(0),
        }
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
        if let Some(required) = round.take_missing() {
            return Err(ErrorData::missing_required_client_capability(required));
        }
        let Some((requests, state)) = round.take_asked() else { return Ok(None) };
        let expires_ms = now_ms().saturating_add(u64::try_from(STATE_TTL.as_millis()).unwrap_or(u64::MAX));
        let envelope = Envelope { call: call.to_owned(), state, checkpoints, expires_ms };
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
    pub(crate) async fn open(&self, sealed: &str, tool: &str, arguments: &Value) -> Result<Reopened, ErrorData> {
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
        match &self.shared {
            Some(store) => self.claim(store, sealed, envelope.expires_ms).await?,
            None => self.spend_here(sealed)?,
        }
        Ok(Reopened { call: envelope.call, state: envelope.state, checkpoints: envelope.checkpoints })
    }

    fn spend_here(&self, sealed: &str) -> Result<(), ErrorData> {
        let now = Instant::now();
        let mut spent = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if spent.contains_key(sealed) {
            return Err(already_used());
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
        Ok(())
    }

    /// Claim the state's one use in the shared store: the key is its expiry
    /// (zero-padded, so claims sort oldest first) and its hash.
    async fn claim(&self, store: &Namespace, sealed: &str, expires_ms: u64) -> Result<(), ErrorData> {
        let digest = Sha256::digest(sealed.as_bytes());
        let hash: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let key = format!("{expires_ms:015}-{hash}");
        match store.create(&key, &Value::Null).await {
            Ok(_) => {}
            Err(StoreError::Exists { .. }) => return Err(already_used()),
            Err(error) => {
                return Err(ErrorData::internal_error(
                    format!("requestState was refused: its use could not be recorded ({error}); try again"),
                    None,
                ));
            }
        }
        if self.claims.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            prune(store).await;
        }
        Ok(())
    }
}

/// Drop the oldest claims that have expired (a state past its expiry is
/// refused by its seal, so its claim is no longer needed).
async fn prune(store: &Namespace) {
    let Ok(page) = store.list("", PRUNED_AT_ONCE, None).await else { return };
    let now = now_ms();
    for entry in page.entries {
        let expired = entry.key.split_once('-').and_then(|(at, _)| at.parse::<u64>().ok()).is_some_and(|at| at < now);
        if !expired {
            break;
        }
        let _ = store.delete(&entry.key).await;
    }
}

fn already_used() -> ErrorData {
    ErrorData::invalid_params("requestState was refused: it was already used (each state is good for one retry)", None)
}

fn now_ms() -> u64 {
    u64::try_from(toolreg_store::now_ms()).unwrap_or(0)
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
    use rmcp::model::{InputRequests, InputResponses};
    use serde_json::json;

    #[tokio::test]
    async fn a_sealed_state_opens_only_for_its_tool_and_arguments() {
        let seal = StateSeal::new(&RequestStates::local());
        let round = InputRound::new(InputResponses::new(), None, None);
        round.ask(InputRequests::new(), json!({"step": 2}));
        let args = json!({"path": "a"});
        let kept = BTreeMap::from([("7".to_owned(), json!({"journal": 1}))]);
        let answer = seal.answer(&round, "7", "rm", &args, kept.clone()).unwrap().unwrap();
        let sealed = answer.request_state.unwrap();
        assert!(seal.open(&sealed, "rm", &json!({"path": "b"})).await.is_err());
        assert!(seal.open(&sealed, "write", &args).await.is_err());
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert!(seal.open(&String::from_utf8(tampered).unwrap(), "rm", &args).await.is_err());
        // Another server's key (a restart) does not open it.
        assert!(StateSeal::new(&RequestStates::local()).open(&sealed, "rm", &args).await.is_err());
        // Untouched, for its tool and arguments, it opens once.
        let reopened = seal.open(&sealed, "rm", &json!({"path": "a"})).await.unwrap();
        assert_eq!((reopened.call, reopened.state, reopened.checkpoints), ("7".to_owned(), json!({"step": 2}), kept));
        assert!(seal.open(&sealed, "rm", &args).await.is_err());
        // A round that did not ask has no answer.
        assert!(seal.answer(&round, "7", "rm", &args, BTreeMap::new()).unwrap().is_none());
    }

    /// Replicas sharing a key and a store open each other's states, and
    /// accept each once between them; a replica with another key does not.
    #[tokio::test]
    async fn replicas_sharing_a_key_and_a_store_accept_a_state_once_between_them() {
        use toolreg_store::SqliteStore;
        let store = SqliteStore::in_memory().await.unwrap();
        let key = SealingKey::new([5; 32]);
        let replica = || StateSeal::new(&RequestStates::shared(key.clone(), store.namespace("spent").unwrap()));
        let (first, second, third) = (replica(), replica(), replica());
        let round = InputRound::new(InputResponses::new(), None, None);
        round.ask(InputRequests::new(), json!({"step": 1}));
        let args = json!({"path": "a"});
        let sealed = first.answer(&round, "9", "rm", &args, BTreeMap::new()).unwrap().unwrap().request_state.unwrap();
        let other = StateSeal::new(&RequestStates::shared(SealingKey::new([6; 32]), store.namespace("spent").unwrap()));
        assert!(other.open(&sealed, "rm", &args).await.is_err());
        assert_eq!(second.open(&sealed, "rm", &args).await.unwrap().call, "9");
        let Err(again) = third.open(&sealed, "rm", &args).await else { panic!("accepted twice") };
        assert!(again.message.contains("already used"), "{again:?}");
        assert!(first.open(&sealed, "rm", &args).await.is_err());
        // One claim, keyed by its expiry first.
        let page = store.namespace("spent").unwrap().list("", 10, None).await.unwrap();
        assert_eq!(page.entries.len(), 1);
        let (expiry, _) = page.entries[0].key.split_once('-').unwrap();
        assert!(expiry.parse::<u64>().unwrap() > now_ms());
    }

    #[tokio::test]
    async fn expired_claims_are_pruned_oldest_first() {
        use toolreg_store::SqliteStore;
        let store = SqliteStore::in_memory().await.unwrap();
        let spent = store.namespace("spent").unwrap();
        let past = now_ms() - 1_000;
        for i in 0..3 {
            spent.create(&format!("{:015}-{i:032x}", past + i), &Value::Null).await.unwrap();
        }
        let future = format!("{:015}-{:032x}", now_ms() + 600_000, 7);
        spent.create(&future, &Value::Null).await.unwrap();
        prune(&spent).await;
        let left: Vec<String> = spent.list("", 10, None).await.unwrap().entries.into_iter().map(|e| e.key).collect();
        assert_eq!(left, [future]);
    }
}
