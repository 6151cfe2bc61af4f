//! The code-mode bench measures what it says: each variant solves the task
//! (every summary stored, the right three files named), with the model
//! round trips the table reports, and the rendering counts every message.

use serde_json::json;
use toolreg_catalog_benches::code_task::{self, Direct, Offer, Variant};
use toolreg_code::Worker;
use toolreg_llm::RunOutcome;

fn worker() -> Worker {
    Worker::new(env!("CARGO_BIN_EXE_code-worker"))
}

#[test]
fn the_files_span_1_to_8_kb_with_distinct_sizes() {
    let files = code_task::files();
    assert_eq!(files.len(), code_task::FILES);
    let mut sizes: Vec<usize> = files.iter().map(|f| f.text.len()).collect();
    assert!(sizes.iter().all(|&n| (850..=8192).contains(&n)), "{sizes:?}");
    assert!(sizes.iter().any(|&n| n > 7500) && sizes.iter().any(|&n| n < 1100), "{sizes:?}");
    sizes.sort_unstable();
    sizes.dedup();
    assert_eq!(sizes.len(), code_task::FILES);
    assert!(files.iter().all(|f| f.text.contains("\n## ") && f.text.is_ascii()));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_variant_stores_every_summary_and_names_the_three_largest() {
    let files = code_task::files();
    let largest: Vec<&str> = code_task::largest(&files, 3).iter().map(|f| f.path.as_str()).collect();
    for (variant, requests) in [
        (Variant::Direct(Direct::Parallel), 4),
        (Variant::Direct(Direct::Sequential), 2 + 2 * code_task::FILES),
        (Variant::Program { sequential: false, offer: Offer::RunCodeOnly }, 2),
        (Variant::Program { sequential: false, offer: Offer::ToolsAndRunCode }, 2),
        (Variant::Program { sequential: true, offer: Offer::RunCodeOnly }, 2),
    ] {
        let setup = code_task::setup(variant, &files, &worker(), true);
        let outcome = setup.agent.run(code_task::TASK).await.unwrap_or_else(|e| panic!("{variant:?}: {e}"));
        let RunOutcome::Finished(done) = outcome else { panic!("{variant:?}: {outcome:?}") };
        assert_eq!(done.steps, requests, "{variant:?}");
        assert_eq!(setup.model.requests().len(), requests, "{variant:?}");
        assert!(largest.iter().all(|p| done.answer.contains(p)), "{variant:?}: {}", done.answer);
        let stored = setup.store.lock().unwrap().clone();
        assert_eq!(stored.len(), code_task::FILES, "{variant:?}");
        for f in &files {
            assert_eq!(stored[&f.path], code_task::summary(&f.text), "{variant:?}: {}", f.path);
        }
        if let Variant::Program { .. } = variant {
            // The program's result is all that came back from 41 calls.
            let result = done.transcript.iter().find_map(|m| match m {
                toolreg_llm::Message::Tool { results } => Some(results[0].value.clone()),
                _ => None,
            });
            let expected: Vec<_> =
                code_task::largest(&files, 3).iter().map(|f| json!({"path": f.path, "bytes": f.text.len()})).collect();
            assert_eq!(
                result,
                Some(Some(json!({"result": {"stored": code_task::FILES, "largest": expected}}))),
                "{variant:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rendering_carries_every_file_text_and_every_call() {
    let files = code_task::files();
    let setup = code_task::setup(Variant::Direct(Direct::Parallel), &files, &worker(), true);
    setup.agent.run(code_task::TASK).await.unwrap();
    let requests = setup.model.requests();
    let last = code_task::render(&requests[requests.len() - 1]);
    for f in &files {
        // Each file's text, escaped as JSON inside the body.
        let escaped = serde_json::to_string(&f.text).unwrap();
        assert!(last.body.contains(&escaped[1..escaped.len() - 1]), "{} missing", f.path);
    }
    assert_eq!(last.assistant.len(), 3);
    assert!(last.tools.contains("store_summary") && last.body.contains(&last.tools));
    assert!(last.body.contains(code_task::SYSTEM) && last.body.contains(code_task::TASK));

    let setup =
        code_task::setup(Variant::Program { sequential: false, offer: Offer::RunCodeOnly }, &files, &worker(), true);
    setup.agent.run(code_task::TASK).await.unwrap();
    let first = code_task::render(&setup.model.requests()[0]);
    // `run_code` alone, its description declaring the three tools.
    let tools: serde_json::Value = serde_json::from_str(&first.tools).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 1);
    assert!(first.tools.contains("read_file(args: {"), "{}", first.tools);
}
