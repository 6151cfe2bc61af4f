//! Argument validation and its reports.

use super::*;
use serde_json::json;

fn validator() -> ArgumentValidator {
    ArgumentValidator::compile(&json!({
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "number"},
            "opts": {"type": "object", "properties": {"round": {"type": "boolean", "default": false}}},
            "unit": {"type": "string", "enum": ["m", "km"], "default": "m"}
        },
        "required": ["a", "b"]
    }))
    .unwrap()
}

#[test]
fn reports_every_problem_with_its_path() {
    let errors = validator().errors(&json!({"b": "two", "unit": "mi"}));
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(text.contains(&"`/b`: expected number, got string \"two\"".to_owned()), "{text:?}");
    assert!(text.contains(&"`/a`: missing required field".to_owned()), "{text:?}");
    assert!(text.iter().any(|t| t.starts_with("`/unit`: expected one of [\"m\",\"km\"]")), "{text:?}");
    assert_eq!(errors.len(), 3);
}

/// The words of every kind of report, as the model reads them.
#[test]
fn reports_say_where_and_what() {
    let v = ArgumentValidator::compile(&json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
            "s": {"type": ["string", "null"], "maxLength": 3},
            "tags": {"type": "array", "minItems": 2},
            "unit": {"oneOf": [{"const": "m"}, {"const": "km"}]},
            "shape": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["r"]}]},
            "a/b~c": {"type": "boolean"}
        },
        "required": ["n", "x/y"],
        "additionalProperties": false
    }))
    .unwrap();
    let long = "é".repeat(30);
    let text: Vec<String> = v
        .errors(&json!({"n": 10, "s": long, "tags": [1], "unit": 451, "shape": 4, "a/b~c": 1, "extra": 0}))
        .iter()
        .map(ToString::to_string)
        .collect();
    for expected in [
        "`/n`: must be less than 10, got integer 10".to_owned(),
        "`/s`: must be at most 3 characters long".to_owned(),
        "`/tags`: must have at least 2 items, got array of 1 items".to_owned(),
        "`/unit`: expected one of [\"m\",\"km\"], got integer 451".to_owned(),
        "`/shape`: integer 4 matches none of the allowed shapes".to_owned(),
        "`/a~1b~0c`: expected boolean, got integer 1".to_owned(),
        "`/x~1y`: missing required field".to_owned(),
        "`/`: unexpected field(s) `extra`; remove them".to_owned(),
    ] {
        assert!(text.contains(&expected), "{expected} not in {text:?}");
    }
    assert_eq!(v.errors(&json!({"n": 0, "x/y": 1}))[0].message, "must be at least 1, got integer 0");
    let typed = v.errors(&json!({"n": 1, "x/y": 1, "s": 5}));
    assert_eq!(typed[0].message, "expected null or string, got integer 5");
    // Long values are cut (on a character boundary) with a visible mark.
    let shown = describe_value(&json!(long));
    assert_eq!(shown, format!("string \"{}…", "é".repeat(19)));
    assert_eq!(describe_value(&json!(true)), "boolean true");
    assert_eq!(describe_value(&json!(null)), "null");
    assert_eq!(describe_value(&json!(2.5)), "number 2.5");
}

/// A union of constants is checked as their `enum`: the same values pass
/// and fail as under jsonschema's own reading of the schema as written,
/// and a refusal names the choices.
#[test]
fn unions_of_constants_are_checked_as_enums() {
    let documented = json!({"oneOf": [
        {"description": "Degrees Celsius.", "type": "string", "const": "celsius"},
        {"description": "Kelvin.", "type": "string", "const": "kelvin"}]});
    let schema = json!({
        "type": "object",
        "properties": {
            "unit": documented,
            "any": {"anyOf": [{"const": 1}, {"const": 1.0}, {"const": null}, {"const": "x"}]},
            // Not choices of constants: left as they are.
            "twice": {"oneOf": [{"const": "a"}, {"const": "a"}]},
            "typed": {"oneOf": [{"type": "integer", "const": "1"}, {"const": "2"}]},
            "mixed": {"oneOf": [{"const": "a"}, {"type": "string", "minLength": 3}]},
            "numbers": {"oneOf": [{"const": 1}, {"const": 2}]},
            // Data that looks like a union is not a schema.
            "data": {"const": {"oneOf": [{"const": "a"}]}}
        }
    });
    let mut rewritten = schema.clone();
    plain_unions(&mut rewritten);
    assert_eq!(rewritten["properties"]["unit"], json!({"enum": ["celsius", "kelvin"]}));
    assert_eq!(rewritten["properties"]["any"], json!({"enum": [1, 1.0, null, "x"]}));
    for key in ["twice", "typed", "mixed", "numbers", "data"] {
        assert_eq!(rewritten["properties"][key], schema["properties"][key], "{key}");
    }
    let ours = ArgumentValidator::compile(&schema).unwrap();
    let theirs = jsonschema::validator_for(&schema).unwrap();
    let values = [
        json!("celsius"),
        json!("kelvin"),
        json!("k"),
        json!(1),
        json!(1.0),
        json!(2),
        json!(null),
        json!("x"),
        json!("a"),
        json!("abc"),
        json!({"oneOf": [{"const": "a"}]}),
        json!([1]),
    ];
    for key in ["unit", "any", "twice", "typed", "mixed", "numbers", "data"] {
        for value in &values {
            let args = json!({ key: value });
            assert_eq!(ours.is_valid(&args), theirs.is_valid(&args), "{key}: {value}");
            assert_eq!(ours.errors(&args).is_empty(), theirs.is_valid(&args), "{key}: {value}");
        }
    }
    let errors = ours.errors(&json!({"unit": 451}));
    assert_eq!(errors[0].to_string(), r#"`/unit`: expected one of ["celsius","kelvin"], got integer 451"#);
}

/// An externally tagged enum is checked as one object of exactly one of
/// its variants: the same values pass and fail as under jsonschema's own
/// reading of the union, and a refusal says where inside the variant.
#[test]
fn unions_of_tagged_variants_are_checked_as_one_object() {
    let variant = |name: &str, field: &str| {
        json!({"type": "object", "description": name,
               "properties": {name: {"type": "object", "properties": {field: {"type": "number"}},
                                     "required": [field]}},
               "required": [name], "additionalProperties": false})
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "shape": {"description": "A shape.", "oneOf": [variant("circle", "r"), variant("rect", "w")]},
            "any": {"anyOf": [variant("a", "x"), variant("b", "y")]},
            // Not tagged variants: left as they are.
            "twice": {"oneOf": [variant("a", "x"), variant("a", "y")]},
            "open": {"oneOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"]}, variant("b", "y")]},
            "typed": {"type": "object", "oneOf": [variant("a", "x"), variant("b", "y")]},
            "unit": {"oneOf": [{"type": "string", "const": "none"}, variant("b", "y")]},
            "pointed": {"oneOf": [variant("a", "x"), variant("b", "y")]}
        }
    });
    let mut rewritten = schema.clone();
    plain_unions(&mut rewritten);
    assert_eq!(
        rewritten["properties"]["shape"],
        json!({"description": "A shape.", "type": "object", "minProperties": 1, "maxProperties": 1,
               "properties": {"circle": variant("circle", "r")["properties"]["circle"],
                              "rect": variant("rect", "w")["properties"]["rect"]},
               "additionalProperties": false})
    );
    for key in ["twice", "open", "typed", "unit"] {
        assert_eq!(rewritten["properties"][key], schema["properties"][key], "{key}");
    }
    let ours = ArgumentValidator::compile(&schema).unwrap();
    let theirs = jsonschema::validator_for(&schema).unwrap();
    let values = [
        json!({"circle": {"r": 1}}),
        json!({"rect": {"w": 2}}),
        json!({"rect": {"w": "x"}}),
        json!({"circle": {"r": 1}, "rect": {"w": 2}}),
        json!({}),
        json!({"square": {}}),
        json!({"a": {"x": 1}}),
        json!({"a": {"y": 1}}),
        json!({"b": {"y": 1}}),
        json!({"a": 1}),
        json!("none"),
        json!(null),
        json!([]),
        json!({"a": {"x": 1}, "extra": 1}),
    ];
    for key in ["shape", "any", "twice", "open", "typed", "unit"] {
        for value in &values {
            let args = json!({ key: value });
            assert_eq!(ours.is_valid(&args), theirs.is_valid(&args), "{key}: {value}");
            assert_eq!(ours.errors(&args).is_empty(), theirs.is_valid(&args), "{key}: {value}");
        }
    }
    let text = |args: Value| ours.errors(&args).iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(text(json!({"shape": {"rect": {"w": "x"}}})), ["`/shape/rect/w`: expected number, got string \"x\""]);
    assert_eq!(text(json!({"shape": {}})), ["`/shape`: must have at least 1 field(s)"]);
    assert_eq!(
        text(json!({"shape": {"circle": {"r": 1}, "rect": {"w": 1}}})),
        ["`/shape`: must have at most 1 field(s)"]
    );
    // A `$ref` into a union keeps the whole schema as written.
    let mut pointed = json!({"type": "object", "properties": {
        "u": {"oneOf": [{"const": "a"}, {"const": "b"}]},
        "v": {"$ref": "#/properties/u/oneOf/0"}}});
    let before = pointed.clone();
    plain_unions(&mut pointed);
    assert_eq!(pointed, before);
}

#[test]
fn fills_defaults_only_where_absent() {
    let v = validator();
    let mut args = json!({"a": 1, "b": 2, "opts": {}});
    v.fill_defaults(&mut args);
    assert_eq!(args, json!({"a": 1, "b": 2, "opts": {"round": false}, "unit": "m"}));
    let mut args = json!({"a": 1, "b": 2, "unit": "km"});
    v.fill_defaults(&mut args);
    assert_eq!(args["unit"], "km");
}

#[test]
fn rejects_non_object_schemas() {
    assert!(ArgumentValidator::compile(&json!(true)).is_err());
    assert!(ArgumentValidator::compile(&json!({"type": "string"})).is_err());
    assert!(ArgumentValidator::compile(&json!({"type": "object", "properties": {"a": {"type": 5}}})).is_err());
}

#[test]
fn measures_depth_outside_strings() {
    assert!(!json_depth_exceeds(r#"{"a": "[[[[[[[["}"#, 2));
    assert!(json_depth_exceeds("[[[[]]]]", 3));
    assert!(!json_depth_exceeds("[[[]]]", 3));
    assert!(!json_depth_exceeds(r#"{"a": "\"[[[["}"#, 1));
    assert!(!json_depth_exceeds(r#"["[[[[", {"k\"[[[": "]"}]"#, 2));
    assert!(json_depth_exceeds(r#"[{"a": [{}]}]"#, 2));
}
