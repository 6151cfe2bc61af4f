//! The `mcpServers` configuration MCP clients already use (Claude Desktop,
//! Cursor, VS Code, …), so a user can point toolreg at the file they have.
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
//!     "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer …"}},
//!     "deploy": {"command": "deploy-mcp", "env": {"REGION": "eu"}, "safety": "dangerous", "timeoutMs": 120000}
//!   }
//! }
//! ```
//!
//! Beside the usual keys (`command`, `args`, `env`, `cwd`, `url`, `headers`,
//! `type`), toolreg reads `safety` (the least safety level of the server's
//! tools: `safe`, `cautious` — the default — or `dangerous`; a tool's own
//! annotations can raise it, never lower it), `timeoutMs` (per call, and the
//! longest wait for the server to answer `initialize`), `disabled`,
//! `tools` (which tools to import and how to show them: [`ToolFilter`]), and
//! `oauth` (the gateway's own client credentials for a server that requires
//! OAuth: [`UpstreamOAuth`]).
//!
//! One key of toolreg's own may sit beside `mcpServers`: `searchModel`, the
//! directory of a sentence model for hybrid tool search (`model.safetensors`,
//! `tokenizer.json`, `config.json`; relative to the file's directory). Other
//! clients ignore it.
//!
//! The file is often shared with other clients, so a key toolreg does not
//! know (another client's setting, or a typo) does not refuse the file: it is
//! ignored and named in [`McpConfig::warnings`] for the host to report.
//!
//! `type` may be `stdio`, `http` or `streamable-http` (or left out: the keys
//! imply it). `"type": "sse"`, the legacy HTTP+SSE transport, is refused
//! when the file is read, with the server's name and the fix: point `url` at
//! the server's streamable HTTP endpoint, which most servers offer beside
//! the old one.
//!
//! ```
//! use toolreg_mcp::config::{McpConfig, Transport};
//!
//! let config = McpConfig::from_json(r#"{"mcpServers": {"echo": {"command": "echo-server", "args": ["--quiet"]}}}"#)?;
//! let (name, server) = config.servers.iter().next().unwrap();
//! assert_eq!(name, "echo");
//! assert!(matches!(&server.transport, Transport::Command { command, .. } if command == "echo-server"));
//! # Ok::<(), toolreg_mcp::config::ConfigError>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toolreg::SafetyLevel;

/// Why a configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The text is not a valid configuration.
    #[error("invalid MCP server configuration: {0}")]
    Invalid(String),
}

/// A whole configuration: servers by name, in name order.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// The servers to import (disabled ones left out).
    pub servers: BTreeMap<String, ServerConfig>,
    /// What was ignored while reading (unknown keys), one sentence each.
    pub warnings: Vec<String>,
    /// The sentence model's directory for hybrid tool search (`searchModel`),
    /// relative paths taken from the file's directory by [`McpConfig::from_file`].
    pub search_model: Option<PathBuf>,
}

/// How to reach one server, and how far to trust it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// A command to start, or a URL.
    pub transport: Transport,
    /// The least safety level of its tools (default `Cautious`).
    pub safety: SafetyLevel,
    /// Longest a call may take.
    pub call_timeout: Duration,
    /// Which of its tools to import, and how to show them.
    pub tools: ToolFilter,
    /// For a URL that requires OAuth: the gateway's own client credentials
    /// (the `oauth` key).
    pub oauth: Option<UpstreamOAuth>,
}

/// How the gateway gets access tokens for a remote server that requires
/// OAuth: the client-credentials grant, with its own client id and a secret
/// read from an environment variable (never from the file, which other
/// clients read too).
///
/// ```json
/// "tracker": {"url": "https://tracker.example.com/mcp",
///             "oauth": {"clientId": "toolreg-gateway", "clientSecretEnv": "TRACKER_SECRET", "scope": "issues"}}
/// ```
///
/// The authorization server is found from the server's Protected Resource
/// Metadata unless `authorizationServer` (its issuer) or `tokenEndpoint`
/// names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct UpstreamOAuth {
    /// The gateway's client id at the authorization server.
    pub client_id: String,
    /// The environment variable holding the client secret.
    pub client_secret_env: String,
    /// The scope to ask for, when the server needs one.
    #[serde(default)]
    pub scope: Option<String>,
    /// The authorization server's issuer, instead of the server's metadata.
    #[serde(default)]
    pub authorization_server: Option<String>,
    /// The token endpoint, instead of discovering it.
    #[serde(default)]
    pub token_endpoint: Option<String>,
}

/// The `tools` key of a server: which of its tools are imported and how
/// they are offered, by their names on the server.
///
/// ```json
/// "tools": {
///   "allow": ["query", "list_tables"],
///   "deny": ["drop_table"],
///   "rename": {"query": "sql"},
///   "describe": {"query": "Read-only SQL on the analytics replica."},
///   "fixed": {"query": {"database": "analytics"}}
/// }
/// ```
///
/// `allow` (when given) lists the only tools imported, `deny` tools never
/// imported; `rename` gives a tool another name (still under the server's
/// `server__` prefix); `describe` replaces a description; `fixed` hides
/// arguments and always sends them with these values (see
/// [`toolreg::transform`]). A tool whose fixed argument it does not take is
/// left out, with a warning.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolFilter {
    /// The only tools imported (all when absent).
    #[serde(default)]
    pub allow: Option<Vec<String>>,
    /// Tools never imported.
    #[serde(default)]
    pub deny: Vec<String>,
    /// New names, by the server's names.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// New descriptions, by the server's names.
    #[serde(default)]
    pub describe: BTreeMap<String, String>,
    /// Hidden arguments and their values, by the server's names.
    #[serde(default)]
    pub fixed: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

impl ToolFilter {
    /// Whether the server's tool `name` is imported.
    pub fn admits(&self, name: &str) -> bool {
        self.allow.as_ref().is_none_or(|allow| allow.iter().any(|a| a == name)) && !self.deny.iter().any(|d| d == name)
    }
}

impl ServerConfig {
    /// A server with default trust (cautious) and timeout (60 s).
    pub fn new(transport: Transport) -> Self {
        ServerConfig {
            transport,
            safety: SafetyLevel::Cautious,
            call_timeout: Duration::from_secs(60),
            tools: ToolFilter::default(),
            oauth: None,
        }
    }

    /// Get access tokens for it with these client credentials.
    pub fn oauth(mut self, oauth: UpstreamOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Import and show its tools as `tools` says.
    pub fn tools(mut self, tools: ToolFilter) -> Self {
        self.tools = tools;
        self
    }

    /// Set the least safety level of its tools.
    pub fn safety(mut self, safety: SafetyLevel) -> Self {
        self.safety = safety;
        self
    }

    /// Set the per-call timeout.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Command {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment beside the few variables every server gets
        /// (see [`crate::client`]): the host's own environment is not passed on.
        env: BTreeMap<String, String>,
        /// The directory to start it in (default: toolreg's own).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Url {
        /// The endpoint's URL.
        url: String,
        /// Extra request headers (`Authorization`, …).
        headers: BTreeMap<String, String>,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    mcp_servers: BTreeMap<String, RawServer>,
    search_model: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Some clients write the transport's name; it is implied by the keys,
    /// but a transport toolreg cannot speak is refused by it.
    #[serde(default, rename = "type")]
    kind: Option<String>,
    safety: Option<String>,
    timeout_ms: Option<u64>,
    #[serde(default)]
    disabled: bool,
    #[serde(default)]
    tools: ToolFilter,
    #[serde(default)]
    oauth: Option<UpstreamOAuth>,
    /// Keys of other clients (or typos): warned about, not refused, so a
    /// shared file still works.
    #[serde(flatten)]
    unknown: BTreeMap<String, serde::de::IgnoredAny>,
}

impl McpConfig {
    /// Read a configuration file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::Read { path: path.to_path_buf(), message: e.to_string() })?;
        let mut config = Self::from_json(&text)?;
        if let (Some(model), Some(dir)) = (&mut config.search_model, path.parent()) {
            *model = dir.join(&*model);
        }
        Ok(config)
    }

    /// Read a configuration from its JSON text.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))?;
        let mut servers = BTreeMap::new();
        let mut warnings = Vec::new();
        for (name, server) in raw.mcp_servers {
            if server.disabled {
                continue;
            }
            if name.is_empty() {
                return Err(ConfigError::Invalid("a server has an empty name".to_owned()));
            }
            for key in server.unknown.keys() {
                warnings.push(format!("server `{name}`: unknown key `{key}` ignored"));
            }
            match server.kind.as_deref() {
                None | Some("stdio" | "http" | "streamable-http" | "streamableHttp") => {}
                Some("sse") => {
                    return Err(ConfigError::Invalid(format!(
                        "server `{name}`: `\"type\": \"sse\"` (the legacy HTTP+SSE transport) is not supported; \
                         point `url` at the server's streamable HTTP endpoint (often the same address ending in \
                         `/mcp` instead of `/sse`) and set `\"type\": \"http\"`"
                    )));
                }
                Some(other) => {
                    return Err(ConfigError::Invalid(format!(
                        "server `{name}`: transport type `{other}` is not stdio, http or streamable-http"
                    )));
                }
            }
            let transport = match (server.command, server.url) {
                (Some(command), None) if !command.trim().is_empty() => {
                    Transport::Command { command, args: server.args, env: server.env, cwd: server.cwd }
                }
                (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                    Transport::Url { url, headers: server.headers }
                }
                (None, Some(url)) => {
                    return Err(ConfigError::Invalid(format!("server `{name}`: `{url}` is not an http(s) URL")));
                }
                (Some(_), Some(_)) => {
                    return Err(ConfigError::Invalid(format!("server `{name}` has both `command` and `url`")));
                }
                _ => return Err(ConfigError::Invalid(format!("server `{name}` needs a `command` or a `url`"))),
            };
            let safety = match server.safety.as_deref() {
                None => SafetyLevel::Cautious,
                Some(text) => SafetyLevel::parse(text).ok_or_else(|| {
                    ConfigError::Invalid(format!("server `{name}`: safety `{text}` is not safe, cautious or dangerous"))
                })?,
            };
            let call_timeout = match server.timeout_ms {
                None => Duration::from_secs(60),
                Some(0) => return Err(ConfigError::Invalid(format!("server `{name}`: timeoutMs must be positive"))),
                Some(ms) => Duration::from_millis(ms),
            };
            if server.oauth.is_some() && !matches!(transport, Transport::Url { .. }) {
                return Err(ConfigError::Invalid(format!("server `{name}`: `oauth` is for a server at a `url`")));
            }
            servers.insert(
                name,
                ServerConfig { transport, safety, call_timeout, tools: server.tools, oauth: server.oauth },
            );
        }
        if raw.search_model.as_ref().is_some_and(|dir| dir.as_os_str().is_empty()) {
            return Err(ConfigError::Invalid("`searchModel` is empty: name the model's directory".to_owned()));
        }
        Ok(McpConfig { servers, warnings, search_model: raw.search_model })
    }
}
