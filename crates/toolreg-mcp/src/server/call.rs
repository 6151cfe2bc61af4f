//! A `tools/call`, from the request to the result: deferred mode's
//! routing, the call's context (its connection, progress, the round of a
//! 2026-07-28 client), the engine, and the result in MCP's shape.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ErrorData};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use toolreg::{CallOptions, Checkpoints, Extensions, TaskSupport, ToolCall, ToolExecutor};

use super::progress::ProgressSender;
use super::{InputRound, McpServer, catalog, is_2026_07_28};

impl McpServer {
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let served = self.served();
        // Deferred mode's meta-tools and refusals are answered here.
        let (name, arguments) = match self.route(&served, &request.name, request.arguments, &context).await? {
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
        let mut id = call_id(&context.id)
            .ok_or_else(|| ErrorData::invalid_request("the request id cannot be used as a call id", None))?;
        // A 2026-07-28 client is asked questions with `input_required`
        // results; a later round runs under the first round's call id.
        // A tool that stops for a question (a code-mode program at a
        // dangerous call) keeps its checkpoint in the sealed state, and finds
        // it again in the next round.
        let mut checkpoints = None;
        let round = if is_2026_07_28(&context) {
            let state = match &request.request_state {
                Some(sealed) => {
                    let reopened = self.shared.seal.open(sealed, name, &arguments).await?;
                    id = reopened.call;
                    checkpoints = Some(Arc::new(Checkpoints::restoring(reopened.checkpoints)));
                    Some(reopened.state)
                }
                None => None,
            };
            let checkpoints = checkpoints.get_or_insert_with(|| Arc::new(Checkpoints::new()));
            extensions.insert_arc(Arc::clone(checkpoints));
            let round = Arc::new(InputRound::new(
                request.input_responses.unwrap_or_default(),
                state,
                context.client_capabilities(),
            ));
            extensions.insert_arc(Arc::clone(&round));
            if let Some(level) = context.meta.log_level() {
                extensions.insert(level);
            }
            Some(round)
        } else {
            None
        };
        let call = ToolCall::new(id.clone(), name, arguments.clone());
        let options = CallOptions::new().cancel(context.ct.clone()).extensions(extensions);
        let result = served.engine.execute_call_with(call, options).await;
        if let Some(sender) = progress {
            sender.finish().await;
        }
        let saved = checkpoints.map(|c| c.take_saved()).unwrap_or_default();
        if let Some(round) = round
            && let Some(asked) = self.shared.seal.answer(&round, &id, name, &arguments, saved)?
        {
            return Ok(CallToolResponse::InputRequired(asked));
        }
        to_call_tool_result(&result).map(CallToolResponse::from)
    }
}

impl McpServer {
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
                    capabilities: context.client_capabilities(),
                    owner: self.task_owner(context),
                };
                let tasks = Arc::clone(tasks);
                Ok(Some(async move { tasks.start(started).await }))
            }
            _ => Ok(None),
        }
    }
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

/// rmcp's `CallToolResult` for an engine result: the core's MCP rendering
/// ([`toolreg::provider::mcp::CallToolResult`]: every block, annotations,
/// `structuredContent`, `isError`), carried in rmcp's type unchanged.
/// rmcp reads every block that rendering writes; should it ever refuse
/// one, the client gets an internal error saying why, not a result with
/// blocks missing.
pub(super) fn to_call_tool_result(result: &toolreg::ToolResult) -> Result<CallToolResult, ErrorData> {
    let rendered = toolreg::provider::mcp::CallToolResult::new(result);
    // Block by block, moving each one's JSON (no copy of an image's base64).
    let content = rendered
        .content
        .into_iter()
        .map(serde_json::from_value::<rmcp::model::ContentBlock>)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            ErrorData::internal_error(format!("the result of `{}` cannot be sent: {error}", result.name), None)
        })?;
    let mut out = if rendered.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    // `success` and `error` set `resultType` as rmcp's constructors do; rmcp
    // leaves it out for clients older than 2026-07-28.
    out.structured_content = rendered.structured_content;
    Ok(out)
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
