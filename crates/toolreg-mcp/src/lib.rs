//! Model Context Protocol for toolreg.
//!
//! - [`protocol`]: what client and server share (a Multi Round-Trip
//!   round), below both; neither imports the other.
//! - [`server`]: serve a registry, a selection or a whole engine over MCP
//!   (stdio and streamable HTTP), every call through the engine's policy.
//! - [`client`]: talk to one remote MCP server and import its tools into a
//!   registry, namespaced and untrusted; [`config`] reads the `mcpServers`
//!   file MCP clients use.
//! - [`gateway`]: above both, the imported servers served again: their
//!   tools registered through it, their questions (elicitation, sampling,
//!   a remote task's `input_required`) put to the MCP client behind the
//!   call, their resources, prompts and subscriptions through the server's
//!   [`Upstream`](server::Upstream).
//!
//! The core crate renders MCP's tool and result *formats*
//! ([`toolreg::provider::mcp`]); the protocol around them is rmcp's. The
//! server sends exactly what the core renders: `tools/list` entries as
//! [`Mcp`](toolreg::provider::mcp::Mcp) declares them and `tools/call`
//! results as [`CallToolResult`](toolreg::provider::mcp::CallToolResult)
//! writes them (every content block, annotations, `structuredContent`).
//!
//! Every `tools/call` the server answers and the client sends is a
//! `tracing` span named after OpenTelemetry's MCP conventions
//! (`tools/call {tool}`, with `mcp.method.name`, `gen_ai.tool.name`,
//! `jsonrpc.request.id`, `mcp.session.id`). With the `otel` feature, W3C
//! trace context travels in the request's `_meta` (`traceparent`,
//! `tracestate`) both ways, through OpenTelemetry's global propagator: the
//! server's span becomes a child of the caller's, and the client sends its
//! own, so a call through the gateway to a remote server is one trace.
//!
//! ```
//! use serde_json::json;
//! use toolreg::provider::{ToolRef, WireFormat, mcp::Mcp};
//! use toolreg::ToolDeclaration;
//!
//! let decl = ToolDeclaration::new("ping", "Check the service is up.", json!({"type": "object"}));
//! let declared = Mcp::new().declare(&[ToolRef::from(&decl)])?;
//! assert_eq!(declared.tools[0]["name"], "ping");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod client;
pub mod config;
pub mod gateway;
mod oversize;
pub mod protocol;
pub mod server;
mod trace;

pub use server::{McpServer, ServeError, ServerOptions};

/// The rmcp this crate speaks MCP with, for the protocol types its API
/// takes (such as those of [`client::Answerer`]).
pub use rmcp;

/// The workspace README's Rust examples, compiled and run as doctests so they
/// stay true (here, where both the core and the MCP server are in reach).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// This crate's README's Rust examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
