//! The keyword side of tool search: BM25 over a registry's tools, and
//! regex matching.
//!
//! A tool is indexed by its name, title, description, categories and its
//! parameters' names and descriptions, split into words (`read_file`,
//! `readFile` and "read a file" share `read` and `file`) and stemmed
//! (Snowball English, so "files" finds `file`). BM25 (k1 = 1.2, b = 0.75)
//! ranks them, with a tool's name and title counting more than its prose,
//! and its parameters' descriptions less. A small table of everyday words
//! for the words of tool catalogs (make → create, shut down → stop,
//! folder → directory, PR → pull request) widens each query at half weight.
//!
//! A small BM25 over an inverted index rather than `tantivy`: a registry's
//! catalog lives in memory and changes with it, is at most some thousands
//! of short documents, and is searched with a few words; an index of
//! postings answers that in microseconds (see `benches/search.rs`) without
//! a second copy of every tool on disk or a commit step per change.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use regex::RegexBuilder;
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use super::{MAX_QUERY_BYTES, Ranking, SearchError, SearchHit};
use crate::declaration::ToolDeclaration;
use crate::validate::truncate;

/// How much a word in each part of a declaration counts (BM25F-style term
/// frequency weights): a tool's name says what it is more than its prose.
const NAME_WEIGHT: f32 = 3.0;
const TITLE_WEIGHT: f32 = 2.0;
const CATEGORY_WEIGHT: f32 = 1.5;
const TEXT_WEIGHT: f32 = 1.0;
/// A parameter's description says how to call the tool more than what it
/// does ("Page number", "Results per page"), so its words count half.
const PARAM_TEXT_WEIGHT: f32 = 0.5;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Largest compiled regex a search may build (bytes), so a hostile pattern
/// is refused instead of costing memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A BM25 index over tool declarations; see the [module docs](self).
///
/// ```
/// use toolreg::search::ToolIndex;
/// use toolreg::{ParamType, ToolDeclaration};
///
/// let tools = [
///     ToolDeclaration::builder("read_file").description("Read a text file").param("path", ParamType::String, "Where").build(),
///     ToolDeclaration::builder("send_email").description("Send an email message").build(),
/// ];
/// let index = ToolIndex::new(&tools);
/// assert_eq!(index.search("open some files", 5)[0].name, "read_file");
/// assert_eq!(index.search("mail somebody", 5)[0].name, "send_email"); // mail → email, at half weight
/// assert!(index.search("quantum physics", 5).is_empty()); // no word in common: no guess
/// assert_eq!(index.search("email", 1)[0].name, "send_email");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    names: Vec<String>,
    /// Each tool's weighted length (sum of term weights).
    lengths: Vec<f32>,
    average_length: f32,
    /// Stemmed word → (tool, weighted frequency), tools in index order.
    postings: HashMap<String, Vec<(u32, f32)>>,
    /// What a regex is matched against: name, title, description.
    texts: Vec<String>,
}

impl ToolIndex {
    /// Index these declarations (registry order is kept for ties).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolDeclaration>) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut index = ToolIndex::default();
        for (id, decl) in tools.into_iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            let mut terms: HashMap<String, f32> = HashMap::new();
            let mut add = |text: &str, weight: f32| {
                for word in words(text, &stemmer) {
                    *terms.entry(word).or_default() += weight;
                }
            };
            // A gateway's `server__tool`: the server part says where the
            // tool lives (like a category), the rest what it does.
            match decl.name.split_once("__") {
                Some((namespace, name)) => {
                    add(namespace, CATEGORY_WEIGHT);
                    add(name, NAME_WEIGHT);
                }
                None => add(&decl.name, NAME_WEIGHT),
            }
            if let Some(title) = &decl.title {
                add(title, TITLE_WEIGHT);
            }
            for category in &decl.categories {
                add(category, CATEGORY_WEIGHT);
            }
            add(&decl.description, TEXT_WEIGHT);
            for (param, description) in parameters(&decl.input_schema) {
                add(param, TEXT_WEIGHT);
                add(description, PARAM_TEXT_WEIGHT);
            }
            index.lengths.push(terms.values().sum());
            for (word, frequency) in terms {
                index.postings.entry(word).or_default().push((id, frequency));
            }
            index.names.push(decl.name.clone());
            index.texts.push(format!("{}\n{}\n{}", decl.name, decl.title.as_deref().unwrap_or(""), decl.description));
        }
        let total: f32 = index.lengths.iter().sum();
        index.average_length = if index.names.is_empty() { 1.0 } else { total / index.names.len() as f32 };
        index
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The `limit` best tools for `query`, best first; tools that share no
    /// word with the query are never returned. A query longer than
    /// [`MAX_QUERY_BYTES`] is read up to that length.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        self.search_where(query, limit, |_| true)
    }

    /// [`search`](Self::search) among the tools whose name `keep` admits
    /// (the tools not loaded yet, say): filtered before they are ranked.
    pub fn search_where(&self, query: &str, limit: usize, keep: impl Fn(&str) -> bool) -> Vec<SearchHit> {
        let stemmer = Stemmer::create(Algorithm::English);
        let query = truncate(query, MAX_QUERY_BYTES);
        // The query's own words count fully; the words they commonly stand
        // for in tool catalogs (folder → directory) count half. Ordered, so
        // each tool's score is summed in the same order every time: in hash
        // order its last bits, and so near-ties, changed between searches.
        let mut terms: BTreeMap<String, f32> = BTreeMap::new();
        for word in words(query, &stemmer) {
            for synonym in synonyms(&word) {
                for stemmed in words(synonym, &stemmer) {
                    terms.entry(stemmed).or_insert(SYNONYM_WEIGHT);
                }
            }
            terms.insert(word, 1.0);
        }
        let n = self.names.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for (word, weight) in &terms {
            let Some(postings) = self.postings.get(word) else { continue };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(id, tf) in postings {
                let length = self.lengths[id as usize] / self.average_length;
                let score = weight * idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length));
                *scores.entry(id).or_default() += score;
            }
        }
        let mut ranked: Vec<(u32, f32)> = scores.into_iter().collect();
        // Best first, ties in registry order. `keep` is asked only about the
        // best few (a window four times `limit`, widened while it keeps too
        // few), not about every tool that shares a word with the query.
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let mut window = limit.saturating_mul(4).max(16);
        let kept = loop {
            if window < ranked.len() {
                ranked.select_nth_unstable_by(window, order);
            }
            let end = window.min(ranked.len());
            let best = &mut ranked[..end];
            best.sort_by(order);
            let kept: Vec<(u32, f32)> =
                best.iter().filter(|(id, _)| keep(&self.names[*id as usize])).take(limit).copied().collect();
            if kept.len() == limit || window >= ranked.len() {
                break kept;
            }
            window = window.saturating_mul(4);
        };
        kept.into_iter()
            .map(|(id, score)| SearchHit { name: self.names[id as usize].clone(), score, ranking: Ranking::Keyword })
            .collect()
    }

    /// The tools whose name, title or description match `pattern` (a
    /// regex, case-insensitive), in registry order, at most `limit`.
    pub fn search_regex(&self, pattern: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        let regex = RegexBuilder::new(truncate(pattern, MAX_QUERY_BYTES))
            .case_insensitive(true)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| SearchError::InvalidPattern(e.to_string()))?;
        Ok(self
            .texts
            .iter()
            .zip(&self.names)
            .filter(|(text, _)| regex.is_match(text))
            .take(limit)
            .map(|(_, name)| SearchHit { name: name.clone(), score: 1.0, ranking: Ranking::Keyword })
            .collect())
    }
}

/// The words of `text`, lower-cased and stemmed: split at anything not a
/// letter or digit, and inside identifiers at lower-to-upper case changes
/// (`readFile` → `read`, `file`), the whole word kept too (`GitHub` →
/// `github`, `git`, `hub`), so a name and a mention of it always meet.
fn words<'a>(text: &'a str, stemmer: &'a Stemmer) -> impl Iterator<Item = String> + 'a {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut whole = String::new();
    let mut parts = 0;
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if parts > 1 {
                pieces.push(std::mem::take(&mut whole));
            }
            whole.clear();
            parts = 0;
            pieces.push(std::mem::take(&mut current));
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            pieces.push(std::mem::take(&mut current));
        }
        if current.is_empty() {
            parts += 1;
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
        whole.extend(c.to_lowercase());
    }
    if parts > 1 {
        pieces.push(whole);
    }
    pieces.push(current);
    pieces
        .into_iter()
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stemmer.stem(&w).into_owned())
}

/// Words too common in tool descriptions, or in the way people ask, to
/// tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do", "does", "for", "from",
    "have", "how", "i", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "should", "so",
    "some", "that", "the", "their", "them", "there", "this", "to", "us", "was", "we", "what", "when", "where", "which",
    "who", "will", "with", "would", "you", "your",
];

/// How much a synonym of a query word counts, against the word itself.
const SYNONYM_WEIGHT: f32 = 0.5;

/// Words that commonly stand for one another in requests and tool
/// catalogs (a small, general thesaurus: the words of tool names and the
/// everyday words for them), matched on the stemmed query word, and the
/// other way round when the second side is one word.
///
/// Three kinds, nothing specific to one catalog or one request: the verbs
/// of APIs and the everyday verbs for them (make → create, show → get,
/// erase → delete, kick off → run), the nouns of APIs and the everyday or
/// abbreviated nouns for them (folder → directory, PR → pull request,
/// row → record, config → configuration), and a few domains every large
/// catalog has (weather, money, incidents). Chosen on the tuning requests
/// of the catalog bench (`benches/catalog`, BENCHMARKS.md "Issue 21") and
/// checked on its held-out requests, which no entry was written for
/// (weighting synonyms 0.7 instead of 0.5 raised recall on the first and
/// lowered it on the second).
const SYNONYMS: &[(&str, &str)] = &[
    // Verbs: create, read, list, search.
    ("make", "create"),
    ("new", "create"),
    ("add", "create"),
    ("open", "create read get"),
    ("start", "create run"),
    ("book", "create schedule"),
    ("write", "create update"),
    ("prepare", "draft"),
    ("show", "get read view list"),
    ("view", "get read list"),
    ("display", "get show"),
    ("see", "get list"),
    ("check", "get status"),
    ("fetch", "get download"),
    ("retrieve", "get"),
    ("find", "search"),
    ("look", "search get"),
    ("lookup", "search get"),
    ("locate", "search"),
    // Verbs: update, delete, stop.
    ("edit", "update"),
    ("change", "update"),
    ("modify", "update"),
    ("alter", "update"),
    ("adjust", "update"),
    ("reschedule", "update"),
    ("upgrade", "update"),
    ("downgrade", "update"),
    ("rename", "move update"),
    ("remove", "delete"),
    ("erase", "delete"),
    ("destroy", "delete"),
    ("discard", "delete"),
    ("wipe", "delete"),
    ("cancel", "delete stop"),
    ("shut", "stop"),
    ("halt", "stop"),
    ("terminate", "stop delete"),
    ("unsubscribe", "remove delete"),
    // Verbs: run, send, move data, finish.
    ("launch", "start run"),
    ("trigger", "run start"),
    ("kick", "run start"),
    ("invoke", "run call"),
    ("retry", "rerun"),
    ("post", "send"),
    ("tell", "send notify"),
    ("notify", "send"),
    ("text", "sms"),
    ("upload", "put"),
    ("save", "download write"),
    ("export", "download"),
    ("clone", "copy fork"),
    ("transfer", "move"),
    ("resolve", "close"),
    ("done", "complete close"),
    ("tick", "complete"),
    ("approve", "accept"),
    ("reply", "respond comment"),
    ("answer", "reply respond"),
    ("invite", "add"),
    ("grant", "share permission"),
    ("access", "permission share"),
    // Nouns.
    ("folder", "directory"),
    ("dir", "directory"),
    ("repo", "repository"),
    ("pr", "pull request"),
    ("bug", "issue"),
    ("ticket", "issue"),
    ("doc", "document"),
    ("picture", "image"),
    ("photo", "image"),
    ("png", "image"),
    ("jpeg", "image"),
    ("screenshot", "screen capture image"),
    ("capture", "screenshot"),
    ("mail", "email"),
    ("dm", "direct message"),
    ("private", "direct"),
    ("conversation", "message thread"),
    ("meeting", "event"),
    ("schedule", "event"),
    ("todo", "task"),
    ("config", "configuration settings"),
    ("info", "information details"),
    ("stats", "statistics"),
    ("db", "database"),
    ("row", "record"),
    ("column", "field"),
    ("entry", "record"),
    ("sheet", "spreadsheet"),
    ("customer", "client"),
    ("output", "log"),
    ("history", "log"),
    ("error", "issue exception"),
    ("crash", "error"),
    ("key", "secret token"),
    ("credential", "secret"),
    ("site", "website"),
    ("url", "link"),
    ("song", "track"),
    ("k8s", "kubernetes"),
    ("vm", "instance"),
    ("label", "tag"),
    ("newest", "latest"),
    ("recent", "latest"),
    ("patch", "diff"),
    ("stock", "inventory"),
    ("plan", "subscription price"),
    ("coupon", "discount"),
    ("chargeback", "dispute"),
    // Domains.
    ("rain", "weather forecast"),
    ("snow", "weather forecast"),
    ("temperature", "weather"),
    ("remember", "memory"),
    ("money", "refund payment balance"),
    ("outage", "incident"),
    ("alert", "monitor incident"),
];

/// The synonyms of a (stemmed) query word, both ways; the table is
/// stemmed once, on first use.
fn synonyms(word: &str) -> impl Iterator<Item = &'static str> + '_ {
    static TABLE: LazyLock<HashMap<String, Vec<&'static str>>> = LazyLock::new(|| {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut table: HashMap<String, Vec<&'static str>> = HashMap::new();
        for (a, b) in SYNONYMS {
            table.entry(stemmer.stem(a).into_owned()).or_default().push(b);
            if !b.contains(' ') {
                table.entry(stemmer.stem(b).into_owned()).or_default().push(a);
            }
        }
        table
    });
    TABLE.get(word).into_iter().flatten().copied()
}

/// The top-level parameters of an input schema: name and description.
pub(super) fn parameters(schema: &Value) -> impl Iterator<Item = (&str, &str)> {
    schema.get("properties").and_then(Value::as_object).into_iter().flatten().map(|(name, property)| {
        (name.as_str(), property.get("description").and_then(Value::as_str).unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {

    /// `keep` asked only about the best few gives what filtering every
    /// match would, however few it keeps.
    #[test]
    fn a_narrow_keep_finds_what_a_full_filter_finds() {
        use super::ToolIndex;
        let tools: Vec<ToolDeclaration> = (0..300)
            .map(|i| {
                let extra = "file ".repeat(i % 7);
                ToolDeclaration::builder(format!("tool_{i}")).description(format!("Read a {extra}record {i}")).build()
            })
            .collect();
        let index = ToolIndex::new(&tools);
        for (rare, limit) in [("7", 5), ("99", 3), ("nothing", 4), ("", 20)] {
            let keep = |name: &str| name.ends_with(rare);
            let all = index.search("read file", 1000);
            let expected: Vec<String> = all.into_iter().map(|h| h.name).filter(|n| keep(n)).take(limit).collect();
            let got: Vec<String> = index.search_where("read file", limit, keep).into_iter().map(|h| h.name).collect();
            assert_eq!(got, expected, "{rare}");
        }
    }

    use super::*;
    use crate::declaration::ParamType;

    fn catalog() -> Vec<ToolDeclaration> {
        vec![
            ToolDeclaration::builder("read_file")
                .description("Read the lines of a text file")
                .param("path", ParamType::String, "The file's path")
                .build(),
            ToolDeclaration::builder("write_file").description("Write text to a file, replacing it").build(),
            ToolDeclaration::builder("listDirectory").description("List the entries of a folder").build(),
            ToolDeclaration::builder("github__create_issue")
                .description("Open a new issue in a GitHub repository")
                .category("github")
                .build(),
            ToolDeclaration::builder("weather").description("Current weather for a city").build(),
        ]
    }

    #[test]
    fn identifiers_split_and_stem() {
        let stemmer = Stemmer::create(Algorithm::English);
        let got: Vec<String> = words("listDirectory read_files github__create-issue HTTPServer", &stemmer).collect();
        assert_eq!(
            got,
            ["list", "listdirectori", "directori", "read", "file", "github", "creat", "issu", "httpserver"]
        );
        let brand: Vec<String> = words("GitHub", &stemmer).collect();
        assert_eq!(brand, ["git", "github", "hub"]);
    }

    #[test]
    fn the_best_match_comes_first_and_unrelated_tools_never() {
        let index = ToolIndex::new(&catalog());
        assert_eq!(index.search("list directory contents", 3)[0].name, "listDirectory");
        assert_eq!(index.search("open an issue on github", 3)[0].name, "github__create_issue");
        assert_eq!(index.search("weather in Oslo", 3)[0].name, "weather");
        let files: Vec<String> = index.search("files", 5).into_iter().map(|h| h.name).collect();
        assert_eq!(files.len(), 2);
        assert!(files.contains(&"read_file".into()) && files.contains(&"write_file".into()));
        assert!(index.search("quantum chromodynamics", 5).is_empty());
        assert!(index.search("", 5).is_empty());
        assert!(index.search("the and of", 5).is_empty(), "stop words alone find nothing");
    }

    #[test]
    fn scores_do_not_depend_on_hash_order() {
        // Many query words, each matching many tools: a tool's score is a
        // sum of many terms, and summed in another order its last bits (and
        // so the order of near-ties) would change from one search to the
        // next, as each new map hashes differently.
        let tools: Vec<ToolDeclaration> = (0..40)
            .map(|i| {
                ToolDeclaration::builder(format!("tool_{i}"))
                    .description(format!(
                        "read write list search open close copy move delete rename file folder issue page {}",
                        ["alpha beta", "gamma delta epsilon", "zeta", "eta theta iota kappa"][i % 4]
                    ))
                    .build()
            })
            .collect();
        let index = ToolIndex::new(&tools);
        let query = "read write list search open close copy move delete rename file folder issue page alpha gamma \
                     delta zeta eta theta iota kappa beta epsilon";
        let first: Vec<(String, u32)> =
            index.search(query, 40).into_iter().map(|hit| (hit.name, hit.score.to_bits())).collect();
        for _ in 0..50 {
            let again: Vec<(String, u32)> =
                index.search(query, 40).into_iter().map(|hit| (hit.name, hit.score.to_bits())).collect();
            assert_eq!(again, first);
        }
    }

    #[test]
    fn everyday_words_find_the_catalog_words() {
        let index = ToolIndex::new(&catalog());
        assert_eq!(index.search("make a folder", 1)[0].name, "listDirectory", "folder → directory");
        assert_eq!(index.search("file a bug", 3).iter().filter(|h| h.name == "github__create_issue").count(), 1);
        // The namespace counts as a category, not as the tool's name.
        assert_eq!(index.search("github", 1)[0].name, "github__create_issue");
    }

    #[test]
    fn everyday_verbs_find_the_api_verbs() {
        let tools = [
            ToolDeclaration::builder("start_instances").description("Start stopped instances").build(),
            ToolDeclaration::builder("stop_instances").description("Stop running instances").build(),
            ToolDeclaration::builder("list_runs").description("List the runs of a workflow").build(),
            ToolDeclaration::builder("rerun_jobs").description("Run the failed jobs of a workflow again").build(),
        ];
        let index = ToolIndex::new(&tools);
        assert_eq!(index.search("shut down the instances", 2)[0].name, "stop_instances", "shut → stop");
        assert_eq!(index.search("retry the workflow", 2)[0].name, "rerun_jobs", "retry → rerun");
    }

    #[test]
    fn a_parameter_description_counts_less_than_the_tool_description() {
        let tools = [
            ToolDeclaration::builder("list_tracks")
                .description("List tracks")
                .param("offset", ParamType::Integer, "Which page of results to return")
                .build(),
            ToolDeclaration::builder("fetch_url")
                .description("Get a web page and return its text, links and images as Markdown")
                .build(),
        ];
        let index = ToolIndex::new(&tools);
        assert_eq!(index.search("read a page", 2)[0].name, "fetch_url");
    }

    #[test]
    fn regex_matches_names_and_descriptions() {
        let index = ToolIndex::new(&catalog());
        let hits = index.search_regex("^github__", 10).unwrap();
        assert_eq!(hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["github__create_issue"]);
        assert_eq!(index.search_regex("FOLDER", 10).unwrap()[0].name, "listDirectory");
        assert!(matches!(index.search_regex("(", 10), Err(SearchError::InvalidPattern(_))));
        // A pattern that would compile to something huge is refused, not built.
        assert!(index.search_regex("\\w{1000}\\w{1000}\\w{1000}", 10).is_err());
    }

    #[test]
    fn hostile_queries_are_bounded() {
        let index = ToolIndex::new(&catalog());
        let long = "file ".repeat(100_000);
        assert!(index.search(&long, 1)[0].name.contains("file"));
        let multibyte = "é".repeat(2_000);
        assert!(index.search(&multibyte, 1).is_empty());
    }
}
