//! The imported servers' resources and prompts, namespaced as the client
//! names them ([`crate::client`]'s resources: `toolreg://<server>/<uri>`,
//! `server__name`), and which server a URI or a prompt name belongs to.

use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult, ResultType,
};

use super::{Gateway, gather, remote_error};
use crate::client::{RemoteServer, SEPARATOR, URI_PREFIX};

impl Gateway {
    pub(super) async fn resources(&self) -> ListResourcesResult {
        let remotes = self.remotes.iter().filter(|remote| remote.offers_resources());
        ListResourcesResult::with_all_items(
            gather(remotes, |remote| async move { remote.list_resources().await }).await,
        )
    }

    pub(super) async fn templates(&self) -> ListResourceTemplatesResult {
        let remotes = self.remotes.iter().filter(|remote| remote.offers_resources());
        let templates = gather(remotes, |remote| async move { remote.list_resource_templates().await }).await;
        ListResourceTemplatesResult::with_all_items(templates)
    }

    pub(super) async fn prompts(&self) -> ListPromptsResult {
        let remotes = self.remotes.iter().filter(|remote| remote.offers_prompts());
        ListPromptsResult::with_all_items(gather(remotes, |remote| async move { remote.list_prompts().await }).await)
    }

    /// Read a gateway URI on its server, or a URI a remote tool linked to on
    /// the server whose tool did.
    pub(super) async fn read(&self, request: ReadResourceRequestParams) -> Result<ReadResourceResult, ErrorData> {
        let uri = request.uri.as_str();
        let owner = self.owner_of(uri).await?;
        let mut read = owner.read_resource(uri).await.map_err(remote_error)?;
        // Complete here whatever revision the remote server spoke (rmcp
        // leaves the field out for clients older than 2026-07-28).
        read.result_type = Some(ResultType::COMPLETE);
        Ok(read)
    }

    /// The imported server a resource URI belongs to: the one a gateway URI
    /// names, the one whose tool linked to it, or the one server that lists
    /// it (several is an error naming them).
    pub(super) async fn owner_of(&self, uri: &str) -> Result<RemoteServer, ErrorData> {
        let remotes = &self.remotes;
        let owner = if uri.starts_with(URI_PREFIX) {
            remotes.iter().find(|remote| remote.remote_uri(uri).is_some())
        } else if let Some(linked) = remotes.iter().find(|remote| remote.linked(uri)) {
            Some(linked)
        } else {
            // A URI as a server lists it: the one server that claims it.
            let mut claimants = Vec::new();
            for remote in remotes.iter().filter(|remote| remote.offers_resources()) {
                if remote.claims_uri(uri).await {
                    claimants.push(remote);
                }
            }
            if claimants.len() > 1 {
                let names: Vec<&str> = claimants.iter().map(|remote| remote.name()).collect();
                return Err(ErrorData::invalid_params(
                    format!(
                        "`{uri}` is offered by several servers ({}): read it as {URI_PREFIX}<server>/{uri}",
                        names.join(", ")
                    ),
                    None,
                ));
            }
            claimants.pop()
        };
        owner.cloned().ok_or_else(|| ErrorData::resource_not_found(format!("no resource `{uri}`"), None))
    }

    /// Get a prompt named `server__prompt` from its server.
    pub(super) async fn prompt(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
        let name = request.name.as_str();
        // A server's name may hold the separator itself: every server whose
        // prefix fits is asked, the longest name first.
        let mut owners: Vec<&RemoteServer> = self
            .remotes
            .iter()
            .filter(|remote| name.strip_prefix(remote.name()).is_some_and(|rest| rest.starts_with(SEPARATOR)))
            .collect();
        owners.sort_by_key(|remote| std::cmp::Reverse(remote.name().len()));
        if owners.is_empty() {
            return self.plain_prompt(request).await;
        }
        let mut last = None;
        for owner in owners {
            match owner.get_prompt(name, request.arguments.clone()).await {
                Ok(mut prompt) => {
                    prompt.result_type = Some(ResultType::COMPLETE);
                    return Ok(prompt);
                }
                Err(error) => last = Some(error),
            }
        }
        Err(last.map_or_else(|| ErrorData::invalid_params(format!("no prompt `{name}`"), None), remote_error))
    }

    /// Get a prompt by the name its server gives it: from the one server
    /// that lists that name.
    async fn plain_prompt(&self, request: GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
        let name = request.name.as_str();
        let mut claimants = Vec::new();
        for remote in self.remotes.iter().filter(|remote| remote.offers_prompts()) {
            if remote.claims_prompt(name).await {
                claimants.push(remote);
            }
        }
        let owner = match claimants.as_slice() {
            [] => return Err(ErrorData::invalid_params(format!("no prompt `{name}`"), None)),
            [owner] => owner,
            several => {
                let names: Vec<&str> = several.iter().map(|remote| remote.name()).collect();
                return Err(ErrorData::invalid_params(
                    format!(
                        "the prompt `{name}` is offered by several servers ({}): get it as <server>__{name}",
                        names.join(", ")
                    ),
                    None,
                ));
            }
        };
        let mut prompt = owner.get_prompt_as_listed(name, request.arguments).await.map_err(remote_error)?;
        prompt.result_type = Some(ResultType::COMPLETE);
        Ok(prompt)
    }
}
