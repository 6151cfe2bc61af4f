//! A calculator tool as an agent would use it, offline and without an API key.
//!
//! The tool is written as a plain Rust function, registered with one call,
//! and its declaration printed as a model would receive it. Then the tool
//! calls of a scripted model turn, good and bad, are executed, and each
//! result is printed as the model would read it.
//!
//! Run with `cargo run --example agent_calculator`.

use serde::{Deserialize, Serialize};
use toolreg::{FunctionRegistry, ToolArgs, ToolCall, ToolExecutor, tool};

/// An arithmetic operation.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// Arguments of the calculator.
#[derive(Debug, Deserialize, schemars::JsonSchema, ToolArgs)]
struct CalculatorArgs {
    /// The operation to perform.
    operation: Operation,
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
}

/// The calculator's answer.
#[derive(Debug, Serialize)]
struct CalculatorResult {
    operation: Operation,
    result: f64,
}

#[tool(description = "Perform basic arithmetic operations", safety = "safe", category = "math")]
async fn calculator(#[args] args: CalculatorArgs) -> Result<CalculatorResult, String> {
    let result = match args.operation {
        Operation::Add => args.a + args.b,
        Operation::Subtract => args.a - args.b,
        Operation::Multiply => args.a * args.b,
        Operation::Divide if args.b == 0.0 => {
            return Err("Cannot divide by zero; ask the user for another divisor.".into());
        }
        Operation::Divide => args.a / args.b,
    };
    Ok(CalculatorResult { operation: args.operation, result })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = FunctionRegistry::new();
    registry.register(calculator_tool::registration())?;

    println!("Declarations sent to the model:");
    println!("{}\n", serde_json::to_string_pretty(&registry.get_declarations())?);

    // One model turn's tool calls, arguments as JSON text the way models emit them.
    let turn = [
        ToolCall::new("call_1", "calculator", r#"{"operation": "multiply", "a": 6, "b": 7}"#),
        ToolCall::new("call_2", "calculator", r#"{"operation": "divide", "a": 1, "b": 0}"#),
        ToolCall::new("call_3", "calculator", r#"{"operation": "power", "a": "two"}"#),
        ToolCall::new("call_4", "calculator", r#"{"operation": "add", "a": 1, "b": "#),
        ToolCall::new("call_5", "calculate", r#"{}"#),
    ];
    for call in turn {
        println!("→ {} {}({})", call.id, call.name, call.arguments);
        let result = registry.execute_call(call).await;
        let status = if result.is_error() { "error" } else { "ok" };
        println!("← {} [{status}] {}\n", result.id, result.text());
    }
    Ok(())
}
