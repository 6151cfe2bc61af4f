//! The server as rmcp runs it, with what rmcp's types cannot carry added.

use rmcp::model::ErrorData;
use serde_json::Value;

use super::McpServer;

/// The server as rmcp runs it: [`McpServer`], with each
/// listed tool's `execution` added to `tools/list` answers when tasks are
/// enabled. rmcp's `Tool` has no `execution` field, so the answer leaves
/// here as the same JSON with the field added.
#[derive(Clone)]
pub(super) struct Serving(pub(super) McpServer);

impl rmcp::Service<rmcp::RoleServer> for Serving {
    async fn handle_request(
        &self,
        request: rmcp::model::ClientRequest,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ServerResult, ErrorData> {
        let answer = rmcp::Service::handle_request(&self.0, request, context).await?;
        let rmcp::model::ServerResult::ListToolsResult(list) = answer else { return Ok(answer) };
        let served = self.0.served();
        if self.0.shared.tasks.is_none() || served.execution.is_empty() {
            return Ok(rmcp::model::ServerResult::ListToolsResult(list));
        }
        let mut value = serde_json::to_value(&list)
            .map_err(|e| ErrorData::internal_error(format!("the tool list cannot be sent: {e}"), None))?;
        if let Some(tools) = value.get_mut("tools").and_then(Value::as_array_mut) {
            for tool in tools {
                let execution = tool.get("name").and_then(Value::as_str).and_then(|n| served.execution.get(n));
                if let (Some(execution), Some(fields)) = (execution.cloned(), tool.as_object_mut()) {
                    fields.insert("execution".to_owned(), execution);
                }
            }
        }
        Ok(rmcp::model::ServerResult::CustomResult(rmcp::model::CustomResult(value)))
    }

    async fn handle_notification(
        &self,
        notification: rmcp::model::ClientNotification,
        context: rmcp::service::NotificationContext<rmcp::RoleServer>,
    ) -> Result<(), ErrorData> {
        rmcp::Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::Service::<rmcp::RoleServer>::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        rmcp::Service::<rmcp::RoleServer>::supported_protocol_versions(&self.0)
    }
}
