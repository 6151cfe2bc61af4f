//! `ask_user` over MCP: the person behind the MCP client, as a function.
//!
//! A model calls it with a question (and optional choices); the server puts
//! the question to the client's user as an elicitation form with one
//! `answer` field (a choice among the choices when there are some):
//! `elicitation/create` for a handshake-era client, an `input_required`
//! result (Multi Round-Trip Requests, under [`ASK_KEY`]) for a 2026-07-28
//! client. A client that cannot be asked gets a tool error saying so; a 2026
//! client that did not declare elicitation, the protocol's missing-capability
//! error.

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    InputRequest, InputRequests,
};
use rmcp::service::{Peer, RoleServer};
use serde::Serialize;
use serde_json::{Value, json};
use toolreg::{CallContext, ToolRegistration, tool};

use crate::protocol::InputRound;

/// The key of the question in an `input_required` result's `inputRequests`
/// (and of its answer in `inputResponses`).
pub const ASK_KEY: &str = "toolreg_ask_user";

/// The key, in a round's state, of the question asked.
const ASK_STATE: &str = "toolreg_asked";

/// What `ask_user` returns.
#[derive(Debug, Serialize)]
struct Answered {
    /// The user's answer (for a choice, the choice's text).
    answer: String,
}

/// The `ask_user` tool for an [`McpServer`](super::McpServer)'s registry:
/// asks the MCP client's user (see the module docs).
///
/// ```
/// let mut registry = toolreg::FunctionRegistry::new();
/// registry.register(toolreg_mcp::server::ask_user()).unwrap();
/// assert!(registry.get("ask_user").is_some());
/// ```
pub fn ask_user() -> ToolRegistration {
    ask_tool::registration()
}

/// Ask the user a question and wait for the answer. Use it when you need
/// information or a decision only the user has; offer choices when the
/// answer is one of a few.
#[tool(name = "ask_user", safety = "safe")]
async fn ask(
    #[context] cx: CallContext,
    /// The question for the user.
    question: String,
    /// Answers to pick from; leave out for a free-text answer.
    choices: Option<Vec<String>>,
) -> Result<Answered, String> {
    let choices = choices.unwrap_or_default();
    let form = form(&question, &choices)?;
    if let Some(round) = cx.extensions().get::<InputRound>() {
        return in_rounds(round, &question, form);
    }
    let Some(peer) = cx.extensions().get::<Peer<RoleServer>>() else {
        return Err("ask_user needs a call from an MCP client".to_owned());
    };
    if peer.peer_info().is_some_and(|info| info.capabilities.elicitation.is_none()) {
        return Err(cannot_ask());
    }
    let answer = peer.create_elicitation(form).await.map_err(|e| format!("could not ask the user: {e}"))?;
    answered(&answer)
}

/// A 2026-07-28 client: the answer to the previous round's question, or ask it.
fn in_rounds(round: &InputRound, question: &str, form: ElicitRequestParams) -> Result<Answered, String> {
    let asked_before = round.state() == Some(&json!({ ASK_STATE: question }));
    if asked_before
        && let Some(answer) = round.response(ASK_KEY)
        && let Ok(answer) = serde_json::from_value::<ElicitResult>(answer.clone())
    {
        return answered(&answer);
    }
    if round.client_capabilities().is_none_or(|c| c.elicitation.is_none()) {
        let mut required = ClientCapabilities::default();
        required.elicitation = Some(ElicitationCapability::default());
        round.require(required);
        return Err(cannot_ask());
    }
    let mut requests = InputRequests::new();
    requests.insert(ASK_KEY.to_owned(), InputRequest::Elicitation(ElicitRequest::new(form)));
    round.ask(requests, json!({ ASK_STATE: question }));
    // The client sees the question; this result is discarded.
    Err("waiting for the user's answer".to_owned())
}

/// The form: the question, and one required `answer` field.
fn form(question: &str, choices: &[String]) -> Result<ElicitRequestParams, String> {
    let mut answer = json!({"type": "string", "title": "Answer"});
    if !choices.is_empty() {
        answer["enum"] = Value::from(choices.to_vec());
    }
    serde_json::from_value(json!({
        "mode": "form",
        "message": question,
        "requestedSchema": {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}
    }))
    .map_err(|e| format!("the question cannot be asked as a form: {e}"))
}

/// The accepted answer, or why there is none.
fn answered(answer: &ElicitResult) -> Result<Answered, String> {
    match answer.action {
        ElicitationAction::Accept => answer
            .content
            .as_ref()
            .and_then(|content| content.get("answer"))
            .and_then(Value::as_str)
            .map(|text| Answered { answer: text.to_owned() })
            .ok_or_else(|| "the user's answer has no `answer` text".to_owned()),
        ElicitationAction::Decline => Err("the user declined to answer".to_owned()),
        _ => Err("the user cancelled the question".to_owned()),
    }
}

fn cannot_ask() -> String {
    "this MCP client cannot be asked (it does not support elicitation)".to_owned()
}
