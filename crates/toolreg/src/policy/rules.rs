//! [`PolicyApprover`]: decide by rules, with an optional fallback approver.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::policy::approval::{ApprovalRequest, Approver, Decision};

type Predicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

#[derive(Clone)]
enum Verdict {
    Approve,
    Deny(String),
}

#[derive(Clone)]
struct Rule {
    /// A tool name, or `*` for every tool.
    tool: String,
    when: Option<Predicate>,
    verdict: Verdict,
}

impl Rule {
    fn matches(&self, request: &ApprovalRequest) -> bool {
        (self.tool == "*" || self.tool == request.tool()) && self.when.as_ref().is_none_or(|p| p(request.arguments()))
    }
}

/// Approves or denies by rules, first match wins; a call no rule matches goes
/// to the fallback approver, or is denied when there is none.
///
/// A rule names a tool (or `"*"` for any) and may test the validated
/// arguments.
///
/// ```
/// use std::sync::Arc;
/// use toolreg::policy::{Approver, ApprovalRequest, Decision, PolicyApprover};
/// use toolreg::ToolDeclaration;
/// use serde_json::json;
///
/// let policy = PolicyApprover::new()
///     .deny_tool("format_disk", "formatting disks is never allowed")
///     .approve_if("delete_file", |args| args["path"].as_str().is_some_and(|p| p.starts_with("/tmp/")));
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let decl = Arc::new(ToolDeclaration::new("delete_file", "Delete", json!({"type": "object"})));
/// let ok = ApprovalRequest::new(decl.clone(), Some("c1"), json!({"path": "/tmp/a"}));
/// assert!(matches!(policy.decide(ok).await, Decision::Approve(_)));
/// let no = ApprovalRequest::new(decl, Some("c2"), json!({"path": "/etc/passwd"}));
/// assert!(matches!(policy.decide(no).await, Decision::Deny { .. }));
/// # });
/// ```
#[derive(Clone, Default)]
pub struct PolicyApprover {
    rules: Vec<Rule>,
    fallback: Option<Arc<dyn Approver>>,
}

impl fmt::Debug for PolicyApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyApprover")
            .field("rules", &self.rules.len())
            .field("fallback", &self.fallback.as_ref().map(|a| a.name().into_owned()))
            .finish()
    }
}

impl PolicyApprover {
    /// No rules: every call is denied until rules or a fallback are added.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, tool: impl Into<String>, when: Option<Predicate>, verdict: Verdict) -> Self {
        self.rules.push(Rule { tool: tool.into(), when, verdict });
        self
    }

    /// Approve every call to `tool` (`"*"`: any tool).
    pub fn approve_tool(self, tool: impl Into<String>) -> Self {
        self.push(tool, None, Verdict::Approve)
    }

    /// Approve calls to `tool` whose validated arguments pass `when`.
    pub fn approve_if(self, tool: impl Into<String>, when: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.push(tool, Some(Arc::new(when)), Verdict::Approve)
    }

    /// Deny every call to `tool` (`"*"`: any tool) with this reason.
    pub fn deny_tool(self, tool: impl Into<String>, reason: impl Into<String>) -> Self {
        self.push(tool, None, Verdict::Deny(reason.into()))
    }

    /// Deny calls to `tool` whose validated arguments pass `when`.
    pub fn deny_if(
        self,
        tool: impl Into<String>,
        when: impl Fn(&Value) -> bool + Send + Sync + 'static,
        reason: impl Into<String>,
    ) -> Self {
        self.push(tool, Some(Arc::new(when)), Verdict::Deny(reason.into()))
    }

    /// Ask this approver when no rule matches (a person, say).
    pub fn otherwise(mut self, approver: impl Approver) -> Self {
        self.fallback = Some(Arc::new(approver));
        self
    }
}

impl Approver for PolicyApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        let rule = self.rules.iter().find(|rule| rule.matches(&request));
        match (rule, &self.fallback) {
            (Some(rule), _) => {
                let decision = match &rule.verdict {
                    Verdict::Approve => request.approve(),
                    Verdict::Deny(reason) => request.deny(reason.clone()),
                };
                Box::pin(std::future::ready(decision))
            }
            (None, Some(fallback)) => fallback.decide(request),
            (None, None) => {
                let reason = format!("no policy rule approves calls to `{}`", request.tool());
                Box::pin(std::future::ready(request.deny(reason)))
            }
        }
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("policy")
    }
}
