//! `toolreg`: list, declare and call tools, and serve them over MCP.
//!
//! Run `toolreg --help` for the subcommands and examples.

mod access;
mod answer;
mod blocks;
mod cli;
mod run;
mod search_eval;
mod setup;
pub mod telemetry;

use std::fmt;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use serde_json::Value;
use toolreg::policy::AccessPolicy;
use toolreg::policy::{ApproveAll, Approver, TerminalApprover};
use toolreg::provider::{Provider, ToolRef};
use toolreg::{CallOptions, Principal, SafetyLevel, ToolCall, ToolEngine, ToolExecutor};
use toolreg_code::{CodeMode, RUN_CODE, Worker};
use toolreg_mcp::server::{
    Deferral, HttpOptions, McpServer, OAuth, RequestStates, ServerOptions, TaskOptions, bearer_token_from_env,
};
use toolreg_store::Namespace;

use cli::{Cli, Command, ServeArgs};

pub(crate) use setup::Tools;

/// A failure to report: one line on stderr, a non-zero exit.
#[derive(Debug)]
pub struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// An error with exit code 1.
    pub fn new(message: impl Into<String>) -> Self {
        CliError { message: message.into(), code: 1 }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Before anything else: the worker runs untrusted code and needs no
    // logging, runtime, store or tools.
    if matches!(cli.command, Some(Command::CodeWorker)) {
        return toolreg_code::worker::serve();
    }
    // The TLS provider of every HTTP client (the OTLP exporter's, the
    // model's, a remote MCP server's): ring, as the process default.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Logs to stderr; OTLP export when the OTEL_* variables ask for it.
    let telemetry = telemetry::init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("toolreg: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // The runtime's tasks end before the last spans are flushed.
    drop(runtime);
    telemetry.shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line, whatever the message: a model's error text may run over several.
            let line: Vec<&str> = error.message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            eprintln!("toolreg: {}", line.join(" "));
            ExitCode::from(error.code)
        }
    }
}

async fn run(cli: Cli) -> Result<(), CliError> {
    let tools = setup::load(&cli.tools).await?;
    let remotes = tools.remotes().to_vec();
    let outcome = match cli.command {
        None => serve(tools, ServeArgs::default()).await,
        Some(Command::Serve(args)) => serve(tools, args).await,
        Some(Command::Tools { json }) => list(&tools, json),
        Some(Command::Schema { provider, only }) => schema(&tools, &provider, &only),
        Some(Command::Call { name, arguments, yes, out }) => {
            call(tools, &name, arguments.as_deref(), yes, out.as_deref()).await
        }
        Some(Command::Run(args)) => {
            announce_search(&tools);
            run::run(tools, args).await
        }
        Some(Command::Resume(args)) => {
            announce_search(&tools);
            run::resume(tools, args).await
        }
        Some(Command::SearchEval(args)) => search_eval::run(&tools, &args),
        Some(Command::Policy(cli::PolicyCommand::Check(args))) => access::check(&tools, &args),
        Some(Command::CodeWorker) => Ok(()),
    };
    // The imported servers end as the MCP stdio transport asks (input
    // closed, time to exit, then SIGTERM), not killed with the runtime.
    futures_util::future::join_all(remotes.iter().map(toolreg_mcp::client::RemoteServer::close)).await;
    outcome
}

fn list(tools: &setup::Tools, json: bool) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if json {
        let declarations: Vec<_> = tools.registry.list().map(|tool| tool.declaration()).collect();
        let text = serde_json::to_string_pretty(&declarations).map_err(|e| CliError::new(e.to_string()))?;
        // stdout stays JSON; what was left out goes beside it.
        tools.remotes().iter().for_each(report_left_out);
        return writeln!(out, "{text}").map_err(write_error);
    }
    let width = tools.registry.list().map(|tool| tool.name().len()).max().unwrap_or(4).max(4);
    writeln!(out, "{:width$}  {:9}  DESCRIPTION", "NAME", "SAFETY").map_err(write_error)?;
    for decl in tools.registry.list().map(|tool| tool.declaration()) {
        let summary = decl.description.lines().next().unwrap_or_default();
        writeln!(out, "{:width$}  {:9}  {summary}", decl.name, decl.safety.as_str()).map_err(write_error)?;
    }
    // Tools an imported server lists but the gateway cannot call: say so
    // here rather than let a user wonder where they went.
    let left_out: Vec<(String, String, String)> = tools
        .remotes()
        .iter()
        .flat_map(|remote| remote.left_out().into_iter().map(|(tool, why)| (remote.name().to_owned(), tool, why)))
        .collect();
    if !left_out.is_empty() {
        writeln!(out, "\nLeft out (listed by their MCP server, but not offered):").map_err(write_error)?;
        for (server, tool, why) in left_out {
            writeln!(out, "  {server}: `{tool}`: {why}").map_err(write_error)?;
        }
    }
    Ok(())
}

fn schema(tools: &setup::Tools, provider: &str, only: &[String]) -> Result<(), CliError> {
    let provider: Provider =
        provider.parse().map_err(|e: toolreg::provider::UnknownProvider| CliError::new(e.to_string()))?;
    for name in only {
        if !tools.registry.contains(name) {
            return Err(CliError::new(format!("unknown tool `{name}`; `toolreg tools` lists them")));
        }
    }
    let refs: Vec<ToolRef<'_>> = tools
        .registry
        .list()
        .filter(|entry| only.is_empty() || only.iter().any(|n| *n == entry.declaration().name))
        .map(ToolRef::from)
        .collect();
    let declared = provider.wire_format().declare_partial(&refs).into_value();
    for (tool, reason) in declared.refused() {
        eprintln!("toolreg: `{tool}` left out for {provider}: {reason}");
    }
    for (tool, reason) in declared.not_strict() {
        eprintln!("toolreg: `{tool}` sent without strict mode: {reason}");
    }
    let text = serde_json::to_string_pretty(&declared.tools).map_err(|e| CliError::new(e.to_string()))?;
    writeln!(std::io::stdout().lock(), "{text}").map_err(write_error)
}

async fn call(
    tools: setup::Tools,
    name: &str,
    arguments: Option<&str>,
    yes: bool,
    out: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let Some(entry) = tools.registry.get(name) else {
        return Err(CliError::new(format!("unknown tool `{name}`; `toolreg tools` lists them")));
    };
    let arguments = arguments.unwrap_or("{}");
    if serde_json::from_str::<Value>(arguments).is_err() {
        return Err(CliError::new(format!("the arguments are not JSON: {arguments}")));
    }
    let dangerous = entry.declaration().safety == SafetyLevel::Dangerous;
    let approver: Box<dyn Approver> = if yes {
        Box::new(ApproveAll::new("--yes"))
    } else if dangerous && !std::io::stdin().is_terminal() {
        return Err(CliError::new(format!(
            "`{name}` is dangerous and needs approval; run it on a terminal to be asked, or pass --yes"
        )));
    } else {
        Box::new(TerminalApprover::stdio())
    };
    let mut builder = ToolEngine::builder(&tools.registry).approver(approver);
    if let Some(audit) = tools.audit {
        builder = builder.audit(audit);
    }
    let engine = builder.build();
    // Run for the user at the terminal, as the audit says.
    let options = CallOptions::new().principal(Principal::local_user());
    let result = engine.execute_call(ToolCall::new("cli-1", name, arguments), options).await;
    match result.outcome {
        Ok(output) => blocks::print(&output, out),
        Err(error) => Err(CliError { message: error.model_text(name), code: 2 }),
    }
}

/// The engine every served call goes through: one policy for the built-ins
/// and every imported server (the MCP server's approval through elicitation,
/// `--allow-dangerous` applied by the server itself, the audit file).
///
/// In code mode, `run_code` is added: its programs' calls go through this
/// same engine.
fn serving_engine(
    registry: &toolreg::FunctionRegistry,
    tools: &setup::Tools,
    options: &ServerOptions,
    code: Option<&CodeMode>,
    policy: Option<&AccessPolicy>,
) -> ToolEngine {
    let mut builder = McpServer::engine_builder(registry, options);
    if let Some(policy) = policy {
        builder = builder.access(policy.clone());
    }
    if let Some(audit) = &tools.audit {
        builder = builder.audit(Arc::clone(audit));
    }
    let engine = builder.build();
    match code.map(|code| code.attach(&engine)) {
        Some(Ok(with_code)) => with_code,
        Some(Err(error)) => {
            eprintln!("toolreg: warning: run_code is not served: {error}");
            engine
        }
        None => engine,
    }
}

/// Code mode with this binary as its sandboxed worker (`toolreg code-worker`).
pub(crate) fn code_mode() -> Result<CodeMode, CliError> {
    let exe =
        std::env::current_exe().map_err(|e| CliError::new(format!("cannot find this program for code mode: {e}")))?;
    Ok(CodeMode::new(Worker::new(exe).arg("code-worker")))
}

/// What `toolreg serve` serves: the tools, and the person behind the MCP
/// client as a function (`ask_user`, asked through elicitation).
fn with_ask_user(mut registry: toolreg::FunctionRegistry) -> toolreg::FunctionRegistry {
    if let Err(error) = registry.register(toolreg_mcp::server::ask_user()) {
        eprintln!("toolreg: warning: ask_user is not served: {error}");
    }
    registry
}

/// Say which search finds tools, and start computing the tool vectors a
/// search model needs (keywords answer until they are ready).
fn announce_search(tools: &setup::Tools) {
    let Some(embeddings) = &tools.embeddings else { return };
    let (ready, total) = embeddings.prepare(tools.registry.list().map(|tool| tool.declaration()));
    let pending = if ready == total {
        String::new()
    } else {
        format!("; {} of {total} tool vectors to compute in the background, keywords alone until then", total - ready)
    };
    eprintln!("toolreg: tool search: hybrid, keywords and {}{pending}", embeddings.model());
}

async fn serve(mut tools: setup::Tools, args: ServeArgs) -> Result<(), CliError> {
    let policy = args.policy.as_deref().map(access::read_policy).transpose()?;
    announce_search(&tools);
    tools.registry = with_ask_user(std::mem::take(&mut tools.registry));
    let mut options = ServerOptions::default().allow_dangerous(args.allow_dangerous);
    // Multi Round-Trip request state is sealed with the host key and each
    // state's one use claimed in the store: replicas sharing both (and a
    // restarted server) accept a client's retry, each state once.
    // Without a key to keep (a root it cannot write), a key of this process.
    let spent =
        Namespace::new(Arc::clone(&tools.store), "mcp-request-states").map_err(|e| CliError::new(e.to_string()))?;
    match tools.host_key() {
        Ok(key) => options = options.request_states(RequestStates::shared(key, spent)),
        Err(error) => eprintln!(
            "toolreg: warning: {error}; MCP request state is sealed with a key of this process only (set TOOLREG_KEY)"
        ),
    }
    // MCP tasks (tools that declare task support, a gateway's remote task
    // tools) live in the store's `mcp-tasks` namespace: replicas sharing the
    // store answer for each other's tasks.
    let tasks = Namespace::new(Arc::clone(&tools.store), "mcp-tasks").map_err(|e| CliError::new(e.to_string()))?;
    options = options.tasks(TaskOptions::new(tasks));
    let code = if args.code_mode { Some(code_mode()?) } else { None };
    if code.is_some() {
        // Only `run_code` listed; every other tool is found by search.
        options = options.deferred(Deferral::new().past(0).keep([RUN_CODE]));
    } else if args.deferred || args.deferred_past.is_some() {
        // The imported servers' tools are searched for; the built-ins stay listed.
        let mut deferral = Deferral::imported();
        if let Some(n) = args.deferred_past {
            deferral = deferral.past(n);
        }
        options = options.deferred(deferral);
    }
    let server = McpServer::new(
        serving_engine(&tools.registry, &tools, &options, code.as_ref(), policy.as_ref()),
        options.clone(),
    );
    // The gateway also offers the imported servers' resources and prompts.
    server.set_upstream(tools.gateway.clone());
    // The gateway: when an imported server's tools change, serve the new set
    // and tell the clients.
    let tools = Arc::new(tools);
    for remote in tools.remotes() {
        report_left_out(remote);
        let mut changes = remote.changes();
        changes.borrow_and_update();
        let (server, tools, remote) = (server.clone(), Arc::clone(&tools), remote.clone());
        let options = options.clone();
        let code = code.clone();
        let policy = policy.clone();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                report_left_out(&remote);
                let registry = with_ask_user(tools.rebuild());
                server.set_engine(serving_engine(&registry, &tools, &options, code.as_ref(), policy.as_ref())).await;
            }
        });
    }
    match args.http {
        Some(bind) => {
            let mut http = HttpOptions::default().bind(bind).stateless(args.stateless);
            match (bearer_token_from_env(), &args.issuer) {
                (Some(_), Some(_)) => {
                    return Err(CliError::new(
                        "serve: TOOLREG_MCP_TOKEN and --issuer are two ways to let clients in: use one",
                    ));
                }
                (None, Some(issuer)) => {
                    let mut oauth = OAuth::new(issuer, args.audience.as_deref().unwrap_or_default());
                    if let Some(uri) = &args.jwks_uri {
                        oauth = oauth.jwks_uri(uri);
                    }
                    for scope in &args.required_scopes {
                        oauth = oauth.require_scope(scope);
                    }
                    if let Some(endpoint) = &args.introspection_url {
                        let var = |name: &str| {
                            std::env::var(name).ok().filter(|v| !v.is_empty()).ok_or_else(|| {
                                CliError::new(format!(
                                    "serve: --introspection-url needs {name} (its client credentials)"
                                ))
                            })
                        };
                        let (id, secret) =
                            (var("TOOLREG_INTROSPECTION_CLIENT_ID")?, var("TOOLREG_INTROSPECTION_SECRET")?);
                        oauth = oauth.introspection(endpoint, id, secret);
                    }
                    eprintln!("toolreg: clients need access tokens from {issuer} for {}", oauth.audience());
                    http = http.oauth(oauth);
                }
                (Some(token), None) => http = http.bearer_token(token),
                (None, None) if !bind.ip().is_loopback() => eprintln!(
                    "toolreg: warning: serving on {bind} without a bearer token: anyone who can reach it can call the \
                     tools; set TOOLREG_MCP_TOKEN"
                ),
                (None, None) => {}
            }
            for host in args.allow_hosts {
                http = http.allow_host(host);
            }
            for origin in args.allow_origins {
                http = http.allow_origin(origin);
            }
            let shutdown = http.shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                shutdown.cancel();
            });
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .map_err(|e| CliError::new(format!("cannot listen on {bind}: {e}")))?;
            let local = listener.local_addr().map_err(|e| CliError::new(e.to_string()))?;
            eprintln!("toolreg: serving {} tools over MCP at http://{local}{}", tools.registry.len(), http.path);
            server.serve_http_on(listener, http).await.map_err(|e| CliError::new(e.to_string()))
        }
        None => {
            if std::io::stdin().is_terminal() {
                eprintln!(
                    "toolreg: serving {} tools over MCP on stdin/stdout. This is what an MCP client runs; \
                     to connect one, add to its configuration:\n  \
                     {{\"mcpServers\": {{\"toolreg\": {{\"command\": \"toolreg\", \"args\": [\"serve\", \"--root\", \"{}\"]}}}}}}\n\
                     toolreg: or try `toolreg tools`, `toolreg call list_files '{{}}'`, `toolreg --help`. Ctrl-D or Ctrl-C stops.",
                    tools.registry.len(),
                    std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default()
                );
            }
            server.serve_stdio().await.map_err(|e| CliError::new(e.to_string()))
        }
    }
}

/// One line per tool a server lists that the gateway does not offer.
fn report_left_out(remote: &toolreg_mcp::client::RemoteServer) {
    for (tool, why) in remote.left_out() {
        eprintln!("toolreg: warning: `{tool}` from MCP server `{}` left out: {why}", remote.name());
    }
}

fn write_error(error: std::io::Error) -> CliError {
    CliError::new(format!("cannot write the output: {error}"))
}
