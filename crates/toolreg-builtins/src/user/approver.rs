//! [`UserApprover`]: approval of dangerous calls asked through the same
//! [`UserChannel`] as the user tools, so a host has one way to reach its
//! user (a terminal read by one reader, a chat window, a ticket queue).

use std::borrow::Cow;
use std::sync::Arc;

use toolreg::BoxFuture;
use toolreg::policy::{ApprovalRequest, Approver, Decision};

use super::{Question, UserChannel};

/// How many unreadable edited arguments are accepted before giving up.
const ATTEMPTS: usize = 3;

/// Asks the user, through a [`UserChannel`], whether a call may run: the
/// tool, its safety level, the exact arguments and the tool's preview of
/// what it would do, with the choices approve, deny or edit (then the new
/// arguments, as JSON). A channel that fails or closes denies the call.
///
/// ```
/// use std::io::Cursor;
/// use std::sync::Arc;
/// use serde_json::json;
/// use toolreg::policy::{ApprovalRequest, Approver, Decision};
/// use toolreg::{SafetyLevel, ToolDeclaration};
/// use toolreg_builtins::user::{TerminalChannel, UserApprover};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let approver = UserApprover::new(Arc::new(TerminalChannel::new(Cursor::new(b"deny\n".to_vec()), Vec::new())));
/// let tool = Arc::new(ToolDeclaration::builder("rm").description("Delete a file").safety(SafetyLevel::Dangerous).build());
/// let decision = approver.decide(ApprovalRequest::new(tool, Some("c1"), json!({"path": "/etc"}))).await;
/// assert!(matches!(decision, Decision::Deny { .. }));
/// # }
/// ```
#[derive(Clone)]
pub struct UserApprover {
    channel: Arc<dyn UserChannel>,
}

impl std::fmt::Debug for UserApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserApprover").field("channel", &self.channel.name()).finish()
    }
}

impl UserApprover {
    /// Ask through `channel`.
    pub fn new(channel: Arc<dyn UserChannel>) -> Self {
        UserApprover { channel }
    }

    async fn ask(&self, request: ApprovalRequest) -> Decision {
        let arguments = serde_json::to_string_pretty(request.arguments()).unwrap_or_default();
        let mut text = format!("Tool `{}` ({}) wants to run", request.tool(), request.declaration().safety);
        if let Some(id) = request.call_id() {
            text.push_str(&format!(" (call {id})"));
        }
        text.push_str(&format!(" with:\n{arguments}"));
        if let Some(preview) = request.preview() {
            text.push_str(&format!("\nIt would do:\n{preview}"));
        }
        if let Some(printed) = request.printed_before() {
            text.push_str(&format!("\nThe program printed before this call:\n{printed}"));
        }
        let question = Question::new(text).with_choices(["approve", "deny", "edit"]);
        match self.channel.ask(question).await.as_deref() {
            Ok("approve") => request.approve(),
            Ok("edit") => self.edit(request).await,
            Ok(_) => request.deny("the user declined"),
            Err(error) => request.deny(format!("no answer from the user ({error}), so the call was not approved")),
        }
    }

    /// The user's new arguments, approved (the engine validates them).
    async fn edit(&self, request: ApprovalRequest) -> Decision {
        for _ in 0..ATTEMPTS {
            let asked = self.channel.ask(Question::new("New arguments (JSON):")).await;
            match asked.map(|text| serde_json::from_str(&text)) {
                Ok(Ok(value)) => return request.approve_with(value),
                Ok(Err(_)) => continue,
                Err(error) => return request.deny(format!("no answer from the user ({error})")),
            }
        }
        request.deny("no usable arguments from the user, so the call was not approved")
    }
}

impl Approver for UserApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'_, Decision> {
        Box::pin(self.ask(request))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Owned(format!("user ({})", self.channel.name()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;
    use toolreg::{SafetyLevel, ToolDeclaration};

    use super::*;
    use crate::user::{InProcessChannel, Notice, UserError, UserRequest};

    /// Answers in turn, keeping the questions.
    struct Scripted(Mutex<(Vec<&'static str>, Vec<Question>)>);

    impl UserChannel for Scripted {
        fn ask(&self, question: Question) -> BoxFuture<'_, Result<String, UserError>> {
            let mut script = self.0.lock().unwrap();
            script.1.push(question);
            let answer = (!script.0.is_empty()).then(|| script.0.remove(0).to_owned());
            Box::pin(async move { answer.ok_or(UserError::Closed { reason: "done".into() }) })
        }
        fn notify(&self, _: Notice) -> BoxFuture<'_, Result<(), UserError>> {
            Box::pin(async { Ok(()) })
        }
    }

    fn request() -> ApprovalRequest {
        let tool = ToolDeclaration::builder("rm").description("Delete.").safety(SafetyLevel::Dangerous).build();
        ApprovalRequest::new(Arc::new(tool), Some("c1"), json!({"path": "/tmp/x"})).with_preview("- /tmp/x")
    }

    async fn decide(answers: Vec<&'static str>) -> (Decision, Vec<Question>) {
        let channel = Arc::new(Scripted(Mutex::new((answers, Vec::new()))));
        let decision = UserApprover::new(channel.clone()).decide(request()).await;
        let asked = std::mem::take(&mut channel.0.lock().unwrap().1);
        (decision, asked)
    }

    #[tokio::test]
    async fn approves_denies_and_edits_through_the_channel() {
        let (approved, asked) = decide(vec!["approve"]).await;
        assert!(matches!(approved, Decision::Approve(_)));
        let text = &asked[0].question;
        assert!(
            text.contains("`rm` (dangerous)") && text.contains("\"/tmp/x\"") && text.contains("- /tmp/x"),
            "{text}"
        );
        assert!(matches!(decide(vec!["deny"]).await.0, Decision::Deny { .. }));
        let (edited, _) = decide(vec!["edit", "not json", r#"{"path": "/tmp/y"}"#]).await;
        let Decision::Approve(approval) = edited else { panic!("{edited:?}") };
        assert_eq!(approval.edited_arguments(), Some(&json!({"path": "/tmp/y"})));
        let (closed, _) = decide(vec![]).await;
        assert!(matches!(closed, Decision::Deny { reason } if reason.contains("no answer")));
    }

    /// A host's own channel (here in-process) sees the approval as a question.
    #[tokio::test]
    async fn an_in_process_host_answers_the_approval() {
        let (channel, mut inbox) = InProcessChannel::new();
        let approver = UserApprover::new(Arc::new(channel));
        let host = tokio::spawn(async move {
            while let Some(request) = inbox.recv().await {
                if let UserRequest::Ask(mut pending) = request {
                    pending.answer("approve").unwrap();
                }
            }
        });
        assert!(matches!(approver.decide(request()).await, Decision::Approve(_)));
        host.abort();
    }
}
