//! The six store tools as a model meets them: registered, declared and
//! called through a `FunctionRegistry`, on each backend of the store (on
//! PostgreSQL when a server can be found: see the store's
//! `tests/it/support/postgres.rs`).

use std::sync::Arc;

use serde_json::{Value, json};
use toolreg::{CallOptions, FunctionRegistry, SafetyLevel, Scope, ToolDeclaration, ToolError, ToolRegistration};
use toolreg_builtins::Builtins;
use toolreg_builtins::store::TOOL_NAMES;
use toolreg_store::{ContextStore, Namespace, PostgresStore, SqliteStore};

#[path = "../../../toolreg-store/tests/it/support/postgres.rs"]
mod pg_server;

/// A fresh store for one case: an SQLite file, or a schema of its own on a
/// PostgreSQL server.
enum Backend {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Backend {
    async fn sqlite() -> Option<Backend> {
        Some(Backend::Sqlite(tempfile::tempdir().unwrap()))
    }

    /// `None` (the case is skipped) when there is no server.
    async fn postgres() -> Option<Backend> {
        let base = pg_server::base_url()?;
        Some(Backend::Postgres(pg_server::fresh_url(&base).await))
    }

    async fn store(&self) -> Arc<dyn ContextStore> {
        match self {
            Backend::Sqlite(dir) => Arc::new(SqliteStore::open(dir.path().join("store.db")).await.unwrap()),
            Backend::Postgres(url) => Arc::new(PostgresStore::connect(url).await.unwrap()),
        }
    }
}

/// The cases that need a store, once per backend.
macro_rules! on_each_backend {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(&super::Backend::sqlite().await.unwrap()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let Some(backend) = super::Backend::postgres().await else { return };
                    super::$case(&backend).await;
                }
            )*
        }
    };
}

on_each_backend!(
    the_six_tools_are_declared_with_their_safety_category_and_scope,
    set_get_ref_list_summarize_delete_end_to_end,
    tool_errors_are_text_a_model_can_act_on_and_change_nothing,
    an_over_budget_result_goes_into_the_store_and_the_model_gets_a_handle,
    a_stored_tool_output_comes_back_as_its_blocks,
);

async fn registry_for(backend: &Backend, name: &str) -> (FunctionRegistry, Namespace) {
    let ns = Namespace::new(backend.store().await, name).unwrap();
    let mut registry = FunctionRegistry::new();
    Builtins::new().store(ns.clone()).register(&mut registry).unwrap();
    (registry, ns)
}

async fn call(registry: &FunctionRegistry, tool: &str, args: Value) -> Result<Value, String> {
    match registry.execute(tool, args).await {
        Ok(output) => Ok(output.value),
        Err(error) => Err(error.model_text(tool)),
    }
}

async fn the_six_tools_are_declared_with_their_safety_category_and_scope(backend: &Backend) {
    let (registry, _) = registry_for(backend, "run-1").await;
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), TOOL_NAMES);
    for decl in registry.list().map(|tool| tool.declaration()) {
        let expected = if matches!(decl.name.as_str(), "store_set" | "store_delete") {
            SafetyLevel::Cautious
        } else {
            SafetyLevel::Safe
        };
        assert_eq!(decl.safety, expected, "{}", decl.name);
        assert_eq!(decl.categories, ["store"], "{}", decl.name);
        assert_eq!(decl.scope, Scope::Core, "{}", decl.name);
        assert!(!decl.description.is_empty());
    }
    let set = registry.get("store_set").unwrap().declaration();
    assert_eq!(set.exclusive_key.as_deref(), Some("key"));
    assert_eq!(set.input_schema["required"], json!(["key", "value"]));
    assert!(set.output_schema.is_none());
    // The handle `store_ref` returns is promised in its declaration.
    let reference = registry.get("store_ref").unwrap().declaration();
    let output = reference.output_schema.as_ref().expect("store_ref declares its output");
    assert_eq!(output["required"], json!(["key", "version"]));
}

async fn set_get_ref_list_summarize_delete_end_to_end(backend: &Backend) {
    let (registry, _) = registry_for(backend, "run-1").await;
    let first =
        call(&registry, "store_set", json!({"key": "notes/a", "value": r#"{"todo": ["x", "y"]}"#})).await.unwrap();
    assert_eq!(first["key"], "notes/a");
    assert_eq!(first["size"], json!(r#"{"todo":["x","y"]}"#.len()));
    let second = call(&registry, "store_set", json!({"key": "notes/a", "value": "done"})).await.unwrap();

    // A handle is exactly the arguments store_get takes.
    let handle = call(&registry, "store_ref", json!({"key": "notes/a"})).await.unwrap();
    assert_eq!(handle, json!({"key": "notes/a", "version": second["version"]}));
    let old = json!({"key": "notes/a", "version": first["version"]});
    let got = call(&registry, "store_get", old).await.unwrap();
    assert_eq!(got["value"], json!({"todo": ["x", "y"]}));
    let latest = call(&registry, "store_get", json!({"key": "notes/a"})).await.unwrap();
    assert_eq!(latest, json!({"key": "notes/a", "version": second["version"], "value": "done"}));

    call(&registry, "store_set", json!({"key": "notes/b", "value": "[1, 2]"})).await.unwrap();
    let page = call(&registry, "store_list", json!({"prefix": "notes/", "limit": 1})).await.unwrap();
    assert_eq!(page["keys"][0]["key"], "notes/a");
    let cursor = page["next_cursor"].clone();
    assert!(cursor.is_string());
    let page = call(&registry, "store_list", json!({"prefix": "notes/", "limit": 1, "cursor": cursor})).await.unwrap();
    assert_eq!(page["keys"][0]["key"], "notes/b");
    assert_eq!(page["next_cursor"], Value::Null);
    let all = call(&registry, "store_list", json!({})).await.unwrap();
    assert_eq!(all["keys"].as_array().map(Vec::len), Some(2));

    let summary = call(&registry, "store_summarize", json!({"key": "notes/b"})).await.unwrap();
    assert_eq!(summary["type"], "array");
    assert_eq!(summary["length"], 2);
    assert_eq!(summary["element_types"], json!(["number"]));
    assert_eq!(summary["preview"], "[1,2]");

    let deleted = call(&registry, "store_delete", json!({"key": "notes/a"})).await.unwrap();
    assert_eq!(deleted, json!({"key": "notes/a", "deleted_versions": 2}));
    let err = call(&registry, "store_get", json!({"key": "notes/a"})).await.unwrap_err();
    assert!(err.contains("no value stored under key `notes/a`"), "{err}");
}

async fn tool_errors_are_text_a_model_can_act_on_and_change_nothing(backend: &Backend) {
    let (registry, ns) = registry_for(backend, "run-1").await;
    call(&registry, "store_set", json!({"key": "k", "value": "1"})).await.unwrap();
    let before = ns.usage().await.unwrap();

    let cases = [
        ("store_set", json!({"key": "bad key", "value": "1"}), "invalid key `bad key`"),
        ("store_set", json!({"key": "", "value": "1"}), "must not be empty"),
        ("store_get", json!({"key": "missing"}), "use store_list"),
        ("store_get", json!({"key": "k", "version": 999}), "has no version 999 (the latest is 1)"),
        ("store_ref", json!({"key": "missing"}), "no value stored"),
        ("store_list", json!({"limit": 0}), "use a limit from 1 to 1000"),
        ("store_list", json!({"prefix": "a", "cursor": "b"}), "start again without a cursor"),
        ("store_summarize", json!({"key": "k/../x"}), "no value stored"),
        ("store_delete", json!({"key": "missing"}), "no value stored"),
    ];
    for (tool, args, expected) in cases {
        let err = call(&registry, tool, args.clone()).await.unwrap_err();
        assert!(err.contains(expected), "{tool} {args}: {err}");
    }
    assert_eq!(ns.usage().await.unwrap(), before);
    assert_eq!(ns.get("k").await.unwrap().version, 1);

    // A wrong argument shape is caught by the registry before the tool runs.
    let err = registry.execute("store_set", json!({"key": "k"})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    let err = registry.execute("store_get", json!({"key": "k", "extra": 1})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    // The value is JSON text: a JSON value in its place is refused, saying where.
    let err = registry.execute("store_set", json!({"key": "k", "value": [1]})).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    assert!(err.to_string().contains("`/value`"), "{err}");
    assert_eq!(ns.get("k").await.unwrap().version, 1);
}

/// `store_set` takes its value as JSON text, which every provider's strict
/// mode can declare: the text's JSON is stored, and text that is not JSON
/// is stored as the string it is.
#[tokio::test]
async fn store_set_stores_the_json_its_text_holds() {
    let store = SqliteStore::in_memory().await.unwrap();
    let ns = store.namespace("run-1").unwrap();
    let mut registry = FunctionRegistry::new();
    Builtins::new().store(ns.clone()).register(&mut registry).unwrap();
    let value = &registry.get("store_set").unwrap().declaration().input_schema["properties"]["value"];
    assert_eq!(value["type"], "string", "{value}");
    for (text, stored) in [
        (r#"{"todo": ["x"]}"#, json!({"todo": ["x"]})),
        ("[1, 2]", json!([1, 2])),
        ("3", json!(3)),
        ("null", Value::Null),
        (r#""quoted""#, json!("quoted")),
        ("buy milk", json!("buy milk")),
        ("{not json", json!("{not json")),
    ] {
        call(&registry, "store_set", json!({"key": "k", "value": text})).await.unwrap();
        assert_eq!(ns.get("k").await.unwrap().value, stored, "{text}");
    }
}

/// Every built-in tool, as hosts are sent it: each provider takes every
/// schema in its strictest mode (OpenAI's and Anthropic's strict mode,
/// Gemini's subset), and no schema has a format JSON Schema does not
/// define, an integer's range being its `minimum` and `maximum`.
#[tokio::test]
async fn every_builtin_passes_every_providers_strict_lint_with_standard_formats() {
    let store = SqliteStore::in_memory().await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let (channel, _inbox) = toolreg_builtins::user::InProcessChannel::new();
    let mut registry = FunctionRegistry::new();
    let builtins = Builtins::new().store(store.namespace("lint").unwrap()).files(root.path()).user(channel);
    #[cfg(target_os = "linux")]
    let builtins = builtins.shell(toolreg_builtins::shell::ShellOptions::new(root.path()));
    builtins.register(&mut registry).unwrap();
    assert!(registry.len() >= 14, "{:?}", registry.list().map(|tool| tool.name()).collect::<Vec<_>>());

    let findings: Vec<String> = registry.lint().iter().map(ToString::to_string).collect();
    assert!(findings.is_empty(), "{findings:#?}");

    const STANDARD: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];
    fn formats<'a>(schema: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
        match schema {
            Value::Object(map) => {
                if let Some(format) = map.get("format").and_then(Value::as_str) {
                    out.push((format, schema));
                }
                map.values().for_each(|v| formats(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| formats(v, out)),
            _ => {}
        }
    }
    for decl in registry.list().map(|tool| tool.declaration()) {
        let mut found = Vec::new();
        formats(&decl.input_schema, &mut found);
        for (format, at) in found {
            assert!(STANDARD.contains(&format), "{}: format `{format}` in {at}", decl.name);
        }
    }
    // Unsigned arguments say so with `minimum: 0`.
    let limit = &registry.get("read_file").unwrap().declaration().input_schema["properties"]["limit"];
    assert_eq!(limit["minimum"], 0, "{limit}");
    assert!(limit.get("format").is_none(), "{limit}");
}

#[tokio::test]
async fn tools_of_two_namespaces_are_isolated() {
    let store = SqliteStore::in_memory().await.unwrap();
    let mut a = FunctionRegistry::new();
    Builtins::new().store(store.namespace("run-a").unwrap()).register(&mut a).unwrap();
    let mut b = FunctionRegistry::new();
    Builtins::new().store(store.namespace("run-b").unwrap()).register(&mut b).unwrap();
    let handle = call(&a, "store_set", json!({"key": "k", "value": "a's"})).await.unwrap();
    let err = call(&b, "store_get", json!({"key": "k", "version": handle["version"]})).await.unwrap_err();
    assert!(err.contains("has no version"), "{err}");
    // A sub-agent given the namespace reads the handle.
    let mut child = FunctionRegistry::new();
    Builtins::new().store(store.namespace("run-a").unwrap()).register(&mut child).unwrap();
    let got = call(&child, "store_get", json!({"key": "k", "version": handle["version"]})).await.unwrap();
    assert_eq!(got["value"], "a's");
}

#[tokio::test]
async fn registration_is_all_or_nothing() {
    let store = SqliteStore::in_memory().await.unwrap();
    let mut registry = FunctionRegistry::new();
    let taken = ToolRegistration::new(
        ToolDeclaration::new("store_list", "an application's own tool", json!({"type": "object"})),
        |_: serde_json::Map<String, Value>| Ok::<_, String>("mine"),
    );
    registry.register(taken).unwrap();
    let err = Builtins::new().store(store.namespace("run-1").unwrap()).register(&mut registry).unwrap_err();
    assert!(err.to_string().contains("store_list"), "{err}");
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["store_list"]);
}

async fn an_over_budget_result_goes_into_the_store_and_the_model_gets_a_handle(backend: &Backend) {
    use toolreg::engine::{OutputBudget, ToolEngine};
    use toolreg::{ToolCall, ToolExecutor};

    let (mut registry, ns) = registry_for(backend, "overflow").await;
    let long: Vec<u32> = (0..2_000).collect();
    let answer = long.clone();
    registry
        .register_sync_tool(
            "numbers",
            move |_: Value| Ok::<_, String>(answer.clone()),
            ToolDeclaration::builder("numbers").build().with_safety(SafetyLevel::Safe),
        )
        .unwrap();
    let engine = ToolEngine::builder(&registry).layer(OutputBudget::new(200).overflow_to(ns.clone())).build();
    let result = engine.execute_call(ToolCall::new("call 1", "numbers", "{}"), CallOptions::default()).await;
    let seen = result.value().expect("a handle, not an error").clone();
    assert!(result.text().len() < 2_000, "the model reads a summary, not the whole result");
    assert_eq!(seen["stored"]["key"], "results/numbers/call_1");
    assert_eq!(seen["summary"]["type"], "array");
    let kept = call(&registry, "store_get", serde_json::json!({"key": "results/numbers/call_1"})).await.unwrap();
    assert_eq!(kept["value"], serde_json::json!(long), "{kept}");
}

/// A tool's output with blocks, kept under a key (here an image `read_file`
/// returned): `store_get` of its handle gives the blocks back, later writes
/// to the key do not change what the handle names, the summary previews
/// the blocks rather than their base64, and host-only metadata is not kept.
async fn a_stored_tool_output_comes_back_as_its_blocks(backend: &Backend) {
    use toolreg::exec::{Content, ToolOutput};

    let (mut registry, ns) = registry_for(backend, "run-1").await;
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("pixel.gif"), b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    Builtins::new().files(root.path()).register(&mut registry).unwrap();

    let read = registry.execute("read_file", json!({"path": "pixel.gif"})).await.unwrap();
    let output = ToolOutput::from(vec![Content::text("The pixel:"), read.content[0].clone()])
        .with_value(json!({"points": 1}))
        .with_meta("trace", json!("host only"));
    let handle = ns.set_output("images/pixel", &output).await.unwrap();

    let args = json!({"key": handle.key, "version": handle.version});
    let got = registry.execute("store_get", args.clone()).await.unwrap();
    assert_eq!(got.content, output.content);
    assert_eq!(got.value, json!({"key": "images/pixel", "version": handle.version, "value": {"points": 1}}));
    assert!(got.meta().is_empty());
    assert!(!ns.get_ref(&handle).await.unwrap().value.to_string().contains("host only"));

    let summary = call(&registry, "store_summarize", json!({"key": "images/pixel"})).await.unwrap();
    assert_eq!(summary["preview"], "The pixel:\n[image: image/gif, 14 bytes]");

    // A plain value written later reads as ever; the handle still names the blocks.
    call(&registry, "store_set", json!({"key": "images/pixel", "value": "replaced"})).await.unwrap();
    let latest = registry.execute("store_get", json!({"key": "images/pixel"})).await.unwrap();
    assert!(latest.content.is_empty());
    assert_eq!(latest.value["value"], "replaced");
    assert_eq!(registry.execute("store_get", args).await.unwrap().content, output.content);

    // The same shape stored by a model reads back as blocks when they are
    // valid, and as the plain JSON it is when they are not.
    let image = json!({"type": "image", "data": "R0lGODlh", "mimeType": "image/gif"});
    call(
        &registry,
        "store_set",
        json!({"key": "m", "value": json!({"$tool_output": {"content": [image]}}).to_string()}),
    )
    .await
    .unwrap();
    let blocks = registry.execute("store_get", json!({"key": "m"})).await.unwrap();
    assert_eq!(blocks.content, [Content::image(b"GIF89a".to_vec(), "image/gif")]);
    let bad = json!({"$tool_output": {"content": [{"type": "image", "data": "%%%", "mimeType": "image/gif"}]}});
    call(&registry, "store_set", json!({"key": "bad", "value": bad.to_string()})).await.unwrap();
    let plain = registry.execute("store_get", json!({"key": "bad"})).await.unwrap();
    assert!(plain.content.is_empty());
    assert_eq!(plain.value["value"], bad);
}
