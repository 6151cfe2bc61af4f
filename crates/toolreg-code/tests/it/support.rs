//! What the code-mode tests share: a worker, a few tools, an engine.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolreg::policy::MemorySink;
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration, ToolEngine, ToolOutput, ToolRegistration};
use toolreg_code::{CodeMode, Limits, Worker};

/// The worker binary this crate builds.
pub fn worker() -> Worker {
    Worker::new(env!("CARGO_BIN_EXE_toolreg-code-worker"))
}

pub fn code() -> CodeMode {
    CodeMode::new(worker())
}

pub fn code_with(limits: Limits) -> CodeMode {
    CodeMode::new(worker()).limits(limits)
}

/// Every call a tool ran, in order (tool, arguments).
pub type Runs = Arc<Mutex<Vec<(String, Value)>>>;

/// `add`, `echo`, `fail` (safe), `delete` (dangerous), `big`, `deep` and
/// `odd` (hostile results), each recording its runs.
pub fn registry(runs: &Runs) -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    let record = |name: &'static str, runs: &Runs| {
        let runs = Arc::clone(runs);
        move |args: &Value| runs.lock().unwrap().push((name.to_owned(), args.clone()))
    };
    let add = record("add", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("add")
                .description("Add two numbers.")
                .param("a", ParamType::Number, "First")
                .param("b", ParamType::Number, "Second")
                .safety(SafetyLevel::Safe)
                .build(),
            move |args: Value| {
                add(&args);
                Ok::<_, String>(json!(args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)))
            },
        ))
        .unwrap();
    let echo = record("echo", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("echo")
                .description("Echo a text.")
                .param("text", ParamType::String, "Text")
                .safety(SafetyLevel::Safe)
                .build(),
            move |args: Value| {
                echo(&args);
                Ok::<_, String>(args["text"].clone())
            },
        ))
        .unwrap();
    let fail = record("fail", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("fail").description("Always fails.").safety(SafetyLevel::Safe).build(),
            move |args: Value| {
                fail(&args);
                Err::<Value, _>("the disk is on fire".to_owned())
            },
        ))
        .unwrap();
    let delete = record("delete", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("delete")
                .description("Delete a file.")
                .param("path", ParamType::String, "Path")
                .safety(SafetyLevel::Dangerous)
                .build(),
            move |args: Value| {
                delete(&args);
                Ok::<_, String>(json!({"deleted": args["path"]}))
            },
        ))
        .unwrap();
    let big = record("big", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("big").description("A large result.").safety(SafetyLevel::Safe).build(),
            move |args: Value| {
                big(&args);
                Ok::<_, String>(json!("x".repeat(2 << 20)))
            },
        ))
        .unwrap();
    let deep = record("deep", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("deep")
                .description("A result nested `depth` levels deep (10,000 by default).")
                .optional_param("depth", ParamType::Integer, "Levels")
                .safety(SafetyLevel::Safe)
                .build(),
            move |args: Value| {
                deep(&args);
                let depth = args["depth"].as_u64().map_or(DEEP, |d| usize::try_from(d).unwrap_or(DEEP));
                // As an output, not a value to serialise: the core's
                // conversion of a returned value recurses once per level.
                Ok::<_, String>(ToolOutput::new(nested(depth)))
            },
        ))
        .unwrap();
    let odd = record("odd", runs);
    registry
        .register(ToolRegistration::new(
            ToolDeclaration::builder("odd").description("A result in odd Unicode.").safety(SafetyLevel::Safe).build(),
            move |args: Value| {
                odd(&args);
                Ok::<_, String>(odd_value())
            },
        ))
        .unwrap();
    registry
}

/// How deep `deep`'s result is nested.
pub const DEEP: usize = 10_000;

/// `[[[…0…]]]`, `depth` arrays deep (built without recursion).
pub fn nested(depth: usize) -> Value {
    let mut value = json!(0);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// `odd`'s result: NUL, a right-to-left override, a byte-order mark, line
/// and paragraph separators, emoji (one a ZWJ sequence), in keys too; and
/// keys named like the prototype chain.
pub fn odd_value() -> Value {
    json!({
        "text": "nul:\u{0} rtl:\u{202e}gnp.exe bom:\u{feff} ls:\u{2028} ps:\u{2029} emoji:😀 family:👩\u{200d}👩\u{200d}👧 nl:\n tab:\t",
        "key\u{0}\u{202e}": "😀",
        "__proto__": {"polluted": true},
        "constructor": {"prototype": {"polluted": true}},
    })
}

pub fn runs() -> Runs {
    Arc::default()
}

/// An engine over the tools, with an audit sink.
pub fn engine(runs: &Runs) -> (ToolEngine, Arc<MemorySink>) {
    let audit = Arc::new(MemorySink::new());
    let engine = ToolEngine::builder(&registry(runs)).audit(audit.clone()).build();
    (engine, audit)
}
