//! Approving dangerous tools by asking the MCP client's user.

use std::borrow::Cow;

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use toolreg::BoxFuture;
use toolreg::policy::{ApprovalRequest, ApproveAll, Approver, Decision};

/// Approves a dangerous call by asking the user through MCP elicitation
/// (a form with one `approve` checkbox, showing the tool and its exact
/// arguments), when the client declared that it supports it.
///
/// When the client cannot be asked the call is refused with a result that
/// says so — unless the operator allowed dangerous tools outright. The
/// approval is bound to the exact arguments shown, like every approval.
#[derive(Debug, Clone)]
pub struct ElicitationApprover {
    /// Set when the operator allowed dangerous tools outright.
    allow: Option<ApproveAll>,
}

impl ElicitationApprover {
    /// Ask the client; with `allow_dangerous`, approve without asking.
    pub fn new(allow_dangerous: bool) -> Self {
        ElicitationApprover { allow: allow_dangerous.then(|| ApproveAll::new("allow-dangerous")) }
    }
}

impl Approver for ElicitationApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move {
            if let Some(allow) = &self.allow {
                return allow.decide(request).await;
            }
            let Some(peer) = request.extensions().get::<Peer<RoleServer>>() else {
                return request.deny(refusal(request.tool()));
            };
            let asks = peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some());
            if !asks {
                return request.deny(refusal(request.tool()));
            }
            let arguments = serde_json::to_string_pretty(request.arguments()).unwrap_or_default();
            let mut message = format!(
                "The tool `{}` may destroy data or act on the outside world. Run it with these arguments?\n{arguments}",
                request.tool()
            );
            if let Some(preview) = request.preview() {
                message.push_str("\nIt would do:\n");
                message.push_str(preview);
            }
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Approve", "description": "Run this call"}},
                    "required": ["approve"]
                }
            });
            let params: ElicitRequestParams = match serde_json::from_value(params) {
                Ok(params) => params,
                Err(error) => return request.deny(format!("could not ask for approval: {error}")),
            };
            match peer.create_elicitation(params).await {
                Ok(answer) => {
                    let approved = answer.action == ElicitationAction::Accept
                        && answer.content.as_ref().and_then(|c| c.get("approve")).and_then(|v| v.as_bool())
                            == Some(true);
                    if approved { request.approve() } else { request.deny("the user did not approve this call") }
                }
                Err(error) => request.deny(format!("could not ask the user for approval: {error}")),
            }
        })
    }

    fn name(&self) -> Cow<'_, str> {
        match &self.allow {
            Some(allow) => allow.name(),
            None => Cow::Borrowed("mcp-elicitation"),
        }
    }
}

fn refusal(tool: &str) -> String {
    format!(
        "`{tool}` is a dangerous tool and needs approval, but this MCP client cannot be asked (it does not support \
         elicitation); the server operator can allow dangerous tools with --allow-dangerous"
    )
}
