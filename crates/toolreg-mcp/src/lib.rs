//! Model Context Protocol for toolreg.
//!
//! - [`server`]: serve a registry, a selection or a whole engine over MCP
//!   (stdio and streamable HTTP), every call through the engine's policy.
//! - [`client`]: import the tools of remote MCP servers into a registry,
//!   namespaced and untrusted; [`config`] reads the `mcpServers` file MCP
//!   clients use.
//! - [`protocol`]: JSON-RPC error codes, `tools/list` paging and protocol
//!   revisions, for hosts that speak MCP without rmcp.
//!
//! The core crate renders MCP's tool and result *formats*
//! ([`toolreg::provider::mcp`]); the protocol around them is rmcp's.
//!
//! ```
//! use serde_json::json;
//! use toolreg::provider::{ToolRef, WireFormat, mcp::Mcp};
//! use toolreg::ToolDeclaration;
//! use toolreg_mcp::protocol::{self, ListOptions, Revision};
//!
//! let decl = ToolDeclaration::new("ping", "Check the service is up.", json!({"type": "object"}));
//! let declared = Mcp::new().declare(&[ToolRef::from(&decl)])?;
//! let page = protocol::tools_list(&declared, None, Revision::V2025_11_25, &ListOptions::default())?;
//! assert_eq!(page["tools"][0]["name"], "ping");
//! assert!(page.get("nextCursor").is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod client;
pub mod config;
mod oversize;
pub mod protocol;
pub mod server;

pub use server::{McpServer, ServeError, ServerOptions};

/// The workspace README's Rust examples, compiled and run as doctests so they
/// stay true (here, where both the core and the MCP server are in reach).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
