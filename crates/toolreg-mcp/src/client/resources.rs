//! A server's resources and prompts, namespaced like its tools, for the
//! gateway to offer again.
//!
//! - A resource's URI becomes `toolreg://<server>/<uri>` (its template
//!   likewise, so an expanded template is a URI of the same form) and its
//!   name `server__name`; reading such a URI reads `<uri>` on `<server>`,
//!   and the contents come back under the URI that was asked for.
//! - A resource link one of the server's tools returned keeps its URI (the
//!   blocks pass through unchanged); that URI can be read as it is: the
//!   server remembers the last [`MAX_LINKS`] links its tools returned.
//! - A prompt's name becomes `server__prompt`, spelled as tool names are
//!   ([`local_name`]).
//! - A URI as the server lists it (or one of its templates matches it), and
//!   a prompt by the name the server gives it, are the server's too when no
//!   other imported server claims them (see [`claims_uri`](RemoteServer::claims_uri)):
//!   a client that knows a server's own names (a URI in a tool's text, the
//!   conformance suite's fixed names) reaches it through the gateway.
//!
//! Lists are read when asked for (rmcp caches them as the server allows),
//! page by page within the bounds tool lists have ([`MAX_LIST_PAGES`]
//! pages, [`MAX_TOOLS`] entries), each request within the server's timeout.

use std::collections::HashSet;
use std::sync::PoisonError;

use rmcp::ServiceError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, JsonObject, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, SubscribeRequestParams, UnsubscribeRequestParams,
};
use tokio::sync::broadcast;

use super::{ClientError, MAX_LIST_PAGES, MAX_TOOLS, RemoteServer, local_name};

/// How a gateway URI starts: `toolreg://<server>/<the server's URI>`.
pub const URI_PREFIX: &str = "toolreg://";

/// Resource links remembered per server, so that their URIs can be read as
/// they are (the oldest is forgotten first).
pub const MAX_LINKS: usize = 4096;

impl RemoteServer {
    /// `toolreg://<server>/<uri>`: the server's resource `uri` as the gateway offers it.
    pub fn gateway_uri(&self, uri: &str) -> String {
        format!("{URI_PREFIX}{}/{uri}", self.name())
    }

    /// The server's own URI in a [gateway URI](Self::gateway_uri) of this server.
    pub fn remote_uri<'a>(&self, uri: &'a str) -> Option<&'a str> {
        uri.strip_prefix(URI_PREFIX)?.strip_prefix(self.name())?.strip_prefix('/')
    }

    /// Whether one of this server's tools returned a link to `uri` lately.
    pub fn linked(&self, uri: &str) -> bool {
        self.inner.links.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|known| known == uri)
    }

    /// Remember that a tool of this server returned a link to `uri`.
    pub(super) fn remember_link(&self, uri: &str) {
        let mut links = self.inner.links.lock().unwrap_or_else(PoisonError::into_inner);
        if links.iter().any(|known| known == uri) {
            return;
        }
        if links.len() == MAX_LINKS {
            links.pop_front();
        }
        links.push_back(uri.to_owned());
    }

    /// Whether the server said at `initialize` that it has resources.
    pub fn offers_resources(&self) -> bool {
        self.capabilities().is_some_and(|c| c.resources.is_some())
    }

    /// Whether the server said at `initialize` that it has prompts.
    pub fn offers_prompts(&self) -> bool {
        self.capabilities().is_some_and(|c| c.prompts.is_some())
    }

    fn capabilities(&self) -> Option<rmcp::model::ServerCapabilities> {
        let connection = self.connection()?;
        let info = connection.peer().peer_info()?;
        Some(info.capabilities.clone())
    }

    /// The server's resources, namespaced (see the module docs).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        let listed = self.remote_resources().await?;
        let mut taken = HashSet::new();
        Ok(listed
            .into_iter()
            .map(|mut resource| {
                resource.uri = self.gateway_uri(&resource.uri);
                resource.name = local_name(self.name(), &resource.name, &mut taken);
                resource
            })
            .collect())
    }

    /// The server's resource templates, namespaced (see the module docs).
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        let listed = self.remote_templates().await?;
        let mut taken = HashSet::new();
        Ok(listed
            .into_iter()
            .map(|mut template| {
                template.uri_template = self.gateway_uri(&template.uri_template);
                template.name = local_name(self.name(), &template.name, &mut taken);
                template
            })
            .collect())
    }

    /// Whether the server lists `uri` itself (not namespaced) or one of its
    /// resource templates matches it (a server that cannot be listed now
    /// claims nothing).
    pub async fn claims_uri(&self, uri: &str) -> bool {
        if self.remote_resources().await.is_ok_and(|listed| listed.iter().any(|resource| resource.uri == uri)) {
            return true;
        }
        self.remote_templates()
            .await
            .is_ok_and(|listed| listed.iter().any(|template| template_matches(&template.uri_template, uri)))
    }

    /// Whether the server lists a prompt by this name (its own, not namespaced).
    pub async fn claims_prompt(&self, name: &str) -> bool {
        self.remote_prompts().await.is_ok_and(|prompts| prompts.iter().any(|prompt| prompt.name == name))
    }

    /// Read a resource: `uri` is a [gateway URI](Self::gateway_uri) of this
    /// server, a URI one of its tools linked to, or one it
    /// [claims](Self::claims_uri). The contents come back under the URI
    /// asked for.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let namespaced = self.remote_uri(uri);
        let remote = self.own_uri(uri).await?;
        let params = ReadResourceRequestParams::new(remote.to_owned());
        let mut result = self.request(|peer| async move { peer.read_resource(params).await }).await?;
        if namespaced.is_some() {
            for contents in &mut result.contents {
                if let ResourceContents::TextResourceContents { uri, .. }
                | ResourceContents::BlobResourceContents { uri, .. } = contents
                {
                    *uri = self.gateway_uri(uri);
                }
            }
        }
        Ok(result)
    }

    /// The server's own URI for `uri`, taken as [`read_resource`](Self::read_resource) takes it.
    async fn own_uri<'a>(&self, uri: &'a str) -> Result<&'a str, ClientError> {
        match self.remote_uri(uri) {
            Some(remote) => Ok(remote),
            None if self.linked(uri) || self.claims_uri(uri).await => Ok(uri),
            None => Err(self.protocol_error(format!("`{uri}` is not one of its resources"))),
        }
    }

    /// Whether the server said at `initialize` that clients may subscribe
    /// to updates of its resources.
    pub fn offers_subscriptions(&self) -> bool {
        self.capabilities().and_then(|c| c.resources).is_some_and(|r| r.subscribe == Some(true))
    }

    /// Ask the server for `notifications/resources/updated` on `uri` (taken
    /// as [`read_resource`](Self::read_resource) takes it). Returns the
    /// server's own URI, the one [`resource_updates`](Self::resource_updates)
    /// will report.
    // rmcp marks `resources/subscribe` legacy (2026-07-28 clients listen
    // instead); the client connects with a handshake, whose revisions have it.
    #[allow(deprecated)]
    pub async fn subscribe(&self, uri: &str) -> Result<String, ClientError> {
        let own = self.own_uri(uri).await?.to_owned();
        let params = SubscribeRequestParams::new(own.clone());
        self.request(|peer| async move { peer.subscribe(params).await }).await?;
        Ok(own)
    }

    /// Stop the updates of the server's own URI `own` (as
    /// [`subscribe`](Self::subscribe) returned it).
    #[allow(deprecated)]
    pub async fn unsubscribe(&self, own: &str) -> Result<(), ClientError> {
        let params = UnsubscribeRequestParams::new(own.to_owned());
        self.request(|peer| async move { peer.unsubscribe(params).await }).await
    }

    /// The server's own URIs of the resources it says were updated, as it
    /// says so (a receiver that falls more than 64 behind skips the oldest).
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }

    /// The server's prompts, named `server__prompt`.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        let mut prompts = self.remote_prompts().await?;
        let mut taken = HashSet::new();
        for prompt in &mut prompts {
            prompt.name = local_name(self.name(), &prompt.name, &mut taken);
        }
        Ok(prompts)
    }

    /// Get the prompt named `name` (`server__prompt`, as
    /// [`list_prompts`](Self::list_prompts) names it).
    pub async fn get_prompt(&self, name: &str, arguments: Option<JsonObject>) -> Result<GetPromptResult, ClientError> {
        let mut taken = HashSet::new();
        let remote = self
            .remote_prompts()
            .await?
            .into_iter()
            .find(|prompt| local_name(self.name(), &prompt.name, &mut taken) == name)
            .ok_or_else(|| self.protocol_error(format!("no prompt `{name}`")))?;
        let mut params = GetPromptRequestParams::new(remote.name);
        params.arguments = arguments;
        self.request(|peer| async move { peer.get_prompt(params).await }).await
    }

    /// Get a prompt by the name the server itself gives it.
    pub async fn get_prompt_as_listed(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ClientError> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        self.request(|peer| async move { peer.get_prompt(params).await }).await
    }

    async fn remote_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.all_pages("resources", |peer, params| async move {
            peer.list_resources(params).await.map(|page| (page.resources, page.next_cursor))
        })
        .await
    }

    async fn remote_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.all_pages("resource templates", |peer, params| async move {
            peer.list_resource_templates(params).await.map(|page| (page.resource_templates, page.next_cursor))
        })
        .await
    }

    async fn remote_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.all_pages("prompts", |peer, params| async move {
            peer.list_prompts(params).await.map(|page| (page.prompts, page.next_cursor))
        })
        .await
    }

    fn protocol_error(&self, message: String) -> ClientError {
        ClientError::Protocol { server: self.name().to_owned(), message }
    }

    /// One request on the live connection, within the server's timeout.
    async fn request<T, F, Fut>(&self, send: F) -> Result<T, ClientError>
    where
        F: FnOnce(rmcp::service::Peer<rmcp::service::RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let connection = self.connection().ok_or_else(|| self.reconnecting_error())?;
        let timeout = self.inner.config.call_timeout;
        match tokio::time::timeout(timeout, send(connection.peer().clone())).await {
            Err(_) => Err(ClientError::Timeout { server: self.name().to_owned(), timeout }),
            Ok(Err(ServiceError::McpError(error))) => Err(ClientError::Refused {
                server: self.name().to_owned(),
                code: error.code.0,
                message: error.message.to_string(),
            }),
            Ok(Err(error)) => Err(self.protocol_error(error.to_string())),
            Ok(Ok(answer)) => Ok(answer),
        }
    }

    /// Every page of a list, stopping at the first bound crossed.
    async fn all_pages<T, F, Fut>(&self, what: &str, page: F) -> Result<Vec<T>, ClientError>
    where
        F: Fn(rmcp::service::Peer<rmcp::service::RoleClient>, Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let too_large = |message: String| ClientError::TooLarge { server: self.name().to_owned(), message };
        let mut items = Vec::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let (found, next) = self.request(|peer| page(peer, params)).await?;
            if items.len() + found.len() > MAX_TOOLS {
                return Err(too_large(format!("more than {MAX_TOOLS} {what}")));
            }
            items.extend(found);
            match next {
                None => return Ok(items),
                Some(next) if !cursors.insert(next.clone()) => {
                    return Err(self.protocol_error(format!("its list of {what} repeats a cursor")));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(too_large(format!("more than {MAX_LIST_PAGES} pages of {what}")))
    }
}

/// Whether `uri` is an expansion of a URI template's simple expressions:
/// `{name}` stands for a non-empty value without `/`, `{+name}` and
/// `{#name}` for any non-empty value. (Enough to route a URI to the server
/// whose template made it; a template this cannot read matches nothing.)
fn template_matches(template: &str, uri: &str) -> bool {
    let (mut template, mut uri) = (template, uri);
    loop {
        let Some(open) = template.find('{') else { return uri == template };
        let Some(after) = uri.strip_prefix(&template[..open]) else { return false };
        let Some(close) = template[open..].find('}').map(|close| open + close) else { return false };
        let any = template[open + 1..close].starts_with(['+', '#']);
        template = &template[close + 1..];
        // The value runs to the next literal piece (or to the end).
        let literal = &template[..template.find('{').unwrap_or(template.len())];
        let end = if literal.is_empty() {
            if !template.is_empty() {
                return false; // two expressions side by side: ambiguous
            }
            after.len()
        } else {
            match after.find(literal) {
                Some(end) => end,
                None => return false,
            }
        };
        let value = &after[..end];
        if value.is_empty() || (!any && value.contains('/')) {
            return false;
        }
        uri = &after[end..];
    }
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn uris_match_the_templates_that_make_them() {
        assert!(template_matches("test://template/{id}/data", "test://template/123/data"));
        assert!(!template_matches("test://template/{id}/data", "test://template//data"));
        assert!(!template_matches("test://template/{id}/data", "test://template/1/2/data"));
        assert!(!template_matches("test://template/{id}/data", "test://template/123/other"));
        assert!(template_matches("file:///{+path}", "file:///a/b.txt"));
        assert!(template_matches("mem://notes/{id}", "mem://notes/7"));
        assert!(!template_matches("mem://notes/{id}", "mem://notes/"));
        assert!(template_matches("plain://x", "plain://x"));
        assert!(!template_matches("a://{x}{y}", "a://12"));
        assert!(!template_matches("a://{x", "a://1"));
    }
}
