//! The registry every subcommand works on: the built-in tools on embedded
//! defaults, and the tools of the MCP servers a configuration file names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolreg::FunctionRegistry;
use toolreg::policy::{AuditSink, JsonLinesSink};
use toolreg::seal::Key;
use toolreg_builtins::Builtins;
use toolreg_builtins::store::{ContextStore, Namespace, PostgresStore, SqliteStore};

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
    /// The context store (for the runs `toolreg run` suspends, and their claims).
    pub store: Arc<dyn ContextStore>,
    /// The root the tools are confined to (where the host key is kept).
    pub root: PathBuf,
}

impl Tools {
    /// The host's key, which seals what it stores to pick up later
    /// (suspended runs, a program's record of calls, MCP request state):
    /// `TOOLREG_KEY` (64 hex digits) when set — hosts sharing a store must
    /// share it — else the file `ROOT/.toolreg/key`, made on first use,
    /// readable by its owner only.
    pub fn host_key(&self) -> Result<Key, CliError> {
        if let Ok(text) = std::env::var("TOOLREG_KEY") {
            return Key::from_hex(&text).ok_or_else(|| CliError::new("TOOLREG_KEY must be 64 hex digits"));
        }
        key_file(&self.root)
    }
}

/// The key kept in `ROOT/.toolreg/key`, made if there is none yet.
fn key_file(root: &Path) -> Result<Key, CliError> {
    {
        let path = root.join(".toolreg").join("key");
        let read = |path: &Path| -> Result<Option<Key>, CliError> {
            match std::fs::read_to_string(path) {
                Ok(text) => Key::from_hex(&text)
                    .map(Some)
                    .ok_or_else(|| CliError::new(format!("{} is not a key (64 hex digits)", path.display()))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(CliError::new(format!("cannot read the host key {}: {e}", path.display()))),
            }
        };
        if let Some(key) = read(&path)? {
            return Ok(key);
        }
        let key = Key::random();
        match write_private(&path, &key.to_hex()) {
            Ok(()) => Ok(key),
            // Another process sharing the root (a replica starting at the
            // same time) made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                read(&path)?.ok_or_else(|| CliError::new(format!("the host key {} vanished", path.display())))
            }
            Err(e) => Err(CliError::new(format!("cannot keep the host key in {}: {e}", path.display()))),
        }
    }
}

/// Write `text` to a new file only its owner can read, whole or not at all:
/// written beside it, then linked into place (which fails, `AlreadyExists`,
/// if another process put one there first).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let Some(parent) = path.parent() else { return Err(std::io::Error::other("no directory")) };
    std::fs::create_dir_all(parent)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    // A name no other writer uses (they may be threads of this process).
    let draft = parent.join(format!(".key-{}", &Key::random().to_hex()[..16]));
    let written = options.open(&draft).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&draft, path));
    let _ = std::fs::remove_file(&draft);
    linked
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

/// The environment variable that names the store when `--store` does not.
pub const STORE_VAR: &str = "TOOLREG_STORE";

/// The store's `default` namespace: `--store` (or `TOOLREG_STORE`) as a
/// PostgreSQL URL or an SQLite file, else `ROOT/.toolreg/store.db`.
async fn open_store(flag: Option<&str>, root: &Path) -> Result<Namespace, CliError> {
    let from_env = std::env::var(STORE_VAR).ok().filter(|v| !v.is_empty());
    let location = flag.map(str::to_owned).or(from_env);
    let store: Arc<dyn ContextStore> = match location {
        Some(url) if PostgresStore::is_url(&url) => {
            // The error names the server but not the password.
            Arc::new(
                PostgresStore::connect(&url).await.map_err(|e| CliError::new(format!("cannot open the store: {e}")))?,
            )
        }
        location => {
            let path = location.map(PathBuf::from).unwrap_or_else(|| root.join(".toolreg").join("store.db"));
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(|e| CliError::new(format!("cannot create {} for the store: {e}", parent.display())))?;
            }
            let store = SqliteStore::open(&path)
                .await
                .map_err(|e| CliError::new(format!("cannot open the store {}: {e}", path.display())))?;
            Arc::new(store)
        }
    };
    Namespace::new(store, "default").map_err(|e| CliError::new(e.to_string()))
}

/// Build the registry the arguments describe.
pub async fn load(args: &ToolsArgs) -> Result<Tools, CliError> {
    let root = std::fs::canonicalize(&args.root)
        .map_err(|e| CliError::new(format!("the root directory {} cannot be used: {e}", args.root.display())))?;
    let namespace = open_store(args.store.as_deref(), &root).await?;
    let store = Arc::clone(namespace.store());

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
    let remotes = match &args.config {
        Some(path) => connect_all(path, args.strict_servers).await?,
        None => Vec::new(),
    };
    let mut tools = Tools { builtins: registry.clone(), registry, audit, remotes, store, root };
    if !tools.remotes.is_empty() {
        tools.registry = tools.rebuild();
    }
    Ok(tools)
}

/// Connect to every server of the file at once, so start-up takes as long
/// as the slowest server rather than the sum of them. A server that cannot
/// be reached is reported in one line and kept, retried in the background,
/// unless `strict` asks for all or nothing.
async fn connect_all(path: &Path, strict: bool) -> Result<Vec<RemoteServer>, CliError> {
    let config = McpConfig::from_file(path).map_err(|e| CliError::new(e.to_string()))?;
    for warning in &config.warnings {
        eprintln!("toolreg: warning: {}: {warning}", path.display());
    }
    let mut pending = tokio::task::JoinSet::new();
    for (name, server) in config.servers {
        pending.spawn(async move {
            let connected = if strict {
                RemoteServer::connect(&name, server).await.map(|remote| (remote, None))
            } else {
                RemoteServer::connect_or_retry(&name, server).await
            };
            (name, connected)
        });
    }
    let mut connected = Vec::new();
    while let Some(joined) = pending.join_next().await {
        let (name, result) = joined.map_err(|e| CliError::new(format!("connecting to an MCP server failed: {e}")))?;
        connected.push((name, result));
    }
    // Report and keep them in the file's (name) order, however they finished.
    connected.sort_by(|a, b| a.0.cmp(&b.0));
    let mut remotes = Vec::new();
    for (_, result) in connected {
        let (remote, failed) = result.map_err(|e| CliError::new(e.to_string()))?;
        if let Some(error) = failed {
            eprintln!("toolreg: warning: {error}; its tools are left out until it answers");
        }
        remotes.push(remote);
    }
    Ok(remotes)
}

fn open_audit(path: &PathBuf) -> Result<Arc<dyn AuditSink>, CliError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CliError::new(format!("cannot open the audit file {}: {e}", path.display())))?;
    Ok(Arc::new(JsonLinesSink::new(file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replicas sharing a root start at once: one key is made, and every
    /// one of them reads that one.
    #[test]
    fn processes_starting_at_once_share_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<String> = std::thread::scope(|scope| {
            let started: Vec<_> = (0..8).map(|_| scope.spawn(|| key_file(dir.path()).unwrap().to_hex())).collect();
            started.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");
        assert_eq!(key_file(dir.path()).unwrap().to_hex(), keys[0]);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join(".toolreg")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the key is left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(".toolreg/key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
