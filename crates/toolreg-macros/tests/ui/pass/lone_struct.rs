// A lone struct parameter, no attribute, no `ToolArgs`: the struct is the
// whole argument object.
use serde::{Deserialize, Serialize};
use toolreg::tool;

#[derive(Deserialize, schemars::JsonSchema)]
struct CalculatorArgs {
    a: f64,
    b: f64,
}

#[derive(Serialize)]
struct CalculatorResult {
    value: f64,
}

#[tool(description = "Perform basic arithmetic operations")]
async fn calculator(args: CalculatorArgs) -> Result<CalculatorResult, String> {
    Ok(CalculatorResult { value: args.a + args.b })
}

fn main() {
    let mut registry = toolreg::FunctionRegistry::new();
    registry.register(calculator_tool::registration()).unwrap();
    let declaration = calculator_tool::declaration();
    assert_eq!(declaration.input_schema, toolreg::schema::schema_for::<CalculatorArgs>());
}
