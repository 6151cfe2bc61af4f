//! The command line, as clap reads it.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

const EXAMPLES: &str = "\
Examples:
  toolreg                                  serve the built-in tools over stdio (what an MCP client runs)
  toolreg tools                            list the tools, their safety and what they do
  toolreg tools --json                     ... as JSON
  toolreg schema --provider anthropic      the tool declarations as Anthropic's `tools` value
  toolreg call read_file '{\"path\": \"README.md\", \"limit\": 5}'
  toolreg serve --http 127.0.0.1:8080      serve over streamable HTTP at http://127.0.0.1:8080/mcp
  toolreg serve --config servers.json      also serve every tool of the MCP servers listed there

Connect an MCP client (Claude Desktop, Cursor, VS Code, ...) with:
  {\"mcpServers\": {\"toolreg\": {\"command\": \"toolreg\", \"args\": [\"serve\", \"--root\", \"/path/to/project\"]}}}";

/// One registry for every tool an LLM agent can call: the built-in tools
/// (context store, files, shell) and any MCP server's, with one policy.
#[derive(Debug, Parser)]
#[command(name = "toolreg", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// What to do; without one, `serve` over stdio.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Where the tools live.
    #[command(flatten)]
    pub tools: ToolsArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The sandboxed worker `run_code` starts (reads a program on stdin).
    #[command(hide = true)]
    CodeWorker,
    /// List the tools: name, safety, what they do.
    #[command(after_help = "Examples:\n  toolreg tools\n  toolreg tools --json | jq '.[].name'")]
    Tools {
        /// Print the declarations as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the tool declarations in a provider's wire format.
    #[command(
        after_help = "Examples:\n  toolreg schema --provider openai\n  toolreg schema --provider gemini --tool read_file"
    )]
    Schema {
        /// openai (Chat Completions), openai-responses, anthropic, gemini, mcp, bedrock, mistral, ollama.
        #[arg(long, short)]
        provider: String,
        /// Only these tools (repeatable).
        #[arg(long = "tool")]
        only: Vec<String>,
    },
    /// Call one tool through the engine and print its result; a dangerous
    /// tool asks for approval on the terminal. Images, audio, files and
    /// links in the result are printed as one-line summaries.
    #[command(
        after_help = "Examples:\n  toolreg call list_files '{}'\n  toolreg call store_set '{\"key\": \"notes\", \"value\": \"[1, 2]\"}'\n  toolreg call shell '{\"command\": \"ls\"}' --yes\n  toolreg call read_file '{\"path\": \"chart.png\"}' --out saved/"
    )]
    Call {
        /// The tool's name.
        name: String,
        /// The arguments as a JSON object (default `{}`).
        arguments: Option<String>,
        /// Approve a dangerous call without asking.
        #[arg(long)]
        yes: bool,
        /// Also write each image, audio, file or binary resource of the
        /// result to a file in this directory (created if missing), named
        /// after the block or `block-N.<ext>`.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Run an agent on a task with the tools, on the terminal: approvals and
    /// questions are asked here, steps and tool calls shown as they happen.
    #[command(
        after_help = "Examples:\n  OPENAI_API_KEY=sk-... toolreg run \"List the Rust files and count their lines\"\n  toolreg run \"Summarise README.md\" --base-url http://localhost:11434/v1 --model llama3.2\n  ANTHROPIC_API_KEY=... toolreg run \"Fix the typo in notes.txt\" --provider anthropic --model claude-sonnet-4-5"
    )]
    Run(RunArgs),
    /// Continue a run `toolreg run` stopped at dangerous calls: on this host or any other sharing
    /// the store and the host key. Each call it waits for is printed first (its id, the tool, the
    /// arguments, and what it would do where the tool says), then decided: asked one by one on a
    /// terminal, or as the flags say. A run resumes once.
    #[command(
        after_help = "Examples:\n  toolreg run \"Clean up old logs\" --suspend   # prints the run's id\n  toolreg resume s18a…-2f-0                      # shows each call, asks y/N for each\n  toolreg resume s18a…-2f-0 --approve-call c1 --deny-call c2 --reason \"keep that one\"\n  toolreg resume s18a…-2f-0 --approve            # every call, each printed first\n  toolreg resume s18a…-2f-0 --deny \"keep the logs\"\n\nWith no decision and no terminal, the calls are printed and nothing runs (the run can still be\nresumed). Every call the run waits for needs a decision; a call id that is not among them is an\nerror, and nothing runs."
    )]
    Resume(ResumeArgs),
    /// Serve the tools over MCP (stdio by default).
    #[command(
        after_help = "Examples:\n  toolreg serve\n  toolreg serve --http 127.0.0.1:8080 --audit audit.jsonl\n  TOOLREG_MCP_TOKEN=secret toolreg serve --http 0.0.0.0:8080 --allow-host example.com\n  toolreg serve --config ~/.config/claude/claude_desktop_config.json\n  toolreg serve --config servers.json --deferred"
    )]
    Serve(ServeArgs),
    /// Measure how well tool search finds the right tool on your own catalog: recall@1/3/5/10
    /// and MRR of labelled requests, and the requests it missed. The catalog is a JSON file of
    /// MCP tool lists (`--catalog`), or the tools of the servers in `--config`.
    #[command(
        name = "search-eval",
        after_help = "Examples:\n  toolreg search-eval --catalog tools.json --queries requests.jsonl\n  toolreg --config servers.json search-eval --queries requests.jsonl --min-recall 5=90\n  toolreg --search-model all-MiniLM-L6-v2 search-eval --catalog tools.json --queries requests.jsonl --search dense\n\nThe catalog: {\"SERVER\": [TOOL, ...], ...} or {\"SERVER\": {\"tools\": [TOOL, ...]}, ...}, each TOOL as\nMCP's tools/list gives it (name, description, inputSchema, title). Its tools are named as the\ngateway names them: SERVER__NAME.\n\nThe requests: one JSON object per line, {\"request\": \"...\", \"tools\": [\"SERVER__NAME\", ...]}, any of\nthe tools counting as found, and an optional \"kind\" (such as \"paraphrase\") reported apart."
    )]
    SearchEval(SearchEvalArgs),
    /// Access policies (--policy FILE): check one before you deploy it.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

/// `toolreg policy …`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Explain what a principal would see and call under a policy: for every tool (the
    /// built-ins and the --config servers'), granted or refused, and by which rule. A dry
    /// run of what `toolreg serve --policy FILE` enforces.
    #[command(after_help = "Examples:
  toolreg --config servers.json policy check policy.toml --scope developer
  toolreg policy check policy.toml --subject alice --json

The file (TOML):
  [roles.reader]                 # a token scope `reader` holds this role
  allow = [\"github__get_*\", \"read_file\"]
  deny = []
  max_safety = \"safe\"           # safe, cautious (default) or dangerous
  categories = []                # when set, only tools of these categories
  approve = []                   # calls that need a person's approval
  servers = []                   # the imported servers it reaches (none: all)
  calls_per_minute = 60          # per principal (its most generous role's)
  concurrent_calls = 4

  [subjects]
  alice = [\"reader\"]            # roles by subject, beside those of the scopes

A principal with no other role holds `default`, when the file defines it.")]
    Check(PolicyCheckArgs),
}

/// `toolreg policy check`.
#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    /// The policy file.
    pub file: PathBuf,
    /// The principal's subject (a token's `sub`).
    #[arg(long, default_value = "someone")]
    pub subject: String,
    /// A scope of the principal's token (repeatable).
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolreg search-eval`.
#[derive(Debug, Args)]
pub struct SearchEvalArgs {
    /// The labelled requests: JSON lines of `request`, `tools` and an optional `kind`.
    #[arg(long, value_name = "FILE")]
    pub queries: PathBuf,
    /// The tools to search: a JSON file of MCP tool lists by server. Without it, the tools
    /// imported from the servers of `--config`.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// How many misses to print (those not in the top 5), 0 for none.
    #[arg(long, default_value_t = 20)]
    pub misses: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Which search to measure: `keyword` (BM25), `dense` (the search
    /// model alone) or `hybrid` (both, fused). Default: hybrid with a
    /// search model (--search-model), keyword without.
    #[arg(long, value_enum)]
    pub search: Option<SearchKind>,
    /// Fail (exit status 1) when recall@K is under PERCENT, e.g. `5=90` (repeatable): a
    /// regression check for CI.
    #[arg(long = "min-recall", value_name = "K=PERCENT", value_parser = parse_min_recall)]
    pub min_recall: Vec<(usize, f64)>,
}

/// The searches `toolreg search-eval` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchKind {
    /// BM25 over the tools' words.
    Keyword,
    /// The search model's cosine similarity alone.
    Dense,
    /// Both, mixed (what `search_tools` runs with a model).
    Hybrid,
}

/// `K=PERCENT` of `--min-recall`.
fn parse_min_recall(text: &str) -> Result<(usize, f64), String> {
    let (k, percent) = text.split_once('=').ok_or("expected K=PERCENT, e.g. 5=90")?;
    let k: usize = k.trim().parse().map_err(|_| format!("`{k}` is not a rank"))?;
    let percent: f64 = percent.trim().parse().map_err(|_| format!("`{percent}` is not a percentage"))?;
    if !(1..=10).contains(&k) {
        return Err(format!("K is a rank from 1 to 10, not {k}"));
    }
    if !(0.0..=100.0).contains(&percent) {
        return Err(format!("PERCENT is from 0 to 100, not {percent}"));
    }
    Ok((k, percent))
}

/// Where the tools come from (shared by every subcommand).
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// The directory the file and shell tools are confined to.
    #[arg(long, global = true, default_value = ".")]
    pub root: PathBuf,
    /// The context store: an SQLite file (default: STATE/store.db), or a
    /// PostgreSQL URL (postgres://user@host/db) that several hosts share.
    /// Also read from TOOLREG_STORE.
    #[arg(long, global = true, value_name = "FILE|URL")]
    pub store: Option<String>,
    /// Where the host keeps its own state, out of the tools' reach: the
    /// sealing key (STATE/key, unless TOOLREG_KEY is set) and the default
    /// store (STATE/store.db, with the MCP tasks, request states and
    /// suspended runs), owner-only. Default: one directory per root,
    /// $XDG_STATE_HOME/toolreg/roots/NAME-HASH (~/.local/state when
    /// XDG_STATE_HOME is unset). Also read from TOOLREG_STATE_DIR. Should it
    /// lie inside the root, the file tools refuse it (as they refuse any
    /// .toolreg directory and the --audit file). A ROOT/.toolreg holding an
    /// earlier toolreg's key or store is refused until it is moved here, or
    /// named with --state-dir.
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// An `mcpServers` JSON file: import every tool of those servers.
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Leave out the shell tool.
    #[arg(long, global = true)]
    pub no_shell: bool,
    /// Append an audit record of every call to this file (JSON lines; made
    /// readable by its owner only). No tool may read or change it.
    #[arg(long, global = true)]
    pub audit: Option<PathBuf>,
    /// Fail when any server of --config cannot be reached (by default the
    /// others are served, and `serve` keeps retrying the missing ones).
    #[arg(long, global = true)]
    pub strict_servers: bool,
    /// Search tools by meaning as well as words, with this
    /// sentence-transformers model (a directory holding model.safetensors,
    /// tokenizer.json and config.json: all-MiniLM-L6-v2, bge-small-en-v1.5,
    /// e5-small). Tool vectors are computed in the background and kept in
    /// STATE/search-vectors.bin; keywords answer until they are ready. Also
    /// read from TOOLREG_SEARCH_MODEL, else from the --config file's
    /// "searchModel".
    #[arg(long, global = true, value_name = "DIR")]
    pub search_model: Option<PathBuf>,
}

/// `toolreg serve`.
#[derive(Debug, Args, Default)]
pub struct ServeArgs {
    /// Serve streamable HTTP on this address instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Serve HTTP without sessions (for several servers behind a load balancer).
    #[arg(long, requires = "http")]
    pub stateless: bool,
    /// Also accept this Host header (repeatable; loopback names are always accepted).
    #[arg(long = "allow-host", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// Also accept requests from this browser origin (repeatable).
    #[arg(long = "allow-origin", requires = "http")]
    pub allow_origins: Vec<String>,
    /// Require OAuth access tokens (JWTs) from this authorization server
    /// over HTTP: each client is the principal its token names, verified
    /// against the issuer's keys (found from its metadata). In place of
    /// TOOLREG_MCP_TOKEN.
    #[arg(long, value_name = "URL", requires_all = ["http", "audience"])]
    pub issuer: Option<String>,
    /// This server's canonical URI, which tokens must be minted for (their
    /// `aud`), such as `https://tools.example.com/mcp`.
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub audience: Option<String>,
    /// Fetch the issuer's keys here instead of from its metadata.
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub jwks_uri: Option<String>,
    /// Also accept opaque tokens, checked at this introspection endpoint
    /// (RFC 7662) with the client credentials in
    /// TOOLREG_INTROSPECTION_CLIENT_ID and TOOLREG_INTROSPECTION_SECRET.
    #[arg(long, value_name = "URL", requires = "issuer")]
    pub introspection_url: Option<String>,
    /// A scope every token must carry (repeatable; 403 insufficient_scope without).
    #[arg(long = "required-scope", value_name = "SCOPE", requires = "issuer")]
    pub required_scopes: Vec<String>,
    /// Let each principal see and call only what this access policy (TOML)
    /// grants its roles; check it first with `toolreg policy check`.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Run dangerous tools without approval.
    #[arg(long)]
    pub allow_dangerous: bool,
    /// Serve a large catalog as a short list: the --config servers' tools
    /// are left out of tools/list (the built-ins stay) and offered through
    /// two tools, `search_tools` (find tools by what they do) and
    /// `call_tool` (run one by name). On stdio or an HTTP session, the
    /// tools a search finds join that client's list
    /// (notifications/tools/list_changed); with --stateless, `call_tool`
    /// runs them.
    #[arg(long)]
    pub deferred: bool,
    /// Also defer every tool past the first N, built-ins included (implies --deferred).
    #[arg(long, value_name = "N")]
    pub deferred_past: Option<usize>,
    /// Code mode: list only `run_code` (a JavaScript program that calls the tools as
    /// `await tools.<name>(args)`, run in a sandboxed worker process, every call through
    /// the same approval and audit) with `search_tools` and `call_tool` to find and run the rest.
    #[arg(long)]
    pub code_mode: bool,
}

/// `toolreg run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task.
    pub task: String,
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// `toolreg resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The suspended run's id, as `toolreg run` printed it.
    pub id: String,
    /// Approve every call it waits for, each printed first as it will run.
    #[arg(long, conflicts_with_all = ["deny", "approve_call", "deny_call"])]
    pub approve: bool,
    /// Refuse every call it waits for, with this reason for the model.
    #[arg(long, value_name = "REASON", conflicts_with_all = ["approve_call", "deny_call"])]
    pub deny: Option<String>,
    /// Approve this call (its id as printed); repeat for each call to approve.
    #[arg(long = "approve-call", value_name = "CALL_ID")]
    pub approve_call: Vec<String>,
    /// Refuse this call (its id as printed); repeat for each call to refuse.
    #[arg(long = "deny-call", value_name = "CALL_ID")]
    pub deny_call: Vec<String>,
    /// The reason the model reads for the calls refused one by one (--deny-call, or at the prompt).
    #[arg(long, value_name = "REASON", conflicts_with_all = ["approve", "deny"])]
    pub reason: Option<String>,
    #[command(flatten)]
    pub agent: AgentArgs,
}

/// How `toolreg run` and `toolreg resume` reach the model and run the tools.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The model (default: `TOOLREG_MODEL`, or one per provider).
    #[arg(long, short)]
    pub model: Option<String>,
    /// The chosen provider's base URL, as its SDK reads it: with `/v1` for OpenAI-compatible servers
    /// (Ollama: http://localhost:11434/v1), the host root for Anthropic and Gemini; default
    /// `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL` or `GOOGLE_GEMINI_BASE_URL`.
    #[arg(long)]
    pub base_url: Option<String>,
    /// openai (Chat Completions, the default), openai-responses, anthropic or gemini.
    #[arg(long, default_value = "openai")]
    pub provider: String,
    /// Most model requests.
    #[arg(long, default_value_t = 20)]
    pub max_steps: usize,
    /// Approve every dangerous call without asking.
    #[arg(long)]
    pub yes: bool,
    /// Ask for whole answers instead of streaming them (for servers that stream tool calls badly);
    /// the answers are checked the same way.
    #[arg(long)]
    pub no_stream: bool,
    /// Also offer `run_code`: the model can write one JavaScript program that calls the tools
    /// (sandboxed, every call approved and audited as a direct one) instead of many calls.
    #[arg(long)]
    pub code_mode: bool,
    /// At a dangerous call, do not ask here: stop, keep the run in the store and print its id
    /// (what happens anyway with no terminal). `toolreg resume ID` shows the calls and continues it, on any
    /// host sharing the store and the host key (`TOOLREG_KEY`).
    #[arg(long, conflicts_with = "yes")]
    pub suspend: bool,
}
