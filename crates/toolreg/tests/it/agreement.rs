//! The registry accepts exactly the arguments that both the schema and serde
//! accept, whichever path (parsed JSON or text) they come by.

use futures_util::FutureExt;
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use toolreg::{CallOptions, FunctionRegistry, ToolArgs, ToolCall, ToolDeclaration, ToolError, ToolExecutor, tool};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Careful,
}

/// Arguments with a little of everything (only their shape matters here).
#[allow(dead_code)]
#[derive(Debug, Deserialize, schemars::JsonSchema, ToolArgs)]
struct Args {
    count: u8,
    ratio: f64,
    label: Option<String>,
    mode: Mode,
    tags: Vec<String>,
}

/// Accept anything well-formed.
#[tool(safety = "safe")]
fn accept(#[args] args: Args) -> String {
    format!("{args:?}")
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-300i64..300).prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
        prop_oneof![Just("fast"), Just("careful"), Just("slow")].prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    let field = |name: &'static str| (Just(name), prop::option::of(json_value()));
    (field("count"), field("ratio"), field("label"), field("mode"), field("tags")).prop_map(|fields| {
        let (a, b, c, d, e) = fields;
        let mut map = serde_json::Map::new();
        for (name, value) in [a, b, c, d, e] {
            if let Some(v) = value {
                map.insert(name.to_owned(), v);
            }
        }
        Value::Object(map)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn registry_agrees_with_schema_and_serde(args in arguments()) {
        let mut registry = FunctionRegistry::new();
        registry.register(accept_tool::registration()).unwrap();
        let schema = ToolDeclaration::for_args::<Args>("accept", "d").input_schema;
        let schema_ok = jsonschema::is_valid(&schema, &args);
        let serde_ok = serde_json::from_value::<Args>(args.clone()).is_ok();

        let by_value = registry.execute("accept", args.clone()).now_or_never().unwrap();
        let call = ToolCall::new("c1", "accept", args.to_string());
        let by_text = registry.execute_call(call, CallOptions::default()).now_or_never().unwrap().outcome;
        prop_assert_eq!(by_value.is_ok(), schema_ok && serde_ok, "{} -> {:?}", args, by_value);
        prop_assert_eq!(by_text.is_ok(), by_value.is_ok());
        if let Err(e) = by_value {
            let is_invalid_arguments = matches!(e, ToolError::InvalidArguments { .. });
            prop_assert!(is_invalid_arguments, "{:?}", e);
        }
    }
}

#[test]
fn the_strategy_reaches_both_outcomes() {
    let mut registry = FunctionRegistry::new();
    registry.register(accept_tool::registration()).unwrap();
    let good = json!({"count": 3, "ratio": 0.5, "mode": "fast", "tags": []});
    assert!(registry.execute("accept", good).now_or_never().unwrap().is_ok());
    let bad = json!({"count": 300, "ratio": 0.5, "mode": "fast", "tags": []});
    assert!(registry.execute("accept", bad).now_or_never().unwrap().is_err());
}
