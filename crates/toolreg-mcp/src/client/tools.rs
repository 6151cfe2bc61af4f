//! A server's tools as registry tools: named `server__tool`, declared from
//! the listing, and called with `tools/call` over the server's connection.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest, CustomResult,
    ProgressToken, ServerResult, Tool,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use toolreg::policy::ArgumentsHash;
use toolreg::provider::NameRule;
use toolreg::transform::{ToolTransform, Transforms};
use toolreg::{
    CallContext, Content, ErasedTool, FunctionRegistry, ProgressReporter, RegistryError, SafetyLevel, ToolDeclaration,
    ToolError, ToolFuture, ToolOutput, ToolRegistration,
};
use tracing::Instrument;

use super::{RemoteServer, SEPARATOR};

impl RemoteServer {
    /// The server's tools as registrations named `server__tool` (shortened
    /// to the providers' 64-character limit with a stable hash when needed),
    /// filtered, renamed, described and with arguments fixed as the server's
    /// `tools` configuration says ([`ToolFilter`](crate::config::ToolFilter)).
    pub fn registrations(&self) -> Vec<ToolRegistration> {
        self.registrations_through(&|tool| tool)
    }

    /// [`registrations`](Self::registrations), each tool's call made
    /// through `wrap` (a gateway's, which puts the server's questions to
    /// the caller). Wrapped before the configured transforms apply, so
    /// they hold for the wrapped tool as for the plain one.
    pub(crate) fn registrations_through(
        &self,
        wrap: &dyn Fn(Arc<dyn ErasedTool>) -> Arc<dyn ErasedTool>,
    ) -> Vec<ToolRegistration> {
        let tools = self.listed_tools();
        let filter = &self.inner.config.tools;
        let left_out: HashSet<String> = self.left_out().into_iter().map(|(tool, _)| tool).collect();
        let mut taken = HashSet::new();
        let mut transforms = Transforms::new();
        let registrations: Vec<ToolRegistration> = tools
            .iter()
            .filter(|tool| !left_out.contains(tool.name.as_ref()) && filter.admits(&tool.name))
            .map(|tool| {
                let shown = filter.rename.get(tool.name.as_ref()).map_or(tool.name.as_ref(), String::as_str);
                let name = local_name(&self.inner.name, shown, &mut taken);
                let mut transform = ToolTransform::new(&name);
                if let Some(description) = filter.describe.get(tool.name.as_ref()) {
                    transform = transform.describe(description);
                }
                for (argument, value) in filter.fixed.get(tool.name.as_ref()).into_iter().flatten() {
                    transform = transform.fix(argument, value.clone());
                }
                if transform != ToolTransform::new(&name) {
                    transforms = std::mem::take(&mut transforms).tool(transform);
                }
                let declaration = self.declaration(&name, tool);
                let remote = RemoteTool { server: self.clone(), remote: tool.name.to_string() };
                ToolRegistration::new(declaration, wrap(Arc::new(remote)))
            })
            .collect();
        if transforms.tools.is_empty() {
            return registrations;
        }
        self.transformed(registrations, transforms)
    }

    /// The registrations with their configured descriptions and fixed
    /// arguments; a tool whose transform cannot apply is left out, with a
    /// warning (it was meant to be restricted, so it is not offered as is).
    fn transformed(&self, registrations: Vec<ToolRegistration>, transforms: Transforms) -> Vec<ToolRegistration> {
        let mut staged = FunctionRegistry::new();
        for registration in registrations {
            let name = registration.name().to_owned();
            if let Err(error) = staged.register(registration) {
                tracing::warn!(server = %self.inner.name, tool = %name, %error, "remote tool not imported");
            }
        }
        let mut applied = Transforms::new();
        for transform in transforms.tools {
            let one = Transforms::new().tool(transform.clone());
            match staged.transformed(&one) {
                Ok(_) => applied = applied.tool(transform),
                Err(error) => {
                    tracing::warn!(server = %self.inner.name, tool = %transform.tool, %error, "remote tool left out");
                    let _ = staged.unregister(&transform.tool);
                }
            }
        }
        match staged.transformed(&applied) {
            Ok(done) => done.into_registrations().collect(),
            Err(error) => {
                tracing::warn!(server = %self.inner.name, %error, "tool configuration not applied");
                Vec::new()
            }
        }
    }

    /// Register every tool the registry accepts; the ones it refuses (a
    /// hostile schema, a clash with a local name) are left out and returned
    /// with why. The server's questions go to its answerer alone
    /// ([`answer_with`](Self::answer_with)); behind a gateway, register
    /// through [`Gateway::register_into`](crate::gateway::Gateway::register_into)
    /// so that they reach the MCP client of the call.
    pub fn register_into(&self, registry: &mut FunctionRegistry) -> Vec<(String, RegistryError)> {
        self.register_all(registry, self.registrations())
    }

    /// Register `registrations` of this server's, returning the refused ones with why.
    pub(crate) fn register_all(
        &self,
        registry: &mut FunctionRegistry,
        registrations: Vec<ToolRegistration>,
    ) -> Vec<(String, RegistryError)> {
        let mut refused = Vec::new();
        for registration in registrations {
            let name = registration.name().to_owned();
            if let Err(error) = registry.register(registration) {
                tracing::warn!(server = %self.inner.name, tool = %name, %error, "remote tool not imported");
                refused.push((name, error));
            }
        }
        refused
    }

    /// The output, its resource links remembered so that the gateway can
    /// read them as they are.
    fn linked_from(&self, output: ToolOutput) -> ToolOutput {
        for block in &output.content {
            if let Content::ResourceLink(link) = block {
                self.remember_link(&link.uri);
            }
        }
        output
    }

    fn declaration(&self, name: &str, tool: &Tool) -> ToolDeclaration {
        let schema = Value::Object((*tool.input_schema).clone());
        let description = tool.description.as_deref().unwrap_or_default();
        let mut declaration = ToolDeclaration::new(name, description, schema);
        let destructive = tool.annotations.as_ref().and_then(|a| a.destructive_hint) == Some(true);
        let floor = self.inner.config.safety;
        declaration.safety = if destructive { SafetyLevel::Dangerous } else { floor };
        if let Some(output) = &tool.output_schema {
            declaration = declaration.with_output_schema(Value::Object((**output).clone()));
        }
        let title = tool.title.clone().or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
        if let Some(title) = title {
            declaration = declaration.with_title(title);
        }
        // Kept so that the gateway lists it as the server did.
        let support =
            self.inner.task_support.lock().unwrap_or_else(PoisonError::into_inner).get(tool.name.as_ref()).copied();
        if let Some(support) = support {
            declaration = declaration.with_task_support(support);
        }
        declaration.with_category("mcp").with_category(self.inner.name.clone())
    }

    /// Call one tool by its remote name.
    async fn call(&self, remote: &str, cx: &CallContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let connection = self.connection().ok_or_else(|| ToolError::failed(self.reconnecting_error().to_string()))?;
        if connection.is_closed() {
            self.lost();
            return Err(ToolError::failed(self.reconnecting_error().to_string()));
        }
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => return Err(ToolError::failed(format!("arguments must be an object, got {other}"))),
        };
        let mut params = CallToolRequestParams::new(remote.to_owned()).with_arguments(arguments);
        // W3C trace context of this call's span (feature `otel`).
        params.meta = crate::trace::outgoing_meta();
        let peer: &Peer<RoleClient> = connection.peer();
        if self.needs_augmentation(peer, remote) {
            // A task of the 2025-11-25 revision; its questions go to the
            // answerer, as a plain call's do.
            let answer = self.call_augmented(peer, cx, params).await?;
            return self.read_answer(remote, answer);
        }
        // Kept for a server without the tasks extension, which may refuse a
        // tool its listing did not say was task-only (as one read over
        // HTTP, whose `execution` is not seen) until it is asked for a task.
        let retry = (!peer.peer_info().is_some_and(|info| info.capabilities.supports_tasks())).then(|| params.clone());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = self.inner.config.call_timeout;
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let handle = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(error) => {
                self.lost();
                return Err(ToolError::failed(format!("MCP server `{}`: {error}", self.inner.name)));
            }
        };
        let id = handle.id.clone();
        // rmcp gives every request a progress token of its own; a caller that
        // takes progress gets what the server reports on it, until the call
        // ends. (A report the server sends before this line has run is lost;
        // progress is best effort, and a report must first cross the
        // transport and rmcp's reader.)
        let progress =
            cx.extensions().get::<ProgressReporter>().map(|_| ProgressRoute::open(self, &handle.progress_token, cx));
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = cx.cancelled() => {
                let param = CancelledNotificationParam::new(Some(id), Some("cancelled by the caller".to_owned()));
                let _ = peer.notify_cancelled(param).await;
                return Err(ToolError::Cancelled);
            }
        };
        if progress.is_some() {
            // rmcp hands each notification to its handler on a task of its
            // own and the answer straight to us, so the last reports the
            // server sent before answering may not have been handled yet:
            // give them a moment before the route closes.
            tokio::time::sleep(PROGRESS_SETTLE).await;
        }
        if let (Some(params), Err(rmcp::ServiceError::McpError(error))) = (retry, &answer)
            && error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND
        {
            // "Method not found" for a listed tool: it runs only as a task.
            // Asked for one (a refusal again leaves it out, below).
            tracing::debug!(server = %self.inner.name, tool = %remote, "tool called again with task augmentation");
            self.inner
                .task_support
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(remote.to_owned(), toolreg::TaskSupport::Required);
            let answer = self.call_augmented(peer, cx, params).await?;
            return self.read_answer(remote, answer);
        }
        let answer = self.follow_task(peer, cx, answer).await?;
        self.read_answer(remote, answer)
    }

    /// The remote server's answer to `tools/call`, as the caller gets it.
    fn read_answer(
        &self,
        remote: &str,
        answer: Result<ServerResult, rmcp::ServiceError>,
    ) -> Result<ToolOutput, ToolError> {
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                if result.is_error == Some(true) {
                    let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text().map(|t| &*t.text)).collect();
                    let message = if text.is_empty() { "the remote tool failed".to_owned() } else { text.join("\n") };
                    return Err(ToolError::failed(message));
                }
                Ok(self.linked_from(remote_output(result)))
            }
            // rmcp reads a result whole: one block of a type it does not
            // know (a newer revision's) makes it none of its results. Read
            // such a result here, block by block.
            Ok(ServerResult::CustomResult(CustomResult(result))) if result.get("content").is_some() => {
                lenient_output(&result).map(|output| self.linked_from(output))
            }
            Ok(other) => Err(ToolError::failed(format!(
                "MCP server `{}` answered tools/call with something else: {}",
                self.inner.name,
                serde_json::to_string(&other).unwrap_or_default()
            ))),
            Err(rmcp::ServiceError::Timeout { timeout }) => Err(ToolError::Timeout { limit: timeout }),
            Err(rmcp::ServiceError::McpError(error)) if error.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND => {
                // The specification's answer to a plain call of a tool that
                // must run as a task: leave it out from now on, and say so.
                let new = self
                    .inner
                    .task_only_called
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(remote.to_owned());
                if new {
                    tracing::info!(server = %self.inner.name, tool = %remote, "tool left out: it runs only as an MCP task");
                    self.inner.changes.send_modify(|n| *n += 1);
                }
                Err(ToolError::failed(format!(
                    "MCP server `{}`: `{remote}` runs only as an MCP task, and the server refused the call \
                     instead of answering it with a task; it is left out from now on ({})",
                    self.inner.name, error.message
                )))
            }
            Err(rmcp::ServiceError::McpError(error)) => {
                Err(ToolError::failed(format!("MCP server `{}`: {}", self.inner.name, error.message)))
            }
            Err(error) => {
                if self.connection().is_some_and(|connection| connection.is_closed()) {
                    self.lost();
                }
                Err(ToolError::failed(format!("MCP server `{}`: {error}", self.inner.name)))
            }
        }
    }
}

/// A remote tool's result as the caller gets it: one plain text block as
/// that text (what it always was), anything else block for block with the
/// structured value beside it. A block this crate cannot read (an unknown
/// type, bad base64) becomes a text block saying so: reported, never
/// dropped in silence, never a failed call.
fn remote_output(result: CallToolResult) -> ToolOutput {
    if result.structured_content.is_none()
        && let [only] = result.content.as_slice()
        && let Some(text) = only.as_text()
        && text.annotations.is_none()
    {
        return ToolOutput::new(Value::String(text.text.clone()));
    }
    let content = result
        .content
        .iter()
        .map(|block| {
            serde_json::to_value(block).map_err(|e| e.to_string()).map_or_else(unreadable, |json| read_block(&json))
        })
        .collect();
    let mut output = ToolOutput::new(result.structured_content.unwrap_or(Value::Null));
    output.content = content;
    output
}

/// [`remote_output`] for a result rmcp could not read as a `CallToolResult`
/// (a block of a type it does not know), from its JSON.
fn lenient_output(result: &Value) -> Result<ToolOutput, ToolError> {
    let Some(blocks) = result.get("content").and_then(Value::as_array) else {
        return Err(ToolError::failed("the MCP server's result has no `content` list"));
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        let text: Vec<&str> = blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
        let message = if text.is_empty() { "the remote tool failed".to_owned() } else { text.join("\n") };
        return Err(ToolError::failed(message));
    }
    let mut output = ToolOutput::new(result.get("structuredContent").cloned().unwrap_or(Value::Null));
    output.content = blocks.iter().map(read_block).collect();
    Ok(output)
}

/// One block from its JSON, or a text block saying why it cannot be read.
fn read_block(json: &Value) -> Content {
    Content::from_json(json).unwrap_or_else(|error| unreadable(error.to_string()))
}

fn unreadable(reason: String) -> Content {
    Content::text(format!("[a content block from the MCP server could not be read: {reason}]"))
}

/// How long a call whose caller takes progress waits after the answer for
/// the server's last reports to be handled (see where it is used).
const PROGRESS_SETTLE: std::time::Duration = std::time::Duration::from_millis(20);

/// A call's progress token, routing the server's progress to the call's
/// context until it is dropped (the call ended, was cancelled or timed out).
struct ProgressRoute {
    server: RemoteServer,
    token: ProgressToken,
}

impl ProgressRoute {
    fn open(server: &RemoteServer, token: &ProgressToken, cx: &CallContext) -> ProgressRoute {
        server.inner.progress.lock().unwrap_or_else(PoisonError::into_inner).insert(token.clone(), cx.clone());
        ProgressRoute { server: server.clone(), token: token.clone() }
    }
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.server.inner.progress.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.token);
    }
}

/// One imported tool: a `tools/call` to its server.
struct RemoteTool {
    server: RemoteServer,
    remote: String,
}

impl ErasedTool for RemoteTool {
    fn call(&self, cx: CallContext, args: Value) -> ToolFuture {
        let server = self.server.clone();
        let remote = self.remote.clone();
        ToolFuture::new(async move {
            let span = crate::trace::client_tool_call(&server.inner.name, &remote);
            let answer = server.call(&remote, &cx, args).instrument(span.clone()).await;
            if let Err(error) = &answer {
                crate::trace::failed(&span, error.kind());
            }
            answer
        })
    }
}

/// `server__tool`, the tool's name spelled by the core's strictest rule
/// ([`NameRule::OPENAI`]'s [`respell`](NameRule::respell): `[A-Za-z0-9_-]`,
/// `.` as `__`) and at most 64 characters; a name that had to change gets a
/// short hash of the original, so two remote names never collapse into one.
/// A name in `taken` is never given again, even when a remote name was
/// crafted to equal another's shortened form: the hash is then salted until
/// the name is free.
pub fn local_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    // The core's sanitiser; what it cannot promise (no two remote names
    // collide once the server is prefixed and the result shortened) is added here.
    let clean = NameRule::OPENAI.respell(tool);
    let plain = format!("{server}{SEPARATOR}{clean}");
    let changed = clean != tool;
    let mut name = plain.clone();
    let mut salt = 0u64;
    while changed || name.len() > toolreg::registry::MAX_NAME_LEN || taken.contains(&name) {
        // The core's stable hash of the remote name and a counter (0 on the
        // first try), so names stay the same across listings; a collision
        // counts up. Computed only when importing a listing.
        let hash = ArgumentsHash::of(&serde_json::json!([tool, salt]));
        let [a, b, c, d, ..] = *hash.as_bytes();
        let suffix = format!("_{a:02x}{b:02x}{c:02x}{d:02x}");
        let keep = toolreg::registry::MAX_NAME_LEN - suffix.len();
        name.clone_from(&plain);
        name.truncate(keep.min(name.len()));
        name.push_str(&suffix);
        if !taken.contains(&name) {
            break;
        }
        salt += 1;
    }
    taken.insert(name.clone());
    name
}
