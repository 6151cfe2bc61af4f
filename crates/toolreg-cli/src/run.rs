//! `toolreg run`: an agent on the terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use toolreg::policy::{ApprovalRequest, TerminalApprover, approver_fn};
use toolreg_builtins::user::{TerminalChannel, UserTools};
use toolreg_llm::LlmClient;
use toolreg_llm::agent::functions::AgentTools;
use toolreg_llm::agent::{Agent, AgentEvent, Limits, Outcome};
use toolreg_llm::client::{AnthropicClient, ClientConfig, GeminiClient, OpenAiChatClient, OpenAiResponsesClient};

use crate::cli::RunArgs;
use crate::{CliError, Tools};

/// The client the arguments and the environment name, and the model.
fn client(args: &RunArgs) -> Result<(Arc<dyn LlmClient>, String), CliError> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let model =
        |default: &str| args.model.clone().or_else(|| env("TOOLREG_MODEL")).unwrap_or_else(|| default.to_owned());
    let config = |base_var: &str, default_url: &str, key_var: &str| {
        let mut config = ClientConfig::from_env(base_var, default_url, key_var).stream(true);
        if let Some(url) = &args.base_url {
            config.base_url = url.trim_end_matches('/').to_owned();
        }
        config
    };
    let missing = |var: &str| CliError::new(format!("{var} is not set; set it, or use --base-url for a local server"));
    Ok(match args.provider.to_ascii_lowercase().replace('_', "-").as_str() {
        "openai" | "openai-chat" => {
            let config = config("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY");
            if !config.has_api_key() && config.base_url.contains("api.openai.com") {
                return Err(missing("OPENAI_API_KEY"));
            }
            (Arc::new(OpenAiChatClient::new(config)), model("gpt-4.1-mini"))
        }
        "openai-responses" => {
            let config = config("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY");
            if !config.has_api_key() && config.base_url.contains("api.openai.com") {
                return Err(missing("OPENAI_API_KEY"));
            }
            (Arc::new(OpenAiResponsesClient::new(config)), model("gpt-4.1-mini"))
        }
        "anthropic" => {
            let config = config("ANTHROPIC_BASE_URL", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY");
            if !config.has_api_key() {
                return Err(missing("ANTHROPIC_API_KEY"));
            }
            (Arc::new(AnthropicClient::new(config)), model("claude-sonnet-4-5"))
        }
        "gemini" => {
            let config =
                config("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY");
            if !config.has_api_key() {
                return Err(missing("GEMINI_API_KEY"));
            }
            (Arc::new(GeminiClient::new(config)), model("gemini-2.5-flash"))
        }
        other => {
            return Err(CliError::new(format!(
                "unknown provider `{other}`; use openai, openai-responses, anthropic or gemini"
            )));
        }
    })
}

/// Run the agent: progress on stderr, the answer on stdout.
pub async fn run(tools: Tools, args: RunArgs) -> Result<(), CliError> {
    let (client, model) = client(&args)?;
    let mut registry = tools.registry.clone();
    let user = UserTools::new(TerminalChannel::stdio());
    let answer_slot = user.final_answer_slot();
    let mut registrations = user.registrations();
    registrations.extend(AgentTools::new().registrations());
    registry.register_all(registrations).map_err(|e| CliError::new(e.to_string()))?;

    let mut builder = Agent::builder_shared(client, model, &registry)
        .system(
            "You are a capable assistant working in the user's directory with the tools given. Use them to do the \
             task, then answer briefly (or call final_answer).",
        )
        .limits(Limits::default().max_steps(args.max_steps))
        .final_answer(answer_slot)
        .on_event(progress);
    if args.yes {
        builder = builder.approver(approver_fn("--yes", |request: ApprovalRequest| {
            let decision = request.approve();
            async move { decision }
        }));
    } else if std::io::stdin().is_terminal() {
        builder = builder.approver(TerminalApprover::stdio());
    }
    if let Some(audit) = &tools.audit {
        builder = builder.audit(Arc::clone(audit));
    }
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
