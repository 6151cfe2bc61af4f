//! `#[tool]` end to end: generated modules, schemas, sync and async calls,
//! return types, options, and `register_tools!`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolreg::{
    CallContext, FunctionRegistry, RegistryError, SafetyLevel, Scope, ToolDeclaration, ToolError, register_tools, tool,
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
#[derive(Debug, Deserialize, schemars::JsonSchema)]
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
async fn calculator(args: CalculatorArgs) -> Result<CalculatorResult, String> {
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
fn which_call(cx: CallContext) -> Option<String> {
    cx.call_id().map(str::to_owned)
}

/// Fail on purpose.
#[tool]
pub(crate) fn always_fails(reason: String) -> Result<(), std::io::Error> {
    Err(std::io::Error::other(reason))
}

/// Sleep briefly, then answer.
#[tool(safety = "safe")]
async fn slow_answer(cx: CallContext, millis: u64) -> u64 {
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
fn generates_the_module_the_seed_names() {
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
                "a": {"type": "number", "format": "double", "description": "Left operand."},
                "b": {"type": "number", "format": "double", "description": "Right operand."}
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

        let out = registry.execute_with("which_call", json!({}), CallContext::new("call_9")).await.unwrap();
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
    let cx = CallContext::new("c").with_cancellation(token);
    let out = block_on(registry.execute_with("slow_answer", json!({"millis": 60_000}), cx)).unwrap();
    assert_eq!(out.value, json!(0));
    let out = block_on(registry.execute("slow_answer", json!({"millis": 1}))).unwrap();
    assert_eq!(out.value, json!(1));
}

#[test]
fn register_tools_is_all_or_nothing() {
    let mut registry = FunctionRegistry::new();
    registry.register(greet_tool::registration()).unwrap();
    let err = register_tools!(registry, [calculator_tool, greet_tool]).unwrap_err();
    assert_eq!(err, RegistryError::DuplicateTool { name: "greet-person".into() });
    assert_eq!(registry.names().collect::<Vec<_>>(), ["greet-person"]);
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
