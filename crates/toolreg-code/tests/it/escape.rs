//! The escape and abuse corpus: programs that try to get out of the
//! sandbox, read what they must not, run forever, exhaust memory, flood
//! the host or call what they were not offered. Each attempt must be
//! refused with its own typed error (a [`CodeError`] variant, or the
//! `ToolError` kind the program catches), must change nothing outside (no
//! tool ran that should not have, no file appeared, no connection was
//! made), and must leave the host able to run the next program.
//!
//! The limits are small (a second, 32 MiB) so the whole corpus runs in
//! well under a minute.

use crate::support as common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{DEEP, Runs, code_with, engine, odd_value, runs};
use serde_json::{Value, json};
use toolreg::policy::{ApprovalRequest, Decision, approver_fn};
use toolreg::{
    CallOptions, CancellationToken, Checkpoints, Extensions, ToolCall, ToolEngine, ToolError, ToolExecutor, ToolResult,
};
use toolreg::{SafetyLevel, Selection};
use toolreg_code::{CodeError, CodeMode, Limits};

/// Small limits: a second of interpreter time, 32 MiB of heap, 20 calls.
fn limits() -> Limits {
    Limits {
        time: Duration::from_millis(1000),
        // Loops end on the clock unless a test asks for steps.
        max_steps: u64::MAX,
        memory_bytes: 32 << 20,
        output_bytes: 4 << 10,
        max_calls: 20,
        program_bytes: 16 << 10,
        ..Limits::default()
    }
}

/// A sandbox under attack: an engine whose tools record their runs.
struct Sandbox {
    runs: Runs,
    engine: ToolEngine,
    code: CodeMode,
}

impl Sandbox {
    fn new() -> Self {
        Sandbox::with(limits())
    }

    fn with(limits: Limits) -> Self {
        let runs = runs();
        let (engine, _) = engine(&runs);
        Sandbox { runs, engine, code: code_with(limits) }
    }

    /// Run an attempt that must fail; then prove the host still runs the
    /// next program. Returns the error.
    async fn refuse(&self, program: &str) -> CodeError {
        self.refuse_timed(program).await.0
    }

    /// [`refuse`](Self::refuse), with how long the attempt itself took.
    async fn refuse_timed(&self, program: &str) -> (CodeError, Duration) {
        let started = Instant::now();
        let result = self.code.run(&self.engine, program).await;
        let took = started.elapsed();
        let error = match result {
            Err(error) => error,
            Ok(out) => panic!("not refused: {program}\nit returned {} and printed {:?}", out.value, out.output),
        };
        self.still_works().await;
        (error, took)
    }

    /// Run a program that must finish (the attempt is inside, caught);
    /// then prove the host still runs the next program.
    async fn value(&self, program: &str) -> Value {
        let out = self.code.run(&self.engine, program).await.unwrap_or_else(|e| panic!("{program}\nfailed: {e:?}"));
        self.still_works().await;
        out.value
    }

    /// The tools that ran, by name (the check run of `still_works` left
    /// out).
    fn ran(&self) -> Vec<String> {
        self.runs.lock().unwrap().iter().map(|(tool, _)| tool.clone()).collect()
    }

    async fn still_works(&self) {
        let before = self.runs.lock().unwrap().len();
        let out = self.code.run(&self.engine, "return await tools.add({a: 20, b: 22});").await;
        assert_eq!(out.map(|o| o.value), Ok(json!(42)), "the next program no longer runs");
        // Forget the check's own run.
        let mut runs = self.runs.lock().unwrap();
        assert_eq!(runs.len(), before + 1);
        runs.pop();
    }
}

/// An uncaught exception whose text contains `needle`.
#[track_caller]
fn assert_exception(error: &CodeError, needle: &str) {
    match error {
        CodeError::Exception { message } if message.contains(needle) => {}
        other => panic!("expected an exception with {needle:?}, got {other:?}"),
    }
}

/// A path in `dir` as a JavaScript string literal.
fn js_path(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let literal = serde_json::to_string(&path.to_string_lossy()).unwrap();
    (path, literal)
}

// ---------------------------------------------------------------------------
// Modules: the interpreter has no module loader and no `require`.

const MODULES: [&str; 6] = ["fs", "os", "std", "child_process", "net", "process"];

/// What each module would be asked to do: write the marker file.
fn misuse(module: &str, marker: &str) -> String {
    match module {
        "fs" => format!("m.writeFileSync({marker}, 'x')"),
        "os" => format!("m.open({marker}, m.O_WRONLY | m.O_CREAT)"),
        "std" => format!("m.open({marker}, 'w').puts('x')"),
        "child_process" => format!("m.execSync('touch ' + {marker})"),
        "net" => "m.connect(80, '127.0.0.1')".to_owned(),
        _ => format!("m.mainModule.require('fs').writeFileSync({marker}, 'x')"),
    }
}

#[tokio::test]
async fn a_static_import_does_not_parse() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    for module in MODULES {
        let (path, marker) = js_path(dir.path(), module);
        let program = format!("import * as m from '{module}';\n{};\nreturn 1;", misuse(module, &marker));
        let error = sandbox.refuse(&program).await;
        assert!(matches!(error, CodeError::Syntax { .. }), "{module}: {error:?}");
        assert!(!path.exists(), "{module}");
    }
    // `import.meta` (the module's URL, a path on the host) is not there
    // either.
    let error = sandbox.refuse("return import.meta.url;").await;
    assert!(matches!(error, CodeError::Syntax { .. }), "{error:?}");
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn a_dynamic_import_finds_no_module() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    for module in MODULES {
        let (path, marker) = js_path(dir.path(), module);
        let program = format!("const m = await import('{module}');\n{};\nreturn 1;", misuse(module, &marker));
        let error = sandbox.refuse(&program).await;
        assert_exception(&error, "could not load module");
        assert!(!path.exists(), "{module}");
        // Caught, it is an ordinary error: the program goes on without it.
        let caught = sandbox
            .value(&format!("try {{ await import('{module}'); return 'loaded'; }} catch (e) {{ return e.name; }}"))
            .await;
        assert_eq!(caught, json!("ReferenceError"), "{module}");
    }
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn require_is_not_defined() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    for module in MODULES {
        let (path, marker) = js_path(dir.path(), module);
        let program = format!("const m = require('{module}');\n{};\nreturn 1;", misuse(module, &marker));
        let error = sandbox.refuse(&program).await;
        assert_exception(&error, "ReferenceError: require is not defined");
        assert!(!path.exists(), "{module}");
    }
    // Nor under another name.
    let error = sandbox.refuse("return module.require('fs');").await;
    assert_exception(&error, "ReferenceError: module is not defined");
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// Files and network.

#[tokio::test]
async fn no_file_or_network_api_is_reachable() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    let (path, marker) = js_path(dir.path(), "marker");
    // A port the program would reach if it had a network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("'http://127.0.0.1:{}/'", listener.local_addr().unwrap().port());
    let attempts = [
        (format!("await fetch({url});"), "fetch is not defined"),
        (format!("const x = new XMLHttpRequest(); x.open('GET', {url}); x.send();"), "XMLHttpRequest is not defined"),
        ("new WebSocket('ws://127.0.0.1:1/');".to_owned(), "WebSocket is not defined"),
        (format!("os.open({marker}, 0o101);"), "os is not defined"),
        (format!("std.open({marker}, 'w').puts('x');"), "std is not defined"),
        (format!("std.loadFile({marker});"), "std is not defined"),
        (format!("Deno.writeTextFileSync({marker}, 'x');"), "Deno is not defined"),
        (format!("Bun.write({marker}, 'x');"), "Bun is not defined"),
    ];
    for (attempt, expected) in &attempts {
        let error = sandbox.refuse(&format!("{attempt}\nreturn 1;")).await;
        assert_exception(&error, &format!("ReferenceError: {expected}"));
    }
    assert!(!path.exists());
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a program reached the network"
    );
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// The host's environment.

const SECRET_VAR: &str = "TOOLREG_TEST_SECRET";

/// Runs [`the_environment_inside`] in a copy of this test process that
/// holds a secret in its environment (a test cannot set one in its own
/// process safely).
#[test]
fn the_hosts_environment_is_out_of_reach() {
    let secret = "s3cr3t-e5cape-c0rpus";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "escape::the_environment_inside", "--ignored", "--nocapture", "--test-threads=1"])
        .env(SECRET_VAR, secret)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("the secret stayed out of reach"), "{stdout}");
}

#[tokio::test]
#[ignore = "run by the_hosts_environment_is_out_of_reach, with a secret in the environment"]
async fn the_environment_inside() {
    let Ok(secret) = std::env::var(SECRET_VAR) else { return };
    let sandbox = Sandbox::new();
    // Everything a program could try, each caught; then every name and
    // string reachable from the global object.
    let program = r#"
        const found = {};
        const attempt = (name, f) => {
          try { found[name] = String(f()); } catch (e) { found[name] = `${e.name}: ${e.message}`; }
        };
        attempt("process.env", () => JSON.stringify(process.env));
        attempt("process.argv", () => process.argv);
        attempt("std.getenv", () => std.getenv("TOOLREG_TEST_SECRET"));
        attempt("os.getenv", () => os.getenv("TOOLREG_TEST_SECRET"));
        attempt("std.getenviron", () => JSON.stringify(std.getenviron()));
        attempt("scriptArgs", () => scriptArgs);
        attempt("Deno.env", () => Deno.env.toObject());
        attempt("globalThis.TOOLREG_TEST_SECRET", () => globalThis.TOOLREG_TEST_SECRET);
        const seen = new Set();
        const names = [];
        const walk = (o, depth) => {
          if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o) || depth > 6) return;
          seen.add(o);
          for (const key of Reflect.ownKeys(o)) {
            names.push(String(key));
            let v;
            try { v = o[key]; } catch { continue; }
            if (typeof v === "string") names.push(v);
            walk(v, depth + 1);
          }
          walk(Object.getPrototypeOf(o), depth + 1);
        };
        walk(globalThis, 0);
        return { found, globals: Reflect.ownKeys(globalThis).map(String), reachable: names };
    "#;
    let value = sandbox.value(program).await;
    let text = value.to_string();
    assert!(!text.contains(&secret), "the secret leaked: {text}");
    for (name, answer) in value["found"].as_object().unwrap() {
        let answer = answer.as_str().unwrap();
        let expected = if name.starts_with("globalThis") { "undefined" } else { "ReferenceError: " };
        assert!(answer.starts_with(expected), "{name}: {answer}");
    }
    let globals: Vec<&str> = value["globals"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for absent in [
        "process",
        "require",
        "module",
        "std",
        "os",
        "scriptArgs",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "performance",
        "setTimeout",
        "setInterval",
        "eval",
        "WeakRef",
        "FinalizationRegistry",
    ] {
        assert!(!globals.contains(&absent), "the program can reach `{absent}`: {globals:?}");
    }
    assert!(value["reachable"].as_array().unwrap().len() > 100, "the walk saw little: {value}");
    assert!(sandbox.ran().is_empty());
    println!("the secret stayed out of reach");
}

// ---------------------------------------------------------------------------
// Code from strings.

#[tokio::test]
async fn eval_and_the_function_constructors_are_gone() {
    let sandbox = Sandbox::new();
    let dir = tempfile::tempdir().unwrap();
    let (path, marker) = js_path(dir.path(), "marker");
    // Each would run `source`, which tries to write the marker file.
    let source = serde_json::to_string(&format!("std.open({marker}, 'w')")).unwrap();
    let attempts = [
        (format!("eval({source})"), "ReferenceError: eval is not defined"),
        (format!("globalThis.eval({source})"), "TypeError: not a function"),
        (format!("(0, globalThis['ev' + 'al'])({source})"), "TypeError: not a function"),
        (format!("Function({source})()"), "EvalError: code from strings is not allowed"),
        (format!("new Function({source})()"), "EvalError: code from strings is not allowed"),
        (format!("Reflect.construct(Function, [{source}])()"), "EvalError: code from strings is not allowed"),
        (format!("Function.call(null, {source})()"), "EvalError: code from strings is not allowed"),
        (format!("(function () {{}}).constructor({source})()"), "TypeError: not a function"),
        (format!("(() => {{}}).constructor({source})()"), "TypeError: not a function"),
        (format!("(class {{}}).constructor({source})()"), "TypeError: not a function"),
        (format!("(async function () {{}}).constructor({source})()"), "TypeError: not a function"),
        (format!("(function* () {{}}).constructor({source})().next()"), "TypeError: not a function"),
        (format!("(async function* () {{}}).constructor({source})().next()"), "TypeError: not a function"),
        (format!("Object.getPrototypeOf(async () => {{}}).constructor({source})()"), "TypeError: not a function"),
        (format!("setTimeout({source}, 0)"), "ReferenceError: setTimeout is not defined"),
        (format!("setInterval({source}, 0)"), "ReferenceError: setInterval is not defined"),
    ];
    for (attempt, expected) in &attempts {
        let error = sandbox.refuse(&format!("{attempt};\nreturn 1;")).await;
        assert_exception(&error, expected);
    }
    assert!(!path.exists());
    // What stays: `instanceof Function`, and functions written in the program.
    let value = sandbox.value("const f = (x) => x + 1; return [f instanceof Function, typeof Function, f(1)];").await;
    assert_eq!(value, json!([true, "function", 2]));
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// Clock and randomness: a run depends on its tools' results alone.

#[tokio::test]
async fn there_is_no_clock() {
    let sandbox = Sandbox::new();
    for attempt in [
        "Date.now()",
        "new Date()",
        "Date()",
        "new Date().getTime()",
        "Reflect.construct(Date, [])",
        "new (new Date(0).constructor)()",
        "new Date(0).constructor.now()",
        "(new Date(0)).constructor()",
    ] {
        let error = sandbox.refuse(&format!("return String({attempt});")).await;
        assert_exception(&error, "there is no clock in the sandbox");
    }
    let error = sandbox.refuse("return performance.now();").await;
    assert_exception(&error, "ReferenceError: performance is not defined");
    // A date from a given time still works.
    let value = sandbox.value("return new Date(Date.UTC(2020, 1, 29)).toISOString();").await;
    assert_eq!(value, json!("2020-02-29T00:00:00.000Z"));
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn math_random_draws_the_same_numbers_in_every_run() {
    let sandbox = Sandbox::new();
    let program = "return Array.from({length: 8}, () => Math.random());";
    let first = sandbox.value(program).await;
    let second = sandbox.value(program).await;
    assert_eq!(first, second);
    let numbers: Vec<f64> = first.as_array().unwrap().iter().map(|n| n.as_f64().unwrap()).collect();
    assert!(numbers.iter().all(|n| (0.0..1.0).contains(n)), "{numbers:?}");
    assert!(numbers.windows(2).all(|w| w[0] != w[1]), "{numbers:?}");
    // `crypto.getRandomValues` is not a way around it.
    let error = sandbox.refuse("return crypto.getRandomValues(new Uint8Array(4));").await;
    assert_exception(&error, "ReferenceError: crypto is not defined");
}

// ---------------------------------------------------------------------------
// Endless loops.

/// An attempt that must end on the clock, promptly.
async fn ends_on_time(sandbox: &Sandbox, program: &str) {
    let (error, took) = sandbox.refuse_timed(program).await;
    assert_eq!(error, CodeError::Timeout { limit_ms: 1000 }, "{program}");
    assert!(took < Duration::from_secs(5), "{program}: {took:?}");
}

#[tokio::test]
async fn endless_loops_are_stopped_on_the_clock() {
    let sandbox = Sandbox::new();
    for program in [
        "while (true) {}",
        "for (;;) {}",
        "do {} while (1);",
        // The interrupt cannot be caught or deferred by `finally`.
        "try { for (;;) {} } finally { for (;;) {} }",
        "try { for (;;) {} } catch (e) { for (;;) {} }",
        "for (;;) { try { for (;;) {} } catch (e) {} }",
        // In a promise job, after the program itself returned.
        "Promise.resolve().then(() => { for (;;) {} }); return 1;",
        // Catastrophic backtracking in a regular expression.
        "return /^(a+)+$/.test('a'.repeat(40) + 'b');",
    ] {
        ends_on_time(&sandbox, program).await;
    }
    // An endless chain of promise jobs, each short: it ends on the clock,
    // unless QuickJS's collector drops the chain first (each promise waits
    // on the next, and the collector may take the whole chain for garbage,
    // emptying the job queue), which leaves the program waiting on nothing.
    let program = "const again = () => Promise.resolve().then(again); again(); await new Promise(() => {});";
    let (error, took) = sandbox.refuse_timed(program).await;
    assert!(matches!(error, CodeError::Timeout { .. } | CodeError::Stalled), "{error:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Nor can it sleep in native code, where the interrupt does not reach.
    let error = sandbox.refuse("return Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);").await;
    assert_exception(&error, "TypeError: cannot block in this thread");
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn time_between_tool_calls_adds_up() {
    // Each stretch is short; waiting for the calls is not counted, the
    // stretches are.
    let sandbox = Sandbox::with(Limits { max_calls: 1000, ..limits() });
    let (error, took) =
        sandbox.refuse_timed("for (;;) { await tools.add({a: 1, b: 1}); for (let i = 0; i < 1e6; i++) {} }").await;
    assert_eq!(error, CodeError::Timeout { limit_ms: 1000 });
    assert!(took < Duration::from_secs(5), "{took:?}");
    let ran = sandbox.ran().len();
    assert!((1..1000).contains(&ran), "{ran} calls ran");
}

#[tokio::test]
async fn the_step_limit_stops_a_loop_first_when_it_is_lower() {
    let sandbox = Sandbox::with(Limits { max_steps: 50, time: Duration::from_secs(20), ..limits() });
    let error = sandbox.refuse("for (;;) {}").await;
    assert_eq!(error, CodeError::StepLimit { limit: 50 });
}

#[tokio::test]
async fn a_loop_inside_native_code_is_ended_by_the_host() {
    // These loops run in C, where QuickJS polls its interrupt seldom or
    // never: the host (or the kernel's CPU limit) must end the worker.
    let sandbox = Sandbox::new();
    for program in [
        // 2^40 leaves: memory or the clock, whichever comes first.
        "let a = []; for (let i = 0; i < 40; i++) a = [a, a]; return JSON.stringify(a).length;",
        // Four billion holes joined: no memory, only time.
        "return new Array(2 ** 32 - 1).join('').length;",
        "return new Array(2 ** 32 - 1).lastIndexOf(1);",
    ] {
        let (error, took) = sandbox.refuse_timed(program).await;
        assert!(
            matches!(error, CodeError::Timeout { limit_ms: 1000 } | CodeError::MemoryLimit { .. }),
            "{program}: {error:?}"
        );
        // The limit, the host's grace of two seconds, and some slack.
        assert!(took < Duration::from_secs(6), "{program}: {took:?}");
    }
}

// ---------------------------------------------------------------------------
// Deep recursion.

#[tokio::test]
async fn deep_recursion_is_a_stack_overflow() {
    let sandbox = Sandbox::new();
    for program in [
        "const f = (n) => f(n + 1) + 1; return f(0);",
        "function even(n) { return odd(n + 1); } function odd(n) { return even(n + 1); } return even(0);",
        "const o = { get x() { return this.x; } }; return o.x;",
        "const o = { toString() { return String(this); } }; return String(o);",
        "const p = new Proxy({}, { get: (t, k, r) => r[k] }); return p.x;",
        "let o = {}; for (let i = 0; i < 1e5; i++) o = { o }; return JSON.stringify(o).length;",
        "let a = []; for (let i = 0; i < 1e5; i++) a = [a]; return String(a).length;",
        // Caught, and recursed again in the handler.
        "const f = () => f(); try { f(); } catch (e) { f(); }",
    ] {
        let error = sandbox.refuse(program).await;
        assert_eq!(error, CodeError::StackOverflow { limit_bytes: limits().stack_bytes }, "{program}");
    }
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// Memory bombs.

#[tokio::test]
async fn memory_bombs_hit_the_memory_limit() {
    // Time enough that the heap, not the clock, ends each one, even on a
    // slow machine running tests side by side.
    let sandbox = Sandbox::with(Limits { time: Duration::from_secs(10), ..limits() });
    let limit = CodeError::MemoryLimit { limit_bytes: 32 << 20 };
    for program in [
        "return 'x'.repeat(1e9).length;",
        // Doubling a string, made flat each time (else it stays a small
        // rope until its length passes the language's bound, below).
        "let s = 'x'; for (;;) { s += s; s.charCodeAt(s.length - 1); }",
        // Memory filled with small objects: QuickJS cannot even make the
        // error, and throws `null`.
        "const a = []; for (;;) a.push([1, 2, 3]);",
        "return new Array(1e9).fill(0).length;",
        "return Array.from({length: 1e8}, (_, i) => i).length;",
        "return new ArrayBuffer(2 ** 30).byteLength;",
        "return new Uint8Array(2 ** 29).length;",
        "const parts = []; for (;;) parts.push('y'.repeat(1 << 20));",
        // Caught, and allocated again in the handler.
        "try { 'x'.repeat(1e9); } catch (e) { return 'x'.repeat(1e9).length; }",
    ] {
        let error = sandbox.refuse(program).await;
        assert_eq!(error, limit, "{program}");
    }
    // Caught and not retried, it is an error like any other: the heap
    // never passed its limit.
    let value = sandbox.value("try { 'x'.repeat(1e9); } catch (e) { return e.name + ': ' + e.message; }").await;
    assert_eq!(value, json!("InternalError: out of memory"));
    // QuickJS throws `null` when it cannot even make the error: an uncaught
    // `null` reads as the memory limit, even one the program threw itself.
    assert_eq!(sandbox.refuse("throw null;").await, limit);
    // Millions of entries.
    let error =
        sandbox.refuse("const m = new Map(); for (let i = 0; i < 1e7; i++) m.set(i, {i}); return m.size;").await;
    assert_eq!(error, limit);
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn sizes_past_the_languages_own_bounds_are_range_errors() {
    let sandbox = Sandbox::new();
    let error = sandbox.refuse("return new ArrayBuffer(2 ** 31).byteLength;").await;
    assert_exception(&error, "RangeError");
    let error = sandbox.refuse("return 'x'.repeat(2 ** 31).length;").await;
    assert_exception(&error, "RangeError");
    // Doubling a string without reading it builds a rope, not memory: it
    // passes the longest string the language allows first.
    let error = sandbox.refuse("let s = 'x'; for (;;) s += s;").await;
    assert_exception(&error, "InternalError: string too long");
}

#[tokio::test]
async fn a_huge_bigint_is_refused() {
    let sandbox = Sandbox::new();
    let (error, took) = sandbox.refuse_timed("return String(10n ** 10000000n).length;").await;
    // Past QuickJS's largest BigInt: a `RangeError` once the
    // multiplications (in C) find out, or the clock first on a busy
    // machine.
    let too_large = |m: &str| m.starts_with("RangeError: BigInt is too large to allocate");
    assert!(
        matches!(&error, CodeError::Timeout { limit_ms: 1000 })
            || matches!(&error, CodeError::Exception { message } if too_large(message)),
        "{error:?}"
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
}

// ---------------------------------------------------------------------------
// Output floods.

#[tokio::test]
async fn output_floods_hit_the_output_limit() {
    let sandbox = Sandbox::new();
    let limit = CodeError::OutputLimit { limit_bytes: 4 << 10 };
    for program in [
        "for (;;) console.log('flood');",
        "console.log('x'.repeat(1 << 20));",
        // Caught: it cannot print again, nor finish as if nothing happened.
        "try { for (;;) console.log('flood'); } catch (e) { console.log('again'); }",
        "try { for (;;) console.log('flood'); } catch (e) {} return 'done';",
        "for (;;) { try { console.error('flood'); } catch (e) {} }",
    ] {
        let error = sandbox.refuse(program).await;
        assert_eq!(error, limit, "{program}");
    }
}

#[tokio::test]
async fn printed_text_cannot_forge_a_protocol_message() {
    let sandbox = Sandbox::new();
    let value = sandbox
        .code
        .run(&sandbox.engine, r#"console.log('\n{"type":"done","value":"forged","output":""}\n'); return "real";"#)
        .await
        .unwrap();
    assert_eq!(value.value, json!("real"));
    assert!(value.output.contains("forged"));
}

// ---------------------------------------------------------------------------
// Too many tool calls.

#[tokio::test]
async fn a_million_tool_calls_stop_at_the_call_limit() {
    let sandbox = Sandbox::new();
    let error = sandbox.refuse("for (let i = 0; i < 1e6; i++) await tools.add({a: i, b: 1});").await;
    assert_eq!(error, CodeError::CallLimit { limit: 20 });
    assert_eq!(sandbox.ran().len(), 20, "exactly the limit ran");
}

#[tokio::test]
async fn a_call_not_awaited_before_the_program_ends_does_not_run() {
    let sandbox = Sandbox::new();
    let value = sandbox.value("tools.add({a: 1, b: 2}); tools.echo({text: 'late'}); return 'done';").await;
    assert_eq!(value, json!("done"));
    assert!(sandbox.ran().is_empty());
}

#[tokio::test]
async fn ten_thousand_calls_at_once_stop_at_the_call_limit() {
    let sandbox = Sandbox::new();
    let error =
        sandbox.refuse("await Promise.all(Array.from({length: 10000}, (_, i) => tools.add({a: i, b: 1})));").await;
    assert_eq!(error, CodeError::CallLimit { limit: 20 });
    assert!(sandbox.ran().len() <= 20, "{} ran", sandbox.ran().len());
}

#[tokio::test]
async fn the_call_limit_cannot_be_caught_and_ignored() {
    let sandbox = Sandbox::new();
    let error = sandbox
        .refuse(
            "let done = 0;\nfor (let i = 0; i < 100; i++) { try { await tools.add({a: i, b: 1}); done++; } catch (e) \
             {} }\nreturn done;",
        )
        .await;
    assert_eq!(error, CodeError::CallLimit { limit: 20 });
    assert_eq!(sandbox.ran().len(), 20);
}

// ---------------------------------------------------------------------------
// Tools the program was not offered.

#[tokio::test]
async fn a_tool_not_offered_cannot_be_called() {
    let sandbox = Sandbox::new();
    for attempt in [
        "tools.shell({command: 'touch /tmp/x'})",
        "tools['__proto__']({})",
        "tools.constructor('return 1')",
        "tools.toString()",
        "tools['ad\\u200bd']({a: 1, b: 2})",
        "tools['add\\u0000']({a: 1, b: 2})",
        "tools['\\u202eadd']({a: 1, b: 2})",
        "tools['ＡＤＤ']({a: 1, b: 2})",
    ] {
        let error = sandbox.refuse(&format!("return await {attempt};")).await;
        assert_exception(&error, "TypeError: not a function");
    }
    // `tools` cannot be extended, and its own tools stay what they were.
    let value = sandbox
        .value(
            "const tries = [];\ntry { Object.defineProperty(tools, 'shell', { value: () => 1 }); } catch (e) { \
             tries.push(e.name); }\ntry { tools.add = () => 'hijacked'; } catch (e) { tries.push(e.name); }\ntry { \
             Object.setPrototypeOf(tools, { shell: () => 1 }); } catch (e) { tries.push(e.name); }\nreturn [tries, \
             typeof tools.shell, await tools.add({a: 1, b: 1})];",
        )
        .await;
    assert_eq!(value, json!([["TypeError", "TypeError", "TypeError"], "undefined", 2]));
    assert_eq!(sandbox.ran(), ["add"]);
}

#[tokio::test]
async fn a_registered_tool_the_engine_does_not_offer_is_not_there() {
    // The registry holds `delete`; this engine's selection leaves it out.
    let runs = runs();
    let engine =
        ToolEngine::builder(&common::registry(&runs)).selection(Selection::all().max_safety(SafetyLevel::Safe)).build();
    let code = code_with(limits());
    let error = code.run(&engine, "return await tools.delete({path: '/'});").await.unwrap_err();
    assert_exception(&error, "TypeError: not a function");
    // Nor is it described to the model.
    let run_code = code.tool(&engine);
    let description = &run_code.declaration().description;
    assert!(description.contains("echo") && !description.contains("delete"), "{description}");
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_sandboxs_own_functions_are_out_of_reach() {
    let sandbox = Sandbox::new();
    // The stack-trace API would hand over the functions on the stack (the
    // prelude's among them, were the program's code ever run inside a
    // call: a `toJSON` no longer is).
    let value = sandbox
        .value(
            "const fns = [];\nlet refused;\ntry { Error.prepareStackTrace = (e, sites) => { for (const s of sites) \
             fns.push(s.getFunction()); return ''; }; } catch (e) { refused = e.name; }\nconst x = { toJSON() { \
             Error.captureStackTrace(this); return new Error().stack; } };\nawait tools.echo({text: 'a'});\nx.toJSON();\nreturn \
             [refused, typeof Error.prepareStackTrace, fns.length, typeof new Error().stack];",
        )
        .await;
    assert_eq!(value, json!(["TypeError", "undefined", 0, "string"]));
    let error =
        sandbox.refuse("Object.defineProperty(Error, 'prepareStackTrace', { get() { return (e, s) => s; } });").await;
    assert_exception(&error, "TypeError");
    // Nor through `caller`.
    for attempt in
        ["function f() { return f.caller; } return f();", "return (function () { return arguments.callee.caller; })();"]
    {
        let error = sandbox.refuse(attempt).await;
        assert_exception(&error, "TypeError: invalid property access");
    }
    // Closing the function the program is wrapped in gives it nothing more
    // than the global scope it already has.
    let error = sandbox.refuse("return 1;\n})();\nstd.open('x');\n(async () => {").await;
    assert_exception(&error, "ReferenceError: std is not defined");
    let error = sandbox.refuse("return 1;\n})();\nimport * as fs from 'fs';\n(async () => {").await;
    assert!(matches!(error, CodeError::Syntax { .. }), "{error:?}");
    ends_on_time(&sandbox, "return 1;\n})();\nfor (;;) {}\n(async () => {").await;
    assert_eq!(sandbox.ran(), ["echo"]);
}

#[tokio::test]
async fn prototype_pollution_stays_inside_the_program() {
    let sandbox = Sandbox::new();
    // Polluted prototypes give `tools` no new tool (it has no prototype) …
    let error = sandbox.refuse("Object.prototype.shell = () => 'pwned'; return await tools.shell({});").await;
    assert_exception(&error, "TypeError: not a function");
    // … and a polluted `toJSON` changes nothing the tool receives.
    let value = sandbox
        .value(
            "Object.prototype.toJSON = () => ({path: '/etc/passwd'});\ntry { return await tools.echo({text: 'hi'}); } \
             catch (e) { return e.kind; }",
        )
        .await;
    assert_eq!(value, json!("hi"));
    assert_eq!(received(&sandbox), [json!({"text": "hi"})]);
    sandbox.runs.lock().unwrap().clear();
    // A polluted `then` makes the program's own promises hang: that is
    // the program stalling, not the host.
    let error = sandbox.refuse("Object.prototype.then = function () {}; return {a: 1};").await;
    assert_eq!(error, CodeError::Stalled);
    assert!(sandbox.ran().is_empty());
    // The next program starts clean.
    let value = sandbox.value("return [({}).toJSON, ({}).then, ({}).shell];").await;
    assert_eq!(value, json!([null, null, null]));
}

#[tokio::test]
async fn a_dangerous_tool_never_runs_without_approval() {
    let sandbox = Sandbox::new();
    let value = sandbox
        .value(
            "const kinds = [];\nfor (let i = 0; i < 5; i++) { try { await tools.delete({path: '/'}); } catch (e) { \
             kinds.push(e.kind); } }\nreturn kinds;",
        )
        .await;
    assert_eq!(value, json!(vec!["approval_required"; 5]));
    // Uncaught, it ends the program with the kind in its text.
    let error = sandbox.refuse("await tools.delete({path: '/'});").await;
    assert_exception(&error, "ToolError: `delete`: the tool needs approval and no approver is available");
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// Tool results crafted to break the interpreter.

#[tokio::test]
async fn a_huge_result_round_trips() {
    let sandbox = Sandbox::new();
    let value = sandbox.value("const s = await tools.big(); return [s.length, s[0], s[s.length - 1]];").await;
    assert_eq!(value, json!([2 << 20, "x", "x"]));
    assert_eq!(sandbox.ran(), ["big"]);
}

#[tokio::test]
async fn results_past_one_message_fail_only_their_calls() {
    // One result of 2 MiB fits in a message; two together do not.
    let sandbox = Sandbox::with(Limits { message_bytes: 3 << 20, ..limits() });
    let value = sandbox
        .value(
            "const r = await Promise.allSettled([tools.big(), tools.big()]);\nreturn r.map((x) => x.status === \
             'fulfilled' ? x.value.length : x.reason.kind).sort();",
        )
        .await;
    assert_eq!(value, json!([2 << 20, "result_too_large"]));
    assert_eq!(sandbox.ran(), ["big", "big"]);
}

/// What a program sees of `deep`'s result at `depth`/// What a program sees of `deep`'s result at `depth`: the depth it
/// walked, or the error it caught.
async fn deep_result(sandbox: &Sandbox, depth: usize) -> Value {
    let program = format!(
        "try {{ let x = await tools.deep({{depth: {depth}}}); let d = 0; while (Array.isArray(x)) {{ x = x[0]; d++; }} \
         return d; }} catch (e) {{ return [e.name, e.kind, e.message]; }}"
    );
    sandbox.value(&program).await
}

#[tokio::test]
async fn a_deeply_nested_result_round_trips_or_fails_only_its_call() {
    let sandbox = Sandbox::new();
    // Past serde_json's default depth limit of 128, and well past it.
    assert_eq!(deep_result(&sandbox, 200).await, json!(200));
    assert_eq!(deep_result(&sandbox, 1000).await, json!(1000));
    // Too deep for the interpreter's stack: that call throws, and the
    // program goes on.
    let sandbox = Sandbox::with(Limits { stack_bytes: 64 << 10, ..limits() });
    let value = deep_result(&sandbox, 1000).await;
    assert_eq!(
        value,
        json!(["ToolError", "result_serialization", "the result of deep cannot be used here: it is nested too deeply"])
    );
    let value = sandbox
        .value("try { await tools.deep({depth: 1000}); } catch (e) { return await tools.add({a: 1, b: 2}); }")
        .await;
    assert_eq!(value, json!(3));
    assert_eq!(sandbox.ran(), ["deep", "deep", "add"]);
}

/// (Without an audit sink: the engine's audit record measures a result's
/// text recursively, so a Rust tool of the host that returns a value this
/// deep is the host's own stack overflow; MCP results are parsed at most
/// 128 deep.)
#[tokio::test]
async fn a_result_nested_10_000_levels_deep_is_refused_cleanly() {
    let mut sandbox = Sandbox::new();
    sandbox.engine = toolreg::ToolEngine::builder(&common::registry(&sandbox.runs)).build();
    let value = deep_result(&sandbox, DEEP).await;
    assert_eq!(value[0], "ToolError", "{value}");
    assert_eq!(value[1], "result_serialization", "{value}");
    assert!(value[2].as_str().unwrap().contains("nested more than 2000 levels deep"), "{value}");
    assert_eq!(sandbox.ran(), ["deep"]);
}

#[tokio::test]
async fn odd_unicode_round_trips() {
    let sandbox = Sandbox::new();
    let value = sandbox.value("return await tools.odd();").await;
    assert_eq!(value, odd_value());
    // Keys named `__proto__` and `constructor` stay plain keys: nothing
    // is polluted.
    let value = sandbox
        .value(
            "const r = await tools.odd();\nreturn [Object.keys(r).includes('__proto__'), Object.getPrototypeOf(r) === \
             Object.prototype, ({}).polluted, Object.prototype.polluted];",
        )
        .await;
    assert_eq!(value, json!([true, true, null, null]));
    let text = odd_value()["text"].as_str().unwrap().to_owned();
    let program = format!("return await tools.echo({{text: {}}});", serde_json::to_string(&text).unwrap());
    assert_eq!(sandbox.value(&program).await, json!(text));
    let printed = sandbox.code.run(&sandbox.engine, &format!("console.log({});", json!(text))).await.unwrap();
    assert_eq!(printed.output, format!("{text}\n"));
    assert_eq!(sandbox.ran(), ["odd", "odd", "echo"]);
}

#[tokio::test]
async fn a_lone_surrogate_is_refused_cleanly() {
    let sandbox = Sandbox::new();
    // As arguments (a value or a key): the call fails in the program, and
    // no tool runs.
    for args in ["{text: 'a\\ud800b'}", "{text: 'ok', ['\\udfff']: 1}", "{text: ['x', '\\udbff']}"] {
        let value = sandbox
            .value(&format!(
                "try {{ await tools.echo({args}); return 'ran'; }} catch (e) {{ return e.name + ': ' + e.message; }}"
            ))
            .await;
        assert_eq!(
            value,
            json!(concat!(
                "TypeError: the arguments of echo hold a lone surrogate (half of a UTF-16 pair), ",
                "which is not valid Unicode"
            )),
            "{args}"
        );
    }
    // A whole pair, and the escape's text itself, are fine.
    let value = sandbox.value("return await tools.echo({text: '\\ud83d\\ude00 \\\\ud800'});").await;
    assert_eq!(value, json!("😀 \\ud800"));
    // As the result.
    let error = sandbox.refuse("return 'a\\udc00b';").await;
    assert!(matches!(error, CodeError::BadResult { .. }), "{error:?}");
    // Printed: replaced, not refused (printed text is for reading).
    let out = sandbox.code.run(&sandbox.engine, "console.log('a\\ud800b'); return 1;").await.unwrap();
    assert_eq!(out.output, "a\u{fffd}b\n");
    assert_eq!(sandbox.ran(), ["echo"]);
}

// ---------------------------------------------------------------------------
// What a program passes is what the tool receives: nothing the program
// patches (toJSON, toString, getters, proxies, JSON.stringify) runs while
// the sandbox reads a value.

/// What `echo` received, in order.
fn received(sandbox: &Sandbox) -> Vec<Value> {
    sandbox.runs.lock().unwrap().iter().filter(|(tool, _)| tool == "echo").map(|(_, args)| args.clone()).collect()
}

#[tokio::test]
async fn a_patched_to_json_does_not_change_the_arguments() {
    let sandbox = Sandbox::new();
    for patch in [
        "Object.prototype.toJSON = function () { return {text: '/etc/passwd'}; };",
        "Object.defineProperty(Object.prototype, 'toJSON', {get() { return () => ({text: '/etc/passwd'}); }});",
        "String.prototype.toJSON = () => '/etc/passwd';",
        "JSON.stringify = () => '{\"text\":\"/etc/passwd\"}';",
    ] {
        let value = sandbox.value(&format!("{patch}\nreturn await tools.echo({{text: 'notes/b.txt'}});")).await;
        assert_eq!(value, json!("notes/b.txt"), "{patch}");
    }
    assert_eq!(received(&sandbox), vec![json!({"text": "notes/b.txt"}); 4]);
}

#[tokio::test]
async fn getters_and_proxies_are_refused_and_never_run() {
    let sandbox = Sandbox::new();
    for (args, at) in [
        ("{get text() { ran++; return '/etc/passwd'; }}", "args.text"),
        ("new Proxy({text: 'a'}, {get() { ran++; return '/etc/passwd'; }, ownKeys() { ran++; return ['text']; }})", ""),
        ("{text: 'a', nested: [1, {get deep() { ran++; return 2; }}]}", "args.nested[1].deep"),
        ("Object.defineProperty([], 0, {get() { ran++; return 'x'; }, enumerable: true})", "args[0]"),
    ] {
        let value = sandbox
            .value(&format!(
                "let ran = 0;\ntry {{ await tools.echo({args}); return 'sent'; }} catch (e) {{ return [e.name, e.message, \
                 ran]; }}"
            ))
            .await;
        assert_eq!(value[0], json!("TypeError"), "{args}: {value}");
        let message = value[1].as_str().unwrap();
        assert!(message.starts_with("the arguments of echo are not plain data"), "{args}: {message}");
        assert!(message.contains(at), "{args}: {message}");
        assert_eq!(value[2], json!(0), "{args}: the program's code ran");
    }
    assert!(received(&sandbox).is_empty());
}

#[tokio::test]
async fn a_string_object_is_not_a_string() {
    let sandbox = Sandbox::new();
    for wrapped in [
        "(() => { const s = new String('notes/b.txt'); s.toString = () => '/etc/passwd'; return s; })()",
        "(() => { String.prototype.toString = () => '/etc/passwd'; return new String('notes/b.txt'); })()",
        "(() => { const s = new String('notes/b.txt'); s.valueOf = () => '/etc/passwd'; return s; })()",
        "new Number(1)",
        "new Boolean(false)",
        "new Date(0)",
        "new Map([['text', 'a']])",
    ] {
        let value = sandbox
            .value(&format!(
                "try {{ await tools.echo({{text: {wrapped}}}); return 'sent'; }} catch (e) {{ return [e.name, \
                 e.message]; }}"
            ))
            .await;
        assert_eq!(value[0], json!("TypeError"), "{wrapped}: {value}");
        let message = value[1].as_str().unwrap();
        assert!(message.contains("at `args.text`") && message.contains("is not"), "{wrapped}: {message}");
    }
    let value =
        sandbox.value("try { await tools.echo({text: new String('a')}); } catch (e) { return e.message; }").await;
    assert_eq!(
        value,
        json!(
            "the arguments of echo are not plain data at `args.text`: a String object (new String(…)) is not a \
             string: pass the string itself"
        )
    );
    assert!(received(&sandbox).is_empty());
}

#[tokio::test]
async fn inherited_values_do_not_fill_holes_or_add_keys() {
    let sandbox = Sandbox::new();
    // A hole in an array reads as null, not from the prototype; inherited
    // properties do not count; `undefined` is left out, as JSON does.
    let value = sandbox
        .value(
            "Object.defineProperty(Array.prototype, 1, {get() { return '/etc/passwd'; }});\nObject.prototype.extra = \
             'x';\nconst text = JSON.stringify(Object.create({text: 'inherited'}));\nreturn await tools.echo({text: \
             'a', list: ['x', , 'z'], gone: undefined});",
        )
        .await;
    assert_eq!(value, json!("a"));
    let args = &received(&sandbox)[0];
    assert!(args.get("gone").is_none() && args.get("extra").is_none(), "{args}");
    if let Some(list) = args.get("list") {
        assert_eq!(list, &json!(["x", null, "z"]));
    }
}

#[tokio::test]
async fn printing_uses_the_sandboxs_own_formatting() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .code
        .run(
            &sandbox.engine,
            "JSON.stringify = () => 'forged';\nArray.prototype.map = () => ['forged'];\nArray.prototype.join = () => \
             'forged';\nArray.prototype[Symbol.iterator] = function* () { yield 'forged'; };\nObject.prototype.toJSON \
             = () => 'forged';\nString.prototype.toWellFormed = () => 'forged';\nconsole.log('a', {b: [1, 'c']}, 2, \
             null, undefined);\nlet ran = 0;\nconsole.log({get secret() { ran++; return 1; }}, () => 1, new \
             Proxy({}, {ownKeys() { ran++; return []; }}), new String('s'), new Error('boom'));\nreturn ran;",
        )
        .await
        .unwrap();
    assert_eq!(out.value, json!(0), "the program's code ran while printing");
    assert_eq!(
        out.output,
        "a {\"b\":[1,\"c\"]} 2 null undefined\n{\"secret\":[getter]} [function] [Proxy] [a String object (new \
         String(…))] Error: boom\n"
    );
}

#[tokio::test]
async fn the_result_is_read_as_the_program_wrote_it() {
    let sandbox = Sandbox::new();
    for patch in [
        "Object.prototype.toJSON = () => 'forged';",
        "JSON.stringify = () => '\"forged\"';",
        "Promise.prototype.then = function () { return Promise.resolve('\"forged\"'); };",
    ] {
        let value = sandbox.value(&format!("{patch}\nreturn {{real: [1, 'two']}};")).await;
        assert_eq!(value, json!({"real": [1, "two"]}), "{patch}");
    }
    let error = sandbox.refuse("return {when: new Date(0)};").await;
    assert_eq!(
        error,
        CodeError::BadResult {
            message: "at `result.when`: a Date is not JSON: pass date.toISOString() or date.getTime()".into()
        }
    );
}

// ---------------------------------------------------------------------------
// What the program returns.

#[tokio::test]
async fn a_program_that_never_settles_is_stalled() {
    let sandbox = Sandbox::new();
    for program in [
        "await new Promise(() => {});",
        "const p = new Promise((resolve) => { globalThis.later = resolve; }); return await p;",
        "await Promise.race([]);",
    ] {
        assert_eq!(sandbox.refuse(program).await, CodeError::Stalled, "{program}");
    }
}

#[tokio::test]
async fn a_result_that_is_not_json_is_a_bad_result() {
    let sandbox = Sandbox::new();
    for program in [
        "const a = {}; a.self = a; return a;",
        "const a = [1]; a.push([a]); return a;",
        "return 10n;",
        "return {n: 2n ** 64n};",
        "return {toJSON() { throw new Error('no'); }};",
    ] {
        let error = sandbox.refuse(program).await;
        assert!(matches!(error, CodeError::BadResult { .. }), "{program}: {error:?}");
    }
}

#[tokio::test]
async fn a_result_over_the_message_limit_is_a_bad_result() {
    let sandbox = Sandbox::with(Limits { message_bytes: 1 << 20, ..limits() });
    // Over the limit by far, and by less than the message's envelope.
    for length in [2 << 20, (1 << 20) - 8] {
        let error = sandbox.refuse(&format!("return 'x'.repeat({length});")).await;
        assert!(matches!(error, CodeError::BadResult { .. }), "{length}: {error:?}");
    }
}

#[tokio::test]
async fn a_result_nested_past_what_the_host_reads_is_a_bad_result() {
    let sandbox = Sandbox::new();
    // 101 levels: past the worker's bound, below serde_json's 128; then
    // one just under the host's own limit, and one past it.
    for depth in [101, 126, 127] {
        let error = sandbox.refuse(&format!("let x = []; for (let i = 1; i < {depth}; i++) x = [x]; return x;")).await;
        assert_eq!(error, CodeError::BadResult { message: "it is nested more than 100 levels deep".into() }, "{depth}");
    }
    // Far too deep: refused at the same bound, without a walk to the bottom.
    let error = sandbox.refuse("let x = []; for (let i = 1; i < 1e5; i++) x = [x]; return x;").await;
    assert_eq!(error, CodeError::BadResult { message: "it is nested more than 100 levels deep".into() });
    let value = sandbox.value("let x = 0; for (let i = 0; i < 100; i++) x = [x]; return x;").await;
    assert_eq!(value, common::nested(100));
}

#[tokio::test]
async fn arguments_the_host_could_not_read_are_refused_in_the_program() {
    let sandbox = Sandbox::with(Limits { message_bytes: 1 << 20, ..limits() });
    // Nested past what the host reads (the engine's own limit, 64 by
    // default, answers the depths between).
    let value = sandbox
        .value(
            "let x = 1; for (let i = 0; i < 200; i++) x = [x];\ntry { await tools.echo({text: 'a', x}); } catch (e) { \
             return e.name + ': ' + e.message; }",
        )
        .await;
    assert_eq!(value, json!("RangeError: the arguments of echo are nested more than 100 levels deep"));
    let value = sandbox
        .value(
            "let x = 1; for (let i = 0; i < 80; i++) x = [x];\ntry { await tools.echo({text: 'a', x}); } catch (e) { \
             return e.kind; }",
        )
        .await;
    assert_eq!(value, json!("arguments_too_deep"));
    // Calls started together whose arguments pass one message's limit: the
    // call that would pass it fails; the ones before run.
    let value = sandbox
        .value(
            "const text = 'z'.repeat(300000);\nconst calls = [];\nlet refused;\nfor (let i = 0; i < 5; i++) { try { \
             calls.push(tools.echo({text})); } catch (e) { refused = [i, e.name]; break; } }\nconst done = await \
             Promise.all(calls);\nreturn [done.length, refused];",
        )
        .await;
    assert_eq!(value, json!([3, [3, "RangeError"]]));
    assert_eq!(sandbox.ran(), ["echo", "echo", "echo"]);
}

#[tokio::test]
async fn a_huge_thrown_text_is_cut_not_a_broken_worker() {
    let sandbox = Sandbox::with(Limits { message_bytes: 1 << 20, ..limits() });
    for program in ["throw 'x'.repeat(2 << 20);", "console.log('printed'); throw new Error('y'.repeat(2 << 20));"] {
        let error = sandbox.refuse(program).await;
        let CodeError::Exception { message } = &error else { panic!("{program}: {error:?}") };
        assert!(message.contains("characters removed"), "{program}");
        assert!(message.len() < 8 << 10, "{program}: {} bytes", message.len());
    }
}

#[tokio::test]
async fn a_50_mb_exception_is_read_in_bounded_time() {
    let sandbox = Sandbox::with(Limits { memory_bytes: 512 << 20, time: Duration::from_secs(5), ..limits() });
    for (text, program) in [
        ("'y'.repeat(50 << 20)", "throw new Error(text);"),
        ("'y'.repeat(50 << 20)", "throw text;"),
        ("'y'.repeat(50 << 20)", "throw [text];"),
        ("'y'.repeat(50 << 20)", "const e = new Error('short'); e.stack = text; throw e;"),
        ("'\\u{1F600}'.repeat(25 << 20)", "throw new Error(text);"),
    ] {
        // What making the text costs, for comparison.
        let (_, made) = sandbox.refuse_timed(&format!("const text = {text}; throw 1;")).await;
        let (error, took) = sandbox.refuse_timed(&format!("const text = {text}; {program}")).await;
        let CodeError::Exception { message } = &error else { panic!("{program}: {error:?}") };
        assert!(message.len() < 24 << 10, "{program}: {} bytes", message.len());
        // Reading the error used to take seconds more than making the text.
        // Both slow down together on a loaded machine, so the bound scales
        // with what making the text took.
        assert!(took < made * 3 + Duration::from_secs(2), "{program}: {took:?} (making the text: {made:?})");
    }
}

#[tokio::test]
async fn formatting_an_error_runs_none_of_the_programs_code() {
    let sandbox = Sandbox::new();
    for (program, shown) in [
        (
            "const e = new Error('real'); Object.defineProperty(e, 'message', {get() { for (;;) {} }}); throw e;",
            "Error",
        ),
        ("class E extends Error { get name() { for (;;) {} } }\nthrow new E('boom');", "boom"),
        ("throw {toJSON() { for (;;) {} }};", "{\"toJSON\":[function]}"),
        ("throw {get x() { for (;;) {} }};", "{\"x\":[getter]}"),
        ("throw new Proxy({}, {ownKeys() { for (;;) {} }, get() { for (;;) {} }});", "[Proxy]"),
        ("Error.prototype.toString = () => { for (;;) {} };\nthrow new TypeError('plain');", "TypeError: plain"),
    ] {
        let error = sandbox.refuse(program).await;
        assert_exception(&error, shown);
    }
}

#[tokio::test]
async fn a_nul_in_the_program_is_a_syntax_error() {
    let sandbox = Sandbox::new();
    let error = sandbox.refuse("return 1;\n\0 for (;;) {}").await;
    assert_eq!(
        error,
        CodeError::Syntax {
            message: "the program holds a NUL character (line 2); inside a string, write it as \\u0000".into()
        }
    );
    // Escaped in a string, it is a character like another.
    assert_eq!(sandbox.value("return 'a\\u0000b'.length;").await, json!(3));
}

#[tokio::test]
async fn a_program_over_the_size_limit_is_not_run() {
    let sandbox = Sandbox::new();
    let program = format!("await tools.add({{a: 1, b: 1}});\n//{}", "x".repeat(16 << 10));
    let error = sandbox.refuse(&program).await;
    assert_eq!(error, CodeError::ProgramTooLarge { bytes: program.len(), limit_bytes: 16 << 10 });
    assert!(sandbox.ran().is_empty());
}

// ---------------------------------------------------------------------------
// Cancellation.

#[tokio::test]
async fn a_cancelled_program_ends_promptly() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let code = code_with(Limits { time: Duration::from_secs(30), ..limits() });
    let engine = code.attach(&engine).unwrap();
    let cancel = CancellationToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        later.cancel();
    });
    let started = Instant::now();
    let call = ToolCall::new("c1", "run_code", json!({"code": "await tools.add({a: 1, b: 1}); for (;;) {}"}));
    let result = engine.execute_call(call, CallOptions::new().cancel(cancel)).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(matches!(result.outcome, Err(ToolError::Cancelled)), "{:?}", result.outcome);
    assert_eq!(runs.lock().unwrap().len(), 1);
    // The engine still runs programs.
    let result = engine
        .execute_call(ToolCall::new("c2", "run_code", json!({"code": "return 7;"})), CallOptions::default())
        .await;
    assert_eq!(result.outcome.unwrap().value, json!({"result": 7}));
}

// ---------------------------------------------------------------------------
// Replay tampering, end to end (the seal itself is unit-tested in
// `journal`).

/// Run `program` as the `run_code` call `id`, with `checkpoints`.
async fn run_code(engine: &ToolEngine, id: &str, program: &str, checkpoints: &Arc<Checkpoints>) -> ToolResult {
    let mut extensions = Extensions::default();
    extensions.insert_arc(Arc::clone(checkpoints));
    let call = ToolCall::new(id, "run_code", json!({ "code": program }));
    engine.execute_call(call, CallOptions::new().extensions(extensions)).await
}

#[tokio::test]
async fn a_changed_or_moved_program_state_is_refused_and_runs_nothing() {
    let runs = runs();
    let code = code_with(limits());
    let with = |decide: fn(ApprovalRequest) -> Decision| {
        let engine = ToolEngine::builder(&common::registry(&runs))
            .approver(approver_fn("test", move |request: ApprovalRequest| async move { decide(request) }))
            .build();
        code.attach(&engine).unwrap()
    };
    let later = with(|request| request.pending("a person decides"));
    let now = with(|request| request.approve());
    let program = "const a = await tools.add({a: 1, b: 2});\nawait tools.delete({path: 'x'});\nreturn a;";
    let ran = || runs.lock().unwrap().iter().map(|(tool, _)| tool.clone()).collect::<Vec<_>>();

    // The program stops at the dangerous call, its record saved.
    let first = Arc::new(Checkpoints::new());
    let result = run_code(&later, "c1", program, &first).await;
    assert!(matches!(result.outcome, Err(ToolError::Pending { .. })), "{:?}", result.outcome);
    assert_eq!(ran(), ["add"]);
    let saved = first.take_saved();

    let rejected = |result: ToolResult| match result.outcome {
        Err(ToolError::Failed { message }) => {
            assert!(message.starts_with("the saved program state is not authentic"), "{message}")
        }
        other => panic!("not refused: {other:?}"),
    };
    // A changed record (the recorded result of `add`).
    let mut changed = saved.clone();
    let record = changed["c1"]["journal"].as_str().unwrap().replace("3.0", "4.0");
    assert_ne!(changed["c1"]["journal"], json!(record));
    changed.get_mut("c1").unwrap()["journal"] = json!(record);
    rejected(run_code(&now, "c1", program, &Arc::new(Checkpoints::restoring(changed))).await);
    // A changed program.
    let other = program.replace("return a;", "return a + 1;");
    rejected(run_code(&now, "c1", &other, &Arc::new(Checkpoints::restoring(saved.clone()))).await);
    // The record moved to another call.
    let moved = [("c2".to_owned(), saved["c1"].clone())].into_iter().collect();
    rejected(run_code(&now, "c2", program, &Arc::new(Checkpoints::restoring(moved))).await);
    // Sealed under another key.
    let elsewhere = code_with(limits()).attach(&ToolEngine::builder(&common::registry(&runs)).build()).unwrap();
    rejected(run_code(&elsewhere, "c1", program, &Arc::new(Checkpoints::restoring(saved.clone()))).await);
    assert_eq!(ran(), ["add"], "a refused state ran nothing");

    // The intact record resumes: `add` is answered from it, `delete` runs once.
    let result = run_code(&now, "c1", program, &Arc::new(Checkpoints::restoring(saved))).await;
    assert_eq!(result.outcome.unwrap().value, json!({"result": 3}));
    assert_eq!(ran(), ["add", "delete"]);
}
