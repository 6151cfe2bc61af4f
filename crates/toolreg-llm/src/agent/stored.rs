//! [`SuspendedRuns`]: suspended runs kept in a context store, by id, so
//! that any host sharing the store — another process, another machine —
//! can load one and resume it.

use serde::{Deserialize, Serialize};
use toolreg::seal::SealingKey;
use toolreg_store::{Namespace, StoreError};

use super::{AgentError, Suspended};

/// Suspended runs in a store namespace, each sealed with the host's
/// [`SealingKey`] and bound to the store: a record changed in the store, stored
/// under another id, or copied into another store (whose claims have never
/// seen it) is refused when loaded. Resuming one is claimed once across
/// hosts by the agent's [`resume_claims`](super::AgentBuilder::resume_claims).
///
/// The store is known by an identity it keeps in the namespace (made at the
/// first save). "Resumes once" holds within one store: a copy of the whole
/// store (a backup restored), identity and claims included, is the same
/// store as it was when copied.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use toolreg::seal::SealingKey;
/// use toolreg_store::SqliteStore;
/// use toolreg_llm::agent::SuspendedRuns;
///
/// let store = SqliteStore::in_memory().await.unwrap();
/// let runs = SuspendedRuns::new(store.namespace("suspended").unwrap(), SealingKey::new([1; 32]));
/// assert!(runs.load("s-unknown").await.is_err());
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct SuspendedRuns {
    namespace: Namespace,
    key: SealingKey,
}

/// A suspended run as stored: its exact JSON text and the seal over it.
#[derive(Serialize, Deserialize)]
struct Record {
    run: String,
    seal: String,
}

/// The format, in what is sealed: 2 binds a record to its store.
const FORMAT: &[u8] = b"toolreg-suspended/2";

/// Where the namespace keeps its store's identity (beside the `run/` keys).
const IDENTITY: &str = "identity";

impl SuspendedRuns {
    /// Suspended runs kept in `namespace`, sealed with `key`.
    pub fn new(namespace: Namespace, key: SealingKey) -> Self {
        SuspendedRuns { namespace, key }
    }

    /// Keep `suspended` under its id (a suspension is stored once).
    pub async fn save(&self, suspended: &Suspended) -> Result<(), AgentError> {
        let key = record_key(&suspended.id)?;
        let run = serde_json::to_string(suspended).map_err(|e| AgentError::Resume(e.to_string()))?;
        let store = self.identity().await?;
        let seal = self.key.seal(&[FORMAT, store.as_bytes(), suspended.id.as_bytes(), run.as_bytes()]);
        let record = serde_json::to_value(Record { run, seal }).map_err(|e| AgentError::Resume(e.to_string()))?;
        self.namespace.create(&key, &record).await.map_err(|e| match e {
            StoreError::Exists { .. } => AgentError::Resume(format!("a run `{}` is stored already", suspended.id)),
            other => AgentError::Resume(format!("cannot store the suspended run: {other}")),
        })?;
        Ok(())
    }

    /// The suspended run stored under `id`, if its seal holds.
    pub async fn load(&self, id: &str) -> Result<Suspended, AgentError> {
        let stored = self.namespace.get(&record_key(id)?).await.map_err(|e| match e {
            StoreError::NotFound { .. } => AgentError::Resume(format!("no suspended run `{id}` in the store")),
            other => AgentError::Resume(format!("cannot read the suspended run: {other}")),
        })?;
        let tampered = || {
            AgentError::Resume(format!(
                "the stored run `{id}` was changed, or was stored in another store or by an older version; it was \
                 not resumed"
            ))
        };
        let record: Record = serde_json::from_value(stored.value).map_err(|_| tampered())?;
        let store = self.identity().await?;
        if !self.key.verify(&[FORMAT, store.as_bytes(), id.as_bytes(), record.run.as_bytes()], &record.seal) {
            return Err(tampered());
        }
        let suspended: Suspended = serde_json::from_str(&record.run).map_err(|_| tampered())?;
        if suspended.id != id {
            return Err(tampered());
        }
        Ok(suspended)
    }

    /// The ids of the runs stored (at most `limit`, oldest key order).
    pub async fn list(&self, limit: u64) -> Result<Vec<String>, AgentError> {
        let page = self
            .namespace
            .list("run/", limit, None)
            .await
            .map_err(|e| AgentError::Resume(format!("cannot list the suspended runs: {e}")))?;
        Ok(page.entries.iter().filter_map(|e| e.key.strip_prefix("run/")).filter_map(decode).collect())
    }
}

impl SuspendedRuns {
    /// This store's identity: kept in the namespace, made (at random) the
    /// first time; of two hosts making it at once, the first one's stands.
    async fn identity(&self) -> Result<String, AgentError> {
        let unreadable = |e: StoreError| AgentError::Resume(format!("cannot read the store's identity: {e}"));
        for _ in 0..2 {
            match self.namespace.get(IDENTITY).await {
                Ok(entry) => {
                    return entry.value.as_str().map(str::to_owned).ok_or_else(|| {
                        AgentError::Resume("the store's identity is not what toolreg wrote there".into())
                    });
                }
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(unreadable(e)),
            }
            let made = SealingKey::random().to_hex();
            match self.namespace.create(IDENTITY, &serde_json::Value::String(made.clone())).await {
                Ok(_) => return Ok(made),
                Err(StoreError::Exists { .. }) => {}
                Err(e) => return Err(unreadable(e)),
            }
        }
        Err(AgentError::Resume("the store's identity could not be made".into()))
    }
}

/// The store key of run `id`: hex, since ids may hold any character.
fn record_key(id: &str) -> Result<String, AgentError> {
    let key = format!("run/{}", id.bytes().map(|b| format!("{b:02x}")).collect::<String>());
    if id.is_empty() || key.len() > toolreg_store::MAX_KEY_LEN {
        return Err(AgentError::Resume(format!("`{id}` cannot be a suspended run's id")));
    }
    Ok(key)
}

fn decode(hex: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok())).collect();
    String::from_utf8(bytes?).ok()
}
