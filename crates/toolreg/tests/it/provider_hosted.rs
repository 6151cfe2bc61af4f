//! Provider-hosted programmatic calls (Anthropic's programmatic tool
//! calling) at the format level, against responses shaped as Anthropic's
//! programmatic tool calling page documents them: tools declared callable
//! from code, calls read with their caller, the turn repeated verbatim and
//! answered with tool results only.

use crate::support as common;

use serde_json::{Value, json};
use toolreg::provider::anthropic::Anthropic;
use toolreg::provider::openai_responses::OpenAiResponses;
use toolreg::provider::{
    Caller, CodeExecution, FormatOptions, HostedTurn, Provider, ProviderError, ToolRef, ToolStatus, WireFormat,
};
use toolreg::{CallOptions, ParamType, ToolDeclaration, ToolExecutor, ToolOutput, ToolResult};

fn query() -> ToolDeclaration {
    ToolDeclaration::builder("query_database")
        .description("Execute a SQL query against the sales database.")
        .param("sql", ParamType::String, "SQL query to execute")
        .build()
}

fn delete() -> ToolDeclaration {
    ToolDeclaration::builder("delete_rows").param("table", ParamType::String, "Table").build()
}

#[test]
fn tools_are_declared_callable_from_code_execution_only_when_asked() {
    let tools = [query(), delete()];
    let refs: Vec<ToolRef<'_>> = tools.iter().map(ToolRef::from).collect();

    // Off by default: nothing changes.
    let plain = Anthropic::new().declare(&refs).unwrap();
    assert_eq!(plain.tools.as_array().unwrap().len(), 2);
    assert!(plain.tools.as_array().unwrap().iter().all(|t| t.get("allowed_callers").is_none()));

    // Every tool, from code and directly; the code execution tool last.
    let all = Anthropic::new().code_execution(CodeExecution::new()).declare(&refs).unwrap();
    assert_eq!(all.tools[0]["allowed_callers"], json!(["direct", "code_execution_20260120"]));
    assert_eq!(all.tools[1]["allowed_callers"], json!(["direct", "code_execution_20260120"]));
    assert_eq!(all.tools[2], json!({"type": "code_execution_20260120", "name": "code_execution"}));
    assert_eq!(all.tools.as_array().unwrap().len(), 3);

    // Some tools, from code only, with another version of the tool.
    let code = CodeExecution::new().version("code_execution_20250825").tools(["query_database"]).code_only(true);
    let some = Anthropic::with_options(FormatOptions::new().code_execution(code)).declare(&refs).unwrap();
    assert_eq!(some.tools[0]["allowed_callers"], json!(["code_execution_20250825"]));
    assert!(some.tools[1].get("allowed_callers").is_none(), "delete_rows stays direct only");
    assert_eq!(some.tools[2], json!({"type": "code_execution_20250825", "name": "code_execution"}));

    // The view written straight to text says the same.
    let view = Anthropic::new().code_execution(CodeExecution::new()).declare_partial(&refs);
    assert_eq!(view.tools.len(), 2, "our tools; the code execution tool is the provider's");
    let text: Value = serde_json::from_str(&serde_json::to_string(&view.tools).unwrap()).unwrap();
    assert_eq!(text, all.tools);
}

#[test]
fn a_tool_named_like_the_code_execution_tool_is_refused() {
    let ours = ToolDeclaration::builder("code_execution").param("code", ParamType::String, "Code").build();
    let tools = [query(), ours];
    let refs: Vec<ToolRef<'_>> = tools.iter().map(ToolRef::from).collect();
    let declared = Anthropic::new().code_execution(CodeExecution::new()).declare_partial(&refs).into_value();
    let refused: Vec<_> = declared.refused().collect();
    assert_eq!(refused.len(), 1);
    assert!(matches!(refused[0].1, ProviderError::NameCollision { second, .. } if second == "code_execution"));
    assert_eq!(declared.tools.as_array().unwrap().len(), 2, "query_database and the code execution tool");
    // Without code execution it is an ordinary tool.
    let plain = Anthropic::new().declare_partial(&refs).into_value();
    assert!(plain.report.iter().all(|r| r.status == ToolStatus::Declared));
}

#[test]
fn a_call_from_code_is_read_with_its_caller_and_its_turn_kept_whole() {
    let tools = [query()];
    let refs: Vec<ToolRef<'_>> = tools.iter().map(ToolRef::from).collect();
    let format = Anthropic::new().code_execution(CodeExecution::new());
    let declared = format.declare(&refs).unwrap();
    let response = common::fixture("anthropic_programmatic_call.json");

    let read = format.read_calls(&response, &declared.mapping).unwrap();
    assert_eq!(read.calls.len(), 1);
    assert_eq!(read.calls[0].id, "toolu_def456");
    assert_eq!(read.calls[0].name, "query_database");
    assert_eq!(
        read.caller("toolu_def456"),
        Some(&Caller::CodeExecution { kind: "code_execution_20260120".into(), tool_id: "srvtoolu_abc123".into() })
    );
    assert_eq!(read.caller("toolu_other"), None);
    let turn = read.hosted.as_ref().expect("a hosted turn");
    assert_eq!(turn.container.as_deref(), Some("container_xyz789"));
    assert_eq!(turn.expires_at.as_deref(), Some("2026-01-15T14:30:00Z"));
    assert_eq!(turn.content, response["content"].as_array().unwrap().clone());

    // The history repeats the turn exactly: server block, text and call with its caller.
    let history = format.render_turn("ignored", &read.sent, Some(turn), &declared.mapping);
    assert_eq!(history, vec![json!({"role": "assistant", "content": response["content"]})]);
    // Without a hosted turn, the turn is rendered as any other.
    assert_eq!(
        format.render_turn("Hi", &read.sent, None, &declared.mapping),
        format.render_calls("Hi", &read.sent, &declared.mapping)
    );

    // The answer is one user message of tool_result blocks, nothing else.
    let result = ToolResult {
        id: "toolu_def456".into(),
        name: "query_database".into(),
        outcome: Ok(ToolOutput::new(json!([{"customer_id": "C1", "revenue": 45000}]))),
    };
    let answer = format.render_results(&[result], &declared.mapping).messages;
    assert_eq!(answer.len(), 1);
    assert_eq!(answer[0]["role"], "user");
    let blocks = answer[0]["content"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] == "tool_result"));
    assert_eq!(blocks[0]["tool_use_id"], "toolu_def456");

    // The turn survives serde (a suspended run stores it).
    let back: HostedTurn = serde_json::from_value(serde_json::to_value(turn).unwrap()).unwrap();
    assert_eq!(&back, turn);
}

#[tokio::test]
async fn a_call_from_code_runs_through_the_executor_like_any_call() {
    let mut registry = toolreg::FunctionRegistry::new();
    registry
        .register_sync_tool("query_database", |a: Value| Ok::<_, String>(json!({"ran": a["sql"]})), query())
        .unwrap();
    let format = Anthropic::new().code_execution(CodeExecution::new());
    let declared = format.declare(&ToolRef::list(registry.list())).unwrap();
    let response = common::fixture("anthropic_programmatic_call.json");
    let calls = format.parse_calls(&response, &declared.mapping).unwrap();
    let result = registry.execute_call(calls[0].clone(), CallOptions::default()).await;
    assert_eq!(result.outcome.unwrap().value, json!({"ran": "<sql>"}));
}

#[test]
fn the_programs_final_turn_is_kept_whole_with_no_calls() {
    let format = Anthropic::new().code_execution(CodeExecution::new());
    let declared = format.declare(&[ToolRef::from(&query())]).unwrap();
    let response = common::fixture("anthropic_programmatic_done.json");
    let read = format.read_calls(&response, &declared.mapping).unwrap();
    assert!(read.calls.is_empty());
    let turn = read.hosted.expect("the code execution result is a server block");
    assert_eq!(turn.content[0]["type"], "code_execution_tool_result");
    assert_eq!(turn.content[0]["content"]["stdout"], "Top 5 customers: [{'customer_id': 'C1', 'revenue': 45000}]");
    assert!(turn.callers.is_empty());
    assert_eq!(turn.expires_at.as_deref(), Some("2026-01-15T14:35:00Z"));
}

#[test]
fn without_code_execution_nothing_is_kept_and_the_calls_are_the_same() {
    let declared = Anthropic::new().declare(&[ToolRef::from(&query())]).unwrap();
    let response = common::fixture("anthropic_programmatic_call.json");
    let read = Anthropic::new().read_calls(&response, &declared.mapping).unwrap();
    assert!(read.hosted.is_none());
    assert_eq!(read.caller("toolu_def456"), None);
    assert_eq!(read.calls[0].id, "toolu_def456");
    // A plain turn with code execution on is a plain turn.
    let on = Anthropic::new().code_execution(CodeExecution::new());
    let plain = json!({"content": [{"type": "text", "text": "Hi"},
        {"type": "tool_use", "id": "toolu_1", "name": "query_database", "input": {"sql": "x"}}]});
    assert!(on.read_calls(&plain, &declared.mapping).unwrap().hosted.is_none());
    // So is a call the model says it made itself.
    let direct = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "query_database",
        "input": {"sql": "x"}, "caller": {"type": "direct"}}]});
    assert!(on.read_calls(&direct, &declared.mapping).unwrap().hosted.is_none());
}

#[test]
fn a_caller_without_its_code_execution_id_refuses_the_response() {
    let format = Anthropic::new().code_execution(CodeExecution::new());
    let declared = format.declare(&[ToolRef::from(&query())]).unwrap();
    let response = json!({"content": [{"type": "tool_use", "id": "toolu_1", "name": "query_database",
        "input": {"sql": "x"}, "caller": {"type": "code_execution_20260120"}}]});
    let error = format.read_calls(&response, &declared.mapping).unwrap_err();
    assert!(matches!(error, ProviderError::InvalidResponse { provider: Provider::Anthropic, .. }), "{error}");
    assert!(error.to_string().contains("tool_id"), "{error}");
}

#[test]
fn only_anthropic_and_openai_responses_have_code_execution_and_the_others_ignore_the_option() {
    let options = FormatOptions::new().code_execution(CodeExecution::new());
    let decl = query();
    for provider in Provider::ALL {
        let format = provider.wire_format_with(options.clone());
        let has = matches!(provider, Provider::Anthropic | Provider::OpenAiResponses);
        assert_eq!(format.code_execution(), has, "{provider}");
        if has {
            continue;
        }
        let plain = provider.wire_format().declare(&[ToolRef::from(&decl)]).unwrap();
        let with = format.declare(&[ToolRef::from(&decl)]).unwrap();
        assert_eq!(with.tools, plain.tools, "{provider}");
    }
}

#[test]
fn a_streamed_turn_is_rebuilt_as_the_whole_one() {
    use toolreg::provider::CallAssembler;

    let format = Anthropic::new().code_execution(CodeExecution::new());
    let declared = format.declare(&[ToolRef::from(&query())]).unwrap();
    let response = common::fixture("anthropic_programmatic_call.json");
    let whole = format.read_calls(&response, &declared.mapping).unwrap();

    let mut assembler = CallAssembler::new(Provider::Anthropic);
    let message = json!({"type": "message_start", "message": {"id": "msg_1", "content": [], "container": null}});
    assembler.push(&message).unwrap();
    for (index, block) in response["content"].as_array().unwrap().iter().enumerate() {
        let mut start = block.clone();
        let delta = match block["type"].as_str().unwrap() {
            "text" => {
                start["text"] = json!("");
                json!({"type": "text_delta", "text": block["text"]})
            }
            _ => {
                start["input"] = json!({});
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()})
            }
        };
        assembler.push(&json!({"type": "content_block_start", "index": index, "content_block": start})).unwrap();
        assembler.push(&json!({"type": "content_block_delta", "index": index, "delta": delta})).unwrap();
    }
    let end =
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "container": response["container"]}});
    assembler.push(&end).unwrap();
    let streamed = assembler.finish(&format, &declared.mapping).unwrap();
    assert_eq!(streamed, whole);
}

#[test]
fn openai_responses_declares_functions_callable_from_programs() {
    let tools = [query(), delete()];
    let refs: Vec<ToolRef<'_>> = tools.iter().map(ToolRef::from).collect();
    let plain = OpenAiResponses::new().declare(&refs).unwrap();
    assert_eq!(plain.tools.as_array().unwrap().len(), 2);
    assert!(plain.tools.as_array().unwrap().iter().all(|t| t.get("allowed_callers").is_none()));

    let all = OpenAiResponses::new().code_execution(CodeExecution::new()).declare(&refs).unwrap();
    assert_eq!(all.tools[0]["allowed_callers"], json!(["direct", "programmatic"]));
    assert_eq!(all.tools[1]["allowed_callers"], json!(["direct", "programmatic"]));
    assert_eq!(all.tools[2], json!({"type": "programmatic_tool_calling"}));

    let code = CodeExecution::new().tools(["query_database"]).code_only(true);
    let some = OpenAiResponses::new().code_execution(code).declare(&refs).unwrap();
    assert_eq!(some.tools[0]["allowed_callers"], json!(["programmatic"]));
    assert!(some.tools[1].get("allowed_callers").is_none());
    assert_eq!(some.tools.as_array().unwrap().len(), 3);
}

#[test]
fn openai_responses_reads_a_programs_call_and_sends_the_turn_back() {
    let format = OpenAiResponses::new().code_execution(CodeExecution::new());
    let declared = format.declare(&[ToolRef::from(&query())]).unwrap();
    let response = common::fixture("openai_responses_programmatic_call.json");
    let read = format.read_calls(&response, &declared.mapping).unwrap();
    assert_eq!(read.calls.len(), 1);
    assert_eq!(read.calls[0].id, "call_01");
    assert_eq!(read.calls[0].name, "query_database");
    assert_eq!(read.caller("call_01"), Some(&Caller::Program { caller_id: "call_prog_01".into() }));
    let turn = read.hosted.as_ref().expect("a program ran");
    assert_eq!(turn.container, None);

    // Back as it came: the program with its fingerprint, the call with its
    // caller (without its item id), no reasoning item.
    let history = format.render_turn("", &read.sent, Some(turn), &declared.mapping);
    let output = response["output"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0], output[1]);
    assert_eq!(history[0]["fingerprint"], "fp_3f9a1c");
    let mut call = output[2].clone();
    call.as_object_mut().unwrap().remove("id");
    assert_eq!(history[1], call);
    assert_eq!(history[1]["caller"], json!({"type": "program", "caller_id": "call_prog_01"}));

    // Answered with an ordinary function_call_output.
    let result =
        ToolResult { id: "call_01".into(), name: "query_database".into(), outcome: Ok(ToolOutput::new(json!(3))) };
    let answer = format.render_results(&[result], &declared.mapping).messages;
    assert_eq!(answer, vec![json!({"type": "function_call_output", "call_id": "call_01", "output": "3"})]);

    // The program's end: its output kept, the message as an assistant message.
    let done = common::fixture("openai_responses_programmatic_done.json");
    let read = format.read_calls(&done, &declared.mapping).unwrap();
    let turn = read.hosted.expect("the program's output");
    let history = format.render_turn("", &[], Some(&turn), &declared.mapping);
    assert_eq!(history[0]["type"], "program_output");
    assert_eq!(history[1], json!({"role": "assistant", "content": "West had the highest revenue."}));

    // Without the option nothing is kept.
    let read = OpenAiResponses::new().read_calls(&response, &declared.mapping).unwrap();
    assert!(read.hosted.is_none());
    assert_eq!(read.calls[0].id, "call_01");
}

#[test]
fn openai_responses_refuses_a_program_caller_without_its_id() {
    let format = OpenAiResponses::new().code_execution(CodeExecution::new());
    let declared = format.declare(&[ToolRef::from(&query())]).unwrap();
    let response = json!({"output": [{"type": "function_call", "call_id": "call_1", "name": "query_database",
        "arguments": "{}", "caller": {"type": "program"}}]});
    let error = format.read_calls(&response, &declared.mapping).unwrap_err();
    assert!(error.to_string().contains("caller_id"), "{error}");
}
