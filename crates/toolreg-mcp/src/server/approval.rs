//! Approving dangerous tools by asking the MCP client's user.

use std::borrow::Cow;

use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};
use toolreg::BoxFuture;
use toolreg::policy::{ApprovalRequest, ApproveAll, Approver, Decision};

/// Approves a dangerous call by asking the user through MCP elicitation
/// (a form with one `approve` checkbox, showing the tool and its exact
/// arguments), when the client declared that it supports it.
///
/// A client on the 2026-07-28 revision is asked with a Multi Round-Trip
/// Request instead: the call is answered with an `input_required` result
/// holding the same form (under the key [`APPROVAL_KEY`]) and a sealed
/// state, and runs when the client sends it again with an accepted answer
/// (see [`InputRound`](super::InputRound)).
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
            if let Some(round) = request.extensions().get::<super::InputRound>() {
                return decide_in_rounds(&request, round);
            }
            let Some(peer) = request.extensions().get::<Peer<RoleServer>>() else {
                return request.deny(refusal(request.tool()));
            };
            let asks = peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_some());
            if !asks {
                return request.deny(refusal(request.tool()));
            }
            let params = match question(&request) {
                Ok(params) => params,
                Err(error) => return request.deny(format!("could not ask for approval: {error}")),
            };
            match peer.create_elicitation(params).await {
                Ok(answer) => verdict(&request, &answer),
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

/// The key of the approval question in an `input_required` result's
/// `inputRequests` (and of its answer in `inputResponses`).
pub const APPROVAL_KEY: &str = "toolreg_approve";

/// The form that asks the user to approve the call.
fn question(request: &ApprovalRequest) -> Result<ElicitRequestParams, serde_json::Error> {
    let arguments = serde_json::to_string_pretty(request.arguments()).unwrap_or_default();
    let mut message = format!(
        "The tool `{}` may destroy data or act on the outside world. Run it with these arguments?\n{arguments}",
        request.tool()
    );
    if let Some(preview) = request.preview() {
        message.push_str("\nIt would do:\n");
        message.push_str(preview);
    }
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {"type": "boolean", "title": "Approve", "description": "Run this call"}},
            "required": ["approve"]
        }
    }))
}

/// Approved only when the user accepted with `approve: true`.
fn verdict(request: &ApprovalRequest, answer: &ElicitResult) -> Decision {
    let approved = answer.action == ElicitationAction::Accept
        && answer.content.as_ref().and_then(|c| c.get("approve")).and_then(|v| v.as_bool()) == Some(true);
    if approved { request.approve() } else { request.deny("the user did not approve this call") }
}

/// The state an approval question leaves for the next round: which tool it
/// asked about (the seal binds it to the arguments and the call id).
fn asked_state(tool: &str) -> Value {
    json!({APPROVAL_STATE: tool})
}

/// The key, in a round's state, of the tool an approval question was about.
pub(crate) const APPROVAL_STATE: &str = "toolreg_approval";

/// Set beside [`APPROVAL_STATE`] by a later round of a call that was
/// approved (the gateway's, when a remote server asks a question after the
/// approval): the approval holds. Only the server writes a state (it is sealed).
pub(crate) const APPROVED: &str = "toolreg_approved";

/// Approval for a 2026-07-28 client: the answer to the question of the
/// previous round if there is one, else ask (and refuse this round).
fn decide_in_rounds(request: &ApprovalRequest, round: &super::InputRound) -> Decision {
    let state = round.state();
    let about_this = state.and_then(|s| s.get(APPROVAL_STATE)).and_then(Value::as_str) == Some(request.tool());
    if about_this && state.and_then(|s| s.get(APPROVED)) == Some(&Value::Bool(true)) {
        return request.approve();
    }
    let asked_before = state == Some(&asked_state(request.tool()));
    if asked_before
        && let Some(answer) = round.response(APPROVAL_KEY)
        && let Ok(answer) = serde_json::from_value::<ElicitResult>(answer.clone())
    {
        return verdict(request, &answer);
    }
    // No answer yet (or one that is not an elicitation result): ask.
    if round.client_capabilities().is_none_or(|c| c.elicitation.is_none()) {
        return request.deny(refusal(request.tool()));
    }
    let params = match question(request) {
        Ok(params) => params,
        Err(error) => return request.deny(format!("could not ask for approval: {error}")),
    };
    let mut requests = InputRequests::new();
    requests.insert(APPROVAL_KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(params)));
    round.ask(requests, asked_state(request.tool()));
    // The client sees the question, not this refusal; the audit trail
    // records the call as pending, not denied.
    request.pending("waiting for the user's approval (asked the client with an input_required result)")
}

fn refusal(tool: &str) -> String {
    format!(
        "`{tool}` is a dangerous tool and needs approval, but this MCP client cannot be asked (it does not support \
         elicitation); the server operator can allow dangerous tools with --allow-dangerous"
    )
}
