//! Every corpus type lowered for every provider and checked against that
//! provider's rules, written out here independently of the lowering code.

use crate::support as common;

use serde_json::{Map, Value, json};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::bedrock::Bedrock;
use toolreg::provider::gemini::Gemini;
use toolreg::provider::mcp::Mcp;
use toolreg::provider::openai_chat::OpenAiChat;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{
    LoweringError, NameRule, NameStyle, Provider, ProviderError, Strictness, ToolRef, ToolStatus, WireFormat, lower,
};
use toolreg::{CallOptions, ToolArguments, ToolCall, ToolDeclaration, ToolExecutor};

fn obj(v: &Value) -> &Map<String, Value> {
    v.as_object().unwrap_or_else(|| panic!("expected a schema object, got {v}"))
}

fn types(schema: &Map<String, Value>) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
        _ => Vec::new(),
    }
}

/// OpenAI strict mode, as PROVIDERS.md states it.
fn check_openai_strict(root: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "type",
        "description",
        "title",
        "enum",
        "anyOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "$defs",
        "$ref",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    ];
    const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];
    const TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];
    let s = obj(schema);
    for k in s.keys() {
        if !KEYS.contains(&k.as_str()) {
            errors.push(format!("{path}: keyword `{k}` not allowed"));
        }
    }
    if let Some(f) = s.get("format").and_then(Value::as_str)
        && !FORMATS.contains(&f)
    {
        errors.push(format!("{path}: format `{f}`"));
    }
    for t in types(s) {
        if !TYPES.contains(&t.as_str()) {
            errors.push(format!("{path}: type `{t}`"));
        }
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("{path}: non-local ref {r}"));
        if root.pointer(&format!("/$defs/{name}")).is_none() {
            errors.push(format!("{path}: dangling $ref {r}"));
        }
        if s.len() != 1 {
            errors.push(format!("{path}: $ref with siblings"));
        }
    }
    if types(s).iter().any(|t| t == "object") {
        if s.get("additionalProperties") != Some(&Value::Bool(false)) {
            errors.push(format!("{path}: object without additionalProperties:false"));
        }
        let props = s.get("properties").map(obj);
        let required: Vec<&str> =
            s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        match props {
            None => errors.push(format!("{path}: object without properties")),
            Some(props) => {
                let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
                let mut req = required.clone();
                keys.sort_unstable();
                req.sort_unstable();
                if keys != req {
                    errors.push(format!("{path}: required {req:?} is not every property {keys:?}"));
                }
            }
        }
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array)
        && !types(s).is_empty()
        && values.iter().any(Value::is_null)
        && !types(s).iter().any(|t| t == "null")
    {
        errors.push(format!("{path}: null in enum but not in type"));
    }
    walk(root, s, path, errors, check_openai_strict);
}

/// Anthropic's strict subset.
fn check_anthropic_strict(root: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "type",
        "description",
        "title",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "format",
        "minItems",
    ];
    const FORMATS: &[&str] =
        &["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"];
    let s = obj(schema);
    for k in s.keys() {
        if !KEYS.contains(&k.as_str()) {
            errors.push(format!("{path}: keyword `{k}` not allowed"));
        }
    }
    if s.get("type").is_some_and(|t| !t.is_string()) {
        errors.push(format!("{path}: type must be a single string"));
    }
    if let Some(f) = s.get("format").and_then(Value::as_str)
        && !FORMATS.contains(&f)
    {
        errors.push(format!("{path}: format `{f}`"));
    }
    if let Some(n) = s.get("minItems")
        && !(n == 0 || n == 1)
    {
        errors.push(format!("{path}: minItems {n}"));
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array)
        && values.iter().any(|v| v.is_array() || v.is_object())
    {
        errors.push(format!("{path}: non-primitive enum"));
    }
    if s.get("type").is_some_and(|t| t == "object") && s.get("additionalProperties") != Some(&Value::Bool(false)) {
        errors.push(format!("{path}: object without additionalProperties:false"));
    }
    walk(root, s, path, errors, check_anthropic_strict);
}

/// Gemini's OpenAPI subset (the fields of `google.genai.types.Schema`).
fn check_gemini(root: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
    const KEYS: &[&str] = &[
        "anyOf",
        "default",
        "description",
        "enum",
        "example",
        "format",
        "items",
        "maxItems",
        "maxLength",
        "maxProperties",
        "maximum",
        "minItems",
        "minLength",
        "minProperties",
        "minimum",
        "nullable",
        "pattern",
        "properties",
        "propertyOrdering",
        "required",
        "title",
        "type",
        "additionalProperties",
    ];
    const TYPES: &[&str] = &["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"];
    let s = obj(schema);
    for k in s.keys() {
        if !KEYS.contains(&k.as_str()) {
            errors.push(format!("{path}: keyword `{k}` not allowed"));
        }
    }
    match s.get("type") {
        None => {}
        Some(Value::String(t)) if TYPES.contains(&t.as_str()) => {}
        Some(t) => errors.push(format!("{path}: type {t}")),
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array)
        && !values.iter().all(Value::is_string)
    {
        errors.push(format!("{path}: enum of non-strings"));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for k in props.keys() {
            let ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && k.len() <= 64
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                errors.push(format!("{path}: parameter name {k}"));
            }
        }
    }
    walk(root, s, path, errors, check_gemini);
}

type Check = fn(&Value, &Value, &str, &mut Vec<String>);

fn walk(root: &Value, s: &Map<String, Value>, path: &str, errors: &mut Vec<String>, check: Check) {
    for key in ["properties", "$defs"] {
        for (k, v) in s.get(key).and_then(Value::as_object).into_iter().flatten() {
            check(root, v, &format!("{path}/{key}/{k}"), errors);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(v) = s.get(key).filter(|v| v.is_object()) {
            check(root, v, &format!("{path}/{key}"), errors);
        }
    }
    for key in ["anyOf", "allOf"] {
        for (i, v) in s.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            check(root, v, &format!("{path}/{key}/{i}"), errors);
        }
    }
}

fn assert_rules(check: Check, schema: &Value, tool: &str) {
    let mut errors = Vec::new();
    check(schema, schema, "", &mut errors);
    assert!(errors.is_empty(), "{tool}: {errors:#?}\n{schema:#}");
}

/// Fill every absent optional property with `null`, as a strict model does.
fn as_strict_model_sends(canonical: &Value, args: &mut Value) {
    let (Some(props), Some(args)) = (canonical.get("properties").and_then(Value::as_object), args.as_object_mut())
    else {
        return;
    };
    for (k, p) in props {
        match args.get_mut(k) {
            None => {
                args.insert(k.clone(), Value::Null);
            }
            Some(v) => as_strict_model_sends(p, v),
        }
    }
}

#[test]
fn openai_strict_lowering_follows_the_rules_and_keeps_meaning() {
    let registry = common::registry();
    for (decl, sample) in common::corpus() {
        let lowered = lower::openai_strict(&decl.input_schema);
        if let Some((_, gist)) = common::NOT_OPENAI_STRICT.iter().find(|(n, _)| *n == decl.name) {
            let err = lowered.expect_err(&decl.name).to_string();
            assert!(err.contains(gist), "{}: {err}", decl.name);
            continue;
        }
        let lowered = lowered.unwrap_or_else(|e| panic!("{}: {e}", decl.name));
        assert_rules(check_openai_strict, &lowered, &decl.name);

        // What a strict model sends is valid for the lowered schema, and maps
        // back to arguments the canonical schema accepts.
        let mut sent = sample.clone();
        as_strict_model_sends(&decl.input_schema, &mut sent);
        let validator = jsonschema::validator_for(&lowered).unwrap();
        let problems: Vec<String> = validator.iter_errors(&sent).map(|e| e.to_string()).collect();
        assert!(problems.is_empty(), "{}: {problems:?}\n{sent}", decl.name);

        let tools =
            OpenAiChat::new().strict(Strictness::Required).declare(&ToolRef::list(registry.get(&decl.name))).unwrap();
        let mut calls = vec![ToolCall::new("c1", decl.name.clone(), sent.to_string())];
        tools.mapping.apply(&mut calls);
        let result = common::block_on(registry.execute_call(calls.remove(0), CallOptions::default()));
        assert!(!result.is_error(), "{}: {}", decl.name, result.text());
    }
}

#[test]
fn strict_nulls_for_absent_optionals_become_defaults() {
    let registry = common::registry();
    let tools = OpenAiChat::new().declare(&ToolRef::list(registry.get("search_issues"))).unwrap();
    let response = common::fixture("openai_chat_response.json");
    // Only the first call's tool is declared here.
    let calls = OpenAiChat::new().parse_calls(&response, &tools.mapping.clone().accept_undeclared()).unwrap();
    let ToolArguments::Json(args) = &calls[0].arguments else { panic!("{:?}", calls[0].arguments) };
    // `page` and `sort` are optional but not nullable: their nulls are dropped.
    assert!(args.get("page").is_none() && args.get("sort").is_none(), "{args}");
    // `label` is `Option<String>`: null is a value it takes, so it stays.
    assert_eq!(args["label"], Value::Null);
    let result = common::block_on(registry.execute_call(calls[0].clone(), CallOptions::default()));
    let out = result.value().cloned().unwrap_or_default();
    assert_eq!(out["page"], 0);
    assert_eq!(out["sort"], "newest");
    // The invalid text of the second call is left for execution to report.
    assert_eq!(calls[1].arguments, ToolArguments::Raw("{\"byte\": 7, \"small\": ".into()));
}

#[test]
fn anthropic_strict_lowering_follows_the_rules() {
    for (decl, _) in common::corpus() {
        match lower::anthropic_strict(&decl.input_schema) {
            Ok(lowered) => assert_rules(check_anthropic_strict, &lowered, &decl.name),
            Err(LoweringError::Recursive { name, .. }) => {
                assert_eq!((decl.name.as_str(), name.as_str()), ("write_tree", "TreeNode"))
            }
            Err(e) => assert!(["set_labels", "store_value"].contains(&decl.name.as_str()), "{}: {e}", decl.name),
        }
    }
    // Limits Anthropic does not take are written into the description.
    let numbers = common::corpus().into_iter().find(|(d, _)| d.name == "numbers").unwrap().0;
    let lowered = lower::anthropic_strict(&numbers.input_schema).unwrap();
    assert_eq!(lowered["properties"]["rating"]["description"], "{maximum: 10, minimum: 1}");
    assert_eq!(lowered["properties"]["tags"]["minItems"], 1);
}

#[test]
fn gemini_lowering_follows_the_rules() {
    let registry = common::registry();
    for (decl, _) in common::corpus() {
        let tools = Gemini::new().declare(&ToolRef::list(registry.get(&decl.name)));
        if decl.name == "write_tree" {
            let err = tools.unwrap_err();
            assert!(
                matches!(&err, ProviderError::UnsupportedSchema { tool, reason: LoweringError::Recursive { .. }, .. } if tool == "write_tree"),
                "{err:?}"
            );
            assert!(err.to_string().contains("recursive type `TreeNode`"), "{err}");
            continue;
        }
        let tools = tools.unwrap().tools;
        let fd = &tools[0]["functionDeclarations"][0];
        match fd.get("parameters") {
            Some(params) => assert_rules(check_gemini, params, &decl.name),
            None => assert!(["ping", "get_time"].contains(&decl.name.as_str()), "{}", decl.name),
        }
    }
    let search = lower::gemini(&registry.get("search_issues").unwrap().declaration().input_schema).unwrap();
    assert_eq!(
        search["properties"]["priority"],
        json!({"type": "STRING", "enum": ["low", "normal", "high"], "nullable": true})
    );
    let draw = lower::gemini(&registry.get("draw").unwrap().declaration().input_schema).unwrap();
    // Option<internally tagged enum>: the null branch became `nullable`, oneOf an anyOf, const an enum.
    assert_eq!(draw["properties"]["fallback"]["nullable"], true);
    assert_eq!(draw["properties"]["fallback"]["anyOf"][0]["properties"]["kind"]["enum"], json!(["move"]));
}

#[test]
fn gemini_moves_non_string_enums_into_the_description() {
    let schema = json!({"type": "object", "properties": {
        "level": {"type": "integer", "enum": [1, 2, 3], "description": "Level"},
        "flag": {"const": true}
    }});
    let lowered = lower::gemini(&schema).unwrap();
    assert_eq!(lowered["properties"]["level"], json!({"type": "INTEGER", "description": "Level\n\n{one of: 1, 2, 3}"}));
    assert_eq!(lowered["properties"]["flag"], json!({"type": "BOOLEAN", "description": "{one of: true}"}));
    let bad = json!({"type": "object", "properties": {"my-param": {"type": "string"}}});
    let err = lower::gemini(&bad).unwrap_err().to_string();
    assert!(err.contains("`my-param`"), "{err}");
}

#[test]
fn mcp_and_bedrock_pass_the_canonical_schema_through() {
    let registry = common::registry();
    let all = ToolRef::list(registry.list());
    let mcp = Mcp::new().declare(&all).unwrap().tools;
    let bedrock = Bedrock::new().declare(&all).unwrap().tools;
    for (i, entry) in registry.list().enumerate() {
        let decl = entry.declaration();
        let input = &mcp[i]["inputSchema"];
        assert_eq!(input["type"], "object");
        assert_eq!(bedrock[i]["toolSpec"]["inputSchema"]["json"], decl.input_schema);
        assert!(NameRule::MCP.check(mcp[i]["name"].as_str().unwrap()).is_ok());
        if decl.parameter_names().next().is_none() {
            assert_eq!(input, &json!({"type": "object", "additionalProperties": false}), "{}", decl.name);
        } else {
            assert_eq!(input, &decl.input_schema);
        }
        // Bedrock refuses an empty description: it is left out.
        assert_eq!(bedrock[i]["toolSpec"].get("description").is_none(), decl.description.is_empty());
    }
    let ping = mcp.as_array().unwrap().iter().find(|t| t["name"] == "ping").unwrap();
    assert_eq!(ping["annotations"], json!({"readOnlyHint": true, "destructiveHint": false}));
}

#[test]
fn names_a_provider_cannot_take_are_refused_or_respelled() {
    let decl = ToolDeclaration::new("files.read", "Read a file.", json!({"type": "object", "properties": {}}));
    let one = [ToolRef::from(&decl)];
    let err = OpenAiChat::new().declare(&one).unwrap_err();
    assert_eq!(
        err.to_string(),
        "OpenAI Chat Completions cannot take the tool name `files.read`: character '.' is not allowed \
         (names must match ^[a-zA-Z0-9_-]{1,64}$)"
    );
    // Gemini and MCP take dots.
    assert!(Gemini::new().declare(&one).is_ok());
    assert!(Mcp::new().declare(&one).is_ok());

    let tools = OpenAiResponses::new().name_style(NameStyle::Respell).declare(&one).unwrap();
    assert_eq!(tools.tools[0]["name"], "files__read");
    let response =
        json!({"output": [{"type": "function_call", "call_id": "c1", "name": "files__read", "arguments": "{}"}]});
    let calls = OpenAiResponses::new().parse_calls(&response, &tools.mapping).unwrap();
    assert_eq!(calls[0].name, "files.read");
    assert_eq!(tools.mapping.provider_name("files.read"), "files__read");

    // Respelling that would merge two tools is refused.
    let other = ToolDeclaration::new("files__read", "", json!({"type": "object"}));
    let err = Anthropic::new().name_style(NameStyle::Respell).declare(&ToolRef::list([&decl, &other])).unwrap_err();
    assert!(matches!(err, ProviderError::NameCollision { .. }), "{err:?}");

    // Every provider's rule, on names every provider should take and some they should not.
    for p in Provider::ALL {
        let rule = p.name_rule();
        assert!(rule.check("get_weather").is_ok(), "{p}");
        assert!(rule.check("").is_err(), "{p}");
        assert!(rule.check(&"x".repeat(129)).is_err(), "{p}");
        assert!(rule.check("a b").is_err(), "{p}");
        for name in ["server.tool", "9lives", "a/b:c", &"long_name".repeat(20)] {
            let spelled = rule.respell(name);
            assert!(rule.check(&spelled).is_ok(), "{p}: {name} -> {spelled}");
        }
    }
    assert!(NameRule::GEMINI.check("9lives").is_err());
    assert!(NameRule::OPENAI.check(&"x".repeat(65)).is_err());
    assert!(NameRule::ANTHROPIC.check(&"x".repeat(128)).is_ok());
}

#[test]
fn strictness_is_a_per_tool_choice() {
    let registry = common::registry();
    // Default: strict where possible, the rest reported.
    let all = ToolRef::list(registry.list());
    let tools = OpenAiChat::new().declare(&all).unwrap();
    let not_strict: Vec<&str> = tools.not_strict().map(|(tool, _)| tool).collect();
    assert_eq!(not_strict, ["set_labels", "store_value"]);
    let v = &tools.tools;
    assert_eq!(v[3]["function"]["strict"], false);
    assert_eq!(v[3]["function"]["parameters"], registry.get("set_labels").unwrap().declaration().input_schema);
    // Required: refused with the tool and the reason.
    let err = OpenAiChat::new().strict_for("set_labels", Strictness::Required).declare(&all).unwrap_err();
    assert!(
        err.to_string().starts_with(
            "OpenAI Chat Completions cannot take the input schema of `set_labels`: at `/properties/labels`: a map"
        ),
        "{err}"
    );
    // Off for one tool.
    let tools = OpenAiChat::new().strict_for("ping", Strictness::Off).declare(&all).unwrap().tools;
    let ping = tools.as_array().unwrap().iter().find(|t| t["function"]["name"] == "ping").unwrap();
    assert_eq!(ping["function"]["strict"], false);
    // Anthropic is not strict unless asked.
    let tools = Anthropic::new().declare(&all).unwrap().tools;
    assert!(tools.as_array().unwrap().iter().all(|t| t.get("strict").is_none()));
}

#[test]
fn request_limits_are_enforced() {
    let decls: Vec<ToolDeclaration> = (0..129)
        .map(|i| ToolDeclaration::new(format!("t{i}"), "", json!({"type": "object", "properties": {}})))
        .collect();
    let all = ToolRef::list(&decls);
    let err = OpenAiChat::new().declare(&all).unwrap_err();
    assert!(matches!(err, ProviderError::TooMany { count: 129, limit: 128, .. }), "{err:?}");
    // Partly: the first 128 are sent, the last is reported.
    let partial = OpenAiChat::new().declare_partial(&all).into_value();
    assert_eq!(partial.tools.as_array().unwrap().len(), 128);
    assert_eq!(partial.refused().map(|(tool, _)| tool).collect::<Vec<_>>(), ["t128"]);
    let err = Anthropic::new().strict(Strictness::Required).declare(&all[..21]).unwrap_err();
    assert!(matches!(err, ProviderError::TooMany { what: "strict tools", count: 21, limit: 20, .. }), "{err:?}");
    let many = json!({"type": "object", "properties": {"e": {"type": "string", "enum": (0..1001).map(|i| format!("v{i}")).collect::<Vec<_>>()}}});
    assert!(matches!(lower::openai_strict(&many), Err(LoweringError::Limit { limit: 1000, .. })));
    let mut deep = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    for _ in 0..10 {
        deep = json!({"type": "object", "properties": {"n": deep}, "required": ["n"]});
    }
    assert!(matches!(lower::openai_strict(&deep), Err(LoweringError::Limit { limit: 10, .. })));
}

#[test]
fn the_rule_checkers_reject_what_the_providers_reject() {
    let corpus = common::corpus();
    let canonical = |name: &str| corpus.iter().find(|(d, _)| d.name == name).unwrap().0.input_schema.clone();
    let count = |check: Check, schema: &Value| {
        let mut errors = Vec::new();
        check(schema, schema, "", &mut errors);
        errors
    };
    // Canonical schemas break every provider's special rules.
    let search = canonical("search_issues");
    assert!(count(check_openai_strict, &search).iter().any(|e| e.contains("required")));
    assert!(count(check_anthropic_strict, &search).iter().any(|e| e.contains("single string")));
    assert!(count(check_gemini, &search).iter().any(|e| e.contains("type [")));
    let draw = canonical("draw");
    assert!(count(check_openai_strict, &draw).iter().any(|e| e.contains("`oneOf`")));
    assert!(count(check_gemini, &draw).iter().any(|e| e.contains("`oneOf`")));
    let numbers = canonical("numbers");
    assert!(count(check_anthropic_strict, &numbers).iter().any(|e| e.contains("`maximum`")));
    // Canonical schemas have standard formats only; a raw schema may not.
    assert!(!count(check_openai_strict, &numbers).iter().any(|e| e.contains("format")));
    let raw = json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint8"}},
        "required": ["n"], "additionalProperties": false});
    assert!(count(check_openai_strict, &raw).iter().any(|e| e.contains("format `uint8`")));
}

#[test]
fn anthropic_strict_budgets_fall_back_or_refuse() {
    let search = common::corpus().into_iter().find(|(d, _)| d.name == "search_issues").unwrap().0;
    let copies: Vec<ToolDeclaration> = (0..3)
        .map(|i| {
            let mut d = search.clone();
            d.name = format!("search_{i}");
            d
        })
        .collect();
    // Nine optional parameters each: the third would make 27, over Anthropic's 24.
    let copies = ToolRef::list(&copies);
    let tools = Anthropic::new().strict(Strictness::IfCompatible).declare(&copies).unwrap();
    let strict: Vec<Option<&Value>> = tools.tools.as_array().unwrap().iter().map(|t| t.get("strict")).collect();
    assert_eq!(strict, [Some(&json!(true)), Some(&json!(true)), None]);
    let not_strict: Vec<_> = tools.not_strict().collect();
    assert_eq!(not_strict[0].0, "search_2");
    assert!(matches!(not_strict[0].1, LoweringError::Limit { limit: 24, count: 27, .. }));
    let err = Anthropic::new().strict(Strictness::Required).declare(&copies).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Anthropic Messages accepts at most 24 optional parameters in strict tools per request, got 27"
    );
}

#[test]
fn strict_nulls_are_dropped_inside_unions_too() {
    let schema = json!({"type": "object", "properties": {
        "opt": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer", "default": 1}}, "required": ["a"]},
            {"type": "null"}
        ]}
    }, "required": []});
    let decl = ToolDeclaration::new("u", "", schema);
    let tools = OpenAiChat::new().strict(Strictness::Required).declare(&[ToolRef::from(&decl)]).unwrap();
    let lowered = &tools.tools[0]["function"]["parameters"];
    assert_eq!(lowered["properties"]["opt"]["anyOf"][0]["required"], json!(["a", "n"]));
    let mut calls = vec![ToolCall::new("1", "u", r#"{"opt": {"a": "x", "n": null}}"#)];
    tools.mapping.apply(&mut calls);
    assert_eq!(calls[0].arguments, ToolArguments::Json(json!({"opt": {"a": "x"}})));
    // Invalid text is left alone for execution to report.
    let mut calls = vec![ToolCall::new("1", "u", "{oops")];
    tools.mapping.apply(&mut calls);
    assert_eq!(calls[0].arguments, ToolArguments::Raw("{oops".into()));
}

#[test]
fn tuples_become_items_with_their_order_described() {
    let schema = common::corpus().into_iter().find(|(d, _)| d.name == "move_to").unwrap().0.input_schema;
    let gemini = lower::gemini(&schema).unwrap();
    assert_eq!(
        gemini["properties"]["label"],
        json!({"type": "ARRAY", "minItems": 2, "maxItems": 2, "description": "{items in order: string, integer}",
               "items": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER", "minimum": 0}]}})
    );
    let strict = lower::openai_strict(&schema).unwrap();
    assert_eq!(strict["properties"]["position"]["items"], json!({"type": "number"}));
    assert_eq!(strict["properties"]["position"]["minItems"], 2);
}

/// Every format, one report: a line per tool asked for, in order; partial
/// declaration sends what can be sent and names the rest.
#[test]
fn every_format_reports_each_tool_and_can_declare_the_rest() {
    let registry = common::registry();
    let bad_name = ToolDeclaration::new("bad name", "", json!({"type": "object", "properties": {}}));
    let mut tools = ToolRef::list(registry.list());
    tools.push(ToolRef::from(&bad_name));
    let formats: Vec<Box<dyn WireFormat>> = vec![
        Box::new(OpenAiChat::new()),
        Box::new(OpenAiResponses::new()),
        Box::new(Anthropic::new().strict(Strictness::IfCompatible)),
        Box::new(Gemini::new()),
        Box::new(Mcp::new()),
        Box::new(Bedrock::new()),
        Box::new(toolreg::provider::mistral::Mistral::new()),
        Box::new(toolreg::provider::ollama::Ollama::new()),
    ];
    for format in &formats {
        let provider = format.provider();
        // All or nothing: the first refusal is the error.
        let err = format.declare(&tools).unwrap_err();
        let first = if provider == Provider::Gemini { "write_tree" } else { "bad name" };
        assert_eq!(err, declared_first_refusal(&format.declare_partial(&tools).into_value()), "{provider}");
        assert!(err.to_string().contains(&format!("`{first}`")), "{provider}: {err}");
        let declared = format.declare_partial(&tools).into_value();
        let names: Vec<&str> = declared.report.iter().map(|r| r.tool.as_str()).collect();
        let expected: Vec<&str> = tools.iter().map(|t| t.declaration().name.as_str()).collect();
        assert_eq!(names, expected, "{provider}");
        let mut refused: Vec<&str> = declared.refused().map(|(tool, _)| tool).collect();
        let sent = declared.report.iter().filter(|r| r.status.is_sent()).count();
        let written = match provider {
            Provider::Gemini => declared.tools[0]["functionDeclarations"].as_array().unwrap().len(),
            _ => declared.tools.as_array().unwrap().len(),
        };
        assert_eq!(sent, written, "{provider}: the report matches the request");
        assert_eq!(refused.pop(), Some("bad name"), "{provider}");
        match provider {
            Provider::Gemini => assert_eq!(refused, ["write_tree"], "recursive: no `parameters` for it"),
            _ => assert!(refused.is_empty(), "{provider}: {refused:?}"),
        }
        let status = |name: &str| &declared.report.iter().find(|r| r.tool == name).unwrap().status;
        match provider {
            Provider::OpenAiChat | Provider::OpenAiResponses | Provider::Anthropic => {
                assert_eq!(status("numbers"), &ToolStatus::Lowered { strict: true }, "{provider}");
                assert!(matches!(status("set_labels"), ToolStatus::NotStrict { .. }), "{provider}");
            }
            Provider::Gemini => assert_eq!(status("numbers"), &ToolStatus::Lowered { strict: false }),
            _ => assert_eq!(status("numbers"), &ToolStatus::Declared, "{provider}"),
        }
    }
}

fn declared_first_refusal(declared: &toolreg::provider::Declarations) -> ProviderError {
    declared.refused().next().unwrap().1.clone()
}

#[test]
fn gemini_refuses_recursion_through_an_option_box_as_recursive() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Chain {
        value: i32,
        next: Option<Box<Chain>>,
    }
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Queue {
        head: Option<Box<Chain>>,
    }
    let decl = ToolDeclaration::for_args::<Queue>("queue", "A queue.");
    for err in
        [lower::gemini(&decl.input_schema).unwrap_err(), lower::anthropic_strict(&decl.input_schema).unwrap_err()]
    {
        assert!(matches!(&err, LoweringError::Recursive { name, .. } if name == "Chain"), "{err:?}");
    }
    let err = Gemini::new().declare(&[ToolRef::from(&decl)]).unwrap_err();
    assert!(err.to_string().contains("recursive type `Chain`"), "{err}");
    // The arguments type itself recursing through an Option<Box<_>>.
    let decl = ToolDeclaration::for_args::<Chain>("chain", "A linked list.");
    let err = lower::gemini(&decl.input_schema).unwrap_err();
    assert!(matches!(&err, LoweringError::Recursive { path, .. } if path == "/properties/next"), "{err:?}");
}

#[test]
fn a_ref_bomb_is_refused_not_expanded() {
    // 40 definitions, each referring twice to the next: 3.5 KB as written,
    // 2^40 copies if inlined.
    let mut defs = Map::new();
    for i in 0..40 {
        let next = json!({"$ref": format!("#/$defs/D{}", i + 1)});
        defs.insert(format!("D{i}"), json!({"type": "object", "properties": {"a": next, "b": next}}));
    }
    defs.insert("D40".into(), json!({"type": "string"}));
    let bomb = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs});
    let decl = ToolDeclaration::new("bomb", "", bomb);
    let err = toolreg::schema::check_bounds(&decl.input_schema).unwrap_err();
    assert!(err.contains("once its `$ref`s are inlined"), "{err}");
    for lowered in [
        lower::openai_strict(&decl.input_schema),
        lower::anthropic_strict(&decl.input_schema),
        lower::gemini(&decl.input_schema),
    ] {
        assert!(matches!(lowered, Err(LoweringError::Limit { limit: 50_000, .. })), "{lowered:?}");
    }
    let err = Gemini::new().declare(&[ToolRef::from(&decl)]).unwrap_err();
    assert!(matches!(err, ProviderError::UnsupportedSchema { .. }), "{err:?}");
}

/// A keyword a provider's subset lacks is lowered away, not the tool: a
/// `NonZeroI8` argument (`{"not": {"const": 0}}`) is declared to Gemini and
/// in both strict modes with the exclusion written into its description,
/// and the registry's validation still refuses a zero.
#[test]
fn a_not_is_lowered_into_the_description_and_still_enforced() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Step {
        /// How far to move; never zero.
        by: std::num::NonZeroI8,
    }
    let decl = ToolDeclaration::for_args::<Step>("step", "Move a step.");
    assert_eq!(decl.input_schema["properties"]["by"]["not"], json!({"const": 0}));
    let mut registry = toolreg::FunctionRegistry::new();
    registry.register(toolreg::ToolRegistration::new(decl, |step: Step| Ok::<_, String>(step.by.get()))).unwrap();
    let tools = ToolRef::list(registry.list());

    let declared = Gemini::new().declare(&tools).unwrap();
    let by = &declared.tools[0]["functionDeclarations"][0]["parameters"]["properties"]["by"];
    assert_eq!(by["type"], "INTEGER", "{by}");
    assert!(by.get("not").is_none(), "{by}");
    assert_eq!(by["description"], "How far to move; never zero.\n\n{not: 0}");
    assert_eq!((by["minimum"].clone(), by["maximum"].clone()), (json!(-128), json!(127)));
    assert_rules(check_gemini, &declared.tools[0]["functionDeclarations"][0]["parameters"], "step");
    for strict in [
        lower::openai_strict(&tools[0].declaration().input_schema),
        lower::anthropic_strict(&tools[0].declaration().input_schema),
    ] {
        let strict = strict.unwrap();
        assert!(strict["properties"]["by"].get("not").is_none(), "{strict}");
    }
    assert!(toolreg::provider::lint(tools[0]).is_empty());

    let err = common::block_on(registry.execute("step", json!({"by": 0}))).unwrap_err();
    assert!(matches!(err, toolreg::ToolError::InvalidArguments { .. }), "{err}");
    assert_eq!(common::block_on(registry.execute("step", json!({"by": -3}))).unwrap().value, json!(-3));
}
