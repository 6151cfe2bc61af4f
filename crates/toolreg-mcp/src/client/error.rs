//! Why a remote server could not be used, said in one line: the error type
//! and the helpers that dig the plain cause (say `connection refused`) out
//! of rmcp's and reqwest's wrappers.

use std::time::Duration;

#[cfg(doc)]
use super::{MAX_LIST_BYTES, MAX_LIST_PAGES, MAX_TOOLS};

/// Why a server could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server's name cannot prefix tool names.
    #[error("invalid server name `{name}`: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The process could not start, the URL could not be reached, or the
    /// server did not complete the handshake in time.
    #[error("cannot connect to MCP server '{server}' {target}: {message}")]
    Connect {
        /// The server.
        server: String,
        /// Where it was looked for: `at <url>` or ``started as `<command>` ``.
        target: String,
        /// Why, in one line (the innermost cause, without Rust type names).
        message: String,
    },
    /// The server did not answer in time.
    #[error("MCP server `{server}` did not answer within {timeout:?}")]
    Timeout {
        /// The server.
        server: String,
        /// The limit.
        timeout: Duration,
    },
    /// A list the server gave (tools, resources, templates, prompts) is past
    /// one of the bounds ([`MAX_LIST_PAGES`],
    /// [`MAX_TOOLS`], [`MAX_LIST_BYTES`]).
    #[error("MCP server `{server}` lists too much: {message}")]
    TooLarge {
        /// The server.
        server: String,
        /// Which bound.
        message: String,
    },
    /// The server refused a request with a JSON-RPC error (a resource it
    /// does not have, a prompt's missing argument).
    #[error("MCP server `{server}`: {message}")]
    Refused {
        /// The server.
        server: String,
        /// The JSON-RPC error code it gave.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The server answered something unusable.
    #[error("MCP server `{server}`: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
}

/// Why the handshake failed, in one line: the innermost cause of a transport
/// error (say `connection refused`), not rmcp's wrapper types.
pub(super) fn init_cause(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    let text = match error {
        ClientInitializeError::TransportError { error, .. } => innermost(error.error.as_ref()),
        ClientInitializeError::ConnectionClosed(_) => "it closed the connection before answering `initialize`".into(),
        other => innermost(other),
    };
    let line = text.lines().next().unwrap_or_default().trim();
    // An error page's HTML says nothing a person needs here.
    let line = line.find(": <").map_or(line, |at| &line[..at]);
    cut(line, 300).to_owned()
}

/// The scope a server answered `403 insufficient_scope` for, when it named
/// one: what to ask the authorization server for besides (step-up).
pub(super) fn required_scope(error: &rmcp::service::ClientInitializeError) -> Option<String> {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ClientInitializeError::TransportError { error, .. } = error else { return None };
    let mut inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
    loop {
        if let Some(StreamableHttpError::InsufficientScope(refused)) =
            inner.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return refused.get_required_scope().map(str::to_owned);
        }
        inner = inner.source()?;
    }
}

fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut inner = error;
    loop {
        // rmcp's HTTP transport wraps the client's error without naming it
        // as the source; step into it by hand.
        if let Some(StreamableHttpError::Client(client)) = inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            inner = client;
            continue;
        }
        match inner.source() {
            Some(source) => inner = source,
            None => break,
        }
    }
    match inner.downcast_ref::<std::io::Error>() {
        Some(io) => io_cause(io),
        None => inner.to_string(),
    }
}

/// An I/O error as a person says it: `connection refused`, not
/// `Connection refused (os error 111)`.
pub(super) fn io_cause(error: &std::io::Error) -> String {
    let text = error.to_string();
    let text = match text.find(" (os error") {
        Some(at) => &text[..at],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_owned(),
    }
}

/// At most `max` bytes of `text`, on a character boundary.
pub(super) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
