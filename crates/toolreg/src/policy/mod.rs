//! Policy: which tools an agent is offered ([`Selection`]), which each
//! principal may see and call ([`AccessPolicy`]),
//! who approves dangerous calls ([`Approver`] and the shipped [`ApproveAll`],
//! [`TerminalApprover`] and [`PolicyApprover`]), and what is recorded
//! ([`AuditEvent`], [`AuditSink`], [`JsonLinesSink`]).
//!
//! The [`crate::engine::ToolEngine`] puts these together with hooks and
//! batch execution.

mod access;
mod approval;
mod audit;
mod canonical;
mod hash;
mod quota;
mod rules;
mod selection;
mod terminal;

pub use access::{Access, AccessPolicy, AccessPolicyError, DEFAULT_ROLE, Quota, Role};
pub use approval::{Approval, ApprovalRequest, ApproveAll, Approver, ApproverFn, Decision, PrintedBefore, approver_fn};
pub use audit::{AuditDecision, AuditEvent, AuditSink, JsonLinesSink, MemorySink};
pub use canonical::canonical_json;
pub use hash::ArgumentsHash;
pub use quota::{QuotaRefusal, Quotas};
pub use rules::PolicyApprover;
pub use selection::Selection;
pub use terminal::TerminalApprover;
