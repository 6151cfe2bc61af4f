//! Code mode against direct calls (issue 22): the task of `code_task` —
//! list 20 files, read each, store a summary per file, name the three
//! largest — solved by a scripted model calling the tools itself and by one
//! writing a program for `run_code`. Prints the Markdown tables of
//! BENCHMARKS.md ("Issue 22: code mode"). See the README beside Cargo.toml.
//!
//! `cargo bench --manifest-path benches/catalog/Cargo.toml --bench code_mode`

use std::time::{Duration, Instant};

use tiktoken_rs::CoreBPE;
use toolreg_catalog_benches::code_task::{self, Direct, Variant};
use toolreg_code::Worker;
use toolreg_llm::RunOutcome;

/// Timed runs per variant.
const RUNS: usize = 30;

/// What one variant cost.
struct Measured {
    requests: usize,
    /// Tokens of every request, in order.
    per_request: Vec<usize>,
    /// Tokens of the `tools` of the first request.
    tools: usize,
    /// Tokens of the model's own messages (calls and answer).
    output: usize,
    wall: Vec<Duration>,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    let bpe = tiktoken_rs::o200k_base().unwrap_or_else(|e| panic!("o200k_base: {e}"));
    let worker = Worker::new(env!("CARGO_BIN_EXE_code-worker"));
    let files = code_task::files();
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    let file_tokens: usize = files.iter().map(|f| count(&bpe, &f.text)).sum();
    println!(
        "## The task: {} files, {} bytes of text in all ({} o200k tokens), {}–{} bytes each\n",
        files.len(),
        bytes,
        file_tokens,
        files.iter().map(|f| f.text.len()).min().unwrap_or(0),
        files.iter().map(|f| f.text.len()).max().unwrap_or(0)
    );
    let measured: Vec<(Variant, Measured)> =
        Variant::ALL.iter().map(|&v| (v, runtime.block_on(measure(v, &files, &worker, &bpe)))).collect();
    let total = |m: &Measured| m.per_request.iter().sum::<usize>();
    let base = |how: Direct| {
        measured.iter().find(|(v, _)| *v == Variant::Direct(how)).map(|(_, m)| total(m)).unwrap_or(1) as f64
    };
    let (parallel, sequential) = (base(Direct::Parallel), base(Direct::Sequential));
    println!(
        "| variant | model round trips | tokens sent, sum over requests | of parallel direct | of sequential \
         direct | final conversation | `tools` per request | model output | wall time (median of {RUNS}) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (variant, m) in &measured {
        let sum = total(m);
        println!(
            "| {} | {} | {sum} | {:.1}% | {:.1}% | {} | {} | {} | {:.2} ms |",
            variant.label(),
            m.requests,
            100.0 * sum as f64 / parallel,
            100.0 * sum as f64 / sequential,
            m.per_request.last().copied().unwrap_or(0),
            m.tools,
            m.output,
            ms(median(m.wall.clone()))
        );
    }
    println!("\nTokens per request:\n");
    for (variant, m) in &measured {
        let shown: Vec<String> = m.per_request.iter().map(usize::to_string).collect();
        println!("- {}: {}", variant.label(), shown.join(", "));
    }
    println!();
}

async fn measure(variant: Variant, files: &[code_task::File], worker: &Worker, bpe: &CoreBPE) -> Measured {
    // Tokens, from a run whose model records its requests.
    let setup = code_task::setup(variant, files, worker, true);
    let done = match setup.agent.run(code_task::TASK).await {
        Ok(RunOutcome::Finished(done)) => done,
        other => panic!("{variant:?}: {other:?}"),
    };
    let requests = setup.model.requests();
    assert_eq!(done.steps, requests.len());
    let rendered: Vec<_> = requests.iter().map(code_task::render).collect();
    let per_request = rendered.iter().map(|r| count(bpe, &r.body)).collect();
    let tools = rendered.first().map_or(0, |r| count(bpe, &r.tools));
    // The model's messages: those of the last request, plus its answer.
    let mut output: usize = rendered.last().map_or(0, |r| r.assistant.iter().map(|a| count(bpe, a)).sum());
    output += count(bpe, &serde_json::json!({"role": "assistant", "content": done.answer}).to_string());

    // Wall time, from runs that record nothing; set-up is not timed.
    let mut wall = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let setup = code_task::setup(variant, files, worker, false);
        let start = Instant::now();
        let outcome = setup.agent.run(code_task::TASK).await;
        wall.push(start.elapsed());
        assert!(matches!(outcome, Ok(RunOutcome::Finished(_))), "{variant:?}: {outcome:?}");
    }
    Measured { requests: requests.len(), per_request, tools, output, wall }
}

fn count(bpe: &CoreBPE, text: &str) -> usize {
    bpe.encode_ordinary(text).len()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
