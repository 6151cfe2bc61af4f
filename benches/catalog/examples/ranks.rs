//! The first 50 tools `search_tools` returns for every labelled request, with
//! their scores, as tab-separated lines (`set`, request, answers, then
//! `name:score` pairs): what `scripts/embedding_recall.py` fuses with an
//! embedding model's ranking.
//!
//! ```sh
//! cargo run --release --manifest-path benches/catalog/Cargo.toml --example ranks > ranks.tsv
//! ```
use toolreg_catalog_benches as catalog;

fn main() {
    let specs = catalog::specs();
    let registry = catalog::registry(catalog::core_len() + specs.len());
    let deferral = catalog::deferral();
    for (set, queries) in [("tuning", catalog::queries()), ("heldout", catalog::heldout())] {
        for q in &queries {
            let hits = deferral.search(&registry, &[], &q.request, 50);
            let ranked: Vec<String> = hits.iter().map(|h| format!("{}:{:.4}", h.name, h.score)).collect();
            println!("{set}\t{}\t{}\t{}", q.request, q.answers.join(","), ranked.join(" "));
        }
    }
}
