//! Cleaning, bounds and the serde check.

use super::*;
use serde_json::{Map, json};

#[test]
fn inlines_plain_refs_and_keeps_recursive_ones() {
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point", "description": "where"},
            "tree": {"$ref": "#/definitions/Node"}
        },
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "definitions": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}}
    });
    clean(&mut schema);
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(schema["properties"]["point"]["properties"]["x"]["type"], "number");
    assert_eq!(schema["properties"]["point"]["description"], "where");
    assert_eq!(schema["properties"]["tree"]["properties"]["children"]["items"]["$ref"], "#/$defs/Node");
    assert!(schema["$defs"]["Node"].is_object());
    assert!(schema["$defs"].get("Point").is_none());
}

/// `levels` definitions, each referring twice to the next.
fn ref_bomb(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next, "b": next}}));
    }
    defs.insert(format!("D{levels}"), json!({"type": "string"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs})
}

#[test]
fn a_ref_bomb_is_left_alone_and_refused() {
    let bomb = ref_bomb(40);
    let size = bomb.to_string().len();
    assert!((3_000..4_000).contains(&size), "{size} bytes");
    assert!(matches!(measure(&bomb), Err(Exceeded::Nodes(_))));
    let err = check_bounds(&bomb).unwrap_err();
    assert!(err.starts_with("the schema has more than 50000 nodes once its `$ref`s are inlined"), "{err}");
    // Cleaning returns at once and keeps the references.
    let decl = crate::ToolDeclaration::new("bomb", "", bomb);
    assert_eq!(decl.input_schema["properties"]["x"]["$ref"], "#/$defs/D0");
    assert!(check_bounds(&decl.input_schema).is_err());
    // A small one is inlined as before, and passes.
    let mut small = ref_bomb(3);
    assert_eq!(measure(&small).map(|(_, d)| d > 0), Ok(true));
    clean(&mut small);
    assert!(small.get("$defs").is_none());
    assert_eq!(small["properties"]["x"]["properties"]["b"]["properties"]["a"]["properties"]["b"]["type"], "string");
    assert_eq!(check_bounds(&small), Ok(()));
}

#[test]
fn bounds_count_recursion_once_and_refuse_deep_chains() {
    let tree = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}});
    assert_eq!(check_bounds(&tree), Ok(()));
    // A chain of 200 definitions, each one level below the last: no
    // doubling, but too deep once inlined (and measured without recursion).
    let mut defs = Map::new();
    for i in 0..200 {
        defs.insert(format!("C{i}"), json!({"type": "array", "items": {"$ref": format!("#/$defs/C{}", i + 1)}}));
    }
    defs.insert("C200".into(), json!({"type": "integer"}));
    let chain = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/C0"}}, "$defs": defs});
    assert!(matches!(measure(&chain), Err(Exceeded::Depth(_))), "{:?}", measure(&chain));
    let mut cleaned = chain.clone();
    clean(&mut cleaned);
    assert_eq!(cleaned["properties"]["x"]["$ref"], "#/$defs/C0", "left as it is");
}

#[test]
fn finds_what_serde_accepts_and_the_schema_refuses() {
    assert!(!serde_accepts_more_than(
        &json!({"properties": {"n": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}}})
    ));
    assert!(serde_accepts_more_than(&json!({"properties": {"n": {"type": "number", "minimum": 1}}})));
    assert!(serde_accepts_more_than(&json!({"properties": {"s": {"type": "string", "maxLength": 3}}})));
    assert!(!serde_accepts_more_than(&json!({"properties": {"s": {"type": "string", "description": "pattern"}}})));
    // A field named like a keyword is a field.
    assert!(!serde_accepts_more_than(&json!({"properties": {"pattern": {"type": "string"}}})));
    // A struct below the root: the strict deserializer takes it only from
    // an object, as the schema does, so it needs no schema check.
    let point = json!({"type": "object", "properties": {"x": {"type": "number"}}});
    assert!(!serde_accepts_more_than(&json!({"properties": {"at": point}})));
    assert!(!serde_accepts_more_than(&json!({"properties": {"at": {"anyOf": [point, {"type": "null"}]}}})));
    assert!(!serde_accepts_more_than(&json!({"properties": {}, "$defs": {"Point": point}})));
    // An externally tagged enum is read by the strict deserializer.
    let unit = json!({"type": "string", "const": "Km", "description": "kilometres"});
    let data =
        json!({"type": "object", "properties": {"At": point}, "required": ["At"], "additionalProperties": false});
    assert!(!serde_accepts_more_than(&json!({"properties": {"u": {"oneOf": [unit, data]}}})));
    // Unions serde buffers are checked against the schema first.
    assert!(serde_accepts_more_than(&json!({"properties": {"s": {"oneOf": [point, {"type": "string"}]}}})));
    assert!(serde_accepts_more_than(&json!({"properties": {"s": {"anyOf": [point, {"type": "string"}]}}})));
    // A map is not a struct.
    assert!(!serde_accepts_more_than(
        &json!({"properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}})
    ));
}
