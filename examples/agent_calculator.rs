//! A calculator tool used by an agent.
//!
//! The tool is a plain Rust function registered with one call; the agent
//! loop offers it to a model, runs the model's calls (good and bad) and hands
//! the results back until the model answers.
//!
//! With `OPENAI_BASE_URL` or `OPENAI_API_KEY` (an OpenAI-compatible server:
//! OpenAI, a local Ollama at `http://localhost:11434/v1`, vLLM, …),
//! `ANTHROPIC_API_KEY`, `GOOGLE_API_KEY` or `GEMINI_API_KEY` set, it asks that model
//! (`TOOLREG_MODEL` names it). Otherwise it runs offline against a scripted
//! model, so it always works without a key.
//!
//! Run with `cargo run --example agent_calculator`.

use serde::{Deserialize, Serialize};
use toolreg::provider::Provider;
use toolreg::{FunctionRegistry, ToolCall, tool};
use toolreg_llm::LlmClient;
use toolreg_llm::agent::{Agent, AgentEvent, RunOutcome};
use toolreg_llm::client;
use toolreg_llm::scripted::ScriptedClient;

/// An arithmetic operation.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// Arguments of the calculator: as the lone parameter of the tool, this
/// struct is the whole argument object (`{"operation": "add", "a": 2, "b": 3}`).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
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
async fn calculator(args: CalculatorArgs) -> Result<CalculatorResult, String> {
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

/// The model named by the environment, or a scripted one.
fn model() -> Result<(std::sync::Arc<dyn LlmClient>, String), Box<dyn std::error::Error>> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let pick = |kind, default: &str| -> Result<_, Box<dyn std::error::Error>> {
        let model = env("TOOLREG_MODEL").unwrap_or_else(|| default.to_owned());
        Ok((std::sync::Arc::from(client::from_env(kind)?), model))
    };
    if env("OPENAI_BASE_URL").is_some() || env("OPENAI_API_KEY").is_some() {
        return pick(Provider::OpenAiChat, "gpt-4.1-mini");
    }
    if env("ANTHROPIC_API_KEY").is_some() {
        return pick(Provider::Anthropic, "claude-sonnet-4-5");
    }
    if env("GOOGLE_API_KEY").is_some() || env("GEMINI_API_KEY").is_some() {
        return pick(Provider::Gemini, "gemini-2.5-flash");
    }
    // Offline: a model that makes the calls a real one might, mistakes included.
    let scripted = ScriptedClient::new()
        .then_calls(vec![
            ToolCall::new("call_1", "calculator", r#"{"operation": "multiply", "a": 6, "b": 7}"#),
            ToolCall::new("call_2", "calculator", r#"{"operation": "divide", "a": 1, "b": 0}"#),
            ToolCall::new("call_3", "calculator", r#"{"operation": "power", "a": 2, "b": "#),
        ])
        .then_call("call_4", "calculator", r#"{"operation": "divide", "a": 1, "b": 4}"#)
        .then_text("6 × 7 = 42, and 1 / 4 = 0.25 (1 / 0 has no answer).");
    Ok((std::sync::Arc::new(scripted), "scripted".to_owned()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = FunctionRegistry::new();
    registry.register(calculator_tool::registration())?;
    let (client, model) = model()?;
    println!("model: {} ({model})", client.name());

    let agent = Agent::builder_shared(client, model, toolreg::ToolEngine::builder(&registry))
        .system("You are a careful calculator. Use the calculator tool for every computation.")
        .on_event(|event| match event {
            AgentEvent::ModelRequest { step, .. } => println!("-- step {step}: asking the model"),
            AgentEvent::ToolCall(call) => println!("   model calls {}({})", call.name, call.arguments),
            AgentEvent::ToolResult(result) => {
                let mark = if result.is_error { "error" } else { "ok" };
                println!("   {mark}: {}", result.content.lines().next().unwrap_or_default());
            }
            _ => {}
        })
        .build();
    match agent.run("What are 6 × 7 and 1 / 0 and 1 / 4?").await? {
        RunOutcome::Finished(done) => {
            println!("answer: {}", done.answer);
            println!("({} model requests, {} tokens)", done.steps, done.usage.total());
        }
        RunOutcome::Suspended(_) => println!("the run waits for an approval (none needed here)"),
    }
    Ok(())
}
