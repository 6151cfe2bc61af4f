//! `toolreg search-eval`: how often tool search finds the right tool on an
//! operator's own catalog, before they trust deferred loading with it.
//!
//! The search is the one `search_tools` runs behind the gateway's deferred
//! mode: the registry's indexes over every tool, answering with imported
//! tools only — by keywords, or with a search model (`--search-model`) by
//! keywords and meaning fused (`--search` picks one side alone). Every tool
//! vector is computed before the first request is searched. Each labelled request is searched once for its top ten; a
//! request is found at rank k when any of its acceptable tools is among the
//! first k. MRR counts the first acceptable tool's rank within the ten (0
//! past it).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolreg::ToolDeclaration;
use toolreg::search::{DenseIndex, Embeddings, FUSION_DEPTH, SearchHit, ToolIndex, fuse};
use toolreg_mcp::client::local_name;
use toolreg_mcp::rmcp::model::Tool;

use crate::CliError;
use crate::cli::{SearchEvalArgs, SearchKind};
use crate::setup::Tools;

/// The ranks recall is reported at; the search asks for the last.
const RANKS: [usize; 4] = [1, 3, 5, 10];
/// A miss is a request whose tools are not in this many first results.
const MISS_RANK: usize = 5;
/// The largest catalog or request file read (a file is read whole).
const MAX_FILE: u64 = 256 << 20;

/// One labelled request of the `--queries` file.
#[derive(Debug, Deserialize)]
struct Labelled {
    request: String,
    /// Any of these counts as found.
    tools: Vec<String>,
    /// Reported apart when given (e.g. `paraphrase`).
    #[serde(default)]
    kind: Option<String>,
}

/// Recall and MRR of a group of requests.
#[derive(Debug, Default, Serialize)]
struct Figures {
    requests: usize,
    /// Requests found within each rank of [`RANKS`], in that order.
    found: [usize; RANKS.len()],
    reciprocal_ranks: f64,
}

impl Figures {
    fn add(&mut self, rank: Option<usize>) {
        self.requests += 1;
        if let Some(rank) = rank {
            for (found, k) in self.found.iter_mut().zip(RANKS) {
                *found += usize::from(rank <= k);
            }
            self.reciprocal_ranks += 1.0 / rank as f64;
        }
    }

    /// Recall at rank `k` of [`RANKS`], in percent.
    fn recall(&self, k: usize) -> f64 {
        let i = RANKS.iter().position(|&r| r == k).unwrap_or(RANKS.len() - 1);
        percent(self.found[i], self.requests)
    }

    fn mrr(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.reciprocal_ranks / self.requests as f64 }
    }

    fn json(&self) -> Value {
        let mut figures = serde_json::json!({ "requests": self.requests, "mrr": round(self.mrr(), 4) });
        for k in RANKS {
            figures[format!("recall@{k}")] = round(self.recall(k), 2).into();
        }
        figures
    }
}

/// A request the search missed, with what it answered instead.
#[derive(Debug, Serialize)]
struct Miss {
    request: String,
    expected: Vec<String>,
    /// The rank of the first acceptable tool within ten, if any.
    rank: Option<usize>,
    got: Vec<String>,
}

/// The whole evaluation.
#[derive(Debug)]
struct Report {
    /// Which search answered, in words.
    search: String,
    tools: usize,
    all: Figures,
    /// By the requests' `kind`, where given.
    kinds: BTreeMap<String, Figures>,
    misses: Vec<Miss>,
}

/// Run `toolreg search-eval`.
pub fn run(tools: &Tools, args: &SearchEvalArgs) -> Result<(), CliError> {
    let (declarations, searched) = match &args.catalog {
        Some(path) => {
            let declarations = read_catalog(path)?;
            let searched = declarations.iter().map(|d| d.name.clone()).collect();
            (declarations, searched)
        }
        None => {
            let declarations: Vec<ToolDeclaration> = tools.registry.list().map(|t| t.declaration().clone()).collect();
            // What the gateway defers: the imported servers' tools.
            let searched: HashSet<String> = declarations
                .iter()
                .filter(|d| d.categories.iter().any(|c| c == "mcp"))
                .map(|d| d.name.clone())
                .collect();
            (declarations, searched)
        }
    };
    if searched.is_empty() {
        return Err(CliError::new(
            "search-eval: no tools to search: give a catalog (--catalog FILE) or MCP servers (--config FILE)",
        ));
    }
    let requests = read_queries(&args.queries, &searched)?;
    let kind = args.search.unwrap_or(if tools.embeddings.is_some() { SearchKind::Hybrid } else { SearchKind::Keyword });
    let search = Search::new(kind, &declarations, tools.embeddings.as_ref())?;
    let report = evaluate(&search, &searched, &requests)?;
    let text = if args.json { json(&report, args.misses) } else { table(&report, args.misses) };
    writeln!(std::io::stdout().lock(), "{text}").map_err(|e| CliError::new(format!("cannot write: {e}")))?;
    let short: Vec<String> = args
        .min_recall
        .iter()
        .filter(|(k, min)| report.all.recall(*k) < *min)
        .map(|(k, min)| format!("recall@{k} is {:.1}%, under {min}%", report.all.recall(*k)))
        .collect();
    if short.is_empty() { Ok(()) } else { Err(CliError::new(format!("search-eval: {}", short.join("; ")))) }
}

/// The search measured, with its indexes built and its vectors computed.
struct Search {
    kind: SearchKind,
    keyword: ToolIndex,
    dense: Option<DenseIndex>,
    /// What the report calls it.
    name: String,
}

impl Search {
    fn new(
        kind: SearchKind,
        declarations: &[ToolDeclaration],
        embeddings: Option<&Embeddings>,
    ) -> Result<Self, CliError> {
        let keyword = ToolIndex::new(declarations);
        let embeddings = match (kind, embeddings) {
            (SearchKind::Keyword, _) => {
                return Ok(Search { kind, keyword, dense: None, name: "keyword (BM25)".into() });
            }
            (_, Some(embeddings)) => embeddings,
            (_, None) => {
                return Err(CliError::new(
                    "search-eval: --search dense and hybrid need a search model (--search-model DIR)",
                ));
            }
        };
        embeddings.embed_now(declarations).map_err(|e| CliError::new(format!("search-eval: {e}")))?;
        let dense = DenseIndex::new(declarations, embeddings)
            .ok_or_else(|| CliError::new("search-eval: the tool vectors are not ready"))?;
        let name = match kind {
            SearchKind::Dense => format!("dense ({})", embeddings.model()),
            _ => format!("hybrid (BM25 and {}, mixed 0.3 to 0.7)", embeddings.model()),
        };
        Ok(Search { kind, keyword, dense: Some(dense), name })
    }

    /// The first `limit` tools for `request` among the searched ones, as
    /// `search_tools` ranks them.
    fn top(&self, request: &str, limit: usize, keep: impl Fn(&str) -> bool) -> Result<Vec<SearchHit>, CliError> {
        let dense = |limit: usize| match &self.dense {
            Some(dense) => {
                dense.search_where(request, limit, &keep).map_err(|e| CliError::new(format!("search-eval: {e}")))
            }
            None => Ok(Vec::new()),
        };
        Ok(match self.kind {
            SearchKind::Keyword => self.keyword.search_where(request, limit, &keep),
            SearchKind::Dense => dense(limit)?,
            SearchKind::Hybrid => {
                let depth = FUSION_DEPTH.max(limit);
                fuse(&self.keyword.search_where(request, depth, &keep), &dense(depth)?, limit)
            }
        })
    }
}

/// Search each request and rank its answer.
fn evaluate(search: &Search, searched: &HashSet<String>, requests: &[Labelled]) -> Result<Report, CliError> {
    let limit = RANKS[RANKS.len() - 1];
    let mut report = Report {
        search: search.name.clone(),
        tools: searched.len(),
        all: Figures::default(),
        kinds: BTreeMap::new(),
        misses: Vec::new(),
    };
    for labelled in requests {
        let hits = search.top(&labelled.request, limit, |name| searched.contains(name))?;
        let rank = hits.iter().position(|hit| labelled.tools.contains(&hit.name)).map(|i| i + 1);
        report.all.add(rank);
        if let Some(kind) = &labelled.kind {
            report.kinds.entry(kind.clone()).or_default().add(rank);
        }
        if rank.is_none_or(|rank| rank > MISS_RANK) {
            report.misses.push(Miss {
                request: labelled.request.clone(),
                expected: labelled.tools.clone(),
                rank,
                got: hits.into_iter().take(MISS_RANK).map(|hit| hit.name).collect(),
            });
        }
    }
    Ok(report)
}

fn table(report: &Report, misses: usize) -> String {
    let mut out = format!(
        "search: {}, {} tools, {} requests\n\n| requests | n | recall@1 | recall@3 | recall@5 | recall@10 | MRR |\n|---|---:|---:|---:|---:|---:|---:|\n",
        report.search, report.tools, report.all.requests
    );
    let groups = std::iter::once(("all", &report.all)).chain(report.kinds.iter().map(|(k, f)| (k.as_str(), f)));
    for (name, figures) in groups {
        let _ = write!(out, "| {name} | {} |", figures.requests);
        for k in RANKS {
            let _ = write!(out, " {:.1}% |", figures.recall(k));
        }
        let _ = writeln!(out, " {:.3} |", figures.mrr());
    }
    if misses > 0 && !report.misses.is_empty() {
        let _ = writeln!(out, "\nNot in the top {MISS_RANK} ({} requests):", report.misses.len());
        for miss in report.misses.iter().take(misses) {
            let rank = miss.rank.map_or("not in the top 10".to_owned(), |r| format!("rank {r}"));
            let _ = writeln!(
                out,
                "- {:?} wants {} ({rank}); got {}",
                miss.request,
                miss.expected.join(" or "),
                if miss.got.is_empty() { "nothing".to_owned() } else { miss.got.join(", ") }
            );
        }
        if report.misses.len() > misses {
            let _ = writeln!(out, "- … and {} more (--misses N)", report.misses.len() - misses);
        }
    }
    out.trim_end().to_owned()
}

fn json(report: &Report, misses: usize) -> String {
    let kinds: serde_json::Map<String, Value> = report.kinds.iter().map(|(k, f)| (k.clone(), f.json())).collect();
    let misses: Vec<&Miss> = report.misses.iter().take(misses).collect();
    let value = serde_json::json!({
        "search": report.search,
        "tools": report.tools,
        "all": report.all.json(),
        "kinds": kinds,
        "misses": misses,
        "missed": report.misses.len(),
    });
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}

fn round(value: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (value * scale).round() / scale
}

/// A file read whole, refused past [`MAX_FILE`].
fn read(path: &Path, what: &str) -> Result<String, CliError> {
    let error =
        |e: std::io::Error| CliError::new(format!("search-eval: cannot read the {what} {}: {e}", path.display()));
    let size = std::fs::metadata(path).map_err(error)?.len();
    if size > MAX_FILE {
        return Err(CliError::new(format!(
            "search-eval: the {what} {} is {size} bytes, over the {MAX_FILE} read",
            path.display()
        )));
    }
    std::fs::read_to_string(path).map_err(error)
}

/// The catalog's tools, named and categorised as the gateway imports them.
fn read_catalog(path: &Path) -> Result<Vec<ToolDeclaration>, CliError> {
    let bad = |why: String| CliError::new(format!("search-eval: the catalog {}: {why}", path.display()));
    let catalog: serde_json::Map<String, Value> =
        serde_json::from_str(&read(path, "catalog")?).map_err(|e| bad(format!("not a JSON object of servers: {e}")))?;
    let mut taken = HashSet::new();
    let mut declarations = Vec::new();
    for (server, listing) in catalog {
        let tools = match listing {
            Value::Array(tools) => tools,
            Value::Object(mut result) => match result.remove("tools") {
                Some(Value::Array(tools)) => tools,
                _ => return Err(bad(format!("server `{server}`: expected its tools (an array, or `tools` of one)"))),
            },
            _ => return Err(bad(format!("server `{server}`: expected its tools (an array, or `tools` of one)"))),
        };
        for (i, tool) in tools.into_iter().enumerate() {
            let tool: Tool =
                serde_json::from_value(tool).map_err(|e| bad(format!("server `{server}`, tool {}: {e}", i + 1)))?;
            declarations.push(declaration(&server, &tool, &mut taken));
        }
    }
    Ok(declarations)
}

/// `tool` of `server` as the gateway declares it for search: its local
/// name, description, schema, title and the categories `mcp` and the server.
fn declaration(server: &str, tool: &Tool, taken: &mut HashSet<String>) -> ToolDeclaration {
    let name = local_name(server, &tool.name, taken);
    let schema = Value::Object((*tool.input_schema).clone());
    let mut declaration = ToolDeclaration::new(name, tool.description.as_deref().unwrap_or_default(), schema);
    let title = tool.title.clone().or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
    if let Some(title) = title {
        declaration = declaration.with_title(title);
    }
    declaration.with_category("mcp").with_category(server)
}

/// The labelled requests, each of whose tools must be in `searched`.
fn read_queries(path: &Path, searched: &HashSet<String>) -> Result<Vec<Labelled>, CliError> {
    let text = read(path, "requests")?;
    let mut requests = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |why: String| CliError::new(format!("search-eval: {} line {}: {why}", path.display(), i + 1));
        if line.trim().is_empty() {
            continue;
        }
        let labelled: Labelled = serde_json::from_str(line)
            .map_err(|e| bad(format!("expected {{\"request\": \"...\", \"tools\": [\"...\"]}}: {e}")))?;
        if labelled.request.trim().is_empty() || labelled.tools.is_empty() {
            return Err(bad("a request needs its text and at least one tool".into()));
        }
        if let Some(unknown) = labelled.tools.iter().find(|tool| !searched.contains(*tool)) {
            return Err(bad(format!("`{unknown}` is not a tool of the catalog searched")));
        }
        requests.push(labelled);
    }
    if requests.is_empty() {
        return Err(CliError::new(format!("search-eval: {} holds no requests", path.display())));
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_count_at_every_cut_and_mrr_within_ten() {
        let mut figures = Figures::default();
        for rank in [Some(1), Some(4), Some(10), None] {
            figures.add(rank);
        }
        assert_eq!(figures.recall(1), 25.0);
        assert_eq!(figures.recall(3), 25.0);
        assert_eq!(figures.recall(5), 50.0);
        assert_eq!(figures.recall(10), 75.0);
        assert!((figures.mrr() - (1.0 + 0.25 + 0.1) / 4.0).abs() < 1e-9);
    }
}
