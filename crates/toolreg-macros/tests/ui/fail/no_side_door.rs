// An engine's tools run only through the engine: what it offers can be
// looked up and listed, never called around its approver and audit.
use toolreg::{CallContext, FunctionRegistry, ToolEngine};

fn main() {
    let engine = ToolEngine::builder(&FunctionRegistry::new()).build();
    let entry = engine.offered().get("delete_file").unwrap();
    let _ = entry.tool().call(CallContext::default(), serde_json::json!({}));
    let _ = engine.offered().execute("delete_file", serde_json::json!({}));
    let registry: FunctionRegistry = engine.offered().clone();
}
