//! Access policies on the command line: the file `toolreg serve --policy`
//! enforces, read from TOML, and `toolreg policy check`, which explains
//! what a principal would see under one.
//!
//! TOML rather than JSON: a policy is written and reviewed by people, and
//! each rule wants a comment saying why it is there.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use toolreg::Principal;
use toolreg::policy::{Access, AccessPolicy};

use crate::CliError;
use crate::Tools;
use crate::cli::PolicyCheckArgs;

/// The largest policy file read.
const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// The policy in `path`, checked.
pub fn read_policy(path: &Path) -> Result<AccessPolicy, CliError> {
    let failed = |why: String| CliError::new(format!("the policy {}: {why}", path.display()));
    let size = std::fs::metadata(path).map_err(|e| failed(e.to_string()))?.len();
    if size > MAX_POLICY_BYTES {
        return Err(failed(format!("{size} bytes, more than {MAX_POLICY_BYTES}")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let policy: AccessPolicy = toml::from_str(&text).map_err(|e| failed(e.to_string()))?;
    policy.check().map_err(|e| failed(e.to_string()))?;
    Ok(policy)
}

/// `toolreg policy check`: every tool, granted or refused, and why.
pub fn check(tools: &Tools, args: &PolicyCheckArgs) -> Result<(), CliError> {
    let policy = read_policy(&args.file)?;
    let principal = Principal::host(&args.subject).with_scopes(args.scopes.iter().cloned());
    let roles = policy.roles_of(Some(&principal));
    let quota = policy.quota_of(Some(&principal));
    let limit = |n: Option<u32>| n.map_or_else(|| "no limit".to_owned(), |n| n.to_string());
    let verdicts: Vec<(String, Access)> = tools
        .registry
        .list()
        .map(|entry| (entry.name().to_owned(), policy.decide(Some(&principal), entry.declaration())))
        .collect();
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let tools: Vec<_> = verdicts
            .iter()
            .map(|(name, access)| match access {
                Access::Granted { role, rule, approval } => {
                    json!({"tool": name, "granted": true, "role": role, "rule": rule, "approval": approval})
                }
                Access::Refused { reason } => json!({"tool": name, "granted": false, "reason": reason}),
                _ => json!({"tool": name, "granted": false}),
            })
            .collect();
        let report = json!({"subject": principal.subject, "scopes": principal.scopes, "roles": roles,
            "quota": {"calls_per_minute": quota.calls_per_minute, "concurrent_calls": quota.concurrent_calls},
            "tools": tools});
        writeln!(out, "{report:#}")
    } else {
        let granted = verdicts.iter().filter(|(_, access)| access.is_granted()).count();
        let held = if roles.is_empty() { "no role".to_owned() } else { format!("the roles {}", roles.join(", ")) };
        let mut text = format!(
            "{} with scopes [{}] holds {held}: {granted} of {} tools granted.\n",
            principal.subject,
            principal.scopes.join(", "),
            verdicts.len()
        );
        text.push_str(&format!(
            "Calls a minute: {}; calls at once: {}.\n",
            limit(quota.calls_per_minute),
            limit(quota.concurrent_calls)
        ));
        for (name, access) in &verdicts {
            let mark = if access.is_granted() { "+" } else { "-" };
            text.push_str(&format!("{mark} {name}: {access}\n"));
        }
        write!(out, "{text}")
    };
    written.map_err(|e| CliError::new(format!("cannot write: {e}")))
}
