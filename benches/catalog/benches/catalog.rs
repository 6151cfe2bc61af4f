//! Large catalogs (issue 21): search quality, declaration tokens eager and
//! deferred, and search speed, printed as the Markdown tables of
//! BENCHMARKS.md. See the README beside Cargo.toml.
//!
//! `cargo bench --manifest-path benches/catalog/Cargo.toml`
//! (`-- quality`, `-- tokens`, `-- speed` for one part).

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::Value;
use tiktoken_rs::CoreBPE;
use toolreg::FunctionRegistry;
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::{ToolRef, WireFormat};
use toolreg::search::ToolIndex;
use toolreg_catalog_benches as catalog;

/// How many tools a search loads (the default of `search_tools`).
const LOADED: usize = catalog::SEARCH_LIMIT;

fn main() {
    let parts: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let run = |part: &str| parts.is_empty() || parts.iter().any(|p| p == part);
    if run("quality") {
        quality();
    }
    if run("tokens") {
        tokens();
    }
    if run("speed") {
        speed();
    }
}

fn quality() {
    let specs = catalog::specs();
    let registry = catalog::registry(catalog::core_len() + specs.len());
    let engine = toolreg::ToolEngine::builder(&registry).build();
    let deferral = catalog::deferral();
    let sets =
        [("tuning (`data/queries.txt`)", catalog::queries()), ("held-out (`data/heldout.txt`)", catalog::heldout())];
    println!(
        "## Search quality: {} tools ({} MCP tools of {} servers + {} core)\n",
        registry.len(),
        specs.len(),
        specs.iter().map(|s| &s.server).collect::<std::collections::HashSet<_>>().len(),
        catalog::core_len()
    );
    let ranked: Vec<(Vec<Vec<String>>, Vec<Vec<String>>)> = sets
        .iter()
        .map(|(_, queries)| {
            let registry_ranked =
                queries.iter().map(|q| registry.search(&q.request, 5).into_iter().map(|h| h.name).collect()).collect();
            let agent_ranked = queries
                .iter()
                .map(|q| deferral.search(engine.offered(), &[], &q.request, 5).into_iter().map(|h| h.name).collect())
                .collect();
            (registry_ranked, agent_ranked)
        })
        .collect();
    println!("| set | requests | path | recall@1 | recall@5 |");
    println!("|---|---:|---|---:|---:|");
    for ((set, queries), (registry_ranked, agent_ranked)) in sets.iter().zip(&ranked) {
        for (path, ranked) in
            [("`FunctionRegistry::search`", registry_ranked), ("`search_tools` (`Deferral::search`)", agent_ranked)]
        {
            println!(
                "| {set} | {} | {path} | {:.1}% | {:.1}% |",
                queries.len(),
                100.0 * catalog::recall_at(queries, ranked, 1),
                100.0 * catalog::recall_at(queries, ranked, 5)
            );
        }
    }
    for ((set, queries), (_, agent_ranked)) in sets.iter().zip(&ranked) {
        println!("\n### {set}\n\nMisses at 5 (`search_tools`), with what came first instead:\n");
        for (q, ranked) in queries.iter().zip(agent_ranked) {
            if !ranked.iter().any(|n| q.answers.contains(n)) {
                let first: Vec<&str> = ranked.iter().take(3).map(String::as_str).collect();
                println!("- \"{}\" → wanted `{}`; got `{}`", q.request, q.answers.join("`/`"), first.join("`, `"));
            }
        }
        println!("\nMisses at 1 only (found in 2nd to 5th place):\n");
        for (q, ranked) in queries.iter().zip(agent_ranked) {
            let first = ranked.first().is_some_and(|n| q.answers.contains(n));
            let found = ranked.iter().position(|n| q.answers.contains(n));
            if let (false, Some(place)) = (first, found) {
                println!("- \"{}\" → `{}` in place {}, after `{}`", q.request, ranked[place], place + 1, ranked[0]);
            }
        }
    }
    println!();
}

fn formats() -> [(&'static str, Box<dyn WireFormat>); 3] {
    [
        ("OpenAI Chat", Box::new(OpenAiChat::new())),
        ("Anthropic", Box::new(Anthropic::new())),
        ("Gemini", Box::new(Gemini::new())),
    ]
}

/// The `tools` of one request declaring `names` (in that order), as JSON text.
fn declared_text(format: &dyn WireFormat, registry: &FunctionRegistry, names: &[&str]) -> String {
    let entries: Vec<_> = names.iter().filter_map(|n| registry.get(n)).collect();
    let declared = format.declare_partial(&ToolRef::list(entries)).into_value();
    let refused: Vec<_> = declared.refused().take(1).collect();
    assert!(refused.is_empty(), "{format:?} refused {refused:?}");
    serde_json::to_string(&declared.tools).unwrap_or_default()
}

/// The tokens of declaring `names`, and whether the format refuses that
/// many tools in one request (OpenAI Chat takes at most 128): then the
/// count is of the same declarations sent 100 at a time, what the tools
/// would cost if the provider took them.
fn eager_tokens(bpe: &CoreBPE, format: &dyn WireFormat, registry: &FunctionRegistry, names: &[&str]) -> (usize, bool) {
    let entries: Vec<_> = names.iter().filter_map(|n| registry.get(n)).collect();
    let too_many = format
        .declare_partial(&ToolRef::list(entries))
        .into_value()
        .refused()
        .any(|(_, reason)| matches!(reason, toolreg::provider::ProviderError::TooMany { .. }));
    let tokens = names.chunks(100).map(|chunk| count(bpe, &declared_text(format, registry, chunk))).sum();
    (tokens, too_many)
}

fn count(bpe: &CoreBPE, text: &str) -> usize {
    bpe.encode_ordinary(text).len()
}

fn tokens() {
    let bpe = tiktoken_rs::o200k_base().unwrap_or_else(|e| panic!("o200k_base: {e}"));
    let queries = catalog::queries();
    println!("## Declaration tokens per request (o200k_base)\n");
    println!(
        "Eager: every tool declared. Deferred: the {} core tools (with `search_tools`) declared, every MCP \
         tool deferred; \"after a search\": plus the {LOADED} tools one search loaded (mean over the {} \
         labelled requests). The search's own result (names and descriptions of what it found) is counted \
         apart: it is sent once, in the conversation, not with every request.\n",
        catalog::core_len(),
        queries.len()
    );
    println!(
        "| catalog | format | eager | deferred | deferred / eager | after a search | after a search / eager | \
         search result (once) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let deferral = catalog::deferral();
    for n in [50, 500, 5_000] {
        let registry = catalog::registry(n);
        let engine = toolreg::ToolEngine::builder(&registry).build();
        let all: Vec<&str> = registry.list().map(|tool| tool.name()).collect();
        let core = catalog::always_on(&registry, &deferral);
        let found: Vec<Vec<String>> = queries
            .iter()
            .map(|q| deferral.search(engine.offered(), &[], &q.request, LOADED).into_iter().map(|h| h.name).collect())
            .collect();
        for (label, format) in formats() {
            let (eager, too_many) = eager_tokens(&bpe, &*format, &registry, &all);
            let deferred = count(&bpe, &declared_text(&*format, &registry, &core));
            let mut after = 0;
            let mut result = 0;
            for names in &found {
                let mut offered = core.clone();
                offered.extend(names.iter().map(String::as_str));
                after += count(&bpe, &declared_text(&*format, &registry, &offered));
                let listed: Vec<Value> = names
                    .iter()
                    .filter_map(|n| registry.get(n))
                    .map(|e| serde_json::json!({"name": e.declaration().name, "description": e.declaration().description}))
                    .collect();
                result += count(&bpe, &serde_json::json!({"found": listed}).to_string());
            }
            let after = after / found.len().max(1);
            let result = result / found.len().max(1);
            println!(
                "| {n} | {label} | {eager}{} | {deferred} | {:.1}% | {after} | {:.1}% | {result} |",
                if too_many { " (refused: over the format's tool limit)" } else { "" },
                100.0 * deferred as f64 / eager as f64,
                100.0 * after as f64 / eager as f64
            );
        }
    }
    println!();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn speed() {
    let queries = catalog::queries();
    println!("## Speed\n");
    println!("| what | median | samples |");
    println!("|---|---:|---:|");

    let tools = catalog::mcp_declarations(10_000);
    let builds: Vec<Duration> = (0..11)
        .map(|_| {
            let start = Instant::now();
            let index = ToolIndex::new(&tools);
            let took = start.elapsed();
            drop(black_box(index));
            took
        })
        .collect();
    println!("| index 10,000 tools (`ToolIndex::new`) | {:.1} ms | {} |", ms(median(builds.clone())), builds.len());

    let index = ToolIndex::new(&tools);
    let searches = time_queries(&queries, 20, |q| drop(black_box(index.search(q, 5))));
    println!(
        "| search 10,000 tools, top 5 (`ToolIndex::search`, the {} labelled requests) | {:.3} ms | {} |",
        queries.len(),
        ms(median(searches.clone())),
        searches.len()
    );

    // An agent step's own work on tools, before the model is asked: with 20
    // eager tools, declaring them; with 5,000 tools deferred, the search
    // (`search_tools`' ranking) and declaring the core and what it found.
    let format = OpenAiChat::new();
    let small = catalog::registry(20);
    let small_names: Vec<&str> = small.list().map(|tool| tool.name()).collect();
    let eager = time_queries(&queries, 20, |_| drop(black_box(declared_text(&format, &small, &small_names))));
    println!(
        "| agent step, 20 tools eager: declare them (OpenAI Chat, to text) | {:.3} ms | {} |",
        ms(median(eager.clone())),
        eager.len()
    );

    let large = catalog::registry(5_000);
    let large_engine = toolreg::ToolEngine::builder(&large).build();
    let deferral = catalog::deferral();
    large.search("warm", 1); // the index is built once per registry change, not per step
    let core = catalog::always_on(&large, &deferral);
    let deferred = time_queries(&queries, 20, |q| {
        let found = deferral.search(large_engine.offered(), &[], q, LOADED);
        let mut offered = core.clone();
        offered.extend(found.iter().map(|h| h.name.as_str()));
        drop(black_box(declared_text(&format, &large, &offered)));
    });
    println!(
        "| agent step, 5,000 tools deferred: search, then declare core + {LOADED} found (OpenAI Chat, to text) | {:.3} ms | {} |",
        ms(median(deferred.clone())),
        deferred.len()
    );
    let search_only =
        time_queries(&queries, 20, |q| drop(black_box(deferral.search(large_engine.offered(), &[], q, LOADED))));
    println!(
        "| of which `Deferral::search` over 5,000 tools | {:.3} ms | {} |",
        ms(median(search_only.clone())),
        search_only.len()
    );
    let registry_only = time_queries(&queries, 20, |q| drop(black_box(large.search(q, LOADED))));
    println!(
        "| `FunctionRegistry::search` over the same 5,000 tools, top {LOADED} | {:.3} ms | {} |",
        ms(median(registry_only.clone())),
        registry_only.len()
    );
    let start = Instant::now();
    drop(black_box(catalog::registry(5_000)));
    println!("| register 5,000 tools (`FunctionRegistry::register`, once) | {:.0} ms | 1 |", ms(start.elapsed()));
    println!();
}

/// Time `f` once per request, `rounds` times over the requests.
fn time_queries(queries: &[catalog::Labelled], rounds: usize, mut f: impl FnMut(&str)) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(queries.len() * rounds);
    for _ in 0..rounds {
        for q in queries {
            let start = Instant::now();
            f(&q.request);
            samples.push(start.elapsed());
        }
    }
    samples
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
