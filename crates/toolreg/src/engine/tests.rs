//! How often a call's arguments are validated: once, and again only when a
//! hook or an approver's edit changed them.

use serde_json::{Value, json};

use crate::engine::{HookCall, Next, OutputBudget, ToolEngine, ToolLayer, hook_fn};
use crate::exec::{ToolCall, ToolExecutor};
use crate::policy::{ApprovalRequest, approver_fn};
use crate::validate::VALIDATIONS;
use crate::{CallOptions, FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration, ToolFuture};

fn registry() -> FunctionRegistry {
    let mut registry = FunctionRegistry::new();
    for (name, safety) in [("look", SafetyLevel::Safe), ("rm", SafetyLevel::Dangerous)] {
        let decl = ToolDeclaration::builder(name)
            .description("test tool")
            .param("path", ParamType::String, "a path")
            .safety(safety)
            .build();
        registry.register_sync_tool(name, |args: Value| Ok::<_, String>(args), decl).unwrap();
    }
    registry
}

/// Run one call on a current-thread runtime and count the validations it made.
fn validations(engine: &ToolEngine, tool: &str, args: Value) -> (usize, crate::ToolResult) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    VALIDATIONS.with(|n| n.set(0));
    let result = runtime.block_on(engine.execute_call(ToolCall::new("c1", tool, args), CallOptions::default()));
    (VALIDATIONS.with(std::cell::Cell::get), result)
}

#[test]
fn a_layer_that_leaves_the_arguments_alone_costs_no_second_validation() {
    let engine = ToolEngine::builder(&registry()).layer(OutputBudget::new(1_000)).build();
    let (count, result) = validations(&engine, "look", json!({"path": "a"}));
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(count, 1);
    // A hook that only reads the arguments does not mark them either.
    let engine = ToolEngine::builder(&registry())
        .layer(hook_fn(|call, next| async move {
            assert_eq!(call.arguments["path"], "a");
            next.run(call).await
        }))
        .build();
    assert_eq!(validations(&engine, "look", json!({"path": "a"})).0, 1);
}

#[test]
fn a_hook_that_edits_the_arguments_has_them_validated_again() {
    let engine = ToolEngine::builder(&registry())
        .layer(hook_fn(|mut call, next| async move {
            call.arguments["path"] = json!(call.arguments["path"].as_str() == Some("bad"));
            next.run(call).await
        }))
        .build();
    let (count, result) = validations(&engine, "look", json!({"path": "a"}));
    assert_eq!(count, 2);
    // The edit broke the schema (a boolean path): the second validation caught it.
    assert!(matches!(result.outcome, Err(crate::ToolError::InvalidArguments { .. })), "{result:?}");
}

#[test]
fn an_approvers_edit_is_validated_again() {
    let approver =
        approver_fn(
            "editor",
            |request: ApprovalRequest| async move { request.approve_with(json!({"path": "/tmp/safe"})) },
        );
    let engine = ToolEngine::builder(&registry()).approver(approver).layer(OutputBudget::new(1_000)).build();
    let (count, result) = validations(&engine, "rm", json!({"path": "/etc"}));
    assert_eq!(result.value(), Some(&json!({"path": "/tmp/safe"})));
    assert_eq!(count, 2);
    // Approved as asked: validated once, hooks or not.
    let approver = approver_fn("yes", |request: ApprovalRequest| async move { request.approve() });
    let engine = ToolEngine::builder(&registry()).approver(approver).layer(OutputBudget::new(1_000)).build();
    assert_eq!(validations(&engine, "rm", json!({"path": "/etc"})).0, 1);
}

/// A hand-written layer that swaps the arguments for others.
struct Swap;

impl ToolLayer for Swap {
    fn call(&self, mut call: HookCall, next: Next) -> ToolFuture {
        *call.arguments = json!({"path": "/etc/passwd"});
        next.run(call)
    }
}

#[test]
fn a_change_after_approval_is_refused() {
    let approver = approver_fn("yes", |request: ApprovalRequest| async move { request.approve() });
    let engine = ToolEngine::builder(&registry()).approver(approver).layer(Swap).build();
    let (count, result) = validations(&engine, "rm", json!({"path": "/tmp/a"}));
    assert_eq!(count, 2, "the changed arguments are validated again");
    match &result.outcome {
        Err(crate::ToolError::ApprovalMismatch { detail }) => assert!(detail.contains("changed after"), "{detail}"),
        other => panic!("expected ApprovalMismatch, got {other:?}"),
    }
    // The same layer on a tool that needs no approval just has its edit validated.
    let (count, result) = validations(&engine, "look", json!({"path": "/tmp/a"}));
    assert_eq!((count, result.value()), (2, Some(&json!({"path": "/etc/passwd"}))));
}

#[test]
fn a_registry_call_is_validated_once() {
    let registry = registry();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    VALIDATIONS.with(|n| n.set(0));
    let result = runtime.block_on(registry.execute("look", json!({"path": "a"})));
    assert!(result.is_ok());
    assert_eq!(VALIDATIONS.with(std::cell::Cell::get), 1);
}
