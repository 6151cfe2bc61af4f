//! Who is asking: the [`Principal`] a call runs for.
//!
//! The host that runs a call says who it is for — an MCP server from the
//! request's verified token, the command line for the local user, an
//! application from its own sessions — and never the call's arguments, which
//! the model writes. The approver, hooks and the tool see it in the
//! [`CallContext`](crate::CallContext); the audit record names it.
//!
//! ```
//! use toolreg::{CallOptions, Principal};
//!
//! let alice = Principal::verified("https://login.example.com", "alice")
//!     .with_client_id("ci-agent")
//!     .with_scopes(["tools:read", "tools:call"]);
//! assert!(alice.has_scope("tools:call"));
//! assert_eq!(alice.to_string(), "alice (client ci-agent, token from https://login.example.com)");
//! let options = CallOptions::new().principal(alice);
//! assert_eq!(options.principal.as_deref().map(|p| p.subject.as_str()), Some("alice"));
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// Who a call runs for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Principal {
    /// Who: a token's `sub`, the local user's name, or the host's own name
    /// for the session.
    pub subject: String,
    /// The program acting for the subject, when known (a token's
    /// `client_id` or `azp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// What it was granted (a token's scopes or roles), sorted, no repeats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// How the host knows it.
    pub source: PrincipalSource,
}

/// How a host came to know a [`Principal`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PrincipalSource {
    /// An access token verified against the authorization server that
    /// issued it.
    Token {
        /// The token's issuer.
        issuer: String,
    },
    /// A secret shared by everyone allowed in (a server's static bearer
    /// token): it says that the caller holds it, not who the caller is.
    SharedSecret,
    /// The user of this machine: a program on the other end of stdio, or
    /// the terminal.
    Local,
    /// The embedding application's own word.
    Host,
}

impl Principal {
    fn new(subject: impl Into<String>, source: PrincipalSource) -> Self {
        Principal { subject: subject.into(), client_id: None, scopes: Vec::new(), source }
    }

    /// The subject of an access token verified against `issuer`.
    pub fn verified(issuer: impl Into<String>, subject: impl Into<String>) -> Self {
        Self::new(subject, PrincipalSource::Token { issuer: issuer.into() })
    }

    /// Whoever holds a server's shared bearer token.
    pub fn shared_secret() -> Self {
        Self::new("bearer-token", PrincipalSource::SharedSecret)
    }

    /// The user of this machine, by name (`"local"` when the name is not
    /// known).
    pub fn local(user: impl Into<String>) -> Self {
        Self::new(user, PrincipalSource::Local)
    }

    /// The user running this process, named from `USER` (or `USERNAME`).
    pub fn local_user() -> Self {
        let name = ["USER", "USERNAME"].iter().find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()));
        Self::local(name.unwrap_or_else(|| "local".to_owned()))
    }

    /// Someone the embedding application vouches for.
    pub fn host(subject: impl Into<String>) -> Self {
        Self::new(subject, PrincipalSource::Host)
    }

    /// The program acting for the subject.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// What the principal was granted (kept sorted, without repeats).
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self.scopes.sort();
        self.scopes.dedup();
        self
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.binary_search_by(|s| s.as_str().cmp(scope)).is_ok()
    }

    /// Whether `other` is the same someone (same subject from the same
    /// source, whatever their scopes now): the test for "made by this
    /// principal" on stored objects.
    pub fn same_as(&self, other: &Principal) -> bool {
        self.subject == other.subject && self.source == other.source
    }

    /// Who this is, as one string to store beside an object it made: equal
    /// for two principals exactly when [`same_as`](Self::same_as) holds.
    pub fn identity(&self) -> String {
        // JSON, so that no issuer or subject can forge another's string.
        serde_json::to_string(&(&self.source, &self.subject)).unwrap_or_default()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.subject)?;
        let mut notes = Vec::new();
        if let Some(client) = &self.client_id {
            notes.push(format!("client {client}"));
        }
        notes.push(match &self.source {
            PrincipalSource::Token { issuer } => format!("token from {issuer}"),
            PrincipalSource::SharedSecret => "shared bearer token".to_owned(),
            PrincipalSource::Local => "local user".to_owned(),
            PrincipalSource::Host => "named by the host".to_owned(),
        });
        write!(f, " ({})", notes.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_a_set_and_identity_ignores_them() {
        let a = Principal::verified("https://as", "alice").with_scopes(["b", "a", "b"]);
        assert_eq!(a.scopes, ["a", "b"]);
        assert!(a.has_scope("a") && !a.has_scope("c"));
        let narrower = Principal::verified("https://as", "alice");
        assert!(a.same_as(&narrower));
        // The same name from another issuer, or a local user of that name, is someone else.
        assert!(!a.same_as(&Principal::verified("https://other", "alice")));
        assert!(!a.same_as(&Principal::local("alice")));
        assert_eq!(a.identity(), narrower.identity());
        assert_ne!(a.identity(), Principal::verified("https://as\",\"x", "alice").identity());
        assert_ne!(a.identity(), Principal::local("alice").identity());
    }

    #[test]
    fn it_serialises_with_its_source() {
        let p = Principal::shared_secret();
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json, serde_json::json!({"subject": "bearer-token", "source": {"kind": "shared_secret"}}));
        assert_eq!(serde_json::from_value::<Principal>(json).unwrap(), p);
        assert_eq!(Principal::local("ana").to_string(), "ana (local user)");
    }
}
