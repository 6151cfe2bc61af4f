//! The catalog's tools (`tool`, gateway name, `server name words:
//! description`), then the first 50 tools `search_tools` returns for every
//! labelled request, with their scores (`set`, request, answers, then
//! `name:score` pairs), as tab-separated lines: what
//! `scripts/embedding_recall.py` embeds and fuses with an embedding model's
//! ranking.
//!
//! ```sh
//! cargo run --release --manifest-path benches/catalog/Cargo.toml --example ranks > ranks.tsv
//! ```
use toolreg_catalog_benches as catalog;

fn main() {
    let specs = catalog::specs();
    let registry = catalog::registry(catalog::core_len() + specs.len());
    let engine = toolreg::ToolEngine::builder(&registry).build();
    let deferral = catalog::deferral();
    for spec in &specs {
        let text = format!("{} {}: {}", spec.server, spec.name.replace('_', " "), spec.description);
        println!("tool\t{}\t{text}", spec.declaration(0).name);
    }
    for (set, queries) in [("tuning", catalog::queries()), ("heldout", catalog::heldout())] {
        for q in &queries {
            let hits = deferral.search(engine.offered(), &[], &q.request, 50);
            let ranked: Vec<String> = hits.iter().map(|h| format!("{}:{:.4}", h.name, h.score)).collect();
            println!("{set}\t{}\t{}\t{}", q.request, q.answers.join(","), ranked.join(" "));
        }
    }
}
