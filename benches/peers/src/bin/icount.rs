//! N registry calls of a flat text-only tool, the model's text arguments in,
//! the result's text out: what an instruction count compares across checkouts.
//! `icount N engine` makes the same calls through an engine with selection,
//! an approver and a JSON-lines audit sink (the peer bench's `engine` group).
use serde::Deserialize;
use toolreg::{CallOptions, FunctionRegistry, ToolCall, ToolDeclaration, ToolExecutor, ToolRegistration};

#[derive(Deserialize, schemars::JsonSchema)]
struct Args {
    city: String,
    days: u32,
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let mut registry = FunctionRegistry::new();
    let decl = ToolDeclaration::for_args::<Args>("forecast", "Forecast");
    let forecast = |a: Args| Ok::<_, String>(format!("{} in {} days", a.city, a.days));
    #[cfg(not(feature = "legacy-registration"))]
    let registration = ToolRegistration::new(decl, forecast);
    #[cfg(feature = "legacy-registration")]
    let registration = ToolRegistration::from_sync("forecast", forecast, decl);
    registry.register(registration).unwrap();
    // `icount N engine`: through an engine with selection, an approver and a
    // JSON-lines audit sink, as the peer bench's `engine` group.
    let engine_mode = std::env::args().nth(2).as_deref() == Some("engine");
    let engine = toolreg::ToolEngine::builder(&registry)
        .selection(toolreg::policy::Selection::sub_agent().max_safety(toolreg::SafetyLevel::Cautious))
        .approver(toolreg::policy::PolicyApprover::new().approve_tool("*"))
        .audit(toolreg::policy::JsonLinesSink::new(std::io::sink()))
        .build();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut total = 0usize;
    rt.block_on(async {
        for i in 0..n {
            let call = ToolCall::new(format!("c{i}"), "forecast", r#"{"city": "Oslo", "days": 3}"#);
            let result = if engine_mode {
                engine.execute_call(call, CallOptions::default()).await
            } else {
                registry.execute_call(call, CallOptions::default()).await
            };
            total += result.text().len();
        }
    });
    println!("{total}");
}
