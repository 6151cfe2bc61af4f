//! The agent loop's own cost, the model excluded (a scripted model answers
//! at once).
//!
//! - `agent/loop_10_steps_20_tools`: a run of ten model requests (nine that
//!   call a trivial tool, one that answers) with twenty tools offered; the
//!   throughput line is per step (target ≤ 50 µs per step).
//! - `agent/spawn_many_100`: one `spawn_many` of 100 sub-agents, each
//!   returning a result at once.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolEngine};
use toolreg_llm::Message;
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, AgentLimits, RunOutcome};
use toolreg_llm::scripted::{ScriptedClient, calls_response, text_response};

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for i in 0..20 {
        let name = format!("tool_{i}");
        let decl = ToolDeclaration::builder(&name)
            .description("A trivial tool.")
            .param("n", ParamType::Integer, "a number")
            .safety(SafetyLevel::Safe)
            .build();
        registry.register_sync_tool(&name, |args: Value| Ok::<_, String>(args), decl).unwrap();
    }
    AgentTools::new().register(&mut registry).unwrap();
    registry
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let registry = registry();

    // Nine steps calling a tool, then an answer: the model counts the tool results.
    let model = ScriptedClient::from_fn(|request| {
        let done = request.messages.iter().filter(|m| matches!(m, Message::Tool { .. })).count();
        if done < 9 {
            Ok(calls_response(vec![ToolCall::new(format!("c{done}"), "tool_3", json!({"n": done}))]))
        } else {
            Ok(text_response("done"))
        }
    })
    .unrecorded();
    let agent = Agent::builder(model, "scripted", ToolEngine::builder(&registry))
        .limits(AgentLimits::default().max_steps(10))
        .build();
    let mut group = c.benchmark_group("agent");
    group.throughput(Throughput::Elements(10)).measurement_time(Duration::from_secs(5));
    group.bench_function("loop_10_steps_20_tools", |b| {
        b.to_async(&runtime).iter(|| async {
            match agent.run("count").await {
                Ok(RunOutcome::Finished(done)) => assert_eq!(done.steps, 10),
                other => panic!("{other:?}"),
            }
        })
    });
    group.finish();

    let tasks: Vec<Value> = (0..100).map(|i| json!({"task": format!("child {i}")})).collect();
    let model = ScriptedClient::from_fn(move |request| {
        let Some(Message::User { text }) = request.messages.first() else { return Ok(text_response("")) };
        let answered = matches!(request.messages.last(), Some(Message::Tool { .. }));
        if text == "parent" {
            if answered {
                return Ok(text_response("all done"));
            }
            return Ok(calls_response(vec![ToolCall::new("p", "spawn_many", json!({"tasks": tasks}))]));
        }
        Ok(calls_response(vec![ToolCall::new("r", "return_result", json!({"value": 1}))]))
    })
    .unrecorded();
    let agent = Agent::builder(model, "scripted", ToolEngine::builder(&registry))
        .limits(AgentLimits::default().max_steps(200))
        .build();
    let mut group = c.benchmark_group("agent");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    group.bench_function("spawn_many_100", |b| {
        b.to_async(&runtime).iter(|| async {
            match agent.run("parent").await {
                Ok(RunOutcome::Finished(done)) => assert_eq!(done.answer, "all done"),
                other => panic!("{other:?}"),
            }
        })
    });
    group.finish();
}

criterion_group!(agent, benches);
criterion_main!(agent);
