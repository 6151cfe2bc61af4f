//! `#[tool]` end to end: generated modules, schemas, sync and async calls,
//! the parameter rule (one argument per parameter, the lone struct, `#[arg]`,
//! `#[args]`, `#[context]`),
//! return types, options, and `register_tools!`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolreg::CallOptions;
use toolreg::{
    CallContext, FunctionRegistry, RegistryError, SafetyLevel, Scope, ToolArgs, ToolCall, ToolDeclaration, ToolError,
    ToolExecutor, register_tools, tool,
};

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// Arguments of the calculator.
#[derive(Debug, Deserialize, schemars::JsonSchema, ToolArgs)]
struct CalculatorArgs {
    /// The operation.
    op: Op,
    /// Left operand.
    a: f64,
    /// Right operand.
    b: f64,
}

#[derive(Debug, Serialize)]
struct CalculatorResult {
    value: f64,
}

#[tool(description = "Perform basic arithmetic operations", safety = "safe", category = "math")]
async fn calculator(#[args] args: CalculatorArgs) -> Result<CalculatorResult, String> {
    let value = match args.op {
        Op::Add => args.a + args.b,
        Op::Sub => args.a - args.b,
        Op::Mul => args.a * args.b,
        Op::Div if args.b == 0.0 => return Err("division by zero".into()),
        Op::Div => args.a / args.b,
    };
    Ok(CalculatorResult { value })
}

/// Greet someone.
///
/// Uses their title when given.
#[tool(name = "greet-person", category = "social", category = "text", scope = "user", safety = "moderate")]
pub fn greet(
    /// Who to greet.
    name: String,
    /// An optional title such as "Dr".
    title: Option<String>,
    /// How many exclamation marks.
    #[serde(default = "one")]
    excitement: u8,
) -> String {
    let bang = "!".repeat(excitement as usize);
    match title {
        Some(t) => format!("Hello, {t} {name}{bang}"),
        None => format!("Hello, {name}{bang}"),
    }
}

fn one() -> u8 {
    1
}

/// Report the call id the tool was called with.
#[tool(safety = "safe")]
fn which_call(#[context] cx: CallContext) -> Option<String> {
    cx.call_id().map(str::to_owned)
}

/// Fail on purpose.
#[tool]
pub(crate) fn always_fails(reason: String) -> Result<(), std::io::Error> {
    Err(std::io::Error::other(reason))
}

/// Sleep briefly, then answer.
#[tool(safety = "safe")]
async fn slow_answer(#[context] cx: &CallContext, millis: u64) -> u64 {
    tokio::select! {
        _ = tokio::time::sleep(std::time::Duration::from_millis(millis)) => millis,
        _ = cx.cancelled() => 0,
    }
}

mod nested {
    use toolreg::tool;

    /// Defined in another module.
    #[tool(safety = "safe")]
    pub fn shout(text: String) -> String {
        text.to_uppercase()
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn generates_the_tool_module() {
    assert_eq!(calculator_tool::NAME, "calculator");
    let decl: ToolDeclaration = calculator_tool::declaration();
    assert_eq!(decl.name, "calculator");
    assert_eq!(decl.description, "Perform basic arithmetic operations");
    assert_eq!(decl.safety, SafetyLevel::Safe);
    assert_eq!(decl.categories, ["math"]);
    assert_eq!(
        decl.input_schema,
        json!({
            "type": "object",
            "description": "Arguments of the calculator.",
            "properties": {
                "op": {"type": "string", "enum": ["add", "sub", "mul", "div"], "description": "The operation."},
                "a": {"type": "number", "description": "Left operand."},
                "b": {"type": "number", "description": "Right operand."}
            },
            "required": ["op", "a", "b"]
        })
    );
    // `execute` is the function itself.
    let out = block_on(calculator_tool::execute(CalculatorArgs { op: Op::Mul, a: 6.0, b: 7.0 })).unwrap();
    assert_eq!(out.value, 42.0);
}

#[test]
fn plain_parameters_become_an_args_struct_with_docs() {
    let decl = greet_tool::declaration();
    assert_eq!(decl.name, "greet-person");
    assert_eq!(decl.description, "Greet someone.\n\nUses their title when given.");
    assert_eq!(decl.safety, SafetyLevel::Cautious);
    assert_eq!(decl.scope, Scope::User);
    assert_eq!(decl.categories, ["social", "text"]);
    let schema = &decl.input_schema;
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(schema["properties"]["title"]["type"], json!(["string", "null"]));
    assert_eq!(schema["properties"]["excitement"]["default"], 1);
    // The function keeps its plain signature.
    assert_eq!(greet("Ada".into(), None, 2), "Hello, Ada!!");
    let _args = greet_tool::Args { name: "x".into(), title: None, excitement: 0 };
}

#[test]
fn generated_tools_run_through_the_registry() {
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [calculator_tool, greet_tool, which_call_tool, always_fails_tool, nested::shout_tool])
        .unwrap();
    assert_eq!(registry.len(), 5);
    block_on(async {
        let out = registry.execute("calculator", json!({"op": "add", "a": 1, "b": 2})).await.unwrap();
        assert_eq!(out.value, json!({"value": 3.0}));

        let err = registry.execute("calculator", json!({"op": "div", "a": 1, "b": 0})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed { message: "division by zero".into() });

        let err = registry.execute("calculator", json!({"op": "pow", "a": 1, "b": "2"})).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("`/op`: expected one of [\"add\",\"sub\",\"mul\",\"div\"], got string \"pow\""),
            "{text}"
        );
        assert!(text.contains("`/b`: expected number, got string \"2\""), "{text}");

        let out = registry.execute("greet-person", json!({"name": "Ada", "title": "Dr"})).await.unwrap();
        assert_eq!(out.value, json!("Hello, Dr Ada!"));
        assert_eq!(out.text(), "Hello, Dr Ada!");

        let out = registry
            .execute_call(ToolCall::new("call_9", "which_call", json!({})), CallOptions::default())
            .await
            .outcome
            .unwrap();
        assert_eq!(out.value, json!("call_9"));

        let err = registry.execute("always_fails", json!({"reason": "no disk"})).await.unwrap_err();
        assert_eq!(err.to_string(), "no disk");

        let out = registry.execute("shout", json!({"text": "hi"})).await.unwrap();
        assert_eq!(out.value, json!("HI"));
    });
}

#[test]
fn async_tools_see_cancellation() {
    let mut registry = FunctionRegistry::new();
    registry.register(slow_answer_tool::registration()).unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let call = ToolCall::new("c", "slow_answer", json!({"millis": 60_000}));
    let out = block_on(registry.execute_call(call, toolreg::CallOptions::new().cancel(token))).outcome;
    assert_eq!(out, Err(ToolError::Cancelled));
    let out = block_on(registry.execute("slow_answer", json!({"millis": 1}))).unwrap();
    assert_eq!(out.value, json!(1));
}

#[test]
fn register_tools_is_all_or_nothing() {
    let mut registry = FunctionRegistry::new();
    registry.register(greet_tool::registration()).unwrap();
    let err = register_tools!(registry, [calculator_tool, greet_tool]).unwrap_err();
    assert_eq!(err, RegistryError::DuplicateTool { name: "greet-person".into() });
    assert_eq!(registry.list().map(|tool| tool.name()).collect::<Vec<_>>(), ["greet-person"]);
}

#[test]
fn the_default_safety_is_dangerous() {
    assert_eq!(always_fails_tool::declaration().safety, SafetyLevel::Dangerous);
    assert_eq!(always_fails_tool::declaration().scope, Scope::Custom);
}

#[test]
fn unit_arguments_give_an_empty_object_schema() {
    let schema = which_call_tool::declaration().input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema.get("required"), None);
    let _: Value = schema;
}

// An order number: a newtype, which serde reads as the number itself.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, schemars::JsonSchema)]
struct OrderId(u64);

/// Look up one order.
#[tool(safety = "safe")]
fn order_status(id: OrderId) -> String {
    format!("order {} shipped", id.0)
}

#[test]
fn a_single_newtype_parameter_is_one_argument() {
    let schema = order_status_tool::declaration().input_schema;
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {"id": {"type": "integer", "minimum": 0}},
            "required": ["id"]
        })
    );
    let mut registry = FunctionRegistry::new();
    registry.register(order_status_tool::registration()).unwrap();
    let out = block_on(registry.execute("order_status", json!({"id": 42}))).unwrap();
    assert_eq!(out.value, json!("order 42 shipped"));
    // The bare number, which a whole-struct reading would take, is refused.
    assert!(block_on(registry.execute("order_status", json!(42))).is_err());
}

/// How to deliver a message.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Channel {
    Email { address: String },
    Sms { number: String },
}

/// Deliver a message over a channel.
#[tool(safety = "cautious")]
fn deliver(channel: Channel, message: String) -> String {
    match channel {
        Channel::Email { address } => format!("mail to {address}: {message}"),
        Channel::Sms { number } => format!("text to {number}: {message}"),
    }
}

/// Pick a channel, the enum being the only parameter.
#[tool(safety = "safe")]
fn pick(channel: Channel) -> String {
    match channel {
        Channel::Email { .. } => "email".into(),
        Channel::Sms { .. } => "sms".into(),
    }
}

#[test]
fn an_enum_parameter_is_one_argument_of_an_object_schema() {
    for decl in [deliver_tool::declaration(), pick_tool::declaration()] {
        let schema = &decl.input_schema;
        assert_eq!(schema["type"], "object", "{}", decl.name);
        assert!(schema["properties"]["channel"]["oneOf"].is_array(), "{schema}");
    }
    // Registration accepts them: the root is an object for every provider.
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [deliver_tool, pick_tool]).unwrap();
    block_on(async {
        let out = registry
            .execute("deliver", json!({"channel": {"kind": "sms", "number": "555"}, "message": "hi"}))
            .await
            .unwrap();
        assert_eq!(out.value, json!("text to 555: hi"));
        let out = registry.execute("pick", json!({"channel": {"kind": "email", "address": "a@b"}})).await.unwrap();
        assert_eq!(out.value, json!("email"));
        assert!(registry.execute("pick", json!({"kind": "email", "address": "a@b"})).await.is_err());
    });
}

/// Where to ship, taken whole and destructured.
#[derive(Debug, Deserialize, schemars::JsonSchema, ToolArgs)]
struct Shipment {
    /// The order to ship.
    order: OrderId,
    /// Express delivery.
    #[serde(default)]
    express: bool,
}

/// Ship an order.
#[tool(safety = "cautious")]
fn ship(#[context] cx: CallContext, #[args] Shipment { order, express }: Shipment) -> Result<String, String> {
    if order.0 == 0 {
        return Err("no such order".into());
    }
    let speed = if express { "express" } else { "standard" };
    Ok(format!("{} ships {} by {speed}", cx.call_id().unwrap_or("?"), order.0))
}

#[test]
fn an_args_parameter_is_the_whole_object_and_context_may_come_first() {
    let schema = ship_tool::declaration().input_schema;
    assert_eq!(schema["required"], json!(["order"]));
    assert_eq!(schema["properties"]["express"]["default"], false);
    let mut registry = FunctionRegistry::new();
    registry.register(ship_tool::registration()).unwrap();
    block_on(async {
        let out = registry
            .execute_call(ToolCall::new("c1", "ship", json!({"order": 7, "express": true})), CallOptions::default())
            .await
            .outcome;
        assert_eq!(out.unwrap().value, json!("c1 ships 7 by express"));
        let err = registry.execute("ship", json!({"order": 0})).await.unwrap_err();
        assert_eq!(err, ToolError::Failed { message: "no such order".into() });
    });
}

/// Echo the call id and a word, the context between two arguments.
#[tool(safety = "safe")]
async fn tagged(prefix: String, #[context] cx: &CallContext, #[context] owned: CallContext, word: String) -> String {
    assert_eq!(cx.call_id(), owned.call_id());
    format!("{prefix}{}:{word}", cx.call_id().unwrap_or("-"))
}

#[test]
fn context_parameters_may_stand_anywhere_and_are_not_arguments() {
    let schema = tagged_tool::declaration().input_schema;
    assert_eq!(schema["required"], json!(["prefix", "word"]));
    assert_eq!(schema["properties"].as_object().unwrap().len(), 2);
    let mut registry = FunctionRegistry::new();
    registry.register(tagged_tool::registration()).unwrap();
    let out = block_on(
        registry
            .execute_call(ToolCall::new("id7", "tagged", json!({"prefix": ">", "word": "w"})), CallOptions::default()),
    )
    .outcome;
    assert_eq!(out.unwrap().value, json!(">id7:w"));
}

type Outcome<T> = std::result::Result<T, std::num::ParseIntError>;

/// Parse a number; the `Result` is behind an alias.
#[tool(safety = "safe")]
fn parse_number(text: String) -> Outcome<i64> {
    text.trim().parse()
}

/// A plain `Option` is a success, `None` included.
#[tool(safety = "safe")]
fn maybe(flag: bool) -> Option<u8> {
    flag.then_some(1)
}

#[test]
fn a_result_under_any_name_is_success_or_failure_and_anything_else_is_success() {
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [parse_number_tool, maybe_tool]).unwrap();
    block_on(async {
        let out = registry.execute("parse_number", json!({"text": " 12 "})).await.unwrap();
        assert_eq!(out.value, json!(12));
        let err = registry.execute("parse_number", json!({"text": "twelve"})).await.unwrap_err();
        assert_eq!(err.to_string(), "invalid digit found in string");
        assert_eq!(registry.execute("maybe", json!({"flag": false})).await.unwrap().value, Value::Null);
        assert_eq!(registry.execute("maybe", json!({"flag": true})).await.unwrap().value, json!(1));
    });
}

#[test]
fn no_generated_docs_reach_the_model_as_a_root_description() {
    for decl in [
        greet_tool::declaration(),
        which_call_tool::declaration(),
        order_status_tool::declaration(),
        tagged_tool::declaration(),
        nested::shout_tool::declaration(),
    ] {
        let schema = &decl.input_schema;
        assert_eq!(schema.get("description"), None, "{}: {schema}", decl.name);
        assert!(!schema.to_string().contains("Arguments of the"), "{}: {schema}", decl.name);
    }
    // Parameter docs still reach their properties.
    assert_eq!(greet_tool::declaration().input_schema["properties"]["name"]["description"], "Who to greet.");
}

#[test]
fn registry_names_follow_the_one_rule_and_say_what_they_count() {
    let err = toolreg::validate_name(&"\u{e9}".repeat(40)).unwrap_err();
    let RegistryError::InvalidName { reason, .. } = err else { panic!("{err:?}") };
    assert_eq!(
        reason,
        "a name may be at most 64 bytes long (UTF-8 bytes, not characters), this one is 80 bytes (40 characters)"
    );
}

mod user_named_args {
    use serde::Deserialize;
    use toolreg::tool;

    /// A user type that happens to share the generated struct's name.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub struct Args {
        pub n: u32,
    }

    /// Count, taking a user type called `Args` as its whole argument object.
    #[tool(safety = "safe")]
    pub fn count(args: Args) -> u32 {
        args.n
    }

    /// Count, taking a user type called `Args` as one argument.
    #[tool(safety = "safe")]
    pub fn count_named(#[arg] args: Args) -> u32 {
        args.n
    }
}

#[test]
fn a_user_type_called_args_means_the_user_type() {
    let schema = user_named_args::count_tool::declaration().input_schema;
    assert_eq!(schema["required"], json!(["n"]));
    let schema = user_named_args::count_named_tool::declaration().input_schema;
    assert_eq!(schema["required"], json!(["args"]));
    let mut registry = FunctionRegistry::new();
    registry.register(user_named_args::count_tool::registration()).unwrap();
    registry.register(user_named_args::count_named_tool::registration()).unwrap();
    assert_eq!(block_on(registry.execute("count", json!({"n": 3}))).unwrap().value, json!(3));
    assert_eq!(block_on(registry.execute("count_named", json!({"args": {"n": 4}}))).unwrap().value, json!(4));
}

/// A lone struct parameter with no attribute: the struct *is* the argument
/// object, and the declaration is `schema_for!(CalculatorArgs)`.
mod lone_struct {
    use serde::{Deserialize, Serialize};
    use toolreg::tool;

    #[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
    pub struct CalculatorArgs {
        /// `add`, `subtract`, `multiply` or `divide`.
        pub operation: String,
        pub a: f64,
        pub b: f64,
    }

    #[derive(Debug, Serialize)]
    pub struct CalculatorResult {
        pub result: f64,
    }

    #[tool(description = "Perform basic arithmetic operations")]
    pub async fn calculator(args: CalculatorArgs) -> Result<CalculatorResult, String> {
        let result = match args.operation.as_str() {
            "add" => args.a + args.b,
            "subtract" => args.a - args.b,
            "multiply" => args.a * args.b,
            "divide" if args.b == 0.0 => return Err("division by zero".into()),
            "divide" => args.a / args.b,
            other => return Err(format!("unknown operation `{other}`")),
        };
        Ok(CalculatorResult { result })
    }

    /// The same, synchronous, with the call's context beside the struct.
    #[tool(safety = "safe")]
    pub fn calculator_sync(#[context] cx: &toolreg::CallContext, args: CalculatorArgs) -> String {
        format!("{} {} for {}", args.operation, args.a + args.b, cx.call_id().unwrap_or("-"))
    }
}

#[test]
fn a_lone_struct_is_the_whole_argument_object() {
    use lone_struct::*;
    let declaration = calculator_tool::declaration();
    assert_eq!(declaration.input_schema, toolreg::schema::schema_for::<CalculatorArgs>());
    assert_eq!(declaration.input_schema["required"], json!(["operation", "a", "b"]));
    assert_eq!(declaration.description, "Perform basic arithmetic operations");

    let mut registry = FunctionRegistry::new();
    registry.register(calculator_tool::registration()).unwrap();
    registry.register(calculator_sync_tool::registration()).unwrap();
    // A call shaped as the declaration says, as value and as text.
    let out = block_on(registry.execute("calculator", json!({"operation": "add", "a": 2, "b": 3}))).unwrap();
    assert_eq!(out.value, json!({"result": 5.0}));
    let out = block_on(registry.execute_call(
        ToolCall::new("c", "calculator", r#"{"operation": "divide", "a": 1, "b": 4}"#),
        CallOptions::default(),
    ))
    .outcome
    .unwrap();
    assert_eq!(out.value, json!({"result": 0.25}));
    let err = block_on(registry.execute("calculator", json!({"operation": "divide", "a": 1, "b": 0}))).unwrap_err();
    assert_eq!(err, ToolError::Failed { message: "division by zero".into() });
    // The old wrapped shape is what is refused now.
    let err = block_on(registry.execute("calculator", json!({"args": {"operation": "add", "a": 2, "b": 3}})));
    assert!(matches!(err, Err(ToolError::InvalidArguments { .. })), "{err:?}");

    let schema = &registry.get("calculator_sync").unwrap().declaration().input_schema;
    assert_eq!(schema["required"], json!(["operation", "a", "b"]));
    let call = ToolCall::new("call_7", "calculator_sync", json!({"operation": "add", "a": 2, "b": 3}));
    let out = block_on(registry.execute_call(call, CallOptions::default())).outcome;
    assert_eq!(out.unwrap().value, json!("add 5 for call_7"));
}

/// Lone parameters whose schema is not an object with properties stay one
/// named argument; so does a lone struct marked `#[arg]` or documented.
mod lone_named {
    use std::collections::HashMap;

    use serde::Deserialize;
    use toolreg::tool;

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    pub struct Pair(pub f64, pub f64);

    #[derive(Debug, Deserialize, schemars::JsonSchema)]
    pub struct Nothing;

    /// Text.
    #[tool(safety = "safe")]
    pub fn text(s: String) -> usize {
        s.len()
    }

    /// A list of structs.
    #[tool(safety = "safe")]
    pub fn points(list: Vec<Point>) -> usize {
        list.len()
    }

    /// A map.
    #[tool(safety = "safe")]
    pub fn map(counts: HashMap<String, u32>) -> u32 {
        counts.values().sum()
    }

    /// An optional struct.
    #[tool(safety = "safe")]
    pub fn maybe_point(at: Option<Point>) -> bool {
        at.is_some()
    }

    /// A tuple struct.
    #[tool(safety = "safe")]
    pub fn pair(p: Pair) -> f64 {
        p.0 + p.1
    }

    /// A unit struct.
    #[tool(safety = "safe")]
    pub fn unit(n: Nothing) -> bool {
        let Nothing = n;
        true
    }

    /// A struct kept as one argument by `#[arg]`.
    #[tool(safety = "safe")]
    pub fn marked(#[arg] point: Point) -> f64 {
        point.x
    }

    /// A struct kept as one argument by its description.
    #[tool(safety = "safe")]
    pub fn documented(
        /// Where.
        point: Point,
    ) -> f64 {
        point.y
    }
}

#[test]
fn other_lone_parameters_stay_one_named_argument() {
    use lone_named::*;
    let cases = [
        (text_tool::registration(), "s", json!({"s": "abc"}), json!(3)),
        (points_tool::registration(), "list", json!({"list": [{"x": 1, "y": 2}]}), json!(1)),
        (map_tool::registration(), "counts", json!({"counts": {"a": 1, "b": 2}}), json!(3)),
        (pair_tool::registration(), "p", json!({"p": [1, 2]}), json!(3.0)),
        (unit_tool::registration(), "n", json!({"n": null}), json!(true)),
        (marked_tool::registration(), "point", json!({"point": {"x": 1, "y": 2}}), json!(1.0)),
        (documented_tool::registration(), "point", json!({"point": {"x": 1, "y": 2}}), json!(2.0)),
    ];
    let mut registry = FunctionRegistry::new();
    for (registration, arg, call, expected) in cases {
        let name = registration.name().to_owned();
        let schema = registration.declaration().input_schema.clone();
        assert_eq!(schema["required"], json!([arg]), "{name}: {schema}");
        registry.register(registration).unwrap();
        assert_eq!(block_on(registry.execute(&name, call)).unwrap().value, expected, "{name}");
    }
    assert_eq!(
        registry.get("documented").unwrap().declaration().input_schema["properties"]["point"]["description"],
        "Where."
    );
    // `Option<Point>`: an optional named argument, not the whole object.
    registry.register(maybe_point_tool::registration()).unwrap();
    let schema = &registry.get("maybe_point").unwrap().declaration().input_schema;
    assert!(schema["properties"].get("at").is_some() && schema.get("required").is_none(), "{schema}");
    assert_eq!(block_on(registry.execute("maybe_point", json!({}))).unwrap().value, json!(false));
    assert_eq!(block_on(registry.execute("maybe_point", json!({"at": {"x": 1, "y": 2}}))).unwrap().value, json!(true));
}

/// Look up the weather at a place.
#[tool(safety = "safe", title = "Weather now", idempotent = true, open_world = true)]
fn weather_titled(
    /// The place.
    place: String,
) -> String {
    place
}

#[test]
fn title_and_hints_reach_the_declaration_and_mcp() {
    use toolreg::provider::WireFormat;
    let decl = weather_titled_tool::declaration();
    assert_eq!(weather_titled("Oslo".to_owned()), "Oslo");
    assert_eq!(decl.title.as_deref(), Some("Weather now"));
    assert_eq!((decl.idempotent, decl.open_world), (Some(true), Some(true)));
    let declared = toolreg::provider::mcp::Mcp::new().declare(&[toolreg::provider::ToolRef::from(&decl)]).unwrap();
    let tool = &declared.tools[0];
    assert_eq!(tool["title"], "Weather now");
    assert_eq!(tool["annotations"]["title"], "Weather now");
    assert_eq!(tool["annotations"]["idempotentHint"], true);
    assert_eq!(tool["annotations"]["openWorldHint"], true);
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    // Not declared: not said (MCP's defaults apply).
    let plain = toolreg::provider::mcp::Mcp::new()
        .declare(&[toolreg::provider::ToolRef::from(&calculator_tool::declaration())])
        .unwrap();
    assert!(plain.tools[0]["annotations"].get("idempotentHint").is_none());
}

// ---- Rich returns: a block, a whole output ---------------------------------

/// Draw a one-pixel chart.
#[tool(safety = "safe")]
fn tiny_chart() -> toolreg::Content {
    toolreg::Content::image(vec![0x89, b'P', b'N', b'G'], "image/png")
}

/// Describe a chart: text, the image, and the numbers behind it.
#[tool(safety = "safe")]
async fn chart_report(
    /// How many points.
    points: u32,
) -> Result<toolreg::ToolOutput, String> {
    if points == 0 {
        return Err("nothing to draw".into());
    }
    Ok(toolreg::ToolOutput::from(vec![
        toolreg::Content::text(format!("{points} points:")),
        toolreg::Content::image(vec![1, 2, 3], "image/png"),
    ])
    .with_value(json!({"points": points}))
    .with_meta("render_ms", json!(3)))
}

#[tokio::test]
async fn a_tool_can_return_blocks_or_a_whole_output() {
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [tiny_chart_tool, chart_report_tool]).unwrap();

    let image = registry.execute("tiny_chart", json!({})).await.unwrap();
    assert_eq!(image.content, vec![toolreg::Content::image(vec![0x89, b'P', b'N', b'G'], "image/png")]);
    assert_eq!(image.structured(), None, "a block alone has no structured value");
    assert_eq!(image.text(), "[image: image/png, 4 bytes]");

    let report = registry.execute("chart_report", json!({"points": 2})).await.unwrap();
    assert_eq!(report.content.len(), 2);
    assert_eq!(report.structured(), Some(&json!({"points": 2})));
    assert_eq!(report.meta()["render_ms"], 3);
    assert_eq!(report.text(), "2 points:\n[image: image/png, 3 bytes]");

    let failed = registry.execute("chart_report", json!({"points": 0})).await.unwrap_err();
    assert_eq!(failed, ToolError::failed("nothing to draw"));
}

#[tokio::test]
async fn blocks_past_the_engine_limit_are_a_typed_error() {
    use toolreg::engine::{BatchOptions, ToolEngine};
    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [chart_report_tool]).unwrap();
    let engine = ToolEngine::builder(&registry).options(BatchOptions::default().max_content_bytes(4)).build();
    let result =
        engine.execute_call(ToolCall::new("c1", "chart_report", r#"{"points": 12}"#), CallOptions::default()).await;
    // "12 points:" (10 bytes) and 3 image bytes: 13 > 4.
    assert_eq!(result.outcome, Err(ToolError::ResultTooLarge { size: 13, limit: 4 }));
    let small = ToolEngine::builder(&registry).build();
    assert!(
        small
            .execute_call(ToolCall::new("c2", "chart_report", r#"{"points": 12}"#), CallOptions::default())
            .await
            .outcome
            .is_ok()
    );
}

/// Integers of every width, a `NonZero` and a float, one argument each.
#[tool(description = "Numbers of every width.", safety = "safe")]
#[allow(clippy::too_many_arguments)]
fn widths(
    a: u64,
    b: u8,
    c: i32,
    d: std::num::NonZeroI8,
    e: std::num::NonZeroU32,
    f: usize,
    g: f64,
    h: Option<u16>,
) -> String {
    format!("{a} {b} {c} {d} {e} {f} {g} {h:?}")
}

/// JSON Schema's own formats only: schemars' `uint64`, `int32`, `double`
/// and the like become the type's range (`minimum: 0` for unsigned), and
/// validation refuses what is out of range as before.
#[test]
fn number_arguments_have_standard_schemas_and_keep_their_ranges() {
    let schema = widths_tool::declaration().input_schema;
    assert!(!schema.to_string().contains("\"format\""), "{schema:#}");
    let p = &schema["properties"];
    assert_eq!(p["a"], json!({"type": "integer", "minimum": 0}));
    assert_eq!(p["b"], json!({"type": "integer", "minimum": 0, "maximum": 255}));
    assert_eq!(p["c"], json!({"type": "integer"}));
    assert_eq!(p["d"], json!({"type": "integer", "minimum": -128, "maximum": 127, "not": {"const": 0}}));
    assert_eq!(p["e"], json!({"type": "integer", "minimum": 1}));
    assert_eq!(p["f"], json!({"type": "integer", "minimum": 0}));
    assert_eq!(p["g"], json!({"type": "number"}));
    assert_eq!(p["h"], json!({"type": ["integer", "null"], "minimum": 0, "maximum": 65535}));

    let mut registry = FunctionRegistry::new();
    register_tools!(registry, [widths_tool]).unwrap();
    let ok = json!({"a": 1, "b": 2, "c": -3, "d": -4, "e": 5, "f": 6, "g": 0.5});
    assert_eq!(block_on(registry.execute("widths", ok.clone())).unwrap().value, json!("1 2 -3 -4 5 6 0.5 None"));
    for (field, bad) in
        [("a", json!(-1)), ("b", json!(256)), ("c", json!(1u64 << 31)), ("d", json!(0)), ("e", json!(0))]
    {
        let mut args = ok.clone();
        args[field] = bad.clone();
        let err = block_on(registry.execute("widths", args)).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{field} = {bad}: {err}");
    }
}
