//! Tokens (o200k_base) of a `search_tools` answer, as the MCP server
//! writes it, for the catalog's labelled requests: the default answer (five
//! tools with name, description and input schema) against a compact one
//! (ten tools with name and the description's first sentence), and what
//! loading the found tools adds to every later request.
//!
//! ```sh
//! cargo run --release --manifest-path benches/catalog/Cargo.toml --example answer_tokens
//! ```
use serde_json::{Value, json};
use toolreg_catalog_benches as catalog;

fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

fn main() {
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base vocabulary");
    let tokens = |value: &Value| bpe.encode_with_special_tokens(&value.to_string()).len();
    let specs = catalog::specs();
    let registry = catalog::registry(catalog::core_len() + specs.len());
    let engine = toolreg::ToolEngine::builder(&registry).build();
    let deferral = catalog::deferral();
    let note = "These tools are now in your tool list: call them by name (list the tools again if your client \
                has not yet), or run any of them with `call_tool`.";
    let heldout2 = catalog::parse_queries(include_str!("../data/heldout2.txt")).expect("data/heldout2.txt");
    let sets = [("tuning", catalog::queries()), ("held-out 1", catalog::heldout()), ("held-out 2", heldout2)];
    println!("| set | requests | 5 full: answer | 10 compact: answer | 5 loaded: per later request | 10 loaded: per later request |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (set, queries) in sets {
        let (mut full, mut compact, mut loaded5, mut loaded10) = (0, 0, 0, 0);
        for q in &queries {
            let hits = deferral.search(engine.offered(), &[], &q.request, 10);
            let found: Vec<_> = hits.iter().filter_map(|hit| registry.get(&hit.name)).collect();
            let long = |d: &toolreg::ToolDeclaration| {
                json!({"name": d.name, "description": d.description, "inputSchema": d.input_schema})
            };
            let short = |d: &toolreg::ToolDeclaration| json!({"name": d.name, "description": first_sentence(&d.description)});
            let five: Vec<Value> = found.iter().take(5).map(|e| long(e.declaration())).collect();
            let ten: Vec<Value> = found.iter().map(|e| short(e.declaration())).collect();
            full += tokens(&json!({"tools": five, "note": note, "search": "hybrid"}));
            compact += tokens(&json!({"tools": ten, "note": note, "search": "hybrid"}));
            loaded5 += five.iter().map(&tokens).sum::<usize>();
            loaded10 += found.iter().map(|e| tokens(&long(e.declaration()))).sum::<usize>();
        }
        let n = queries.len();
        println!(
            "| {set} | {n} | {} | {} | {} | {} |",
            full / n,
            compact / n,
            loaded5 / n,
            loaded10 / n
        );
    }
}
