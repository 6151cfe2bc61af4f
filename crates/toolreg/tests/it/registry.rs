//! The registry's surface: atomic registration, names, lookup, removal, and
//! execution with every kind of bad input.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolreg::CallOptions;
use toolreg::{
    ArgumentLimits, CallContext, ErasedTool, FunctionRegistry, ParamType, RegistryError, SafetyLevel, ToolCall,
    ToolDeclaration, ToolError, ToolExecutor, ToolFuture, ToolRegistration,
};

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

fn add_decl() -> ToolDeclaration {
    ToolDeclaration::for_args::<AddArgs>("add", "Add two numbers").with_safety(SafetyLevel::Safe)
}

fn add(args: AddArgs) -> Result<f64, String> {
    Ok(args.a + args.b)
}

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    registry.register_sync_tool("add", add, add_decl()).unwrap();
    registry
        .register_async_tool(
            "echo_async",
            |args: Value| async move { Ok::<_, String>(args) },
            ToolDeclaration::builder("echo_async")
                .description("Echo")
                .param("text", ParamType::String, "Text to echo")
                .param_with_default("times", ParamType::Integer, "Repeat count", json!(1))
                .build(),
        )
        .unwrap();
    registry
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn name_mismatch_is_checked_before_duplicates() {
    let mut registry = registry();
    let err = registry.register_sync_tool("echo_async", add, add_decl()).unwrap_err();
    assert_eq!(err, RegistryError::NameMismatch { name: "echo_async".into(), declaration_name: "add".into() });
    let err = registry.register_sync_tool("add", add, add_decl()).unwrap_err();
    assert_eq!(err, RegistryError::DuplicateTool { name: "add".into() });
    assert_eq!(registry.len(), 2);
}

#[test]
fn invalid_names_are_refused_with_the_reason() {
    let mut registry = FunctionRegistry::new();
    for (name, fragment) in [
        ("", "empty"),
        ("server.tool", "'.'"),
        ("has space", "' '"),
        (&"x".repeat(65)[..], "at most 64"),
        ("naïve", "'ï'"),
    ] {
        let decl = ToolDeclaration::new(name, "d", json!({"type": "object"}));
        match registry.register(ToolRegistration::new(decl, add)) {
            Err(RegistryError::InvalidName { reason, .. }) => assert!(reason.contains(fragment), "{name}: {reason}"),
            other => panic!("{name}: {other:?}"),
        }
    }
    assert!(registry.is_empty());
    assert!(toolreg::validate_name(&"x".repeat(64)).is_ok());
}

#[test]
fn unusable_schemas_are_refused_at_registration() {
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::new("t", "d", json!({"type": "string"}));
    assert!(matches!(registry.register(ToolRegistration::new(decl, add)), Err(RegistryError::InvalidSchema { .. })));
    let decl = ToolDeclaration::new("t", "d", json!({"type": "object", "properties": {"a": {"type": 7}}}));
    assert!(matches!(registry.register(ToolRegistration::new(decl, add)), Err(RegistryError::InvalidSchema { .. })));
    assert!(registry.is_empty());
}

/// Arguments whose schema is written by hand, wrongly: serde reads the
/// struct, but the schema names a type JSON Schema does not have.
#[derive(Debug, Deserialize)]
struct Misdescribed {
    x: String,
}

impl schemars::JsonSchema for Misdescribed {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Misdescribed".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "properties": {"x": {"type": "strng"}}, "required": ["x"]})
    }
}

#[test]
fn a_typed_tool_whose_schema_does_not_compile_is_refused_not_waved_through() {
    // The schema is exactly what serde enforces, as far as its keywords go,
    // so the tool is "serde-checked"; its validator still must compile, or
    // every stage that validates (an engine's hooks and approvals) would
    // accept anything.
    let decl = ToolDeclaration::for_args::<Misdescribed>("odd", "d");
    let tool = |m: Misdescribed| Ok::<_, String>(m.x);
    let mut registry = FunctionRegistry::new();
    let err = registry.register(ToolRegistration::new(decl.clone(), tool)).unwrap_err();
    match &err {
        RegistryError::InvalidSchema { name, reason } => {
            assert_eq!(name, "odd");
            assert!(reason.starts_with("invalid JSON Schema"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(registry.is_empty());
    // The same, once more (the type's compiled result is cached), and async.
    let err = registry.register(ToolRegistration::new(decl, move |m| async move { tool(m) }));
    assert!(matches!(err, Err(RegistryError::InvalidSchema { .. })), "{err:?}");
    assert!(registry.is_empty());
}

#[test]
fn lists_in_registration_order_and_removes() {
    let mut registry = registry();
    let decl = ToolDeclaration::new("zeta", "last", json!({"type": "object"}));
    registry.register(ToolRegistration::new(decl, |_: Value| Ok::<_, String>(0))).unwrap();
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["add", "echo_async", "zeta"]);
    assert_eq!(
        registry.get_declarations().iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["add", "echo_async", "zeta"]
    );

    let removed = registry.unregister("echo_async").unwrap();
    assert_eq!(removed.declaration().name, "echo_async");
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["add", "zeta"]);
    assert_eq!(registry.unregister("echo_async").unwrap_err(), RegistryError::NotFound { name: "echo_async".into() });
    assert!(registry.get("echo_async").is_none());
    assert!(registry.contains("add"));

    registry.clear();
    assert!(registry.is_empty() && registry.list().next().is_none());
}

#[test]
fn replace_overwrites_in_place() {
    let mut registry = registry();
    let decl = add_decl().with_safety(SafetyLevel::Cautious);
    let old = registry.replace(ToolRegistration::new(decl, |_: AddArgs| Ok::<_, String>(0.0))).unwrap();
    assert_eq!(old.unwrap().declaration().safety, SafetyLevel::Safe);
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["add", "echo_async"]);
    assert_eq!(registry.get("add").unwrap().declaration().safety, SafetyLevel::Cautious);
    let out = block_on(registry.execute("add", json!({"a": 1, "b": 2}))).unwrap();
    assert_eq!(out.value, json!(0.0));
    // Replacing also checks the name rule.
    let bad = ToolRegistration::new(ToolDeclaration::for_args::<AddArgs>("bad name", "d"), add);
    assert!(matches!(registry.replace(bad), Err(RegistryError::InvalidName { .. })));
}

#[test]
fn register_all_is_all_or_nothing() {
    let mut registry = FunctionRegistry::new();
    let ok = ToolRegistration::new(add_decl(), add);
    let dup = ToolRegistration::new(add_decl(), add);
    assert_eq!(
        toolreg::register_tools!(registry, vec![ok, dup]).unwrap_err(),
        RegistryError::DuplicateTool { name: "add".into() }
    );
    assert!(registry.is_empty());
}

#[test]
fn clones_share_until_changed() {
    let original = registry();
    let mut copy = original.clone();
    copy.unregister("add").unwrap();
    assert!(original.contains("add"));
    assert!(!copy.contains("add"));
}

#[test]
fn executes_good_calls() {
    let registry = registry();
    let out = block_on(registry.execute("add", json!({"a": 2, "b": 40}))).unwrap();
    assert_eq!(out.value, json!(42.0));
    assert_eq!(out.text(), "42.0");
    let out =
        block_on(registry.execute_call(ToolCall::new("c", "add", r#"{"a": 1.5, "b": 1}"#), CallOptions::default()))
            .outcome
            .unwrap();
    assert_eq!(out.text(), "2.5");
}

#[test]
fn fills_defaults_for_run_time_tools() {
    let registry = registry();
    let out = block_on(registry.execute("echo_async", json!({"text": "hi"}))).unwrap();
    assert_eq!(out.value, json!({"text": "hi", "times": 1}));
    let out = block_on(registry.execute("echo_async", json!({"text": "hi", "times": 3}))).unwrap();
    assert_eq!(out.value["times"], 3);
}

#[test]
fn reports_every_argument_problem_with_paths() {
    let registry = registry();
    let err = block_on(registry.execute("add", json!({"b": "two"}))).unwrap_err();
    let ToolError::InvalidArguments { errors } = &err else { panic!("{err:?}") };
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(lines.contains(&"`/b`: expected number, got string \"two\"".to_owned()), "{lines:?}");
    assert!(lines.contains(&"`/a`: missing required field".to_owned()), "{lines:?}");
    assert!(err.retryable());
    assert!(err.model_text("add").starts_with("Error: invalid arguments for `add`."));

    let err = block_on(registry.execute("echo_async", json!({"text": 5}))).unwrap_err();
    assert!(err.to_string().contains("`/text`: expected string, got integer 5"), "{}", err.to_string());
}

#[test]
fn non_object_arguments_are_refused_and_null_means_none() {
    let registry = registry();
    let err = block_on(registry.execute("add", json!([1, 2]))).unwrap_err();
    assert!(err.to_string().contains("expected an object of named arguments, got array of 2 items"));
    // serde alone would take an array for a struct; text arguments get the same answer.
    let err = block_on(registry.execute_call(ToolCall::new("c", "add", "[1, 2]"), CallOptions::default()))
        .outcome
        .unwrap_err();
    assert!(err.to_string().contains("expected an object of named arguments, got array of 2 items"));
    let err = block_on(registry.execute("add", Value::Null)).unwrap_err();
    assert!(err.to_string().contains("`/a`: missing required field"), "{}", err.to_string());
}

#[test]
fn malformed_oversized_and_deep_json_get_distinct_errors() {
    let registry = FunctionRegistry::with_limits(ArgumentLimits::default().with_max_bytes(64).with_max_depth(4));
    let mut registry = registry;
    registry.register_sync_tool("add", add, add_decl()).unwrap();

    let err = block_on(registry.execute_call(ToolCall::new("c", "add", r#"{"a": 1, "b": }"#), CallOptions::default()))
        .outcome
        .unwrap_err();
    assert!(matches!(err, ToolError::MalformedArguments { .. }), "{err:?}");
    assert!(err.to_string().contains("column"), "{}", err.to_string());

    let big = format!(r#"{{"a": 1, "b": 2, "pad": "{}"}}"#, "x".repeat(100));
    let err = block_on(registry.execute_call(ToolCall::new("c", "add", big.as_str()), CallOptions::default()))
        .outcome
        .unwrap_err();
    assert!(matches!(err, ToolError::ArgumentsTooLarge { limit: 64, .. }), "{err:?}");

    let deep = format!("{}{}", "[".repeat(20), "]".repeat(20));
    let err = block_on(registry.execute_call(ToolCall::new("c", "add", deep.as_str()), CallOptions::default()))
        .outcome
        .unwrap_err();
    assert!(matches!(err, ToolError::ArgumentsTooDeep { limit: 4, .. }), "{err:?}");

    // The default limits stop a payload far deeper than serde_json's own recursion limit.
    let mut defaults = FunctionRegistry::new();
    defaults.register_sync_tool("add", add, add_decl()).unwrap();
    let very_deep = "[".repeat(100_000);
    let err = block_on(defaults.execute_call(ToolCall::new("c", "add", very_deep.as_str()), CallOptions::default()))
        .outcome
        .unwrap_err();
    assert!(matches!(err, ToolError::ArgumentsTooDeep { limit: 64, .. }), "{err:?}");
    assert!(registry.contains("add") && defaults.contains("add"));
}

#[test]
fn unknown_tools_name_the_alternatives() {
    let registry = registry();
    let err = block_on(registry.execute("ad", json!({}))).unwrap_err();
    assert_eq!(err, ToolError::UnknownTool { available: vec!["add".into(), "echo_async".into()] });
    assert_eq!(err.model_text("ad"), "Error: unknown tool `ad`. Available tools: add, echo_async.");
}

#[test]
fn tool_errors_and_panics_are_contained() {
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::new("fails", "d", json!({"type": "object"}));
    registry.register_sync_tool("fails", |_: Value| Err::<(), _>("disk full"), decl).unwrap();
    let decl = ToolDeclaration::new("panics", "d", json!({"type": "object"}));
    registry.register_sync_tool("panics", |_: Value| -> Result<(), String> { panic!("boom") }, decl).unwrap();
    let decl = ToolDeclaration::new("panics_async", "d", json!({"type": "object"}));
    registry
        .register_async_tool(
            "panics_async",
            |_: Value| async move {
                tokio::task::yield_now().await;
                if true {
                    panic!("async boom");
                }
                Ok::<(), String>(())
            },
            decl,
        )
        .unwrap();

    let err = block_on(registry.execute("fails", json!({}))).unwrap_err();
    assert_eq!(err, ToolError::Failed { message: "disk full".into() });
    assert_eq!(err.to_string(), "disk full");

    let err = block_on(registry.execute("panics", json!({}))).unwrap_err();
    assert_eq!(err, ToolError::Panicked { message: "boom".into() });
    let err = block_on(registry.execute("panics_async", json!({}))).unwrap_err();
    assert_eq!(err, ToolError::Panicked { message: "async boom".into() });

    // Still usable afterwards.
    assert_eq!(registry.len(), 3);
    assert!(block_on(registry.execute("fails", json!({}))).is_err());
}

#[test]
fn unserialisable_results_are_reported_as_such() {
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::new("bad_result", "d", json!({"type": "object"}));
    registry
        .register_sync_tool(
            "bad_result",
            |_: Value| {
                let mut map = std::collections::HashMap::new();
                map.insert(vec![1u8], 1);
                Ok::<_, String>(map)
            },
            decl,
        )
        .unwrap();
    let err = block_on(registry.execute("bad_result", json!({}))).unwrap_err();
    assert!(matches!(err, ToolError::ResultSerialization { .. }), "{err:?}");
}

#[test]
fn schema_constraints_are_enforced_even_when_serde_would_accept() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Args {
        #[schemars(length(min = 3))]
        word: String,
    }
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::for_args::<Args>("word", "d");
    registry.register_sync_tool("word", |a: Args| Ok::<_, String>(a.word), decl).unwrap();
    let err = block_on(registry.execute("word", json!({"word": "ab"}))).unwrap_err();
    assert!(err.to_string().contains("`/word`: must be at least 3 characters long"), "{}", err.to_string());
    assert!(block_on(registry.execute("word", json!({"word": "abc"}))).is_ok());
}

#[test]
fn a_nested_struct_given_as_an_array_is_refused_as_the_schema_says() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Point {
        x: f64,
        y: f64,
    }
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Args {
        at: Point,
    }
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::for_args::<Args>("place", "d");
    registry.register_sync_tool("place", |a: Args| Ok::<_, String>(a.at.x + a.at.y), decl).unwrap();
    // serde alone would take `[1, 2]` for a `Point`; the schema says object.
    for err in [
        block_on(registry.execute("place", json!({"at": [1, 2]}))).unwrap_err(),
        block_on(registry.execute_call(ToolCall::new("c", "place", r#"{"at": [1, 2]}"#), CallOptions::default()))
            .outcome
            .unwrap_err(),
    ] {
        let ToolError::InvalidArguments { errors, .. } = &err else { panic!("{err:?}") };
        assert_eq!(errors[0].path, "/at", "{errors:?}");
        assert!(err.to_string().contains("expected object"), "{}", err.to_string());
    }
    let good = block_on(
        registry.execute_call(ToolCall::new("c", "place", r#"{"at": {"x": 1, "y": 2}}"#), CallOptions::default()),
    )
    .outcome
    .unwrap();
    assert_eq!(good.value, json!(3.0));
}

#[test]
fn serde_failures_past_the_schema_say_where() {
    // A hand-written schema looser than the Rust type: serde's error is reported with its path.
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::new("add", "d", json!({"type": "object", "properties": {"a": {}, "b": {}}}));
    registry.register_sync_tool("add", add, decl).unwrap();
    let err = block_on(registry.execute("add", json!({"a": 1, "b": true}))).unwrap_err();
    let ToolError::InvalidArguments { errors, .. } = &err else { panic!("{err:?}") };
    assert_eq!(errors[0].path, "/b");
    assert!(errors[0].message.contains("invalid type: boolean `true`, expected f64"), "{errors:?}");
}

#[test]
fn tool_executor_keeps_the_call_id() {
    let registry = registry();
    let results = block_on(async {
        let mut out = Vec::new();
        for call in [
            ToolCall::new("c1", "add", r#"{"a": 1, "b": 2}"#),
            ToolCall::new("c2", "add", json!({"a": 1, "b": "x"})),
            ToolCall::new("c3", "nope", json!({})),
            ToolCall::new("c4", "add", "{not json"),
            ToolCall::new("c5", "echo_async", ""),
        ] {
            out.push(registry.execute_call(call, CallOptions::default()).await);
        }
        out
    });
    let ids: Vec<&str> = results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
    assert_eq!(results[0].text(), "3.0");
    assert!(results[1..].iter().all(|r| r.is_error()));
    assert!(matches!(results[3].outcome, Err(ToolError::MalformedArguments { .. })));
    assert!(results[4].text().contains("`/text`: missing required field"));
}

#[test]
fn erased_tools_always_see_validated_arguments_and_their_context() {
    struct Whoami;
    impl ErasedTool for Whoami {
        fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
            let id = cx.call_id().map(str::to_owned);
            ToolFuture::new(async move { Ok(json!({"id": id, "args": args}).into()) })
        }
    }
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("whoami").description("d").param("n", ParamType::Integer, "n").build();
    registry.register(ToolRegistration::new(decl, Arc::new(Whoami))).unwrap();
    let result =
        block_on(registry.execute_call(ToolCall::new("abc", "whoami", json!({"n": 1})), CallOptions::default()));
    assert_eq!(result.outcome.unwrap().value, json!({"id": "abc", "args": {"n": 1}}));
    let result =
        block_on(registry.execute_call(ToolCall::new("abc", "whoami", json!({"n": "1"})), CallOptions::default()));
    assert!(result.is_error());
}

#[test]
fn search_follows_every_change_to_the_registry() {
    let tool = |name: &str, description: &str| {
        ToolRegistration::new(ToolDeclaration::new(name, description, json!({"type": "object"})), |_: Value| {
            Ok::<_, String>(0)
        })
    };
    let mut registry = FunctionRegistry::new();
    registry.register(tool("get_weather", "Current weather for a city")).unwrap();
    assert_eq!(registry.search("weather", 5).len(), 1);
    assert!(registry.search("stock price", 5).is_empty());

    registry.register(tool("stock_quote", "Latest stock price for a ticker")).unwrap();
    assert_eq!(registry.search("stock price", 5)[0].name, "stock_quote");
    // A clone shares what was built; its own changes do not reach the original.
    let mut copy = registry.clone();
    copy.unregister("stock_quote").unwrap();
    assert!(copy.search("stock price", 5).is_empty());
    assert_eq!(registry.search("stock price", 5).len(), 1);

    registry.replace(tool("stock_quote", "Company news headlines")).unwrap();
    assert!(registry.search("price", 5).is_empty(), "the old description is gone");
    assert_eq!(registry.search("news", 5)[0].name, "stock_quote");
    assert_eq!(registry.search_regex("^stock_", 5).unwrap().len(), 1);

    registry.clear();
    assert!(registry.search("news", 5).is_empty());
}

#[test]
fn examples_that_do_not_fit_the_schema_are_refused_with_the_tool() {
    use toolreg::provider::{Provider, ProviderError, ToolRef, WireFormat, anthropic::Anthropic};

    let good = add_decl().with_example(json!({"a": 1, "b": 2}));
    let cases = [
        (good.clone().with_example(json!({"a": 1})), 1, "b"),
        (good.clone().with_example(json!({"a": "one", "b": 2})), 1, "/a"),
        (add_decl().with_example(json!([1, 2])), 0, "not a JSON array"),
    ];
    for (decl, index, said) in cases {
        let mut registry = registry();
        let before = registry.len();
        registry.unregister("add").unwrap();
        match registry.register(ToolRegistration::new(decl.clone(), add)) {
            Err(RegistryError::InvalidExample { name, index: i, reason }) => {
                assert_eq!((name.as_str(), i), ("add", index));
                assert!(reason.contains(said), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Nothing was registered; the registry is as it was.
        assert_eq!(registry.len(), before - 1);
        // A bare declaration is checked when rendered for Anthropic: refused, the others sent.
        let other = ToolDeclaration::builder("other").build();
        let format = Anthropic::new();
        let declared = format.declare_partial(&[ToolRef::from(&decl), ToolRef::from(&other)]).into_value();
        assert_eq!(declared.tools.as_array().unwrap().len(), 1);
        let (tool, reason) = declared.refused().next().unwrap();
        assert_eq!(tool, "add");
        assert!(
            matches!(reason, ProviderError::InvalidExample { provider: Provider::Anthropic, index: i, .. } if *i == index),
            "{reason}"
        );
    }
    // Examples that fit go to Anthropic, as sent, and to no other provider.
    let mut registry = FunctionRegistry::new();
    registry.register(ToolRegistration::new(good, add)).unwrap();
    let tools = ToolRef::list(registry.list());
    for provider in Provider::ALL {
        let declared = provider.wire_format().declare(&tools).unwrap();
        let has = declared.tools.to_string().contains("input_examples");
        assert_eq!(has, provider == Provider::Anthropic, "{provider}");
        if provider == Provider::Anthropic {
            assert_eq!(declared.tools[0]["input_examples"], json!([{"a": 1, "b": 2}]));
        }
    }
}
