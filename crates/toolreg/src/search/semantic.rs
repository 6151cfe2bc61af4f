//! The semantic side of tool search: tools ranked by what their text means,
//! through sentence embeddings.
//!
//! An [`Encoder`] turns texts into unit vectors. [`Embeddings`] wraps one
//! with every tool vector computed so far, keyed by the model and the tool's
//! text (so a tool that did not change is never encoded twice, and a
//! replaced one is encoded again), computes missing vectors on a background
//! thread and, given a file, keeps them across runs. A [`DenseIndex`] is a
//! snapshot of the vectors of a set of tools, made only once all of them are
//! ready: until then a search answers by keywords alone, and says so.
//!
//! A tool's text is what a person would read to choose it: its server and
//! name in words, its title, its description and its parameters' names and
//! descriptions ([`tool_text`]).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use super::{MAX_QUERY_BYTES, Ranking, SearchError, SearchHit};
use crate::declaration::ToolDeclaration;
use crate::validate::truncate;

/// How many texts the background thread encodes at once.
const BATCH: usize = 32;

/// Most vectors kept, in memory and in the cache file: a catalog of many
/// thousands of tools fits; past it, the vectors of tools no longer
/// registered are dropped first.
pub const MAX_VECTORS: usize = 200_000;

/// Most of a tool's text encoded, in bytes: a description of any length
/// from a remote server costs the tokenizer no more than this (the model
/// reads only its first few hundred tokens anyway).
pub const MAX_TOOL_TEXT_BYTES: usize = 4096;

/// The cache file's first bytes (and its format's version).
const MAGIC: &[u8; 8] = b"TRVEC01\n";

/// Turns texts into vectors whose dot product says how alike they mean.
///
/// Implemented by [`SentenceEncoder`](super::SentenceEncoder) (feature
/// `embeddings`); implement it to use another model or a remote service.
pub trait Encoder: Send + Sync + 'static {
    /// Names the model and its weights: part of the key of every vector it
    /// made, so vectors of one model are never used with another.
    fn model(&self) -> &str;

    /// One unit-length vector per text, all of one length.
    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError>;
}

/// The text of a tool that its vector is computed from (at most
/// [`MAX_TOOL_TEXT_BYTES`]).
///
/// ```
/// use toolreg::search::semantic::tool_text;
/// use toolreg::{ParamType, ToolDeclaration};
///
/// let tool = ToolDeclaration::builder("github__create_issue")
///     .description("Open a new issue")
///     .param("title", ParamType::String, "Its title")
///     .build();
/// assert_eq!(tool_text(&tool), "github: create issue. Open a new issue. Parameters: title (Its title).");
/// ```
pub fn tool_text(tool: &ToolDeclaration) -> String {
    let words = |name: &str| name.replace(['_', '-'], " ");
    let mut text = match tool.name.split_once("__") {
        Some((server, name)) => format!("{}: {}.", words(server), words(name)),
        None => format!("{}.", words(&tool.name)),
    };
    for part in [tool.title.as_deref(), Some(tool.description.as_str())].into_iter().flatten() {
        let part = part.trim();
        if !part.is_empty() {
            text.push(' ');
            text.push_str(part);
            if !part.ends_with(['.', '!', '?']) {
                text.push('.');
            }
        }
    }
    let parameters: Vec<String> = super::keyword::parameters(&tool.input_schema)
        .map(|(name, description)| match description.trim() {
            "" => words(name),
            description => format!("{} ({})", words(name), description.trim_end_matches('.')),
        })
        .collect();
    if !parameters.is_empty() {
        text.push_str(" Parameters: ");
        text.push_str(&parameters.join(", "));
        text.push('.');
    }
    let end = truncate(&text, MAX_TOOL_TEXT_BYTES).len();
    text.truncate(end);
    text
}

/// A vector's key: the model and the text, hashed.
type Key = [u8; 16];

fn key(model: &str, text: &str) -> Key {
    let digest = Sha256::new().chain_update(model).chain_update([0]).chain_update(text).finalize();
    let mut key = [0; 16];
    key.copy_from_slice(&digest[..16]);
    key
}

/// An [`Encoder`] with the tool vectors it computed; cheap to clone (the
/// clones share both). See the [module docs](self).
#[derive(Clone)]
pub struct Embeddings {
    shared: Arc<Shared>,
}

struct Shared {
    encoder: Box<dyn Encoder>,
    cache_file: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    vectors: HashMap<Key, Arc<[f32]>>,
    /// Texts waiting for the background thread, and their keys.
    pending: Vec<(Key, String)>,
    queued: HashSet<Key>,
    /// Whether a background thread is encoding.
    working: bool,
    /// Texts the encoder failed on: not tried again by this process.
    failed: HashSet<Key>,
}

impl fmt::Debug for Embeddings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embeddings")
            .field("model", &self.model())
            .field("vectors", &self.state().vectors.len())
            .field("cache_file", &self.shared.cache_file)
            .finish()
    }
}

impl Embeddings {
    /// Embeddings by `encoder`, kept in memory only.
    pub fn new(encoder: impl Encoder) -> Self {
        Embeddings {
            shared: Arc::new(Shared { encoder: Box::new(encoder), cache_file: None, state: Mutex::default() }),
        }
    }

    /// Embeddings by `encoder` whose vectors are also kept in `file`: read
    /// now if it exists (vectors of another model in it are ignored), and
    /// written (owner-only, replaced whole) each time the background thread
    /// has caught up. A file that is not a vector cache is an error; one
    /// that does not exist yet is not.
    pub fn with_cache_file(encoder: impl Encoder, file: impl Into<PathBuf>) -> Result<Self, SearchError> {
        let file = file.into();
        let vectors = read_cache(&file)?;
        let embeddings = Embeddings {
            shared: Arc::new(Shared {
                encoder: Box::new(encoder),
                cache_file: Some(file),
                state: Mutex::new(State { vectors, ..State::default() }),
            }),
        };
        Ok(embeddings)
    }

    /// The encoder's [`model`](Encoder::model).
    pub fn model(&self) -> &str {
        self.shared.encoder.model()
    }

    /// How many tool vectors are held.
    pub fn len(&self) -> usize {
        self.state().vectors.len()
    }

    /// Whether no tool vector is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Encode every one of `tools` that has no vector yet, now, on this
    /// thread (an evaluation, or a start-up that would rather wait).
    pub fn embed_now<'a>(&self, tools: impl IntoIterator<Item = &'a ToolDeclaration>) -> Result<(), SearchError> {
        let model = self.model().to_owned();
        let mut missing: Vec<(Key, String)> = {
            let state = self.state();
            let mut seen = HashSet::new();
            tools
                .into_iter()
                .map(tool_text)
                .map(|text| (key(&model, &text), text))
                .filter(|(key, _)| !state.vectors.contains_key(key) && seen.insert(*key))
                .collect()
        };
        by_length(&mut missing);
        for batch in missing.chunks(BATCH) {
            self.encode_batch(batch)?;
        }
        if !missing.is_empty() {
            self.save();
        }
        Ok(())
    }

    /// Start computing the missing vectors of `tools` in the background (as
    /// the first search would), and say how many of them are ready now, of
    /// how many.
    pub fn prepare<'a>(&self, tools: impl IntoIterator<Item = &'a ToolDeclaration>) -> (usize, usize) {
        let texts: Vec<String> = tools.into_iter().map(tool_text).collect();
        let model = self.model().to_owned();
        let ready = {
            let state = self.state();
            texts.iter().filter(|text| state.vectors.contains_key(&key(&model, text))).count()
        };
        let _ = self.vectors_of(&texts);
        (ready, texts.len())
    }

    /// The query's vector (one encoder pass over at most
    /// [`MAX_QUERY_BYTES`] of it).
    pub fn query(&self, query: &str) -> Result<Vec<f32>, SearchError> {
        let mut vectors = self.shared.encoder.encode(&[truncate(query, MAX_QUERY_BYTES)])?;
        vectors.pop().ok_or_else(|| SearchError::Model("the encoder gave no vector for the query".into()))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held left whole entries behind: every
        // change is one insert or one push.
        self.shared.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Encode `batch` and keep its vectors.
    fn encode_batch(&self, batch: &[(Key, String)]) -> Result<(), SearchError> {
        let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
        let vectors = self.shared.encoder.encode(&texts)?;
        if vectors.len() != batch.len() {
            return Err(SearchError::Model(format!(
                "the encoder gave {} vectors for {} texts",
                vectors.len(),
                batch.len()
            )));
        }
        let mut state = self.state();
        for ((key, _), vector) in batch.iter().zip(vectors) {
            state.vectors.insert(*key, vector.into());
        }
        Ok(())
    }

    /// The vectors of `texts` if all are ready; else queue the missing ones
    /// for the background thread (started if none runs) and answer `None`.
    fn vectors_of(&self, texts: &[String]) -> Option<Vec<Arc<[f32]>>> {
        let model = self.model().to_owned();
        let keys: Vec<Key> = texts.iter().map(|text| key(&model, text)).collect();
        let mut state = self.state();
        let ready: Option<Vec<Arc<[f32]>>> = keys.iter().map(|key| state.vectors.get(key).cloned()).collect();
        if ready.is_some() {
            return ready;
        }
        let live: HashSet<Key> = keys.iter().copied().collect();
        for (key, text) in keys.into_iter().zip(texts) {
            if !state.vectors.contains_key(&key) && !state.failed.contains(&key) && state.queued.insert(key) {
                state.pending.push((key, text.clone()));
            }
        }
        by_length(&mut state.pending);
        if state.vectors.len() + state.pending.len() > MAX_VECTORS {
            state.vectors.retain(|key, _| live.contains(key));
        }
        if !state.working && !state.pending.is_empty() {
            state.working = true;
            let embeddings = self.clone();
            let spawned = std::thread::Builder::new().name("toolreg-embed".into()).spawn(move || embeddings.work());
            if let Err(error) = spawned {
                state.working = false;
                tracing::warn!(%error, "cannot start the thread that computes tool vectors; searching by keywords");
            }
        }
        None
    }

    /// The background thread: encode what is pending, batch by batch, then
    /// write the cache file.
    fn work(&self) {
        loop {
            let batch: Vec<(Key, String)> = {
                let mut state = self.state();
                let take = state.pending.len().min(BATCH);
                let batch: Vec<(Key, String)> = state.pending.drain(..take).collect();
                if batch.is_empty() {
                    state.working = false;
                    break;
                }
                batch
            };
            let result = self.encode_batch(&batch);
            let mut state = self.state();
            for (key, _) in &batch {
                state.queued.remove(key);
            }
            if let Err(error) = result {
                tracing::warn!(%error, texts = batch.len(), "cannot compute tool vectors; those tools are searched by keywords");
                state.failed.extend(batch.iter().map(|(key, _)| *key));
            }
        }
        self.save();
    }

    /// Write the cache file, if there is one; a failure is logged, not
    /// fatal (the vectors are still in memory).
    fn save(&self) {
        let Some(file) = &self.shared.cache_file else { return };
        let bytes = {
            let state = self.state();
            let dimensions = state.vectors.values().next().map_or(0, |v| v.len());
            let mut bytes = Vec::with_capacity(16 + state.vectors.len() * (16 + 4 * dimensions));
            bytes.extend_from_slice(MAGIC);
            bytes.extend_from_slice(&(dimensions as u32).to_le_bytes());
            let same: Vec<(&Key, &Arc<[f32]>)> = state.vectors.iter().filter(|(_, v)| v.len() == dimensions).collect();
            bytes.extend_from_slice(&(same.len() as u32).to_le_bytes());
            for (key, vector) in same {
                bytes.extend_from_slice(key);
                for value in vector.iter() {
                    bytes.extend_from_slice(&value.to_le_bytes());
                }
            }
            bytes
        };
        if let Err(error) = write_owner_only(file, &bytes) {
            tracing::warn!(file = %file.display(), %error, "cannot write the tool vector cache");
        }
    }
}

/// Texts in order of length, so that a batch holds texts of about one
/// length: a batch is padded to its longest, and padding is computed too.
fn by_length(texts: &mut [(Key, String)]) {
    texts.sort_by_key(|(_, text)| text.len());
}

/// Read a cache file: nothing if it does not exist; an error if it is not
/// one, or larger than [`MAX_VECTORS`] vectors could be.
fn read_cache(file: &Path) -> Result<HashMap<Key, Arc<[f32]>>, SearchError> {
    let bad = |reason: String| SearchError::Cache { path: file.display().to_string(), reason };
    let mut handle = match std::fs::File::open(file) {
        Ok(handle) => handle,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(error) => return Err(bad(error.to_string())),
    };
    let mut head = [0u8; 16];
    handle.read_exact(&mut head).map_err(|_| bad("not a tool vector cache (too short)".into()))?;
    if &head[..8] != MAGIC {
        return Err(bad("not a tool vector cache (delete it to start again)".into()));
    }
    let dimensions = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
    let count = u32::from_le_bytes([head[12], head[13], head[14], head[15]]) as usize;
    if dimensions > 8192 || count > MAX_VECTORS {
        return Err(bad(format!("{count} vectors of {dimensions} dimensions is more than a cache holds")));
    }
    let record = 16 + 4 * dimensions;
    let mut body = Vec::new();
    handle.take((count * record) as u64 + 1).read_to_end(&mut body).map_err(|error| bad(error.to_string()))?;
    if body.len() != count * record {
        return Err(bad(format!("expected {} bytes of vectors, found {}", count * record, body.len())));
    }
    Ok(body
        .chunks_exact(record)
        .map(|chunk| {
            let mut key = [0; 16];
            key.copy_from_slice(&chunk[..16]);
            let vector: Arc<[f32]> =
                chunk[16..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            (key, vector)
        })
        .collect())
}

/// Replace `file` with `bytes`, readable by its owner only.
fn write_owner_only(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut temporary = file.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written =
        options.open(&temporary).and_then(|mut handle| handle.write_all(bytes).and_then(|()| handle.sync_all()));
    match written.and_then(|()| std::fs::rename(&temporary, file)) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            Err(error)
        }
    }
}

/// The vectors of a set of tools, ready to rank them against a query.
#[derive(Debug, Clone)]
pub struct DenseIndex {
    names: Vec<String>,
    vectors: Vec<Arc<[f32]>>,
    embeddings: Embeddings,
}

impl DenseIndex {
    /// The index of `tools` if every one has its vector; else `None`, and
    /// the missing vectors are being computed in the background (ask again
    /// later).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolDeclaration>, embeddings: &Embeddings) -> Option<Self> {
        let (names, texts): (Vec<String>, Vec<String>) =
            tools.into_iter().map(|tool| (tool.name.clone(), tool_text(tool))).unzip();
        let vectors = embeddings.vectors_of(&texts)?;
        Some(DenseIndex { names, vectors, embeddings: embeddings.clone() })
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The `limit` tools whose text means most nearly what `query` does,
    /// among those whose name `keep` admits, best first (one encoder pass).
    pub fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let query = self.embeddings.query(query)?;
        let mut scored: Vec<(usize, f32)> = self
            .vectors
            .iter()
            .enumerate()
            .filter(|(id, _)| keep(&self.names[*id]))
            .map(|(id, vector)| (id, vector.iter().zip(&query).map(|(a, b)| a * b).sum()))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scored
            .into_iter()
            .take(limit)
            .map(|(id, score)| SearchHit { name: self.names[id].clone(), score, ranking: Ranking::Dense })
            .collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A bag-of-letters encoder: texts with the same letters point the same
    /// way. Counts its calls.
    #[derive(Default)]
    pub(crate) struct Letters {
        pub(crate) calls: std::sync::atomic::AtomicUsize,
    }

    impl Encoder for Letters {
        fn model(&self) -> &str {
            "letters-v1"
        }

        fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
            self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v = [0f32; 26];
                    for c in text.to_ascii_lowercase().bytes().filter(u8::is_ascii_lowercase) {
                        v[usize::from(c - b'a')] += 1.0;
                    }
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    v.iter().map(|x| x / norm).collect()
                })
                .collect())
        }
    }

    fn tools() -> Vec<ToolDeclaration> {
        vec![
            ToolDeclaration::builder("zzz").description("zzz zzz").build(),
            ToolDeclaration::builder("abc").description("abc abc").build(),
        ]
    }

    fn wait_for(embeddings: &Embeddings, tools: &[ToolDeclaration]) -> DenseIndex {
        for _ in 0..500 {
            if let Some(index) = DenseIndex::new(tools, embeddings) {
                return index;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the vectors were never ready");
    }

    #[test]
    fn vectors_come_from_the_background_and_each_text_is_encoded_once() {
        let embeddings = Embeddings::new(Letters::default());
        let tools = tools();
        assert!(DenseIndex::new(&tools, &embeddings).is_none(), "nothing is ready at first");
        let index = wait_for(&embeddings, &tools);
        assert_eq!(index.search_where("zz", 5, |_| true).unwrap()[0].name, "zzz");
        assert_eq!(index.search_where("cab", 5, |_| true).unwrap()[0].name, "abc");
        assert_eq!(index.search_where("cab", 5, |name| name != "abc").unwrap()[0].name, "zzz");
        assert_eq!(embeddings.len(), 2);
        // A replaced tool (new text) is encoded again; the other is not.
        let mut changed = tools.clone();
        changed[0] = ToolDeclaration::builder("zzz").description("now about yyy").build();
        let index = wait_for(&embeddings, &changed);
        assert_eq!(index.len(), 2);
        assert_eq!(embeddings.len(), 3);
    }

    #[test]
    fn the_cache_file_keeps_vectors_across_processes_and_refuses_what_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vectors.bin");
        let tools = tools();
        let first = Embeddings::with_cache_file(Letters::default(), &file).unwrap();
        first.embed_now(&tools).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let encoder = Letters::default();
        let second = Embeddings::with_cache_file(encoder, &file).unwrap();
        assert_eq!(second.len(), 2);
        assert!(DenseIndex::new(&tools, &second).is_some(), "ready at once, from the file");

        std::fs::write(&file, b"something else entirely").unwrap();
        let error = Embeddings::with_cache_file(Letters::default(), &file).unwrap_err();
        assert!(error.to_string().contains("not a tool vector cache"), "{error}");
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&384u32.to_le_bytes());
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        std::fs::write(&file, huge).unwrap();
        let error = Embeddings::with_cache_file(Letters::default(), &file).unwrap_err();
        assert!(error.to_string().contains("more than a cache holds"), "{error}");
        let mut short = MAGIC.to_vec();
        short.extend_from_slice(&26u32.to_le_bytes());
        short.extend_from_slice(&2u32.to_le_bytes());
        short.extend_from_slice(&[0; 20]);
        std::fs::write(&file, short).unwrap();
        let error = Embeddings::with_cache_file(Letters::default(), &file).unwrap_err();
        assert!(error.to_string().contains("expected 240 bytes"), "{error}");
    }

    #[test]
    fn vectors_of_another_model_are_not_used() {
        struct Other(Letters);
        impl Encoder for Other {
            fn model(&self) -> &str {
                "other"
            }
            fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
                self.0.encode(texts)
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vectors.bin");
        Embeddings::with_cache_file(Letters::default(), &file).unwrap().embed_now(&tools()).unwrap();
        let other = Embeddings::with_cache_file(Other(Letters::default()), &file).unwrap();
        assert!(DenseIndex::new(&tools(), &other).is_none());
    }

    #[test]
    fn texts_reaching_the_encoder_are_bounded() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        /// Records the longest text it was given.
        struct Longest(Arc<AtomicUsize>);
        impl Encoder for Longest {
            fn model(&self) -> &str {
                "longest"
            }
            fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
                self.0.fetch_max(texts.iter().map(|t| t.len()).max().unwrap_or(0), Ordering::SeqCst);
                Ok(texts.iter().map(|_| vec![1.0]).collect())
            }
        }
        let longest = Arc::new(AtomicUsize::new(0));
        let huge = "é".repeat(1 << 20);
        let tools = [ToolDeclaration::builder("hostile").description(&huge).build()];
        let embeddings = Embeddings::new(Longest(Arc::clone(&longest)));
        embeddings.embed_now(&tools).unwrap();
        assert!(longest.load(Ordering::SeqCst) <= MAX_TOOL_TEXT_BYTES, "{}", longest.load(Ordering::SeqCst));
        assert!(longest.load(Ordering::SeqCst) > MAX_TOOL_TEXT_BYTES - 4);
        let index = DenseIndex::new(&tools, &embeddings).unwrap();
        longest.store(0, Ordering::SeqCst);
        index.search_where(&huge, 5, |_| true).unwrap();
        assert!(longest.load(Ordering::SeqCst) <= MAX_QUERY_BYTES);
    }

    #[test]
    fn a_failing_encoder_leaves_keyword_search_and_is_not_retried_forever() {
        struct Broken;
        impl Encoder for Broken {
            fn model(&self) -> &str {
                "broken"
            }
            fn encode(&self, _: &[&str]) -> Result<Vec<Vec<f32>>, SearchError> {
                Err(SearchError::Model("out of memory".into()))
            }
        }
        let embeddings = Embeddings::new(Broken);
        assert!(DenseIndex::new(&tools(), &embeddings).is_none());
        for _ in 0..200 {
            if !embeddings.state().working {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(embeddings.state().failed.len(), 2);
        assert!(DenseIndex::new(&tools(), &embeddings).is_none());
        assert!(embeddings.state().pending.is_empty(), "failed texts are not queued again");
        assert!(embeddings.embed_now(&tools()).is_err());
    }
}
