//! `toolreg run`: an agent on the terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use toolreg::ToolEngine;
use toolreg::policy::{ApproveAll, TerminalApprover};
use toolreg_builtins::user::{TerminalChannel, UserTools};
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, AgentEvent, Limits, Outcome, SuspendForApproval};
use toolreg_llm::client::{ProviderKind, UnknownProviderKind};
use toolreg_llm::{LlmClient, LlmError};

use crate::cli::RunArgs;
use crate::{CliError, Tools};

/// The client the arguments and the environment name, and the model.
/// `--base-url` replaces the chosen provider's base URL, read the way that
/// provider's SDK reads its variable (see [`ProviderKind`]).
fn client(args: &RunArgs) -> Result<(Arc<dyn LlmClient>, String), CliError> {
    let kind: ProviderKind = args.provider.parse().map_err(|e: UnknownProviderKind| CliError::new(e.to_string()))?;
    let mut config = kind.config_from_env().stream(!args.no_stream);
    if let Some(url) = &args.base_url {
        config.base_url = url.trim_end_matches('/').to_owned();
    }
    let client = kind.client(config).map_err(|e| match e {
        LlmError::Config(message) => CliError::new(format!("{message}; set it, or use --base-url for a local server")),
        other => CliError::new(other.to_string()),
    })?;
    let default_model = match kind {
        ProviderKind::Anthropic => "claude-sonnet-4-5",
        ProviderKind::Gemini => "gemini-2.5-flash",
        _ => "gpt-4.1-mini",
    };
    let model = args
        .model
        .clone()
        .or_else(|| std::env::var("TOOLREG_MODEL").ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| default_model.to_owned());
    Ok((Arc::from(client), model))
}

/// Run the agent: progress on stderr, the answer on stdout.
pub async fn run(tools: Tools, args: RunArgs) -> Result<(), CliError> {
    let (client, model) = client(&args)?;
    let mut registry = tools.registry.clone();
    let user = UserTools::new(TerminalChannel::stdio());
    let mut registrations = user.registrations();
    registrations.extend(AgentTools::new().registrations());
    registry.register_all(registrations).map_err(|e| CliError::new(e.to_string()))?;

    // The agent's calls go through an engine configured as `toolreg call`
    // configures its own; with nobody to ask, a dangerous call suspends the
    // run, which is reported below.
    let mut engine = ToolEngine::builder(&registry);
    engine = if args.yes {
        engine.approver(ApproveAll::new("--yes"))
    } else if std::io::stdin().is_terminal() {
        engine.approver(TerminalApprover::stdio())
    } else {
        engine.approver(SuspendForApproval)
    };
    if let Some(audit) = &tools.audit {
        engine = engine.audit(Arc::clone(audit));
    }
    let builder = Agent::builder_shared(client, model, engine)
        .system(
            "You are a capable assistant working in the user's directory with the tools given. Use them to do the \
             task, then answer briefly (or call final_answer).",
        )
        .limits(Limits::default().max_steps(args.max_steps))
        .on_event(progress);
    let agent = builder.build();
    let cancel = tokio_util::sync::CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.cancel();
        }
    });
    match agent.run_with(vec![toolreg_llm::Message::user(args.task)], cancel).await {
        Ok(Outcome::Finished(done)) => {
            eprintln!("toolreg: done in {} steps, {} tokens", done.steps, done.usage.total());
            writeln!(std::io::stdout().lock(), "{}", done.answer).map_err(|e| CliError::new(e.to_string()))
        }
        Ok(Outcome::Suspended(suspended)) => {
            let tools: Vec<&str> = suspended.approvals.iter().map(|p| p.tool.as_str()).collect();
            Err(CliError::new(format!(
                "the agent wants to run dangerous tools ({}) and nobody can approve them here; run on a terminal or pass --yes",
                tools.join(", ")
            )))
        }
        Err(error) => Err(CliError::new(error.to_string())),
    }
}

/// Steps and tool calls on stderr as they happen.
fn progress(event: &AgentEvent) {
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
            let first = result.content.lines().next().unwrap_or_default();
            let first: String = first.chars().take(120).collect();
            writeln!(err, "  {} {}: {first}", if result.is_error { "✗" } else { "✓" }, result.name)
        }
        AgentEvent::Retrying { attempt, delay } => writeln!(err, "  (retry {attempt} in {delay:?})"),
        _ => Ok(()),
    };
}
