//! Tool search, for catalogs too large to offer a model whole: keywords,
//! meaning, and the two fused.
//!
//! - [`ToolIndex`] ranks tools by BM25 over their names, titles,
//!   descriptions, categories and parameters (the [`keyword`] side). It
//!   finds the tools whose words a request repeats, in microseconds, with no
//!   model.
//! - [`DenseIndex`] ranks them by the cosine similarity of sentence
//!   embeddings (the [`semantic`] side), so "take everything back out of
//!   the staging area" finds `git_reset`. An [`Encoder`] turns text into
//!   vectors; [`Embeddings`] holds one with every tool vector it computed,
//!   computes missing ones in the background and can keep them in a file.
//!   With the `embeddings` feature, [`SentenceEncoder`] runs a
//!   sentence-transformers model (all-MiniLM-L6-v2, bge-small, e5-small) on
//!   the CPU from a local directory.
//! - [`fuse`] merges the two rankings by a linear mix of their scores:
//!   meaning counts 0.7, keywords 0.3 (BM25 scaled to the query's best).
//!
//! [`FunctionRegistry::search`](crate::FunctionRegistry::search) keeps a
//! keyword index for its tools, built on first use and dropped whenever a
//! tool is registered, replaced or removed, so results always match the
//! registry. Given [`Embeddings`]
//! ([`FunctionRegistry::use_embeddings`](crate::FunctionRegistry::use_embeddings)),
//! it answers with the fused ranking once every tool has its vector, and
//! by keywords until then; each [`SearchHit`] says which [`Ranking`]
//! answered.

pub mod keyword;
pub mod semantic;
#[cfg(feature = "embeddings")]
mod sentence;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::declaration::ToolDeclaration;

pub use keyword::ToolIndex;
pub use semantic::{DenseIndex, Embeddings, Encoder};
#[cfg(feature = "embeddings")]
pub use sentence::SentenceEncoder;

/// Longest query read, in bytes: a model's query is a few words, and a
/// longer one costs time per word.
pub const MAX_QUERY_BYTES: usize = 1024;

/// The name of the function that finds deferred tools: the agent's
/// (`toolreg_llm`'s `AgentTools`) and the MCP gateway's meta-tool. A
/// [`Deferral`](crate::engine::Deferral) never defers it.
pub const SEARCH_TOOLS: &str = "search_tools";

/// How many tools each side of a fused search ranks before [`fuse`] merges
/// them: deep enough that a tool ranked low by one side and high by the
/// other still meets, small enough to cost nothing.
pub const FUSION_DEPTH: usize = 50;

/// How much the keyword side counts in [`fuse`] (the semantic side counts
/// the rest). Chosen on the catalog bench's tuning sets (`queries.txt` and
/// the first held-out set, BENCHMARKS.md "Issue 37"): 0.2 to 0.35 gave the
/// same recall within a point; reciprocal-rank fusion, two to four points
/// less at rank 1.
pub const KEYWORD_WEIGHT: f32 = 0.3;

/// One tool found by a search.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SearchHit {
    /// The tool's name.
    pub name: String,
    /// Its score under [`ranking`](Self::ranking) (higher is better): BM25,
    /// a cosine similarity, or the two mixed; 1.0 for a regex match.
    pub score: f32,
    /// Which search ranked it.
    pub ranking: Ranking,
}

/// Which search answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ranking {
    /// BM25 over the tools' words ([`ToolIndex`]).
    Keyword,
    /// Cosine similarity of embeddings alone ([`DenseIndex`]).
    Dense,
    /// Both, mixed ([`fuse`]).
    Hybrid,
}

impl Ranking {
    /// Its name in answers and logs: `keyword`, `dense` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ranking::Keyword => "keyword",
            Ranking::Dense => "dense",
            Ranking::Hybrid => "hybrid",
        }
    }
}

impl std::fmt::Display for Ranking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The regex does not compile, or would be too large.
    #[error("invalid pattern: {0}")]
    InvalidPattern(String),
    /// The embedding model could not be loaded, or failed on a text.
    #[error("search model: {0}")]
    Model(String),
    /// The file of cached tool vectors could not be read or written.
    #[error("tool vector cache {path}: {reason}")]
    Cache {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// Merge a keyword and a semantic ranking of the same query: each tool
/// scores [`KEYWORD_WEIGHT`] times its BM25 score over the best BM25 score
/// of the query, plus the rest times its cosine similarity (a side it is
/// not in adds nothing). The best `limit` come back; ties in keyword order,
/// then semantic order. Either list may be empty.
///
/// ```
/// use toolreg::search::{fuse, Ranking, ToolIndex};
/// use toolreg::ToolDeclaration;
///
/// let tools = [
///     ToolDeclaration::builder("git_add").description("Add file contents to the staging area").build(),
///     ToolDeclaration::builder("git_reset").description("Unstage all staged changes").build(),
/// ];
/// let keyword = ToolIndex::new(&tools).search("take everything back out of the staging area", 5);
/// assert_eq!(keyword[0].name, "git_add");
/// // What a DenseIndex would answer: git_reset means it.
/// let mut semantic = ToolIndex::new(&tools).search("unstage", 1);
/// semantic[0].score = 0.62;
/// let fused = fuse(&keyword, &semantic, 5);
/// assert_eq!(fused[0].name, "git_reset");
/// assert!(fused.iter().all(|hit| hit.ranking == Ranking::Hybrid));
/// ```
pub fn fuse(keyword: &[SearchHit], semantic: &[SearchHit], limit: usize) -> Vec<SearchHit> {
    let best = keyword.iter().map(|hit| hit.score).fold(0.0f32, f32::max);
    let mut scores: HashMap<&str, (f32, usize)> = HashMap::new();
    let sides = [(keyword, KEYWORD_WEIGHT, best, 0), (semantic, 1.0 - KEYWORD_WEIGHT, 1.0, keyword.len())];
    for (list, weight, scale, offset) in sides {
        for (rank, hit) in list.iter().enumerate() {
            let entry = scores.entry(hit.name.as_str()).or_insert((0.0, offset + rank));
            if scale > 0.0 {
                entry.0 += weight * hit.score / scale;
            }
        }
    }
    let mut fused: Vec<(&str, (f32, usize))> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    fused
        .into_iter()
        .take(limit)
        .map(|(name, (score, _))| SearchHit { name: name.to_owned(), score, ranking: Ranking::Hybrid })
        .collect()
}

/// A registry's search: its keyword index and, given embeddings, its
/// dense index, each built on first use and dropped by every change to the
/// tools ([`changed`](Self::changed)); the embeddings stay.
#[derive(Debug, Clone, Default)]
pub(crate) struct RegistrySearch {
    keyword: OnceLock<Arc<ToolIndex>>,
    dense: OnceLock<Arc<DenseIndex>>,
    embeddings: Option<Embeddings>,
}

impl RegistrySearch {
    /// The same embeddings, no index: for a registry of other tools.
    pub(crate) fn for_other_tools(&self) -> Self {
        RegistrySearch { embeddings: self.embeddings.clone(), ..RegistrySearch::default() }
    }

    /// The tools changed: the indexes no longer match them.
    pub(crate) fn changed(&mut self) {
        self.keyword = OnceLock::new();
        self.dense = OnceLock::new();
    }

    pub(crate) fn use_embeddings(&mut self, embeddings: Embeddings) {
        self.embeddings = Some(embeddings);
        self.dense = OnceLock::new();
    }

    pub(crate) fn embeddings(&self) -> Option<&Embeddings> {
        self.embeddings.as_ref()
    }

    pub(crate) fn keyword<'a>(&self, tools: impl FnOnce() -> Vec<&'a ToolDeclaration>) -> &ToolIndex {
        self.keyword.get_or_init(|| Arc::new(ToolIndex::new(tools())))
    }

    /// The dense index, if there are embeddings and every tool's vector is
    /// ready (else they are being computed).
    fn dense<'a>(&self, tools: impl FnOnce() -> Vec<&'a ToolDeclaration>) -> Option<&DenseIndex> {
        if let Some(dense) = self.dense.get() {
            return Some(dense);
        }
        let dense = DenseIndex::new(tools(), self.embeddings.as_ref()?)?;
        Some(self.dense.get_or_init(|| Arc::new(dense)))
    }

    /// Hybrid when it can, else keywords: see [`FunctionRegistry::search_where`](crate::FunctionRegistry::search_where).
    pub(crate) fn search_where<'a>(
        &self,
        tools: impl Fn() -> Vec<&'a ToolDeclaration>,
        query: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<SearchHit> {
        let keyword = self.keyword(&tools);
        let Some(dense) = self.dense(&tools) else { return keyword.search_where(query, limit, keep) };
        let keyword = keyword.search_where(query, FUSION_DEPTH.max(limit), &keep);
        match dense.search_where(query, FUSION_DEPTH.max(limit), &keep) {
            Ok(semantic) => fuse(&keyword, &semantic, limit),
            Err(error) => {
                tracing::warn!(%error, "cannot encode the query; answering by keywords");
                keyword.into_iter().take(limit).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(scored: &[(&str, f32)], ranking: Ranking) -> Vec<SearchHit> {
        scored.iter().map(|(n, score)| SearchHit { name: (*n).to_owned(), score: *score, ranking }).collect()
    }

    fn names(hits: Vec<SearchHit>) -> Vec<String> {
        hits.into_iter().map(|h| h.name).collect()
    }

    #[test]
    fn meaning_outweighs_keywords_and_a_tool_both_find_comes_first() {
        let keyword = hits(&[("a", 10.0), ("b", 5.0), ("c", 1.0)], Ranking::Keyword);
        let semantic = hits(&[("d", 0.7), ("b", 0.6), ("a", 0.2)], Ranking::Dense);
        // a: 0.3 + 0.14 = 0.44; b: 0.15 + 0.42 = 0.57; d: 0.49; c: 0.03.
        assert_eq!(names(fuse(&keyword, &semantic, 10)), ["b", "d", "a", "c"]);
        assert_eq!(fuse(&keyword, &semantic, 2).len(), 2);
    }

    #[test]
    fn one_empty_side_keeps_the_other_sides_order() {
        let keyword = hits(&[("x", 3.0), ("y", 2.0), ("z", 1.0)], Ranking::Keyword);
        assert_eq!(names(fuse(&keyword, &[], 10)), ["x", "y", "z"]);
        let semantic = hits(&[("x", 0.5), ("y", 0.4), ("z", 0.3)], Ranking::Dense);
        assert_eq!(names(fuse(&[], &semantic, 10)), ["x", "y", "z"]);
        let zero = hits(&[("x", 0.0)], Ranking::Keyword);
        assert_eq!(fuse(&zero, &[], 10)[0].score, 0.0, "no division by a zero best score");
    }
}
