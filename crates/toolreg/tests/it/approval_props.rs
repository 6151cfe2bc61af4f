//! Property: no dangerous tool ever runs without an approval for exactly its
//! arguments (and its call), whatever the approver, the hooks or the calls do.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use serde_json::{Value, json};
use toolreg::engine::{ToolEngine, hook_fn};
use toolreg::policy::{ApprovalRequest, ArgumentsHash, Decision, approver_fn};
use toolreg::{
    CallContext, CallOptions, FunctionRegistry, ParamType, SafetyLevel, ToolCall, ToolDeclaration, ToolRegistration,
};

#[derive(Debug, Clone)]
enum Behaviour {
    Approve,
    Deny,
    /// Approve with these (complete, so validation adds nothing) arguments.
    Edit(String, i64),
    /// Approve with arguments that fail validation.
    EditInvalid,
    /// Answer with the approval kept from an earlier request, if any.
    Replay,
    /// Answer with an approval minted for a made-up request about other arguments.
    Forge(String),
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        Just(Behaviour::Approve),
        Just(Behaviour::Deny),
        (path(), 0i64..3).prop_map(|(p, n)| Behaviour::Edit(p, n)),
        Just(Behaviour::EditInvalid),
        Just(Behaviour::Replay),
        path().prop_map(Behaviour::Forge),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![Just("/tmp/a".to_owned()), Just("/tmp/b".to_owned()), Just("rewrite-me".to_owned())]
}

/// Argument text: mostly valid, sometimes missing the default, sometimes invalid.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        (path(), 0i64..3).prop_map(|(p, n)| json!({"path": p, "n": n})),
        path().prop_map(|p| json!({"path": p})),
        Just(json!({"path": 7})),
    ]
}

type Runs = Arc<Mutex<Vec<(String, Value)>>>;

fn registry(runs: &Runs) -> FunctionRegistry {
    let decl = ToolDeclaration::builder("rm")
        .description("Remove a file")
        .param("path", ParamType::String, "the path")
        .param_with_default("n", ParamType::Integer, "how many", json!(1))
        .safety(SafetyLevel::Dangerous)
        .build();
    let runs = Arc::clone(runs);
    let mut registry = FunctionRegistry::new();
    registry
        .register(ToolRegistration::new(decl, move |cx: CallContext, args: Value| {
            runs.lock().unwrap().push((cx.call_id().unwrap_or_default().to_owned(), args));
            Ok::<_, String>("removed")
        }))
        .unwrap();
    registry
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_dangerous_run_without_an_approval_for_exactly_its_arguments(
        calls in proptest::collection::vec((0u8..3, arguments(), behaviour()), 1..8),
        rewriting_hook in any::<bool>(),
        with_approver in any::<bool>(),
        batch in any::<bool>(),
    ) {
        let runs: Runs = Arc::default();
        // (call id, hash) pairs the approver approved, each for the request it was shown.
        let approved: Arc<Mutex<HashSet<(String, ArgumentsHash)>>> = Arc::default();
        let kept: Arc<Mutex<Option<Decision>>> = Arc::default();
        let plan: Arc<Mutex<Vec<Behaviour>>> = Arc::new(Mutex::new(calls.iter().map(|c| c.2.clone()).rev().collect()));

        let mut builder = ToolEngine::builder(&registry(&runs));
        if with_approver {
            let (approved, kept, plan) = (Arc::clone(&approved), Arc::clone(&kept), Arc::clone(&plan));
            builder = builder.approver(approver_fn("prop", move |request: ApprovalRequest| {
                let behaviour = plan.lock().unwrap().pop().unwrap_or(Behaviour::Deny);
                let id = request.call_id().unwrap_or_default().to_owned();
                let decision = match behaviour {
                    Behaviour::Approve => {
                        approved.lock().unwrap().insert((id, request.arguments_hash()));
                        request.approve()
                    }
                    Behaviour::Deny => request.deny("no"),
                    Behaviour::Edit(p, n) => {
                        let args = json!({"path": p, "n": n});
                        approved.lock().unwrap().insert((id, ArgumentsHash::of(&args)));
                        request.approve_with(args)
                    }
                    Behaviour::EditInvalid => request.approve_with(json!({"path": ["not", "a", "string"]})),
                    Behaviour::Replay => kept.lock().unwrap().clone().unwrap_or_else(|| request.deny("nothing kept")),
                    Behaviour::Forge(p) => {
                        let forged = ApprovalRequest::new(
                            Arc::new(request.declaration().clone()),
                            request.call_id(),
                            json!({"path": p, "n": 9}),
                        );
                        forged.approve()
                    }
                };
                if matches!(decision, Decision::Approve(_)) {
                    kept.lock().unwrap().get_or_insert(decision.clone());
                }
                async move { decision }
            }));
        }
        if rewriting_hook {
            builder = builder.layer(hook_fn(|mut call, next| async move {
                if call.arguments["path"] == "rewrite-me" {
                    call.arguments["path"] = json!("/etc/passwd");
                }
                next.run(call).await
            }));
        }
        let engine = builder.build();
        let tool_calls: Vec<ToolCall> =
            calls.iter().map(|(id, args, _)| ToolCall::new(format!("c{id}"), "rm", args.clone())).collect();

        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let results = runtime.block_on(async {
            if batch {
                engine.execute_batch(tool_calls, CallOptions::default()).await
            } else {
                let mut results = Vec::new();
                for call in tool_calls {
                    results.push(toolreg::ToolExecutor::execute_call(&engine, call, CallOptions::default()).await);
                }
                results
            }
        });

        prop_assert_eq!(results.len(), calls.len());
        let runs = runs.lock().unwrap();
        if !with_approver {
            prop_assert!(runs.is_empty());
        }
        let approved = approved.lock().unwrap();
        for (id, args) in runs.iter() {
            prop_assert!(
                approved.contains(&(id.clone(), ArgumentsHash::of(args))),
                "{} ran with {} without an approval for exactly that", id, args
            );
            prop_assert_ne!(&args["path"], "/etc/passwd");
        }
        let ran = results.iter().filter(|r| !r.is_error()).count();
        prop_assert_eq!(ran, runs.len());
    }
}
