//! The registry every subcommand works on: the built-in tools on embedded
//! defaults, and the tools of the MCP servers a configuration file names.

use std::path::PathBuf;
use std::sync::Arc;

use toolreg::FunctionRegistry;
use toolreg::policy::{AuditSink, JsonLinesSink};
use toolreg_builtins::Builtins;
use toolreg_builtins::store::SqliteStore;

use crate::CliError;
use toolreg_mcp::client::RemoteServer;
use toolreg_mcp::config::McpConfig;

use crate::cli::ToolsArgs;

/// The registry and what must stay alive while it serves.
pub struct Tools {
    /// Every tool: the built-ins, then each remote server's.
    pub registry: FunctionRegistry,
    /// Where audit records go, when asked.
    pub audit: Option<Arc<dyn AuditSink>>,
    /// The built-in tools alone, to rebuild from when a remote's list changes.
    builtins: FunctionRegistry,
    /// The connected remote servers (their connections live as long as these).
    pub remotes: Vec<RemoteServer>,
}

impl Tools {
    /// The registry again, with every remote server's current tools.
    pub fn rebuild(&self) -> FunctionRegistry {
        let mut registry = self.builtins.clone();
        for remote in &self.remotes {
            for (tool, error) in remote.register_into(&mut registry) {
                eprintln!("toolreg: `{tool}` from MCP server `{}` left out: {error}", remote.name());
            }
        }
        registry
    }
}

/// Build the registry the arguments describe.
pub async fn load(args: &ToolsArgs) -> Result<Tools, CliError> {
    let root = std::fs::canonicalize(&args.root)
        .map_err(|e| CliError::new(format!("the root directory {} cannot be used: {e}", args.root.display())))?;
    let store_path = match &args.store {
        Some(path) => path.clone(),
        None => root.join(".toolreg").join("store.db"),
    };
    if let Some(parent) = store_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::new(format!("cannot create {} for the store: {e}", parent.display())))?;
    }
    let store = SqliteStore::open(&store_path)
        .await
        .map_err(|e| CliError::new(format!("cannot open the store {}: {e}", store_path.display())))?;
    let namespace = store.namespace("default").map_err(|e| CliError::new(e.to_string()))?;

    let mut builtins = Builtins::new().store(namespace).files(&root);
    #[cfg(target_os = "linux")]
    if !args.no_shell {
        builtins = builtins.shell(toolreg_builtins::shell::ShellOptions::new(&root));
    }
    let mut registry = FunctionRegistry::new();
    builtins.register(&mut registry).map_err(|e| CliError::new(format!("cannot set up the built-in tools: {e}")))?;

    let audit = match &args.audit {
        None => None,
        Some(path) => Some(open_audit(path)?),
    };
    let mut remotes = Vec::new();
    if let Some(path) = &args.config {
        let config = McpConfig::from_file(path).map_err(|e| CliError::new(e.to_string()))?;
        for (name, server) in config.servers {
            let remote = RemoteServer::connect(&name, server).await.map_err(|e| CliError::new(e.to_string()))?;
            remotes.push(remote);
        }
    }
    let mut tools = Tools { builtins: registry.clone(), registry, audit, remotes };
    if !tools.remotes.is_empty() {
        tools.registry = tools.rebuild();
    }
    Ok(tools)
}

fn open_audit(path: &PathBuf) -> Result<Arc<dyn AuditSink>, CliError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CliError::new(format!("cannot open the audit file {}: {e}", path.display())))?;
    Ok(Arc::new(JsonLinesSink::new(file)))
}
