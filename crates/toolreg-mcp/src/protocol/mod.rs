//! What the MCP client and server share: the protocol's own notions, below
//! both, so that neither imports the other.
//!
//! - [`InputRound`]: one round of a Multi Round-Trip Request (2026-07-28),
//!   made by the server for a call and read by the tools it runs, an
//!   imported tool among them.
//! - `oauth`: the plumbing of MCP authorization (well-known locations,
//!   form encoding, bounded JSON answers), for the server as a resource
//!   server and the client of a server that requires OAuth.

pub(crate) mod oauth;
mod round;

pub(crate) use round::Approved;
pub use round::{InputRound, STATE_TTL};

/// Whether the request comes from a client on the 2026-07-28 revision or later.
pub(crate) fn is_2026_07_28(context: &rmcp::service::RequestContext<rmcp::service::RoleServer>) -> bool {
    use rmcp::model::ProtocolVersion;
    context.protocol_version().is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
