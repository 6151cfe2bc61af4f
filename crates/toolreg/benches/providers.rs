//! Rendering 1,000 declarations for each provider: `cached` reads the
//! lowered schemas a registry keeps per tool and provider (after a first
//! rendering), `cold` lowers bare declarations on every call. Each
//! iteration renders the declarations and serialises them to the JSON text
//! that is sent.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::mistral::Mistral;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{Strictness, ToolRef};
use toolreg::{FunctionRegistry, ToolDeclaration, ToolRegistration};

#[path = "../tests/common/mod.rs"]
mod common;

const N: usize = 1_000;

/// 1,000 declarations cycling through the corpus (the recursive type, which
/// Gemini's `parameters` cannot take, left out).
fn declarations() -> Vec<ToolDeclaration> {
    let corpus: Vec<ToolDeclaration> =
        common::corpus().into_iter().map(|(d, _)| d).filter(|d| d.name != "write_tree").collect();
    (0..N)
        .map(|i| {
            let mut d = corpus[i % corpus.len()].clone();
            d.name = format!("{}_{i}", d.name);
            d
        })
        .collect()
}

fn registry(decls: &[ToolDeclaration]) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for d in decls {
        registry
            .register(ToolRegistration::from_erased(d.name.clone(), std::sync::Arc::new(common::Echo), d.clone()))
            .unwrap();
    }
    registry
}

fn render<'a>(provider: &str, tools: impl Iterator<Item = ToolRef<'a>>) -> String {
    let out = match provider {
        "openai_chat" => serde_json::to_string(&OpenAiChat::new().declare(tools).unwrap()),
        "openai_responses" => serde_json::to_string(&OpenAiResponses::new().declare(tools).unwrap()),
        "anthropic" => serde_json::to_string(&Anthropic::new().declare(tools).unwrap()),
        "anthropic_strict" => {
            // Anthropic takes at most 20 strict tools a request; the rest are sent plain.
            let tools: Vec<ToolRef<'a>> = tools.collect();
            let strict: Vec<String> = tools.iter().take(20).map(|t| t.declaration().name.clone()).collect();
            let mut format = Anthropic::new();
            for name in strict {
                format = format.strict_for(name, Strictness::IfCompatible);
            }
            serde_json::to_string(&format.declare(tools).unwrap())
        }
        "gemini" => serde_json::to_string(&Gemini::new().declare(tools).unwrap()),
        "mcp" => serde_json::to_string(&Mcp::new().declare(tools).unwrap()),
        "bedrock" => serde_json::to_string(&Bedrock::new().declare(tools).unwrap()),
        "mistral" => serde_json::to_string(&Mistral::new().declare(tools).unwrap()),
        other => unreachable!("{other}"),
    };
    out.unwrap()
}

const PROVIDERS: &[&str] =
    &["openai_chat", "openai_responses", "anthropic", "anthropic_strict", "gemini", "mcp", "bedrock", "mistral"];

fn providers(c: &mut Criterion) {
    let decls = declarations();
    let registry = registry(&decls);
    for provider in PROVIDERS {
        let mut group = c.benchmark_group(format!("render_1000/{provider}"));
        // OpenAI takes at most 128 tools a request; the limit is lifted here by
        // rendering in chunks of 100, as a caller with many tools must.
        let chunked = provider.starts_with("openai");
        group.bench_function("cached", |b| {
            render_all(provider, chunked, registry.entries().map(ToolRef::from).collect());
            b.iter(|| black_box(render_all(provider, chunked, registry.entries().map(ToolRef::from).collect())))
        });
        group.bench_function("cold", |b| {
            b.iter(|| black_box(render_all(provider, chunked, decls.iter().map(ToolRef::from).collect())))
        });
        group.finish();
    }
}

fn render_all(provider: &str, chunked: bool, tools: Vec<ToolRef<'_>>) -> usize {
    if chunked {
        tools.chunks(100).map(|chunk| render(provider, chunk.iter().copied()).len()).sum()
    } else {
        render(provider, tools.into_iter()).len()
    }
}

criterion_group!(benches, providers);
criterion_main!(benches);
