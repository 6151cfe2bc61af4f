//! What a server offers beside its own tools: resources and prompts held
//! elsewhere (a gateway's imported servers, [`crate::gateway::Gateway`]),
//! reached through [`Upstream`], the one thing the server knows of them.
//!
//! The server answers `resources/*` and `prompts/*` by asking its upstream,
//! and hands it a [`ResourceListener`] for each subscription, which the
//! upstream tells of updates. With no upstream set the lists are empty and
//! every read or get is "not found".

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ReadResourceRequestParams, ReadResourceResult,
};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};

/// The resources and prompts a server serves beside its tools, set with
/// [`McpServer::set_upstream`](super::McpServer::set_upstream).
pub trait Upstream: Send + Sync {
    /// Whether there are resources to declare (`capabilities.resources`).
    fn offers_resources(&self) -> bool;

    /// Whether resources can be subscribed to (`resources.subscribe`).
    fn offers_subscriptions(&self) -> bool;

    /// Every resource (`resources/list`).
    fn list_resources(&self) -> BoxFuture<'_, ListResourcesResult>;

    /// Every resource template (`resources/templates/list`).
    fn list_resource_templates(&self) -> BoxFuture<'_, ListResourceTemplatesResult>;

    /// Read one resource (`resources/read`).
    fn read_resource(&self, request: ReadResourceRequestParams)
    -> BoxFuture<'_, Result<ReadResourceResult, ErrorData>>;

    /// Every prompt (`prompts/list`).
    fn list_prompts(&self) -> BoxFuture<'_, ListPromptsResult>;

    /// Get one prompt (`prompts/get`).
    fn get_prompt(&self, request: GetPromptRequestParams) -> BoxFuture<'_, Result<GetPromptResult, ErrorData>>;

    /// Tell `listener` of the updates of resource `uri` from now on.
    fn subscribe<'a>(&'a self, uri: &'a str, listener: ResourceListener) -> BoxFuture<'a, Result<(), ErrorData>>;

    /// Stop telling `listener` of `uri` (nothing to stop is no error).
    fn unsubscribe<'a>(&'a self, uri: &'a str, listener: &'a ResourceListener) -> BoxFuture<'a, ()>;

    /// The imported server a resource URI (or URI template) belongs to,
    /// when known: what an access policy's `servers` are checked against.
    fn resource_server(&self, _uri: &str) -> Option<String> {
        None
    }

    /// The imported server a prompt belongs to, when known.
    fn prompt_server(&self, _name: &str) -> Option<String> {
        None
    }
}

/// No upstream: nothing beside the tools.
pub(super) struct NoUpstream;

impl Upstream for NoUpstream {
    fn offers_resources(&self) -> bool {
        false
    }

    fn offers_subscriptions(&self) -> bool {
        false
    }

    fn list_resources(&self) -> BoxFuture<'_, ListResourcesResult> {
        Box::pin(async { ListResourcesResult::with_all_items(Vec::new()) })
    }

    fn list_resource_templates(&self) -> BoxFuture<'_, ListResourceTemplatesResult> {
        Box::pin(async { ListResourceTemplatesResult::with_all_items(Vec::new()) })
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> BoxFuture<'_, Result<ReadResourceResult, ErrorData>> {
        Box::pin(async move { Err(ErrorData::resource_not_found(format!("no resource `{}`", request.uri), None)) })
    }

    fn list_prompts(&self) -> BoxFuture<'_, ListPromptsResult> {
        Box::pin(async { ListPromptsResult::with_all_items(Vec::new()) })
    }

    fn get_prompt(&self, request: GetPromptRequestParams) -> BoxFuture<'_, Result<GetPromptResult, ErrorData>> {
        Box::pin(async move { Err(ErrorData::invalid_params(format!("no prompt `{}`", request.name), None)) })
    }

    fn subscribe<'a>(&'a self, uri: &'a str, _: ResourceListener) -> BoxFuture<'a, Result<(), ErrorData>> {
        Box::pin(async move { Err(ErrorData::resource_not_found(format!("no resource `{uri}`"), None)) })
    }

    fn unsubscribe<'a>(&'a self, _: &'a str, _: &'a ResourceListener) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Who hears of a resource's updates: a handshake-era connection that sent
/// `resources/subscribe`, or a 2026-07-28 `subscriptions/listen` stream.
/// Two listeners are equal when they are the same connection or stream.
#[derive(Clone)]
pub struct ResourceListener {
    key: ListenerKey,
    to: Notify,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListenerKey {
    /// A handshake-era connection, known by its `initialize` record.
    Client(usize),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(u64),
}

#[derive(Clone)]
enum Notify {
    Client(Peer<RoleServer>),
    Stream(SubscriptionSink),
}

/// The numbers of `subscriptions/listen` streams, unique in the process.
static NEXT_STREAM: AtomicU64 = AtomicU64::new(0);

impl ResourceListener {
    /// The connection `peer`, when it has completed the handshake (only a
    /// connection can be told of updates later).
    pub(super) fn client(peer: &Peer<RoleServer>) -> Option<ResourceListener> {
        let info = peer.peer_info()?;
        let key = ListenerKey::Client(Arc::as_ptr(&info) as usize);
        Some(ResourceListener { key, to: Notify::Client(peer.clone()) })
    }

    /// A `subscriptions/listen` stream.
    pub(super) fn stream(sink: &SubscriptionSink) -> ResourceListener {
        let key = ListenerKey::Stream(NEXT_STREAM.fetch_add(1, Ordering::Relaxed));
        ResourceListener { key, to: Notify::Stream(sink.clone()) }
    }

    /// Tell it `uri` was updated; `false` when it is gone.
    pub async fn notify(&self, uri: &str) -> bool {
        match &self.to {
            Notify::Client(peer) => {
                let params = rmcp::model::ResourceUpdatedNotificationParam::new(uri.to_owned());
                peer.notify_resource_updated(params).await.is_ok()
            }
            Notify::Stream(sink) => sink.notify_resource_updated(uri.to_owned()).await.is_ok(),
        }
    }
}

impl PartialEq for ResourceListener {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for ResourceListener {}
