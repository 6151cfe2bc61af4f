//! Rendering 1,000 declarations for each provider: `cached` reads the
//! lowered schemas a registry keeps per tool and provider (after a first
//! rendering), `cold` lowers bare declarations on every call. Each
//! iteration declares the tools through [`WireFormat::declare`] (which
//! builds the request's `tools` value) and serialises that value to the
//! JSON text that is sent.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::mistral::Mistral;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{Strictness, ToolRef, WireFormat};
use toolreg::{FunctionRegistry, ToolDeclaration, ToolRegistration};

#[path = "../tests/it/support.rs"]
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
        registry.register(ToolRegistration::new(d.clone(), std::sync::Arc::new(common::Echo))).unwrap();
    }
    registry
}

fn render(provider: &str, tools: &[ToolRef<'_>]) -> String {
    let declared = match provider {
        "openai_chat" => OpenAiChat::new().declare(tools),
        "openai_responses" => OpenAiResponses::new().declare(tools),
        "anthropic" => Anthropic::new().declare(tools),
        "anthropic_strict" => {
            // Anthropic takes at most 20 strict tools a request; the rest are sent plain.
            let mut format = Anthropic::new();
            for tool in tools.iter().take(20) {
                format = format.strict_for(tool.declaration().name.clone(), Strictness::IfCompatible);
            }
            format.declare(tools)
        }
        "gemini" => Gemini::new().declare(tools),
        "mcp" => Mcp::new().declare(tools),
        "bedrock" => Bedrock::new().declare(tools),
        "mistral" => Mistral::new().declare(tools),
        other => unreachable!("{other}"),
    };
    serde_json::to_string(&declared.unwrap().tools).unwrap()
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
            render_all(provider, chunked, registry.list().map(ToolRef::from).collect());
            b.iter(|| black_box(render_all(provider, chunked, registry.list().map(ToolRef::from).collect())))
        });
        group.bench_function("cold", |b| {
            b.iter(|| black_box(render_all(provider, chunked, decls.iter().map(ToolRef::from).collect())))
        });
        group.finish();
    }
}

fn render_all(provider: &str, chunked: bool, tools: Vec<ToolRef<'_>>) -> usize {
    if chunked {
        tools.chunks(100).map(|chunk| render(provider, chunk).len()).sum()
    } else {
        render(provider, &tools).len()
    }
}

criterion_group!(benches, providers);
criterion_main!(benches);
