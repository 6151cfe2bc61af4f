//! A dangerous tool approved on the terminal.
//!
//! A model's turn asks to list a (pretend) directory and to delete a file.
//! Listing is safe and runs at once; deleting is dangerous, so the engine
//! asks on the terminal first: answer `y`, `n <reason>` or `e` to edit the
//! arguments. When standard input is closed or not interactive and gives no
//! answer, the call is denied and the model is told why.
//!
//! ```sh
//! cargo run --example approval                    # asks you
//! echo y | cargo run --example approval           # approves
//! cargo run --example approval < /dev/null        # denies (end of input)
//! ```

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock, Mutex};

use toolreg::engine::{OutputBudget, ToolEngine};
use toolreg::policy::{MemorySink, Selection, TerminalApprover};
use toolreg::{CallOptions, FunctionRegistry, ToolCall, tool};

/// The pretend file system the tools work on.
static FILES: LazyLock<Mutex<BTreeSet<String>>> =
    LazyLock::new(|| Mutex::new(["notes.txt", "report.pdf", "scratch.tmp"].map(String::from).into()));

/// List the files in the working directory.
#[tool(safety = "safe", category = "fs")]
fn list_files() -> Vec<String> {
    FILES.lock().unwrap().iter().cloned().collect()
}

/// Delete a file from the working directory.
#[tool(safety = "dangerous", category = "fs", exclusive = "path")]
fn delete_file(
    /// The file to delete.
    path: String,
) -> Result<String, String> {
    if FILES.lock().unwrap().remove(&path) {
        Ok(format!("deleted {path}"))
    } else {
        Err(format!("no file named {path}"))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, [list_files_tool, delete_file_tool])?;
    let audit = Arc::new(MemorySink::new());

    let engine = ToolEngine::builder(&registry)
        .selection(Selection::top_level().categories(["fs"]))
        .approver(TerminalApprover::stdio())
        .layer(OutputBudget::new(2_000))
        // Recorded in memory and printed after the turn, so that audit lines
        // never land in the middle of the terminal prompt on stderr.
        .audit(Arc::clone(&audit))
        .build();

    println!("Offered to the model: {:?}", engine.offered().list().map(|tool| tool.name()).collect::<Vec<_>>());

    // What a model might ask for in one turn.
    let turn = vec![
        ToolCall::new("call_1", "list_files", "{}"),
        ToolCall::new("call_2", "delete_file", r#"{"path": "scratch.tmp"}"#),
    ];
    for result in engine.execute_batch(turn, CallOptions::default()).await {
        let status = if result.is_error() { "error" } else { "ok" };
        println!("{} {} [{status}]: {}", result.id, result.name, result.text());
    }
    println!("Files now: {:?}", FILES.lock().unwrap());
    println!("Audit trail:");
    for event in audit.take() {
        println!("  {}", serde_json::to_string(&event)?);
    }
    Ok(())
}
