//! The user as a function: asking, notifying, finishing, over both channels.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolreg::{CallContext, Finish, FunctionRegistry, SafetyLevel, Scope};
use toolreg_builtins::user::{
    AskArgs, FinalArgs, InProcessChannel, NoticeLevel, NotifyArgs, TerminalChannel, UserError, UserRequest, UserTools,
};

/// A writer the test can read back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

fn never() -> std::future::Pending<()> {
    std::future::pending()
}

#[tokio::test]
async fn the_in_process_channel_carries_questions_notices_and_the_final_answer() {
    let (channel, mut inbox) = InProcessChannel::new();
    let user = UserTools::new(channel);
    let slot = Finish::new();
    let hosted = || toolreg::CallOptions::new().extension(slot.clone());
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, user.registrations()).unwrap();
    for (name, safety) in
        [("ask_user", SafetyLevel::Safe), ("notify_user", SafetyLevel::Safe), ("final_answer", SafetyLevel::Cautious)]
    {
        let decl = registry.get(name).unwrap().declaration();
        assert_eq!(
            (decl.scope.clone(), decl.safety, decl.categories.as_slice()),
            (Scope::User, safety, ["user".to_owned()].as_slice())
        );
    }

    let app = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(request) = inbox.recv().await {
            match request {
                UserRequest::Ask(mut pending) => {
                    assert_eq!(pending.question().choices, ["staging", "production"]);
                    // Not a choice: refused, and the question stays open.
                    assert!(matches!(pending.answer("qa"), Err(UserError::NotAChoice { .. })));
                    pending.answer("1").unwrap();
                    assert_eq!(pending.answer("2"), Err(UserError::AlreadyAnswered));
                }
                UserRequest::Notify(notice) => seen.push(format!("{}: {}", notice.level, notice.message)),
                UserRequest::Final(answer) => seen.push(format!("final: {answer}")),
                other => panic!("unexpected {other:?}"),
            }
        }
        seen
    });
    let asked = json!({"question": "Deploy where?", "choices": ["staging", "production"]});
    let out = registry.execute("ask_user", asked).await.unwrap();
    assert_eq!(out.value, json!({"answer": "staging", "choice": 0}));
    let out = registry.execute("notify_user", json!({"message": "deploying", "level": "warning"})).await.unwrap();
    assert_eq!(out.value, json!({"delivered": true}));

    assert!(!slot.is_set());
    let answer = json!({"answer": "Deployed to staging."});
    let call = toolreg::ToolCall::new("f1", "final_answer", answer);
    let out = toolreg::ToolExecutor::execute_call(&registry, call, hosted()).await.outcome.unwrap();
    assert_eq!(out.value, json!({"finished": true, "answer": "Deployed to staging."}));
    assert_eq!(slot.get(), Some(&json!("Deployed to staging.")));
    // A second final answer in the same run is refused, the first one stays,
    // and the user is not shown the second.
    let call = toolreg::ToolCall::new("f2", "final_answer", json!({"answer": "again"}));
    let err = toolreg::ToolExecutor::execute_call(&registry, call, hosted()).await.outcome.unwrap_err();
    assert!(err.to_string().contains("already has a final answer"));
    assert_eq!(slot.get(), Some(&json!("Deployed to staging.")));

    drop(registry);
    drop(user);
    assert_eq!(app.await.unwrap(), ["warning: deploying", "final: Deployed to staging."]);
}

#[tokio::test]
async fn ask_user_times_out_and_the_late_answer_is_refused() {
    let (channel, mut inbox) = InProcessChannel::new();
    let user = UserTools::new(channel);
    let err = user.ask(&AskArgs::new("Still there?").timeout_secs(1), never()).await.unwrap_err();
    assert_eq!(err, UserError::Timeout { after: Duration::from_secs(1) });
    let Some(UserRequest::Ask(mut pending)) = inbox.try_recv() else { panic!("no question arrived") };
    assert!(!pending.is_waiting());
    assert_eq!(pending.answer("yes"), Err(UserError::NoLongerWaiting));
}

#[tokio::test]
async fn ask_user_is_cancelled_through_the_call_context() {
    let (channel, mut inbox) = InProcessChannel::new();
    let mut registry = FunctionRegistry::new();
    toolreg::register_tools!(registry, UserTools::new(channel).registrations()).unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let options = toolreg::CallOptions::new().cancel(token.clone());
    let call = toolreg::ToolExecutor::execute_call(
        &registry,
        toolreg::ToolCall::new("c1", "ask_user", json!({"question": "Well?"})),
        options,
    );
    let cancel = async {
        // Cancel once the question has reached the application.
        let request = inbox.recv().await;
        token.cancel();
        request
    };
    let (result, request) = tokio::join!(call, cancel);
    // Answered as cancelled, by the tool (which saw its token) or by the caller's watch.
    let error = result.outcome.unwrap_err().to_string();
    assert!(error.contains("cancelled"), "{error}");
    let Some(UserRequest::Ask(pending)) = request else { panic!("no question arrived") };
    assert!(!pending.is_waiting());
}

#[tokio::test]
async fn bad_questions_are_refused_before_the_user_is_asked() {
    let (channel, mut inbox) = InProcessChannel::new();
    let user = UserTools::new(channel);
    let cases = [
        (AskArgs::new("  "), UserError::EmptyQuestion),
        (AskArgs::new("Pick").choices(Vec::<String>::new()), UserError::BadChoices { count: 0, blank: false }),
        (AskArgs::new("Pick").choices(["a", " "]), UserError::BadChoices { count: 2, blank: true }),
        (
            AskArgs::new("Pick").choices((0..21).map(|i| i.to_string())),
            UserError::BadChoices { count: 21, blank: false },
        ),
        (AskArgs::new("Pick").timeout_secs(0), UserError::ZeroTimeout),
    ];
    for (args, expected) in cases {
        assert_eq!(user.ask(&args, never()).await.unwrap_err(), expected);
    }
    assert!(inbox.try_recv().is_none(), "a bad question reached the user");
    let empty = NotifyArgs::new("", NoticeLevel::Info);
    assert_eq!(user.notify(&empty).await.unwrap_err(), UserError::EmptyMessage);

    // A dropped question or a closed inbox means nobody is there.
    let hello = AskArgs::new("Hello?");
    let asking = user.ask(&hello, never());
    let drop_it = async {
        drop(inbox.recv().await);
    };
    let (answer, ()) = tokio::join!(asking, drop_it);
    assert!(matches!(answer.unwrap_err(), UserError::Closed { .. }));
    drop(inbox);
    assert!(matches!(user.ask(&AskArgs::new("Hello?"), never()).await.unwrap_err(), UserError::Closed { .. }));
}

#[tokio::test]
async fn final_answer_shares_the_run_slot_with_every_finishing_tool() {
    // Another tool finished the run first: final_answer is refused and the
    // run's result is untouched.
    let (channel, mut inbox) = InProcessChannel::new();
    let user = UserTools::new(channel);
    let slot = Finish::new();
    let cx = CallContext::new("c1").with_extension(slot.clone());
    assert!(cx.finish(json!({"report": 1})));
    let err = user.finish(&cx, &FinalArgs::new("late")).await.unwrap_err();
    assert_eq!(err, UserError::AlreadyFinished);
    assert_eq!(slot.get(), Some(&json!({"report": 1})));
    assert!(inbox.try_recv().is_none(), "a refused answer reached the user");

    // No host waiting (no slot): the answer is only shown.
    let done = user.finish(&CallContext::new("c2"), &FinalArgs::new("shown")).await.unwrap();
    assert!(done.finished);
    assert!(matches!(inbox.try_recv(), Some(UserRequest::Final(answer)) if answer == "shown"));
}

#[tokio::test]
async fn the_terminal_asks_again_until_a_choice_is_picked() {
    let out = Shared::default();
    let channel = TerminalChannel::new(Cursor::new(b"what\n\nProduction\n".to_vec()), out.clone());
    let user = UserTools::new(channel);
    let answer = user.ask(&AskArgs::new("Deploy where?").choices(["staging", "production"]), never()).await.unwrap();
    assert_eq!((answer.answer.as_str(), answer.choice), ("production", Some(1)));
    let text = out.text();
    assert!(text.contains("? Deploy where?\n  1) staging\n  2) production\n> "), "{text}");
    assert_eq!(text.matches("Please answer with a number from 1 to 2").count(), 2, "{text}");

    user.notify(&NotifyArgs::new("done", NoticeLevel::Error)).await.unwrap();
    assert!(out.text().ends_with("[error] done\n"));
    // Input has ended: the next question fails instead of hanging.
    let err = user.ask(&AskArgs::new("More?"), never()).await.unwrap_err();
    assert!(matches!(err, UserError::Closed { .. }), "{err}");
}

#[cfg(unix)]
#[tokio::test]
async fn the_terminal_discards_lines_typed_while_no_question_was_open() {
    // A pipe the test writes to, as a person would type.
    let (reader, mut writer) = std::os::unix::net::UnixStream::pair().unwrap();
    let out = Shared::default();
    let user = UserTools::new(TerminalChannel::new(std::io::BufReader::new(reader), out.clone()));

    let err = user.ask(&AskArgs::new("First?").timeout_secs(1), never()).await.unwrap_err();
    assert_eq!(err, UserError::Timeout { after: Duration::from_secs(1) });
    // Typed late, for the question that timed out.
    writeln!(writer, "late answer").unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let typing = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        writeln!(writer, "fresh answer").unwrap();
        writer
    });
    let answer = user.ask(&AskArgs::new("Second?"), never()).await.unwrap();
    assert_eq!(answer.answer, "fresh answer");
    drop(typing.join().unwrap());
}
