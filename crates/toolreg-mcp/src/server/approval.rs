//! Approving dangerous tools by asking the MCP client's user.

use std::borrow::Cow;

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use toolreg::BoxFuture;
use toolreg::policy::{ApprovalRequest, Approver, Decision};

/// Approves a dangerous call by asking the user through MCP elicitation
/// (a form with one `approve` checkbox, showing the tool and its exact
/// arguments), when the client declared that it supports it.
///
/// When the client cannot be asked the call is refused with a result that
/// says so — unless the operator allowed dangerous tools outright. The
/// approval is bound to the exact arguments shown, like every approval.
#[derive(Debug, Clone, Copy)]
pub struct ElicitationApprover {
    allow_dangerous: bool,
}

impl ElicitationApprover {
    /// Ask the client; with `allow_dangerous`, approve without asking.
    pub fn new(allow_dangerous: bool) -> Self {
        ElicitationApprover { allow_dangerous }
    }
}

impl Approver for ElicitationApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        Box::pin(async move {
            if self.allow_dangerous {
                return request.approve();
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
        Cow::Borrowed(if self.allow_dangerous { "allow-dangerous" } else { "mcp-elicitation" })
    }
}

fn refusal(tool: &str) -> String {
    format!(
        "`{tool}` is a dangerous tool and needs approval, but this MCP client cannot be asked (it does not support \
         elicitation); the server operator can allow dangerous tools with --allow-dangerous"
    )
}
