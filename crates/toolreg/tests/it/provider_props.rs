//! Lowering keeps every value the type accepts: for each type of the
//! corpus (and types with a flattened enum), values the type serialises are
//! accepted by every schema lowered from it — OpenAI strict, Anthropic
//! strict, and Gemini's `parameters`. Gemini's OpenAPI subset is checked by
//! converting it back to JSON Schema (lower-case types, `nullable` as a
//! `null` type) and validating with the `jsonschema` crate, like the rest.
//!
//! A lowering that refuses the schema (a map or an arbitrary value for
//! strict mode, recursion for Gemini) sends the canonical schema instead,
//! so there is nothing lowered to check for it.

use std::collections::{BTreeMap, HashMap};

use crate::support::*;
use proptest::prelude::*;
use proptest::strategy::LazyJust;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolreg::ToolDeclaration;
use toolreg::provider::{ToolRef, ToolStatus, WireFormat, lower, openai_chat::OpenAiChat};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Channel {
    Email { address: String },
    Sms { number: String, retries: Option<u8> },
    Log,
}

/// A struct with a flattened internally tagged enum.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Notify {
    message: String,
    #[serde(flatten)]
    channel: Channel,
}

/// The same, one level down.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Broadcast {
    notice: Notify,
    copies: u8,
}

/// Every schema lowered from `schema`, as JSON Schema to validate with.
fn lowered(schema: &Value) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    if let Ok(s) = lower::openai_strict(schema) {
        out.push(("openai_strict", s));
    }
    if let Ok(s) = lower::anthropic_strict(schema) {
        out.push(("anthropic_strict", s));
    }
    if let Ok(s) = lower::gemini(schema) {
        out.push(("gemini", gemini_as_json_schema(s)));
    }
    out
}

/// Gemini's OpenAPI subset read back as JSON Schema.
fn gemini_as_json_schema(mut schema: Value) -> Value {
    let mut stack = vec![&mut schema];
    while let Some(node) = stack.pop() {
        let Value::Object(obj) = node else { continue };
        if let Some(Value::String(t)) = obj.get_mut("type") {
            *t = t.to_ascii_lowercase();
        }
        if obj.remove("nullable") == Some(Value::Bool(true)) {
            if let Some(Value::Array(values)) = obj.get_mut("enum") {
                values.push(Value::Null);
            }
            match obj.remove("type") {
                Some(t) => {
                    obj.insert("type".into(), json!([t, "null"]));
                }
                None => {
                    let inner = std::mem::take(obj);
                    obj.insert("anyOf".into(), json!([inner, {"type": "null"}]));
                }
            }
        }
        for v in obj.values_mut() {
            match v {
                Value::Object(_) => stack.push(v),
                Value::Array(items) => stack.extend(items.iter_mut()),
                _ => {}
            }
        }
    }
    schema
}

fn check<T: Serialize + JsonSchema + 'static>(value: &T) -> Result<(), TestCaseError> {
    let canonical = ToolDeclaration::for_args::<T>("t", "").input_schema;
    let value = serde_json::to_value(value).unwrap();
    let accepted = jsonschema::validator_for(&canonical).unwrap();
    prop_assert!(accepted.is_valid(&value), "the canonical schema refuses {value}");
    for (dialect, schema) in lowered(&canonical) {
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> =
            validator.iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path())).collect();
        prop_assert!(errors.is_empty(), "{dialect} refuses {value}: {errors:?}\n{schema:#}");
    }
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ]{0,12}"
}

fn finite() -> impl Strategy<Value = f64> {
    -1.0e6..1.0e6f64
}

fn coords() -> impl Strategy<Value = Coords> {
    (finite(), finite()).prop_map(|(lat, lon)| Coords { lat, lon })
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (any::<i32>(), any::<i32>()).prop_map(|(dx, dy)| Action::Move { dx, dy }),
        text().prop_map(|text| Action::Say { text }),
        LazyJust::new(|| Action::Wait),
    ]
}

fn priority() -> impl Strategy<Value = Priority> {
    prop_oneof![LazyJust::new(|| Priority::Low), LazyJust::new(|| Priority::Normal), LazyJust::new(|| Priority::High)]
}

fn channel() -> impl Strategy<Value = Channel> {
    prop_oneof![
        text().prop_map(|address| Channel::Email { address }),
        (text(), proptest::option::of(any::<u8>())).prop_map(|(number, retries)| Channel::Sms { number, retries }),
        Just(Channel::Log),
    ]
}

fn notify() -> impl Strategy<Value = Notify> {
    (text(), channel()).prop_map(|(message, channel)| Notify { message, channel })
}

fn tree(depth: u32) -> impl Strategy<Value = TreeNode> {
    let leaf = text().prop_map(|name| TreeNode { name, children: Vec::new() });
    leaf.prop_recursive(depth, 16, 3, |inner| {
        (text(), proptest::collection::vec(inner, 0..3)).prop_map(|(name, children)| TreeNode { name, children })
    })
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from)
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map(text(), inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn create_event(title in "[a-z]{1,20}", name in text(), coords in proptest::option::of(coords()),
                    people in proptest::collection::vec((text(), text()), 0..3), day in proptest::option::of(text())) {
        check(&CreateEvent {
            title,
            location: Location { name, coords },
            attendees: people.into_iter().map(|(name, email)| Person { name, email }).collect(),
            starts_at: "2026-11-23T09:00:00Z".into(),
            day,
        })?;
    }

    #[test]
    fn search_issues(query in text(), label in proptest::option::of(text()), limit in proptest::option::of(any::<u8>()),
                     min_score in proptest::option::of(finite()), open in proptest::option::of(any::<bool>()),
                     assignees in proptest::option::of(proptest::collection::vec(text(), 0..3)),
                     near in proptest::option::of(coords()), priority in proptest::option::of(priority()),
                     page in any::<u32>(), sort in text()) {
        check(&SearchIssues { query, label, limit, min_score, open, assignees, near, priority, page, sort })?;
    }

    #[test]
    fn draw(shape in prop_oneof![LazyJust::new(|| Shape::Point), finite().prop_map(Shape::Circle),
                                 (finite(), finite()).prop_map(|(w, h)| Shape::Rect { w, h })],
            action in action(), fallback in proptest::option::of(action()),
            adjacent in prop_oneof![any::<i64>().prop_map(Adjacent::Num), text().prop_map(Adjacent::Text)],
            target in prop_oneof![any::<u64>().prop_map(IdOrName::Id), "[a-z]{1,8}".prop_map(IdOrName::Name)],
            priority in priority()) {
        check(&Draw { shape, action, adjacent, target, priority, fallback })?;
    }

    #[test]
    fn set_labels(labels in proptest::collection::hash_map(text(), text(), 0..3),
                  weights in proptest::collection::btree_map(text(), -100.0..100.0f32, 0..3)) {
        check(&SetLabels { labels: labels.into_iter().collect::<HashMap<_, _>>(), weights: weights.into_iter().collect::<BTreeMap<_, _>>() })?;
    }

    #[test]
    fn write_tree(root in tree(3)) {
        check(&WriteTree { root })?;
    }

    #[test]
    fn numbers(byte in any::<u8>(), small in any::<i16>(), int in any::<i32>(), big in any::<i64>(), unsigned in any::<u64>(),
               ratio in -1.0e3..1.0e3f32, rating in 1..=10u32, currency in "[A-Z]{3}",
               tags in proptest::collection::vec(text(), 1..=5), id in proptest::option::of(any::<i64>())) {
        check(&Numbers { byte, small, int, big, unsigned, ratio, rating, currency, tags, id })?;
    }

    #[test]
    fn no_args_and_store_value(key in text(), value in arbitrary_json()) {
        check(&NoArgs {})?;
        check(&StoreValue { key, value })?;
    }

    #[test]
    fn move_to(position in (finite(), finite()), label in (text(), any::<u32>())) {
        check(&MoveTo { position, label })?;
    }

    #[test]
    fn flattened_enums(notice in notify(), copies in any::<u8>()) {
        check(&notice)?;
        check(&Broadcast { notice, copies })?;
    }
}

/// The flattened enum at the root cannot be strict, and says so; one level
/// down, its properties go into each branch and it stays strict.
#[test]
fn a_flattened_enum_is_strict_only_where_it_can_be() {
    let notify = ToolDeclaration::for_args::<Notify>("notify", "Send a notice.");
    let broadcast = ToolDeclaration::for_args::<Broadcast>("broadcast", "Send many.");
    let declared = OpenAiChat::new().declare(&ToolRef::list([&notify, &broadcast])).unwrap();
    let status: Vec<&ToolStatus> = declared.report.iter().map(|r| &r.status).collect();
    assert!(
        matches!(status[0], ToolStatus::NotStrict { reason } if reason.to_string().contains("flattened enum")),
        "{status:?}"
    );
    assert_eq!(status[1], &ToolStatus::Lowered { strict: true });
    assert_eq!(declared.tools[0]["function"]["strict"], false);
    let notice = &declared.tools[1]["function"]["parameters"]["properties"]["notice"];
    assert!(notice.get("properties").is_none(), "{notice:#}");
    for branch in notice["anyOf"].as_array().unwrap() {
        assert_eq!(branch["properties"]["message"]["type"], "string", "{branch:#}");
        assert!(branch["required"].as_array().unwrap().contains(&json!("message")));
        assert_eq!(branch["additionalProperties"], false);
    }
    // What a strict model sends for an absent optional inside a branch maps back.
    let sent = json!({"notice": {"message": "hi", "kind": "sms", "number": "1", "retries": null}, "copies": 1});
    let mut calls = vec![toolreg::ToolCall::new("c", "broadcast", sent.to_string())];
    declared.mapping.apply(&mut calls);
    let accepted = jsonschema::validator_for(&broadcast.input_schema).unwrap();
    let toolreg::ToolArguments::Raw(text) = &calls[0].arguments else {
        let toolreg::ToolArguments::Json(v) = &calls[0].arguments else { unreachable!() };
        assert!(accepted.is_valid(v), "{v}");
        return;
    };
    assert!(accepted.is_valid(&serde_json::from_str::<Value>(text).unwrap()), "{text}");
}
