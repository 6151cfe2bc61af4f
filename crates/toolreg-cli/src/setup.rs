//! The registry every subcommand works on: the built-in tools on embedded
//! defaults, and the tools of the MCP servers a configuration file names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use toolreg::FunctionRegistry;
use toolreg::policy::{AuditSink, JsonLinesSink};
use toolreg::seal::SealingKey;
use toolreg::search::Embeddings;
use toolreg_builtins::Builtins;
use toolreg_builtins::files::RESERVED_NAME;
use toolreg_store::{ContextStore, Namespace, PostgresStore, SqliteStore};

use crate::CliError;
use toolreg_mcp::client::RemoteServer;
use toolreg_mcp::config::McpConfig;
use toolreg_mcp::gateway::Gateway;

use crate::cli::ToolsArgs;

/// The registry and what must stay alive while it serves.
pub struct Tools {
    /// Every tool: the built-ins, then each remote server's.
    pub registry: FunctionRegistry,
    /// Where audit records go, when asked.
    pub audit: Option<Arc<dyn AuditSink>>,
    /// The built-in tools alone, to rebuild from when a remote's list changes.
    builtins: FunctionRegistry,
    /// The connected remote servers, served again through the gateway
    /// (their connections live as long as it does).
    pub gateway: Gateway,
    /// The context store (for the runs `toolreg run` suspends, and their claims).
    pub store: Arc<dyn ContextStore>,
    /// Where this root's host state is kept (see [`StateDir`]).
    pub state: StateDir,
    /// The search model's embeddings, when one is configured: every
    /// registry built here searches by meaning too.
    pub embeddings: Option<Embeddings>,
}

impl Tools {
    /// The host's key, which seals what it stores to pick up later
    /// (suspended runs, a program's record of calls, MCP request state):
    /// `TOOLREG_KEY` (64 hex digits) when set — hosts sharing a store must
    /// share it — else the file `key` in the state directory, made on first
    /// use, readable by its owner only.
    pub fn host_key(&self) -> Result<SealingKey, CliError> {
        if let Ok(text) = std::env::var("TOOLREG_KEY") {
            return SealingKey::from_hex(&text).ok_or_else(|| CliError::new("TOOLREG_KEY must be 64 hex digits"));
        }
        key_file(&self.state)
    }
}

/// The environment variable that names the state directory when
/// `--state-dir` does not.
pub const STATE_DIR_VAR: &str = "TOOLREG_STATE_DIR";

/// Where toolreg keeps a root's host state, out of the tools' reach:
///
/// ```text
/// STATE/                    0700
///   key                     0600  the sealing key (unless TOOLREG_KEY is set)
///   store.db                0600  the default store: context values, suspended
///   store.db-wal, -shm      0600  runs and their claims, MCP tasks and request
///                                 states (unless --store names another)
/// ```
///
/// `STATE` is `--state-dir` (or `TOOLREG_STATE_DIR`) as given, else
/// `$XDG_STATE_HOME/toolreg/roots/NAME-HASH/`, with `~/.local/state` when
/// `XDG_STATE_HOME` is unset: NAME is the root's last component and HASH the
/// first 16 hex digits of the SHA-256 of its canonical path.
///
/// The default is one directory per root, not one for the user, because the
/// store and key have always been a project's own: two projects served by
/// one user must not read each other's context values and tasks, nor share
/// a key by accident. Replicas serving one root (one path) still share them,
/// and hosts on other machines share through `--store` and `TOOLREG_KEY`
/// as before. Nothing is made until it is needed: with `TOOLREG_KEY` and
/// `--store` set, no state directory is created at all.
///
/// Wherever it is, the file tools refuse it and the shell is kept from it
/// where the kernel allows (see `Builtins::reserve`), should it lie inside
/// the root.
#[derive(Debug, Clone)]
pub struct StateDir {
    /// The directory.
    pub path: PathBuf,
    /// Whether `--state-dir` or `TOOLREG_STATE_DIR` chose it.
    explicit: bool,
}

impl StateDir {
    /// The state directory for `root` (canonical): chosen by `flag` or
    /// [`STATE_DIR_VAR`], else the per-user default.
    fn locate(flag: Option<&Path>, root: &Path) -> Result<StateDir, CliError> {
        let from_env = std::env::var_os(STATE_DIR_VAR).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(path) = flag.map(Path::to_path_buf).or(from_env) {
            let path = std::path::absolute(&path)
                .map_err(|e| CliError::new(format!("the state directory {} cannot be used: {e}", path.display())))?;
            return Ok(StateDir { path, explicit: true });
        }
        // XDG: a relative XDG_STATE_HOME is invalid and ignored.
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local").join("state")))
            .ok_or_else(|| {
                CliError::new(format!(
                    "neither XDG_STATE_HOME nor HOME is set: name a directory for the host's state with --state-dir \
                     or {STATE_DIR_VAR}"
                ))
            })?;
        let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "root".to_owned());
        let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
        let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        Ok(StateDir { path: base.join("toolreg").join("roots").join(format!("{name}-{hash}")), explicit: false })
    }

    /// The directory, made (owner-only) if it is missing.
    fn create(&self) -> Result<&Path, CliError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&self.path)
            .map_err(|e| CliError::new(format!("cannot create the state directory {}: {e}", self.path.display())))?;
        Ok(&self.path)
    }

    /// Refuse to start over host state an earlier toolreg kept inside the
    /// root (`ROOT/.toolreg/`), unless `--state-dir` chose where state is.
    ///
    /// It is not moved: a replica still running from it would go on writing
    /// a store that was moved from under it, and its key would part from the
    /// one sealing what it stored. The message says how to move it (with
    /// every toolreg on this root stopped) or to keep it in place.
    fn refuse_legacy(&self, root: &Path) -> Result<(), CliError> {
        let legacy = root.join(RESERVED_NAME);
        let holds_state = ["key", "store.db"].iter().any(|name| legacy.join(name).exists());
        if self.explicit || !holds_state {
            return Ok(());
        }
        let (old, new) = (legacy.display(), self.path.display());
        Err(CliError::new(format!(
            "{old} holds host state (key, store) of an earlier toolreg, inside the root the tools are served from; \
             toolreg now keeps it outside the root, in {new}. Stop every toolreg serving this root, then move it: \
             mkdir -p '{new}' && mv '{old}'/* '{new}'/ && rmdir '{old}' -- or keep it where it is with \
             --state-dir '{old}' (the file tools refuse it there, the shell hides it only where it can make a mount \
             namespace)"
        )))
    }

    /// The host's own paths the tools must not reach, should they lie
    /// inside the root: this directory, and the files named by `args`.
    fn reserved(&self, args: &ToolsArgs, store: Option<&Path>) -> Vec<PathBuf> {
        let mut reserved = vec![self.path.clone()];
        if let Some(audit) = &args.audit {
            reserved.push(audit.clone());
        }
        if let Some(store) = store {
            // SQLite keeps the write-ahead log and index beside the file.
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut name = store.as_os_str().to_owned();
                name.push(suffix);
                reserved.push(PathBuf::from(name));
            }
        }
        reserved
    }
}

/// The key kept in `STATE/key`, made if there is none yet.
fn key_file(state: &StateDir) -> Result<SealingKey, CliError> {
    let path = state.path.join("key");
    let read = |path: &Path| -> Result<Option<SealingKey>, CliError> {
        match std::fs::read_to_string(path) {
            Ok(text) => SealingKey::from_hex(&text)
                .map(Some)
                .ok_or_else(|| CliError::new(format!("{} is not a key (64 hex digits)", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CliError::new(format!("cannot read the host key {}: {e}", path.display()))),
        }
    };
    if let Some(key) = read(&path)? {
        return Ok(key);
    }
    state.create()?;
    let key = SealingKey::random();
    match write_private(&path, &key.to_hex()) {
        Ok(()) => Ok(key),
        // Another process sharing the state (a replica starting at the same
        // time) made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read(&path)?.ok_or_else(|| CliError::new(format!("the host key {} vanished", path.display())))
        }
        Err(e) => Err(CliError::new(format!("cannot keep the host key in {}: {e}", path.display()))),
    }
}

/// Write `text` to a new file only its owner can read, whole or not at all:
/// written beside it, then linked into place (which fails, `AlreadyExists`,
/// if another process put one there first).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let Some(parent) = path.parent() else { return Err(std::io::Error::other("no directory")) };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    // A name no other writer uses (they may be threads of this process).
    let draft = parent.join(format!(".key-{}", &SealingKey::random().to_hex()[..16]));
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
        for (tool, error) in self.gateway.register_into(&mut registry) {
            eprintln!("toolreg: `{tool}` from an MCP server left out: {error}");
        }
        registry
    }

    /// The connected remote servers.
    pub fn remotes(&self) -> &[RemoteServer] {
        self.gateway.remotes()
    }
}

/// The environment variable that names the store when `--store` does not.
pub const STORE_VAR: &str = "TOOLREG_STORE";

/// Where the store is: a PostgreSQL URL, or an SQLite file.
enum StoreAt {
    Postgres(String),
    Sqlite(PathBuf),
}

impl StoreAt {
    /// `--store` (or `TOOLREG_STORE`) as a PostgreSQL URL or an SQLite
    /// file, else `store.db` in the state directory.
    fn locate(flag: Option<&str>, state: &StateDir) -> StoreAt {
        let from_env = std::env::var(STORE_VAR).ok().filter(|v| !v.is_empty());
        match flag.map(str::to_owned).or(from_env) {
            Some(url) if PostgresStore::is_url(&url) => StoreAt::Postgres(url),
            Some(path) => StoreAt::Sqlite(PathBuf::from(path)),
            None => StoreAt::Sqlite(state.path.join("store.db")),
        }
    }

    /// The store's `default` namespace. An SQLite file toolreg makes is
    /// readable by its owner only, and so are its `-wal` and `-shm` (SQLite
    /// gives them the file's mode); a missing directory of the state is made
    /// owner-only.
    async fn open(&self, state: &StateDir) -> Result<Namespace, CliError> {
        let store: Arc<dyn ContextStore> = match self {
            // The error names the server but not the password.
            StoreAt::Postgres(url) => Arc::new(
                PostgresStore::connect(url).await.map_err(|e| CliError::new(format!("cannot open the store: {e}")))?,
            ),
            StoreAt::Sqlite(path) => {
                if path.parent() == Some(state.path.as_path()) {
                    state.create()?;
                } else if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| CliError::new(format!("cannot create {} for the store: {e}", parent.display())))?;
                }
                let store = SqliteStore::open(path)
                    .await
                    .map_err(|e| CliError::new(format!("cannot open the store {}: {e}", path.display())))?;
                Arc::new(store)
            }
        };
        Namespace::new(store, "default").map_err(|e| CliError::new(e.to_string()))
    }
}

/// Build the registry the arguments describe.
pub async fn load(args: &ToolsArgs) -> Result<Tools, CliError> {
    let root = std::fs::canonicalize(&args.root)
        .map_err(|e| CliError::new(format!("the root directory {} cannot be used: {e}", args.root.display())))?;
    let state = StateDir::locate(args.state_dir.as_deref(), &root)?;
    state.refuse_legacy(&root)?;
    let store_at = StoreAt::locate(args.store.as_deref(), &state);
    let namespace = store_at.open(&state).await?;
    let store = Arc::clone(namespace.store());

    let sqlite = match &store_at {
        StoreAt::Sqlite(path) => Some(path.as_path()),
        StoreAt::Postgres(_) => None,
    };
    let mut builtins = Builtins::new().store(namespace).files(&root);
    for path in state.reserved(args, sqlite) {
        builtins = builtins.reserve(path);
    }
    #[cfg(target_os = "linux")]
    if !args.no_shell {
        builtins = builtins.shell(toolreg_builtins::shell::ShellOptions::new(&root));
    }
    let mut registry = FunctionRegistry::new();
    builtins.register(&mut registry).map_err(|e| CliError::new(format!("cannot set up the built-in tools: {e}")))?;
    let config = match &args.config {
        Some(path) => Some(read_config(path)?),
        None => None,
    };
    let embeddings = search_model(args, config.as_ref(), &state)?;
    if let Some(embeddings) = &embeddings {
        // Kept by every registry rebuilt from this one.
        registry.use_embeddings(embeddings.clone());
    }

    let audit = match &args.audit {
        None => None,
        Some(path) => Some(open_audit(path)?),
    };
    let remotes = match config {
        Some(config) => connect_all(config, args.strict_servers).await?,
        None => Vec::new(),
    };
    let gateway = Gateway::new(remotes);
    let mut tools = Tools { builtins: registry.clone(), registry, audit, gateway, store, state, embeddings };
    if !tools.remotes().is_empty() {
        tools.registry = tools.rebuild();
    }
    Ok(tools)
}

/// The variable `--search-model` is also read from.
pub const SEARCH_MODEL_VAR: &str = "TOOLREG_SEARCH_MODEL";

/// The `mcpServers` file, its warnings reported.
fn read_config(path: &Path) -> Result<McpConfig, CliError> {
    let config = McpConfig::from_file(path).map_err(|e| CliError::new(e.to_string()))?;
    for warning in &config.warnings {
        eprintln!("toolreg: warning: {}: {warning}", path.display());
    }
    Ok(config)
}

/// The embeddings of `--search-model` (else `TOOLREG_SEARCH_MODEL`, else the
/// configuration's `searchModel`), their vectors kept in the state
/// directory; `None` when no model is named.
fn search_model(
    args: &ToolsArgs,
    config: Option<&McpConfig>,
    state: &StateDir,
) -> Result<Option<Embeddings>, CliError> {
    let from_env = std::env::var_os(SEARCH_MODEL_VAR).filter(|v| !v.is_empty()).map(PathBuf::from);
    let from_config = config.and_then(|config| config.search_model.clone());
    let Some(dir) = args.search_model.clone().or(from_env).or(from_config) else { return Ok(None) };
    #[cfg(feature = "embeddings")]
    {
        let encoder = toolreg::search::SentenceEncoder::load(&dir)
            .map_err(|e| CliError::new(format!("cannot load the search model: {e}")))?;
        state.create()?;
        let embeddings = Embeddings::with_cache_file(encoder, state.path.join("search-vectors.bin"))
            .map_err(|e| CliError::new(format!("cannot use the search model: {e}")))?;
        Ok(Some(embeddings))
    }
    #[cfg(not(feature = "embeddings"))]
    {
        let _ = state;
        Err(CliError::new(format!(
            "the search model {} cannot be used: this toolreg was built without the `embeddings` feature",
            dir.display()
        )))
    }
}

/// Connect to every server of the file at once, so start-up takes as long
/// as the slowest server rather than the sum of them. A server that cannot
/// be reached is reported in one line and kept, retried in the background,
/// unless `strict` asks for all or nothing.
async fn connect_all(config: McpConfig, strict: bool) -> Result<Vec<RemoteServer>, CliError> {
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

/// The audit file, appended to; made readable by its owner only (the trail
/// names every call and its arguments).
fn open_audit(path: &PathBuf) -> Result<Arc<dyn AuditSink>, CliError> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file =
        options.open(path).map_err(|e| CliError::new(format!("cannot open the audit file {}: {e}", path.display())))?;
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
        let state = StateDir { path: dir.path().join("state/of/root"), explicit: true };
        let keys: Vec<String> = std::thread::scope(|scope| {
            let started: Vec<_> = (0..8).map(|_| scope.spawn(|| key_file(&state).unwrap().to_hex())).collect();
            started.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");
        assert_eq!(key_file(&state).unwrap().to_hex(), keys[0]);
        let leftovers: Vec<_> = std::fs::read_dir(&state.path).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the key is left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&state.path.join("key")), 0o600);
            for made in [&state.path, &dir.path().join("state/of"), &dir.path().join("state")] {
                assert_eq!(mode(made), 0o700, "{}", made.display());
            }
        }
    }
}
