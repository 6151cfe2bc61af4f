//! Tool search over a large catalog: building the index of 10,000 tools,
//! and one search of it (a few words, as a model writes them).
//!
//! With the `embeddings` feature and the model of
//! `scripts/fetch_search_model.sh` (all-MiniLM-L6-v2) in
//! `target/search-model`, also hybrid search: encoding tools (a batch of 32,
//! sorted by length as the background thread takes them; 10,000 tools take
//! 10,000 / 32 of these), a dense and a hybrid search of 10,000 tools (one
//! encoder pass for the query, then cosine over every vector), and the
//! memory their vectors take.
//!
//! The catalog is generated: every combination of an action, an object and
//! a service, each tool with a sentence of description and two described
//! parameters, like the tools of real MCP servers.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolreg::search::ToolIndex;
use toolreg::{ParamType, ToolDeclaration};

const ACTIONS: &[&str] = &[
    "get", "list", "create", "update", "delete", "search", "export", "import", "archive", "restore", "share", "watch",
    "sync", "count", "rename", "tag", "lock", "copy", "move", "preview", "validate", "publish", "schedule", "cancel",
    "approve",
];
const OBJECTS: &[&str] = &[
    "issue",
    "pull_request",
    "file",
    "folder",
    "message",
    "channel",
    "calendar_event",
    "invoice",
    "customer",
    "order",
    "ticket",
    "dashboard",
    "metric",
    "alert",
    "deployment",
    "container",
    "database_table",
    "spreadsheet_row",
    "document",
    "comment",
    "label",
    "user",
    "team",
    "webhook",
    "secret",
    "backup",
    "report",
    "task",
    "contact",
    "playlist",
    "photo",
    "video",
    "note",
    "bookmark",
    "branch",
    "commit",
    "release",
    "pipeline",
    "build",
    "log",
];
const SERVICES: &[&str] =
    &["github", "gitlab", "slack", "jira", "notion", "drive", "stripe", "shopify", "zendesk", "datadog", "kubernetes"];

/// 11,000 tools: every service × object × action, cut to `n`.
fn catalog(n: usize) -> Vec<ToolDeclaration> {
    let mut tools = Vec::with_capacity(n);
    'all: for service in SERVICES {
        for object in OBJECTS {
            for action in ACTIONS {
                if tools.len() == n {
                    break 'all;
                }
                let words = object.replace('_', " ");
                tools.push(
                    ToolDeclaration::builder(format!("{service}__{action}_{object}"))
                        .description(format!("{action} a {words} in {service}, and return what changed"))
                        .param("id", ParamType::String, format!("The {words}'s identifier in {service}"))
                        .optional_param("limit", ParamType::Integer, "At most this many results")
                        .category(*service)
                        .build(),
                );
            }
        }
    }
    tools
}

fn bench(c: &mut Criterion) {
    let tools = catalog(10_000);
    let mut group = c.benchmark_group("search");
    group.bench_function("index_10k_tools", |b| b.iter(|| black_box(ToolIndex::new(&tools))));
    let index = ToolIndex::new(&tools);
    group.bench_function("search_10k_tools", |b| {
        b.iter(|| black_box(index.search(black_box("archive an old invoice in stripe"), 5)))
    });
    group.bench_function("regex_10k_tools", |b| {
        b.iter(|| black_box(index.search_regex(black_box("^slack__.*message"), 5)))
    });
    #[cfg(feature = "embeddings")]
    hybrid(&mut group, &tools, &index);
    group.finish();
}

#[cfg(feature = "embeddings")]
fn hybrid(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    tools: &[ToolDeclaration],
    index: &ToolIndex,
) {
    use toolreg::search::semantic::tool_text;
    use toolreg::search::{DenseIndex, Embeddings, Encoder, FUSION_DEPTH, SentenceEncoder, fuse};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/search-model/all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").is_file() {
        eprintln!("hybrid search not measured: no model in {} (scripts/fetch_search_model.sh)", dir.display());
        return;
    }
    let encoder = SentenceEncoder::load(&dir).expect("the model loads");
    let mut texts: Vec<String> = tools.iter().step_by(tools.len() / 32).take(32).map(tool_text).collect();
    texts.sort_by_key(String::len);
    let batch: Vec<&str> = texts.iter().map(String::as_str).collect();
    group.sample_size(10);
    group.bench_function("encode_32_tools", |b| b.iter(|| black_box(encoder.encode(black_box(&batch)).unwrap())));

    // The 10,000 vectors, computed once (as a first start does, in the
    // background) and kept in a cache file; a restart reads them back.
    let cache = std::env::temp_dir().join(format!("toolreg-search-bench-{}.bin", std::process::id()));
    let embeddings = Embeddings::with_cache_file(encoder, &cache).unwrap();
    let started = std::time::Instant::now();
    embeddings.embed_now(tools).unwrap();
    eprintln!("embedding {} tools took {:.1} s", tools.len(), started.elapsed().as_secs_f64());
    let started = std::time::Instant::now();
    let restarted = Embeddings::with_cache_file(SentenceEncoder::load(&dir).unwrap(), &cache).unwrap();
    restarted.embed_now(tools).unwrap();
    let bytes = std::fs::metadata(&cache).map_or(0, |m| m.len());
    eprintln!(
        "a restart: the model loaded and {} vectors read from the cache ({:.1} MB) in {:.2} s, none computed",
        restarted.len(),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_file(&cache);
    let dense = DenseIndex::new(tools, &embeddings).expect("every vector is ready");
    eprintln!("their vectors: {} × 384 × 4 bytes = {:.1} MB", tools.len(), (tools.len() * 384 * 4) as f64 / 1e6);
    let query = "archive an old invoice in stripe";
    group.sample_size(50);
    group.bench_function("dense_search_10k_tools", |b| {
        b.iter(|| black_box(dense.search_where(black_box(query), 5, |_| true).unwrap()))
    });
    group.bench_function("hybrid_search_10k_tools", |b| {
        b.iter(|| {
            let keyword = index.search(black_box(query), FUSION_DEPTH);
            let semantic = dense.search_where(black_box(query), FUSION_DEPTH, |_| true).unwrap();
            black_box(fuse(&keyword, &semantic, 5))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
