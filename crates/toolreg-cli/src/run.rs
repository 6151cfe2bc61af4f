//! `toolreg run`: an agent on the terminal.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use toolreg::ToolEngine;
use toolreg::engine::{ToolLayer, hook_fn};
use toolreg::exec::Content;
use toolreg::policy::ApproveAll;
use toolreg_builtins::user::{TerminalChannel, UserApprover, UserChannel, UserTools};
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{
    Agent, AgentError, AgentEvent, AgentLimits, PendingApproval, Resolution, RunOutcome, SuspendForApproval,
    SuspendedRuns,
};
use toolreg_llm::client::{Endpoint, UnknownEndpoint};
use toolreg_llm::{LlmClient, LlmError};
use toolreg_store::Namespace;

use crate::answer::HostAnswerer;
use crate::cli::{AgentArgs, ResumeArgs, RunArgs};
use crate::{CliError, Tools};

/// The client the arguments and the environment name, and the model.
/// `--base-url` replaces the chosen provider's base URL, read the way that
/// provider's SDK reads its variable (see [`Endpoint`]).
fn client(args: &AgentArgs) -> Result<(Arc<dyn LlmClient>, String), CliError> {
    let endpoint = Endpoint::parse(&args.provider).map_err(|e: UnknownEndpoint| CliError::new(e.to_string()))?;
    let mut config = endpoint.config_from_env().stream(!args.no_stream);
    if let Some(url) = &args.base_url {
        config.base_url = url.trim_end_matches('/').to_owned();
    }
    let client = endpoint.client(config).map_err(|e| match e {
        LlmError::Config(message) => CliError::new(format!("{message}; set it, or use --base-url for a local server")),
        other => CliError::new(other.to_string()),
    })?;
    let model = args
        .model
        .clone()
        .or_else(|| std::env::var("TOOLREG_MODEL").ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| endpoint.default_model.to_owned());
    Ok((Arc::from(client), model))
}

/// Run the agent: progress on stderr, the answer on stdout.
pub async fn run(tools: Tools, args: RunArgs) -> Result<(), CliError> {
    let (agent, runs) = agent(tools, &args.agent)?;
    let outcome = agent.run_with(vec![toolreg_llm::Message::user(args.task)], interrupt()).await;
    report(outcome, &runs).await
}

/// Continue a suspended run from the store: every call it waits for is
/// printed first, then decided as the arguments say, or one by one on a
/// terminal. With no decision and no terminal nothing runs (and nothing is
/// consumed: the run can still be resumed).
pub async fn resume(tools: Tools, args: ResumeArgs) -> Result<(), CliError> {
    let (agent, runs) = agent(tools, &args.agent)?;
    let suspended = runs.load(&args.id).await.map_err(|e| CliError::new(e.to_string()))?;
    show_pending(&suspended.id, &suspended.approvals);
    let resolutions = decide(&suspended.approvals, &args).await?;
    let outcome = agent.resume(suspended, resolutions, interrupt()).await;
    report(outcome, &runs).await
}

/// The reason the model reads for a call refused one by one without one.
const NOT_APPROVED: &str = "the operator did not approve this call";

/// A decision for every pending call: all at once (`--approve`, `--deny`),
/// by call id (`--approve-call`, `--deny-call`), or asked on the terminal
/// for each call the flags leave open.
async fn decide(pending: &[PendingApproval], args: &ResumeArgs) -> Result<Vec<Resolution>, CliError> {
    if args.approve {
        return Ok(pending.iter().map(PendingApproval::approve).collect());
    }
    if let Some(reason) = &args.deny {
        return Ok(pending.iter().map(|p| p.deny(reason.clone())).collect());
    }
    let reason = args.reason.clone().unwrap_or_else(|| NOT_APPROVED.to_owned());
    let known = |id: &String| pending.iter().any(|p| &p.call_id == id);
    if let Some(unknown) = args.approve_call.iter().chain(&args.deny_call).find(|id| !known(id)) {
        return Err(CliError::new(format!("the run does not wait for a call `{unknown}`; nothing ran")));
    }
    if let Some(both) = args.approve_call.iter().find(|id| args.deny_call.contains(id)) {
        return Err(CliError::new(format!("call `{both}` is both approved and denied; nothing ran")));
    }
    let on_terminal = std::io::stdin().is_terminal();
    let mut resolutions = Vec::with_capacity(pending.len());
    let mut open = Vec::new();
    for call in pending {
        if args.approve_call.contains(&call.call_id) {
            resolutions.push(call.approve());
        } else if args.deny_call.contains(&call.call_id) {
            resolutions.push(call.deny(reason.clone()));
        } else if on_terminal {
            let question = format!("Approve call {} ({})? [y/N] ", call.call_id, call.tool);
            let yes = tokio::task::spawn_blocking(move || ask_yes(&question))
                .await
                .map_err(|e| CliError::new(e.to_string()))??;
            resolutions.push(if yes { call.approve() } else { call.deny(reason.clone()) });
        } else {
            open.push(call.call_id.as_str());
        }
    }
    if !open.is_empty() {
        return Err(CliError::new(format!(
            "no decision for call {}; nothing ran. Decide each with --approve-call ID or --deny-call ID, or all \
             with --approve or --deny REASON",
            open.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(resolutions)
}

/// Put `question` on stderr and read y/yes (anything else is no) from stdin.
fn ask_yes(question: &str) -> Result<bool, CliError> {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{question}");
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| CliError::new(format!("cannot read the answer: {e}")))?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// Each pending call as its approver sees it, on stderr: its id and tool,
/// the arguments exactly as they will run, and what it would do where the
/// tool says.
fn show_pending(run: &str, pending: &[PendingApproval]) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", pending_text(run, pending));
}

fn pending_text(run: &str, pending: &[PendingApproval]) -> String {
    let calls = if pending.len() == 1 { "1 call".to_owned() } else { format!("{} calls", pending.len()) };
    let mut text = format!("toolreg: run {} waits for a decision on {calls}:", printable(run));
    for call in pending {
        let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_else(|_| call.arguments.to_string());
        text.push_str(&format!("\n  call {}: {}\n    arguments:", printable(&call.call_id), printable(&call.tool)));
        for line in arguments.lines() {
            text.push_str(&format!("\n      {}", printable(line)));
        }
        if let Some(preview) = &call.preview {
            text.push_str("\n    it would do:");
            for line in preview.lines() {
                text.push_str(&format!("\n      {}", printable(line)));
            }
        }
        if let Some(printed) = &call.printed_before {
            text.push_str("\n    the program printed before it:");
            for line in printed.lines() {
                text.push_str(&format!("\n      {}", printable(line)));
            }
        }
    }
    text
}

/// `text` with its control characters shown as escapes, so that nothing a
/// model wrote can move the cursor or recolour what the operator reads.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { c.escape_unicode().to_string() } else { c.to_string() })
        .collect()
}

/// A token cancelled by Ctrl-C.
fn interrupt() -> tokio_util::sync::CancellationToken {
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    cancel
}

/// The answer on stdout; or, for a run stopped at a dangerous call, the
/// run kept in the store, its id on stdout and what it waits for on stderr.
async fn report(outcome: Result<RunOutcome, AgentError>, runs: &SuspendedRuns) -> Result<(), CliError> {
    match outcome {
        Ok(RunOutcome::Finished(done)) => {
            eprintln!("toolreg: done in {} steps, {} tokens", done.steps, done.usage.total());
            writeln!(std::io::stdout().lock(), "{}", done.answer).map_err(|e| CliError::new(e.to_string()))
        }
        Ok(RunOutcome::Suspended(suspended)) => {
            runs.save(&suspended).await.map_err(|e| CliError::new(e.to_string()))?;
            show_pending(&suspended.id, &suspended.approvals);
            writeln!(std::io::stdout().lock(), "{}", suspended.id).map_err(|e| CliError::new(e.to_string()))?;
            Err(CliError {
                message: format!(
                    "stopped for an approval; continue with `toolreg resume {}` (shows each call and asks), or \
                     decide with --approve-call ID / --deny-call ID, --approve or --deny REASON",
                    suspended.id
                ),
                code: 3,
            })
        }
        Err(error) => Err(CliError::new(error.to_string())),
    }
}

/// The agent `toolreg run` and `toolreg resume` drive, and where its
/// suspended runs are kept.
fn agent(tools: Tools, args: &AgentArgs) -> Result<(Agent, SuspendedRuns), CliError> {
    let (client, model) = client(args)?;
    let mut registry = tools.registry.clone();
    // One terminal channel for every question put to the person (the
    // `ask_user` tool, approvals, the imported servers' forms): one reader
    // of stdin.
    let terminal: Arc<dyn UserChannel> = Arc::new(TerminalChannel::stdio());
    let on_terminal = std::io::stdin().is_terminal();
    let answerer = Arc::new(HostAnswerer {
        user: on_terminal.then(|| Arc::clone(&terminal)),
        client: Arc::clone(&client),
        model: model.clone(),
        allow_sampling: args.yes,
    });
    tools.gateway.answer_with(answerer);
    let user = UserTools::new(Arc::clone(&terminal));
    // The built-ins and imported tools, the user tools and the agent functions.
    let with_agent_tools = move |mut registry: toolreg::FunctionRegistry| {
        let mut registrations = user.registrations();
        registrations.extend(AgentTools::new().registrations());
        toolreg::register_tools!(registry, registrations).map_err(|e| CliError::new(e.to_string()))?;
        Ok::<_, CliError>(registry)
    };
    registry = with_agent_tools(registry)?;

    // The agent's calls go through an engine configured as `toolreg call`
    // configures its own; with nobody to ask, a dangerous call suspends the
    // run, which is reported below.
    let mut engine = ToolEngine::builder(&registry);
    engine = if args.yes {
        engine.approver(ApproveAll::new("--yes"))
    } else if on_terminal && !args.suspend {
        // Asked through the terminal channel the user tools use: one reader of stdin.
        engine.approver(UserApprover::new(Arc::clone(&terminal)))
    } else {
        engine.approver(SuspendForApproval)
    };
    if let Some(audit) = &tools.audit {
        engine = engine.audit(Arc::clone(audit));
    }
    let blocks = Blocks::default();
    engine = engine.layer(blocks.layer());
    // Code mode: `run_code` beside the tools, its programs' calls through
    // this same engine (rebuilt with the tools when they change, below).
    // One host key seals the runs kept in the store and a program's record.
    let key = tools.host_key()?;
    let namespace =
        |name: &str| Namespace::new(Arc::clone(&tools.store), name).map_err(|e| CliError::new(e.to_string()));
    let runs = SuspendedRuns::new(namespace("suspended-runs")?, key.clone());
    let claims = namespace("resumed-runs")?;
    let code = if args.code_mode { Some(crate::code_mode()?.key(key)) } else { None };
    let with_code = {
        let (base, code) = (engine.clone(), code.clone());
        move |registry: &toolreg::FunctionRegistry| match &code {
            Some(code) => {
                // The engine offers every tool (no selection), so `run_code`
                // beside the registry's tools is what it offers.
                let mut with_code = registry.clone();
                let tool = code.tool(&base.clone().registry(registry).build());
                with_code.register(tool).map_err(|e| CliError::new(format!("run_code cannot be offered: {e}")))?;
                Ok(with_code)
            }
            None => Ok(registry.clone()),
        }
    };
    let engine = engine.registry(&with_code(&registry)?);
    let builder = Agent::builder_shared(client, model, engine)
        .system(
            "You are a capable assistant working in the user's directory with the tools given. Use them to do the \
             task, then answer briefly (or call final_answer).",
        )
        .limits(AgentLimits::default().max_steps(args.max_steps))
        .resume_claims(claims)
        .principal(toolreg::Principal::local_user())
        .on_event(move |event| progress(event, &blocks));
    let agent = builder.build();
    // An imported server's tools changed: offer the new set from the next step on.
    let tools = Arc::new(tools);
    let with_agent_tools = Arc::new(with_agent_tools);
    let with_code = Arc::new(with_code);
    for remote in tools.remotes() {
        let mut changes = remote.changes();
        changes.borrow_and_update();
        let (agent, tools, with_agent_tools) = (agent.clone(), Arc::clone(&tools), Arc::clone(&with_agent_tools));
        let with_code = Arc::clone(&with_code);
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                match with_agent_tools(tools.rebuild()).and_then(|registry| with_code(&registry)) {
                    Ok(registry) => agent.set_tools(&registry),
                    Err(error) => eprintln!("toolreg: the changed tools cannot be offered: {error}"),
                }
            }
        });
    }
    Ok((agent, runs))
}

/// The summaries of the blocks that are not text in each call's result,
/// by call id, kept by an engine layer until the progress line of that
/// result shows them. The agent's event carries the result as the text a
/// model reads, in which a summary cannot be told from text.
#[derive(Clone, Default)]
struct Blocks(Arc<Mutex<HashMap<String, Vec<String>>>>);

impl Blocks {
    /// The layer that records each result's summaries.
    fn layer(&self) -> impl ToolLayer {
        let blocks = self.clone();
        hook_fn(move |call, next| {
            let blocks = blocks.clone();
            let id = call.cx.call_id().map(str::to_owned);
            let result = next.run(call);
            async move {
                let result = result.await;
                if let (Ok(output), Some(id)) = (&result, id) {
                    let summaries: Vec<String> = output
                        .content
                        .iter()
                        .filter(|block| !matches!(block, Content::Text(_)))
                        .map(Content::summary)
                        .collect();
                    if !summaries.is_empty()
                        && let Ok(mut kept) = blocks.0.lock()
                    {
                        kept.insert(id, summaries);
                    }
                }
                result
            }
        })
        .named("block-summaries")
    }

    /// Take the summaries kept for call `id`.
    fn take(&self, id: &str) -> Vec<String> {
        self.0.lock().ok().and_then(|mut kept| kept.remove(id)).unwrap_or_default()
    }
}

/// The lines that report a tool's result: a mark, the tool, the first line
/// of the text the model reads, then a line for each block that is not text
/// (its summary, unless the first line already is it).
fn result_lines(name: &str, is_error: bool, text: &str, summaries: &[String]) -> Vec<String> {
    let first = text.lines().next().unwrap_or_default();
    let shown: String = first.chars().take(120).collect();
    let mut lines = vec![format!("  {} {name}: {shown}", if is_error { "✗" } else { "✓" })];
    for summary in summaries {
        let summary = summary.lines().next().unwrap_or_default();
        if summary != first {
            lines.push(format!("      {summary}"));
        }
    }
    lines
}

/// Steps and tool calls on stderr as they happen.
fn progress(event: &AgentEvent, blocks: &Blocks) {
    let mut err = std::io::stderr().lock();
    let _ = match event {
        AgentEvent::ModelRequest { step, depth } => {
            writeln!(err, "{}· step {step}", "  ".repeat(*depth))
        }
        AgentEvent::ToolCall(call) => {
            let text = call.arguments.to_string();
            let mut args: String = text.chars().take(117).collect();
            if args.len() < text.len() {
                args.push_str("...");
            }
            writeln!(err, "  → {}({args})", call.name)
        }
        AgentEvent::ToolResult(result) => {
            let summaries = blocks.take(&result.call_id);
            let lines = result_lines(&result.name, result.is_error, &result.content, &summaries);
            writeln!(err, "{}", lines.join("\n"))
        }
        AgentEvent::Retrying { attempt, delay } => writeln!(err, "  (retry {attempt} in {delay:?})"),
        _ => Ok(()),
    };
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolreg::exec::ToolOutput;
    use toolreg::{
        CallOptions, FunctionRegistry, SafetyLevel, ToolCall, ToolDeclaration, ToolExecutor, ToolRegistration,
    };

    use super::*;

    /// A result of text and an image: the text's first line, then the
    /// image's summary; an image alone is shown once.
    #[test]
    fn every_block_that_is_not_text_gets_its_summary_line() {
        let chart = "[image: image/png, 2.0 KB]".to_owned();
        assert_eq!(
            result_lines("plot", false, &format!("A chart:\n{chart}"), std::slice::from_ref(&chart)),
            ["  ✓ plot: A chart:", "      [image: image/png, 2.0 KB]"]
        );
        assert_eq!(
            result_lines("read_file", false, &chart, std::slice::from_ref(&chart)),
            [format!("  ✓ read_file: {chart}")]
        );
        assert_eq!(result_lines("f", true, "no such file\nmore", &[]), ["  ✗ f: no such file"]);
    }

    /// The layer keeps the summaries of a call's result under its id, once.
    #[tokio::test]
    async fn the_layer_keeps_each_results_summaries_by_call_id() {
        let plot = ToolRegistration::new(
            ToolDeclaration::builder("plot").description("Draws.").safety(SafetyLevel::Safe).build(),
            |_: serde_json::Value| async {
                Ok::<_, String>(ToolOutput::from(vec![
                    Content::text("A chart:"),
                    Content::image(vec![0u8; 2048], "image/png"),
                    Content::resource_link("file:///data.csv", "data.csv"),
                ]))
            },
        );
        let mut registry = FunctionRegistry::new();
        registry.register(plot).unwrap();
        let blocks = Blocks::default();
        let engine = ToolEngine::builder(&registry).layer(blocks.layer()).build();
        engine.execute_call(ToolCall::new("c7", "plot", json!({})), CallOptions::default()).await.outcome.unwrap();
        assert_eq!(blocks.take("c7"), ["[image: image/png, 2.0 KB]", "[resource link: data.csv <file:///data.csv>]"]);
        assert!(blocks.take("c7").is_empty());
    }
}
