//! A `tools/call`, from the request to the result: deferred mode's
//! routing, the call's context (its connection, progress, the round of a
//! 2026-07-28 client), the engine, and the result in MCP's shape.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ClientCapabilities, ErrorData};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use toolreg::{CallOptions, Checkpoints, Extensions, TaskSupport, ToolCall, ToolExecutor};

use super::progress::ProgressSender;
use super::result::to_call_tool_result;
use super::{InputRound, McpServer, catalog};
use crate::protocol::is_2026_07_28;

impl McpServer {
    pub(super) async fn call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let served = self.served();
        let principal = self.session.principal(&context);
        // Deferred mode's meta-tools and refusals are answered here.
        let (name, arguments) = match served
            .route(
                self.session.lasting(&context),
                principal.as_deref(),
                &request.name,
                request.arguments.take(),
                &context,
            )
            .await?
        {
            catalog::Route::Run { name, arguments } => (name, arguments),
            catalog::Route::Answered(result) => return Ok((*result).into()),
        };
        let name = name.as_str();
        if let Some(created) = self.as_task(&served, name, &arguments, request.request_state.is_some(), &context)? {
            let created = created.await?;
            return Ok(CallToolResponse::Task(created));
        }
        let mut extensions = Extensions::default();
        let progress =
            context.meta.get_progress_token().map(|token| ProgressSender::start(token, context.peer.clone()));
        if let Some(sender) = &progress {
            extensions.insert(sender.reporter());
        }
        extensions.insert(context.peer.clone());
        // Approvals and the audit trail are bound to the call id: a request
        // whose id cannot be written down is refused, never run under "".
        let id = call_id(&context.id)
            .ok_or_else(|| ErrorData::invalid_request("the request id cannot be used as a call id", None))?;
        // A 2026-07-28 client is asked questions with `input_required` results.
        let (id, round) = if is_2026_07_28(&context) {
            let (id, round) = self.open_round(id, &mut request, name, &arguments, &context).await?;
            extensions.insert_arc(Arc::clone(&round.checkpoints));
            extensions.insert_arc(Arc::clone(&round.input));
            if let Some(level) = context.meta.log_level() {
                extensions.insert(level);
            }
            (id, Some(round))
        } else {
            (id, None)
        };
        let call = ToolCall::new(id.clone(), name, arguments.clone());
        let mut options = CallOptions::new().cancel(context.ct.clone()).extensions(extensions);
        options.principal = principal;
        let result = served.engine.execute_call(call, options).await;
        if let Some(sender) = progress {
            sender.finish().await;
        }
        if let Some(round) = round
            && let Some(asked) =
                self.shared.seal.answer(&round.input, &id, name, &arguments, round.checkpoints.take_saved())?
        {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        to_call_tool_result(&result).map(CallToolResponse::from)
    }

    /// This round of a 2026-07-28 client's call, and the call id it runs
    /// under: a later round runs under the first round's id, and a tool that
    /// stopped for a question (a code-mode program at a dangerous call)
    /// finds its checkpoint again, both from the sealed state.
    async fn open_round(
        &self,
        id: String,
        request: &mut CallToolRequestParams,
        name: &str,
        arguments: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<(String, Round), ErrorData> {
        let (id, state, checkpoints) = match &request.request_state {
            Some(sealed) => {
                let reopened = self.shared.seal.open(sealed, name, arguments).await?;
                (reopened.call, Some(reopened.state), Checkpoints::restoring(reopened.checkpoints))
            }
            None => (id, None, Checkpoints::new()),
        };
        let responses = request.input_responses.take().unwrap_or_default();
        let input = Arc::new(InputRound::new(responses, state, context.client_capabilities()));
        Ok((id, Round { input, checkpoints: Arc::new(checkpoints) }))
    }

    /// The task to answer this call with, when the tool runs as one; `None`:
    /// answer it directly. A task-required tool called without the tasks
    /// extension is refused with `-32021`, naming it.
    fn as_task<'a>(
        &'a self,
        served: &catalog::Served,
        name: &str,
        arguments: &Value,
        later_round: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<
        Option<impl std::future::Future<Output = Result<rmcp::model::CreateTaskResult, ErrorData>> + 'a>,
        ErrorData,
    > {
        let Some(tasks) = &self.shared.tasks else { return Ok(None) };
        let support = served.engine.offered().get(name).and_then(|entry| entry.declaration().task_support);
        let declared = context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
        match support {
            Some(TaskSupport::Required) if !declared => {
                Err(ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build()))
            }
            // A later round of a Multi Round-Trip call goes on as it began.
            Some(TaskSupport::Required | TaskSupport::Optional) if declared && !later_round => {
                let mut extensions = Extensions::default();
                extensions.insert(context.peer.clone());
                if let Some(level) = context.meta.log_level() {
                    extensions.insert(level);
                }
                let started = super::tasks::Started {
                    engine: served.engine.clone(),
                    tool: name.to_owned(),
                    arguments: arguments.clone(),
                    extensions,
                    principal: self.session.principal(context),
                    capabilities: context.client_capabilities(),
                    owner: self.task_connection.owner_of(context),
                };
                let tasks = Arc::clone(tasks);
                Ok(Some(async move { tasks.start(started).await }))
            }
            _ => Ok(None),
        }
    }
}

/// A 2026-07-28 call's round and the checkpoints its tools keep across rounds.
struct Round {
    input: Arc<InputRound>,
    checkpoints: Arc<Checkpoints>,
}

/// The JSON-RPC id as text, the call id the engine and the audit trail see;
/// `None` for an id that cannot be rendered or renders empty.
fn call_id(id: &impl serde::Serialize) -> Option<String> {
    let text = match serde_json::to_value(id).ok()? {
        Value::String(s) => s,
        other => other.to_string(),
    };
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::call_id;
    use rmcp::model::RequestId;

    /// An id whose rendering fails, as a future id type's might.
    struct Unrenderable;

    impl serde::Serialize for Unrenderable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }

    #[test]
    fn an_id_that_cannot_be_a_call_id_is_refused() {
        assert_eq!(call_id(&RequestId::Number(7)).as_deref(), Some("7"));
        assert_eq!(call_id(&RequestId::String("call-7".into())).as_deref(), Some("call-7"));
        assert_eq!(call_id(&RequestId::String("".into())), None);
        assert_eq!(call_id(&Unrenderable), None);
    }
}
