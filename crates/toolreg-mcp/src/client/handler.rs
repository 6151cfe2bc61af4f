//! The client's side of a connection: what toolreg tells a server it can
//! do (elicitation, sampling, the tasks extension) and what it does with the
//! server's requests and notifications, for its [`RemoteServer`].

use super::*;

/// Follows the server's notifications for its [`RemoteServer`].
#[derive(Clone)]
pub(super) struct Handler {
    pub(super) server: Weak<Inner>,
}

impl ClientHandler for Handler {
    /// Elicitation and sampling are declared: the requests go to the
    /// server's answerer (see `answer`), or are refused with a reason.
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::default());
        info.capabilities.sampling = Some(rmcp::model::SamplingCapability::default());
        // The tasks extension: a server may answer any call of a tool that
        // supports tasks with a task, which the call then polls (`tools`).
        info.capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Default::default());
        info.client_info = rmcp::model::Implementation::new("toolreg", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let inner = self.server.upgrade().ok_or_else(gone)?;
        answer::elicit(&inner, request).await
    }

    // rmcp marks sampling deprecated (a protocol draft drops it); the
    // revisions the servers speak have it.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        request: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let inner = self.server.upgrade().ok_or_else(gone)?;
        answer::sample(&inner, request).await
    }

    /// Progress on a call in flight goes to its caller; progress on any
    /// other token (a call that ended, a token never sent) is dropped.
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let Some(inner) = self.server.upgrade() else { return };
        let caller = inner.progress.lock().unwrap_or_else(PoisonError::into_inner).get(&params.progress_token).cloned();
        if let Some(cx) = caller {
            cx.report_progress(params.progress, params.total, params.message.as_deref());
        }
    }

    /// An update of a resource someone subscribed to through this server.
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(inner) = self.server.upgrade() {
            // No one listening is no error.
            let _ = inner.updates.send(params.uri);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(inner) = self.server.upgrade() {
            // Read the list on another task: this one delivers the answer.
            tokio::spawn(async move {
                let server = RemoteServer { inner };
                if let Err(error) = server.refresh().await {
                    tracing::warn!(%error, "re-reading a changed tool list failed");
                }
            });
        }
    }
}

/// The server's handle is gone: no one to answer.
fn gone() -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_request("toolreg is closing this connection", None)
}
