//! [`AccessPolicy`]: which tools each principal may see and call, by role.
//!
//! A principal holds the roles its token's scopes name, the roles its
//! subject is given under `subjects`, and `default` when it holds no other
//! (a principal no host named holds `default` alone). A role grants a tool
//! when one of its `allow` patterns matches the tool's name, none of its
//! `deny` patterns does, the tool is no more dangerous than the role's
//! `max_safety`, and (when the role lists `categories`) the tool has one of
//! them. A tool is visible and callable when any role held grants it; a
//! call needs a person's approval when the granting role lists it under
//! `approve` (beside the engine's own safety rule). Patterns are tool names
//! with `*` (any run of characters) and `?` (one character).
//!
//! A role's `servers` (patterns over the names of imported MCP servers;
//! none: every server) bound what it reaches of a gateway: an imported tool
//! (category `mcp`, named `server__tool`) only of those servers, and a
//! server's resources and prompts likewise
//! ([`reaches_server`](AccessPolicy::reaches_server)).
//!
//! The engine applies it to every call before anything else runs
//! ([`EngineBuilder::access`](crate::engine::EngineBuilder::access)); a
//! server applies it to what each principal is shown. A refusal names the
//! rule that refused, never another tool.
//!
//! ```
//! use serde_json::json;
//! use toolreg::policy::{Access, AccessPolicy};
//! use toolreg::{Principal, SafetyLevel, ToolDeclaration};
//!
//! let policy: AccessPolicy = serde_json::from_value(json!({
//!     "roles": {
//!         "reader": {"allow": ["github__get_*", "github__list_*"], "max_safety": "safe"},
//!         "developer": {"allow": ["github__*"], "deny": ["github__delete_*"], "approve": ["github__merge_*"]}
//!     }
//! }))?;
//! policy.check()?;
//! let tool = |name: &str, safety| ToolDeclaration::builder(name).safety(safety).build();
//! let reader = Principal::verified("https://as", "ana").with_scopes(["reader"]);
//! let developer = Principal::verified("https://as", "dev").with_scopes(["developer"]);
//!
//! assert!(policy.decide(Some(&reader), &tool("github__get_issue", SafetyLevel::Safe)).is_granted());
//! assert!(!policy.decide(Some(&reader), &tool("github__create_issue", SafetyLevel::Cautious)).is_granted());
//! let merge = policy.decide(Some(&developer), &tool("github__merge_pr", SafetyLevel::Cautious));
//! assert!(matches!(merge, Access::Granted { approval: true, .. }));
//! let refused = policy.decide(Some(&developer), &tool("github__delete_repo", SafetyLevel::Cautious));
//! assert_eq!(refused.to_string(), "refused: role `developer` denies `github__delete_*`");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::declaration::{SafetyLevel, ToolDeclaration};
use crate::principal::Principal;

/// The role every principal without another role holds.
pub const DEFAULT_ROLE: &str = "default";

/// Which tools each principal may see and call (see the module's docs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessPolicy {
    /// The roles, by name: a token scope of the same name grants it.
    #[serde(default)]
    pub roles: BTreeMap<String, Role>,
    /// Roles given to subjects by name (a token's `sub`, a local user's
    /// name), beside those their scopes name.
    #[serde(default)]
    pub subjects: BTreeMap<String, Vec<String>>,
}

/// What one role may see and call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// Tool name patterns the role may call.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tool name patterns it may not, whatever `allow` says.
    #[serde(default)]
    pub deny: Vec<String>,
    /// The most dangerous tools it may call (default `cautious`).
    #[serde(default = "cautious")]
    pub max_safety: SafetyLevel,
    /// When set, only tools in one of these categories.
    #[serde(default)]
    pub categories: Vec<String>,
    /// Tools whose calls need a person's approval for this role.
    #[serde(default)]
    pub approve: Vec<String>,
    /// The imported servers it reaches (patterns; none: every server).
    #[serde(default)]
    pub servers: Vec<String>,
    /// At most this many calls a minute for each principal holding the
    /// role (none: no limit).
    #[serde(default)]
    pub calls_per_minute: Option<u32>,
    /// At most this many calls at once for each principal holding it.
    #[serde(default)]
    pub concurrent_calls: Option<u32>,
}

/// The limits on one principal's calls: those of its most generous role
/// (a role without a limit sets none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Calls a minute.
    pub calls_per_minute: Option<u32>,
    /// Calls at once.
    pub concurrent_calls: Option<u32>,
}

fn cautious() -> SafetyLevel {
    SafetyLevel::Cautious
}

/// What a policy says of one principal and one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// The tool may be seen and called.
    Granted {
        /// The role that grants it (the first, by name, of those that do).
        role: String,
        /// The pattern of that role's `allow` that matched.
        rule: String,
        /// Whether its calls need a person's approval under this role.
        approval: bool,
    },
    /// The tool is hidden and its calls refused.
    Refused {
        /// Why, by rule (never naming another tool).
        reason: String,
    },
}

impl Access {
    /// Whether the tool may be seen and called.
    pub fn is_granted(&self) -> bool {
        matches!(self, Access::Granted { .. })
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Access::Granted { role, rule, approval } => {
                write!(f, "granted: role `{role}` allows `{rule}`")?;
                if *approval {
                    f.write_str(", with a person's approval")?;
                }
                Ok(())
            }
            Access::Refused { reason } => write!(f, "refused: {reason}"),
        }
    }
}

/// What is wrong with a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid access policy: {0}")]
pub struct AccessPolicyError(pub String);

impl AccessPolicy {
    /// Check what parsing cannot: every role a subject is given exists,
    /// every pattern is a non-empty name pattern.
    pub fn check(&self) -> Result<(), AccessPolicyError> {
        for (subject, roles) in &self.subjects {
            if let Some(missing) = roles.iter().find(|role| !self.roles.contains_key(*role)) {
                return Err(AccessPolicyError(format!(
                    "subject `{subject}` is given the role `{missing}`, which is not defined"
                )));
            }
        }
        for (name, role) in &self.roles {
            for pattern in role.allow.iter().chain(&role.deny).chain(&role.approve).chain(&role.servers) {
                if pattern.is_empty() || pattern.chars().any(char::is_whitespace) {
                    return Err(AccessPolicyError(format!("role `{name}`: `{pattern}` is not a tool name pattern")));
                }
            }
        }
        Ok(())
    }

    /// The roles `principal` holds, by name.
    pub fn roles_of(&self, principal: Option<&Principal>) -> Vec<&str> {
        let mut held: Vec<&str> = Vec::new();
        if let Some(principal) = principal {
            held.extend(
                principal.scopes.iter().filter_map(|scope| self.roles.get_key_value(scope)).map(|(k, _)| k.as_str()),
            );
            if let Some(given) = self.subjects.get(&principal.subject) {
                held.extend(given.iter().map(String::as_str));
            }
        }
        if held.is_empty() && self.roles.contains_key(DEFAULT_ROLE) {
            held.push(DEFAULT_ROLE);
        }
        held.sort_unstable();
        held.dedup();
        held
    }

    /// Whether `principal` reaches the imported server `server` (its
    /// resources and prompts; `None`: an item whose server is not known,
    /// reached only by a role that reaches every server).
    pub fn reaches_server(&self, principal: Option<&Principal>, server: Option<&str>) -> bool {
        self.roles_of(principal).iter().any(|name| {
            let role = &self.roles[*name];
            match server {
                Some(server) => role.reaches(server),
                None => role.servers.is_empty(),
            }
        })
    }

    /// The limits on `principal`'s calls.
    pub fn quota_of(&self, principal: Option<&Principal>) -> Quota {
        let held = self.roles_of(principal);
        let most = |limit: fn(&Role) -> Option<u32>| {
            let limits: Option<Vec<u32>> = held.iter().map(|name| limit(&self.roles[*name])).collect();
            limits.and_then(|limits| limits.into_iter().max())
        };
        Quota { calls_per_minute: most(|r| r.calls_per_minute), concurrent_calls: most(|r| r.concurrent_calls) }
    }

    /// Whether `principal` may see and call the tool `decl` declares, and
    /// by which rule.
    pub fn decide(&self, principal: Option<&Principal>, decl: &ToolDeclaration) -> Access {
        let held = self.roles_of(principal);
        if held.is_empty() {
            return Access::Refused { reason: "no role of this policy is held".to_owned() };
        }
        let mut reasons = Vec::new();
        for name in held {
            let role = &self.roles[name];
            let matching = |patterns: &[String]| patterns.iter().find(|p| matches(p, &decl.name)).cloned();
            if let Some(denied) = matching(&role.deny) {
                reasons.push(format!("role `{name}` denies `{denied}`"));
            } else if let Some(rule) = matching(&role.allow) {
                if let Some(server) = imported_from(decl).filter(|server| !role.reaches(server)) {
                    reasons.push(format!("role `{name}` does not reach the server `{server}`"));
                } else if decl.safety > role.max_safety {
                    reasons.push(format!("role `{name}` calls tools up to {}", role.max_safety.as_str()));
                } else if !role.categories.is_empty() && !decl.categories.iter().any(|c| role.categories.contains(c)) {
                    reasons.push(format!("role `{name}` calls tools of the categories {}", role.categories.join(", ")));
                } else {
                    let approval = matching(&role.approve).is_some();
                    return Access::Granted { role: name.to_owned(), rule, approval };
                }
            } else {
                reasons.push(format!("role `{name}` does not allow it"));
            }
        }
        Access::Refused { reason: reasons.join("; ") }
    }
}

impl Role {
    fn reaches(&self, server: &str) -> bool {
        self.servers.is_empty() || self.servers.iter().any(|pattern| matches(pattern, server))
    }
}

/// The server an imported tool comes from: the part of its name before
/// `__`, for a tool of the category `mcp`.
fn imported_from(decl: &ToolDeclaration) -> Option<&str> {
    decl.categories.iter().any(|c| c == "mcp").then(|| decl.name.split_once("__").map(|(server, _)| server)).flatten()
}

/// Whether `name` matches `pattern` (`*`: any run of characters, `?`: one).
fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // The last `*` seen and where in `name` it has matched up to: on a
    // mismatch, let it take one more character (linear backtracking).
    let (mut i, mut j, mut star, mut from) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            i += 1;
            from = j;
        } else if let Some(at) = star {
            i = at + 1;
            from += 1;
            j = from;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        for (pattern, name, expected) in [
            ("*", "anything", true),
            ("github__*", "github__get_issue", true),
            ("github__*", "gitlab__get_issue", false),
            ("*__delete_*", "jira__delete_issue", true),
            ("*__delete_*", "jira__deleted", false),
            ("read_file", "read_file", true),
            ("read_file", "read_files", false),
            ("read_?ile", "read_file", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("", "", true),
        ] {
            assert_eq!(matches(pattern, name), expected, "{pattern} ~ {name}");
        }
    }

    #[test]
    fn roles_come_from_scopes_subjects_or_the_default() {
        let policy: AccessPolicy = serde_json::from_value(serde_json::json!({
            "roles": {"default": {"allow": ["ping"]}, "ops": {"allow": ["*"]}, "audit": {"allow": ["log_*"]}},
            "subjects": {"carol": ["audit"]}
        }))
        .unwrap();
        policy.check().unwrap();
        let p = |sub: &str, scopes: &[&str]| Principal::verified("https://as", sub).with_scopes(scopes.iter().copied());
        assert_eq!(policy.roles_of(Some(&p("ann", &["ops", "email"]))), ["ops"]);
        assert_eq!(policy.roles_of(Some(&p("carol", &["ops"]))), ["audit", "ops"]);
        assert_eq!(policy.roles_of(Some(&p("dan", &["email"]))), ["default"]);
        assert_eq!(policy.roles_of(None), ["default"]);
        let bad: AccessPolicy = serde_json::from_value(serde_json::json!({"subjects": {"x": ["root"]}})).unwrap();
        assert!(bad.check().unwrap_err().to_string().contains("`root`, which is not defined"));
        let typo = serde_json::from_value::<AccessPolicy>(serde_json::json!({"roles": {"a": {"alow": ["*"]}}}));
        assert!(typo.unwrap_err().to_string().contains("alow"));
    }

    #[test]
    fn servers_bound_imported_tools_and_what_else_a_server_offers() {
        let policy: AccessPolicy = serde_json::from_value(serde_json::json!({
            "roles": {"tracker": {"allow": ["*"], "servers": ["jira*"]}, "any": {"allow": ["read_*"]}}
        }))
        .unwrap();
        let who = Principal::verified("https://as", "t").with_scopes(["tracker"]);
        let imported = |name: &str| ToolDeclaration::builder(name).category("mcp").safety(SafetyLevel::Safe).build();
        assert!(policy.decide(Some(&who), &imported("jira__get_issue")).is_granted());
        let other = policy.decide(Some(&who), &imported("github__get_issue"));
        assert_eq!(other.to_string(), "refused: role `tracker` does not reach the server `github`");
        // A built-in tool is no server's.
        let built_in = ToolDeclaration::builder("read_file").safety(SafetyLevel::Safe).build();
        assert!(policy.decide(Some(&who), &built_in).is_granted());
        assert!(policy.reaches_server(Some(&who), Some("jira-cloud")));
        assert!(!policy.reaches_server(Some(&who), Some("github")));
        assert!(!policy.reaches_server(Some(&who), None), "an item of no known server needs a role reaching all");
        let anyone = Principal::verified("https://as", "a").with_scopes(["any"]);
        assert!(policy.reaches_server(Some(&anyone), None) && policy.reaches_server(Some(&anyone), Some("github")));
    }

    #[test]
    fn safety_and_categories_bound_what_a_role_allows() {
        let policy: AccessPolicy = serde_json::from_value(serde_json::json!({
            "roles": {"web": {"allow": ["*"], "max_safety": "safe", "categories": ["web"]}}
        }))
        .unwrap();
        let who = Principal::verified("https://as", "w").with_scopes(["web"]);
        let tool = |safety, category: &str| ToolDeclaration::builder("t").safety(safety).category(category).build();
        assert!(policy.decide(Some(&who), &tool(SafetyLevel::Safe, "web")).is_granted());
        let risky = policy.decide(Some(&who), &tool(SafetyLevel::Dangerous, "web"));
        assert_eq!(risky.to_string(), "refused: role `web` calls tools up to safe");
        let other = policy.decide(Some(&who), &tool(SafetyLevel::Safe, "fs"));
        assert_eq!(other.to_string(), "refused: role `web` calls tools of the categories web");
        let nobody = policy.decide(None, &tool(SafetyLevel::Safe, "web"));
        assert_eq!(nobody.to_string(), "refused: no role of this policy is held");
    }
}
