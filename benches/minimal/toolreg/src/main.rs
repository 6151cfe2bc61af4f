//! One `#[tool]` function, registered and called by name with JSON arguments.
use toolreg::{FunctionRegistry, tool};

/// Add two numbers.
#[tool(safety = "safe")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = FunctionRegistry::new();
    registry.register(add_tool::registration())?;
    let output = registry.execute("add", serde_json::json!({"a": 2, "b": 3})).await?;
    println!("{output:?}");
    Ok(())
}
