//! Model Context Protocol for toolreg.
//!
//! The core crate renders MCP's tool and result *formats*
//! ([`toolreg::provider::mcp`]). This crate holds the protocol around them:
//! JSON-RPC envelopes and error codes, paging of `tools/list`, and the
//! differences between protocol revisions ([`protocol`]). The MCP server
//! and client build on it.
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

pub mod protocol;
