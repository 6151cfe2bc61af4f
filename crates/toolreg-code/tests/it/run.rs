//! Programs calling tools through the engine, in a real worker process.

use crate::support as common;

use std::time::Duration;

use common::{code, code_with, engine, runs};
use serde_json::json;
use toolreg::policy::approver_fn;
use toolreg::policy::{ApprovalRequest, PrintedBefore};
use toolreg::{CallOptions, SafetyLevel, ToolCall, ToolDeclaration, ToolEngine, ToolExecutor, ToolRegistration};
use toolreg_code::{CodeError, Limits};

#[tokio::test]
async fn a_program_calls_tools_and_returns_only_its_result() {
    let runs = runs();
    let (engine, audit) = engine(&runs);
    let out = code()
        .run(
            &engine,
            "const a = await tools.add({a: 1, b: 2});\nconst b = await tools.add({a: a, b: 10});\nconsole.log('sum', \
             b);\nreturn {total: b};",
        )
        .await
        .unwrap();
    assert_eq!(out.value, json!({"total": 13}));
    assert_eq!(out.output, "sum 13\n");
    assert_eq!(out.calls, 2);
    assert_eq!(runs.lock().unwrap().len(), 2);
    let ids: Vec<String> = audit.events().iter().map(|e| e.call_id.clone()).collect();
    assert_eq!(ids, ["program/1", "program/2"]);
}

#[tokio::test]
async fn calls_started_together_run_as_one_batch_in_program_order() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let out = code()
        .run(
            &engine,
            "const texts = await Promise.all(['a', 'b', 'c'].map((t) => tools.echo({text: t})));\nreturn \
             texts.join('');",
        )
        .await
        .unwrap();
    assert_eq!(out.value, json!("abc"));
    let order: Vec<String> = runs.lock().unwrap().iter().map(|(_, a)| a["text"].as_str().unwrap().to_owned()).collect();
    assert_eq!(order.len(), 3);
}

#[tokio::test]
async fn a_failed_call_throws_a_tool_error_the_program_can_catch() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let out = code()
        .run(
            &engine,
            "try { await tools.fail({}); return 'no'; } catch (e) { return [e.name, e.kind, e.tool, e.message]; }",
        )
        .await
        .unwrap();
    assert_eq!(out.value, json!(["ToolError", "failed", "fail", "the disk is on fire"]));
}

#[tokio::test]
async fn invalid_arguments_are_refused_by_the_engine_and_seen_by_the_program() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let out = code().run(&engine, "try { await tools.add({a: 'one'}); } catch (e) { return e.kind; }").await.unwrap();
    assert_eq!(out.value, json!("invalid_arguments"));
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_dangerous_call_without_an_approver_does_not_run() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let out =
        code().run(&engine, "try { await tools.delete({path: '/etc'}); } catch (e) { return e.kind; }").await.unwrap();
    assert_eq!(out.value, json!("approval_required"));
    assert!(runs.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_approver_sees_each_call_of_the_program() {
    let runs = runs();
    let engine = ToolEngine::builder(&common::registry(&runs))
        .approver(approver_fn("test", |request: ApprovalRequest| async move {
            if request.arguments()["path"] == "ok.txt" { request.approve() } else { request.deny("not that one") }
        }))
        .build();
    let out = code()
        .run(
            &engine,
            "const a = await tools.delete({path: 'ok.txt'});\nlet b;\ntry { await tools.delete({path: '/etc'}); } \
             catch (e) { b = e.message; }\nreturn [a, b];",
        )
        .await
        .unwrap();
    assert_eq!(out.value[0], json!({"deleted": "ok.txt"}));
    assert!(out.value[1].as_str().unwrap().contains("not that one"), "{}", out.value);
    assert_eq!(runs.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_approver_is_shown_what_the_program_printed_before_the_call() {
    let runs = runs();
    let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&shown);
    let engine = ToolEngine::builder(&common::registry(&runs))
        .approver(approver_fn("test", move |request: ApprovalRequest| {
            let printed = request.extensions().get::<PrintedBefore>().map(|p| p.text().to_owned());
            seen.lock().unwrap().push(printed);
            async move { request.approve() }
        }))
        .build();
    code()
        .run(
            &engine,
            "await tools.delete({path: 'first.txt'});\nconsole.log('removing', {path: 'b.txt'});\nawait \
             tools.delete({path: 'b.txt'});",
        )
        .await
        .unwrap();
    assert_eq!(*shown.lock().unwrap(), [None, Some("removing {\"path\":\"b.txt\"}\n".to_owned())]);
}

/// A tool whose result's keys are not in alphabetical order.
fn about() -> ToolRegistration {
    ToolRegistration::new(
        ToolDeclaration::builder("about").description("About the project.").safety(SafetyLevel::Safe).build(),
        |_: serde_json::Value| {
            Ok::<_, String>(json!({"name": "toolreg", "langs": ["rust"], "version": {"major": 1, "beta": true}}))
        },
    )
}

#[tokio::test]
async fn tool_results_keep_the_key_order_the_tool_wrote() {
    let mut registry = toolreg::FunctionRegistry::new();
    registry.register(about()).unwrap();
    let engine = ToolEngine::builder(&registry).build();
    let out = code()
        .run(&engine, "const r = await tools.about();\nreturn [Object.keys(r), Object.keys(r.version), r];")
        .await
        .unwrap();
    assert_eq!(out.value[0], json!(["name", "langs", "version"]));
    assert_eq!(out.value[1], json!(["major", "beta"]));
    // And the program's own result keeps its order on the way back.
    assert_eq!(
        serde_json::to_string(&out.value[2]).unwrap(),
        r#"{"name":"toolreg","langs":["rust"],"version":{"major":1,"beta":true}}"#
    );
}

#[tokio::test]
async fn a_syntax_error_is_reported_with_its_line() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let error = code().run(&engine, "const x = 1;\nreturn x +* 2;").await.unwrap_err();
    let CodeError::Syntax { message } = &error else { panic!("{error:?}") };
    assert!(message.contains("line 2"), "{message}");
}

#[tokio::test]
async fn an_uncaught_exception_ends_the_program() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let error = code().run(&engine, "throw new RangeError('bad input');").await.unwrap_err();
    assert!(
        matches!(&error, CodeError::Exception { message } if message.contains("RangeError: bad input")),
        "{error:?}"
    );
    // With the program's own frames, at the lines the model wrote.
    let error = code().run(&engine, "function check(x) {\n  throw new Error('no ' + x);\n}\ncheck(3);").await;
    assert_eq!(
        error.unwrap_err(),
        CodeError::Exception {
            message: "Error: no 3\n    at check (line 2, column 27)\n    at line 4, column 1\n    at line 5, column 1"
                .into()
        }
    );
}

#[tokio::test]
async fn an_endless_loop_is_stopped() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let limits = Limits { time: Duration::from_millis(500), ..Limits::default() };
    let error = code_with(limits).run(&engine, "while (true) {}").await.unwrap_err();
    assert!(matches!(error, CodeError::StepLimit { .. } | CodeError::Timeout { .. }), "{error:?}");
}

#[tokio::test]
async fn run_code_is_a_tool_of_the_engine() {
    let runs = runs();
    let (engine, _) = engine(&runs);
    let engine = code().attach(&engine).unwrap();
    let declaration = engine.offered().get("run_code").unwrap().declaration();
    assert!(declaration.description.contains("add(args: {"), "{}", declaration.description);
    let result = engine
        .execute_call(
            ToolCall::new("c1", "run_code", json!({"code": "return await tools.add({a: 2, b: 2});"})),
            CallOptions::default(),
        )
        .await;
    assert_eq!(result.outcome.unwrap().value, json!({"result": 4}));
    let result = engine
        .execute_call(ToolCall::new("c2", "run_code", json!({"code": "throw new Error('x')"})), CallOptions::default())
        .await;
    assert!(result.outcome.unwrap_err().to_string().contains("uncaught exception"));
}

/// The session talks to the worker on a thread of its own; the tools still
/// run on the caller's runtime: one that spawns a task and sleeps on its
/// timer works from a program, on both kinds of runtime.
async fn a_runtime_bound_tool_works_from_a_program() {
    let mut registry = toolreg::FunctionRegistry::new();
    let declaration = toolreg::ToolDeclaration::builder("later")
        .description("Answer n, a little later.")
        .param("n", toolreg::ParamType::Integer, "The number")
        .safety(toolreg::SafetyLevel::Safe)
        .build();
    registry
        .register_async_tool(
            "later",
            |args: serde_json::Value| async move {
                let n = args["n"].as_i64().unwrap_or(0);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    n
                })
                .await
                .map_err(|e| e.to_string())
            },
            declaration,
        )
        .unwrap();
    let engine = ToolEngine::builder(&registry).build();
    let program = "let sum = 0;\nfor (let i = 0; i < 20; i++) sum += await tools.later({n: i});\nreturn sum;";
    let out = code().run(&engine, program).await.unwrap();
    assert_eq!(out.value, json!(190));
    assert_eq!(out.calls, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_runs_on_a_multi_thread_runtime() {
    a_runtime_bound_tool_works_from_a_program().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_program_runs_on_a_current_thread_runtime() {
    a_runtime_bound_tool_works_from_a_program().await;
}

/// Under an access policy, a program reaches only what the principal it
/// runs for may call: a call to another tool throws as for a tool that is
/// not there, and never runs.
#[tokio::test]
async fn a_program_reaches_only_what_its_principal_may_call() {
    let runs = runs();
    let policy: toolreg::policy::AccessPolicy =
        serde_json::from_value(json!({"roles": {"adder": {"allow": ["add", "run_code"]}}})).unwrap();
    let engine = ToolEngine::builder(&common::registry(&runs)).access(policy).build();
    let engine = code().attach(&engine).unwrap();
    let adder = toolreg::Principal::verified("https://as", "ada").with_scopes(["adder"]);
    let program = "const sum = await tools.add({a: 1, b: 2});\n\
                   try { await tools.echo({text: 'hi'}); return 'echo ran'; } catch (e) { return [sum, 'refused']; }";
    let result = engine
        .execute_call(ToolCall::new("c1", "run_code", json!({"code": program})), CallOptions::new().principal(adder))
        .await;
    assert_eq!(result.outcome.unwrap().value, json!({"result": [3, "refused"]}));
    assert_eq!(runs.lock().unwrap().iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), ["add"]);
    // Someone without the role cannot run a program at all.
    let result = engine
        .execute_call(ToolCall::new("c2", "run_code", json!({"code": "return 1;"})), CallOptions::default())
        .await;
    assert!(matches!(result.outcome, Err(toolreg::ToolError::Forbidden { .. })), "{:?}", result.outcome);
}
