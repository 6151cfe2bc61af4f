//! Approving dangerous tools by asking the MCP client's user.

use std::borrow::Cow;

use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use toolreg::BoxFuture;
use toolreg::policy::{ApprovalRequest, ApproveAll, Approver, Decision};

use crate::protocol::Approved;
use crate::protocol::InputRound;

/// Approves a dangerous call by asking the user through MCP elicitation
/// (a form with one `approve` checkbox, showing the tool and its exact
/// arguments), when the client declared that it supports it.
///
/// A client on the 2026-07-28 revision is asked with a Multi Round-Trip
/// Request instead: the call is answered with an `input_required` result
/// holding the same form (under the key [`APPROVAL_KEY`]) and a sealed
/// state, and runs when the client sends it again with an accepted answer
/// (see [`InputRound`]). Each call is asked about on its own, and its
/// approval covers that call only: its id, its tool, its arguments.
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
            if let Some(round) = request.extensions().get::<InputRound>() {
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
    if let Some(printed) = request.printed_before() {
        message.push_str("\nThe program printed before this call:\n");
        message.push_str(printed);
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
    if approves(answer) { request.approve() } else { request.deny("the user did not approve this call") }
}

fn approves(answer: &ElicitResult) -> bool {
    answer.action == ElicitationAction::Accept
        && answer.content.as_ref().and_then(|c| c.get("approve")).and_then(|v| v.as_bool()) == Some(true)
}

/// The key, in a round's state, of the call an approval question was about:
/// its id, its tool and its arguments hash (the form shows exactly that call).
const APPROVAL_STATE: &str = "toolreg_approval";

/// Approval for a 2026-07-28 client. An approval covers exactly one call
/// (its id, tool and arguments hash) and is used once: an approval given in
/// an earlier round for this very call (whose result that round discarded,
/// because a question was asked after it ran), or the answer to the question
/// this round's state says was asked about this very call; any other call —
/// another call of the same program, the same tool with other arguments —
/// is asked about in a round of its own (and refused in this one).
fn decide_in_rounds(request: &ApprovalRequest, round: &InputRound) -> Decision {
    let this = Approved {
        call: request.call_id().unwrap_or_default().to_owned(),
        tool: request.tool().to_owned(),
        hash: request.arguments_hash().to_string(),
    };
    if round.use_carried(&this) {
        return request.approve();
    }
    let asked_about = round
        .state()
        .and_then(|s| s.get(APPROVAL_STATE))
        .and_then(|a| serde_json::from_value::<Approved>(a.clone()).ok());
    if asked_about.as_ref() == Some(&this)
        && let Some(answer) = round.response(APPROVAL_KEY)
        && let Ok(answer) = serde_json::from_value::<ElicitResult>(answer.clone())
        && round.use_answer(approves(&answer).then_some(&this))
    {
        return verdict(request, &answer);
    }
    // No answer for this call yet (or one that is not an elicitation result): ask.
    if round.client_capabilities().is_none_or(|c| c.elicitation.is_none()) {
        return request.deny(refusal(request.tool()));
    }
    let params = match question(request) {
        Ok(params) => params,
        Err(error) => return request.deny(format!("could not ask for approval: {error}")),
    };
    let mut requests = InputRequests::new();
    requests.insert(APPROVAL_KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(params)));
    // The question and the state naming its call go together: when several
    // calls ask in one round (a program's `Promise.all`), the last one asks,
    // and the others ask again in a later round.
    round.ask(requests, json!({APPROVAL_STATE: this}));
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{ClientCapabilities, InputResponses};
    use serde_json::Value;
    use toolreg::{SafetyLevel, ToolDeclaration};

    use super::*;

    fn request(call: &str, command: &str) -> ApprovalRequest {
        let declaration = ToolDeclaration::builder("shell").safety(SafetyLevel::Dangerous).build();
        ApprovalRequest::new(Arc::new(declaration), Some(call), json!({"command": command}))
    }

    fn elicits() -> Option<ClientCapabilities> {
        serde_json::from_value(json!({"elicitation": {}})).ok()
    }

    /// The next round, as the server would open it: the client's answer to
    /// what this round asked, with the state this round left.
    fn next(round: &InputRound, answer: Value) -> InputRound {
        let (_, state) = round.take_asked().expect("the round asked");
        let responses: InputResponses = serde_json::from_value(json!({APPROVAL_KEY: answer})).unwrap();
        InputRound::new(responses, Some(state), elicits())
    }

    fn approved(decision: &Decision) -> bool {
        matches!(decision, Decision::Approve(_))
    }

    /// Two calls sharing rounds (a program's): the answer approves the call
    /// its form showed and nothing else; an approval carried to a later
    /// round is used once there, by that call only.
    #[test]
    fn an_answer_approves_the_one_call_it_was_asked_about_once() {
        let yes = json!({"action": "accept", "content": {"approve": true}});
        let (shown, hidden) = (request("7/1", "echo shown"), request("7/2", "touch never-approved"));
        let first = InputRound::new(InputResponses::new(), None, elicits());
        assert!(matches!(decide_in_rounds(&shown, &first), Decision::Pending { .. }));

        let second = next(&first, yes.clone());
        assert!(approved(&decide_in_rounds(&shown, &second)));
        // The same call again in this round: the answer was used.
        assert!(!approved(&decide_in_rounds(&shown, &second)));
        // Another call, the same tool with other arguments, or the same
        // arguments under another call id: asked about, not approved.
        assert!(matches!(decide_in_rounds(&hidden, &second), Decision::Pending { .. }));
        assert!(!approved(&decide_in_rounds(&request("7/1", "touch never-approved"), &second)));
        assert!(!approved(&decide_in_rounds(&request("7/3", "echo shown"), &second)));

        // The round asked again: the approval used in it goes on, for its
        // call only, once.
        let third = next(&second, json!({"action": "decline"}));
        assert!(!approved(&decide_in_rounds(&request("7/3", "echo shown"), &third)));
        assert!(approved(&decide_in_rounds(&shown, &third)));
        assert!(!approved(&decide_in_rounds(&shown, &third)));
        // The question of that round was about the last call that asked.
        assert!(!approved(&decide_in_rounds(&hidden, &third)));
    }
}
