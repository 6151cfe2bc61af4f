//! MCP requests as `tracing` spans named after OpenTelemetry's MCP
//! conventions (`{mcp.method.name} {target}`, `mcp.method.name`,
//! `gen_ai.tool.name`, `jsonrpc.request.id`, `mcp.session.id`), and, with
//! the `otel` feature, W3C trace context (`traceparent`, `tracestate`)
//! carried in a request's `_meta` both ways: the server makes its span a
//! child of the context a request brings, the client writes the current
//! span's context into the requests it sends. Propagation goes through
//! OpenTelemetry's global text-map propagator, so it is on when the program
//! installs one (the `toolreg` CLI installs W3C trace context when it
//! exports) and costs nothing otherwise.

use rmcp::model::RequestMetaObject;

/// The span of a `tools/call` a server answers, child of the trace context
/// in the request's `_meta` (feature `otel`).
pub(crate) fn server_tool_call(
    tool: &str,
    request_id: &rmcp::model::RequestId,
    meta: &RequestMetaObject,
    extensions: &rmcp::model::Extensions,
) -> tracing::Span {
    let span = tracing::info_span!(
        "mcp_request",
        otel.name = format_args!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        jsonrpc.request.id = %RequestIdText(request_id),
        mcp.session.id = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    if span.is_disabled() {
        return span;
    }
    // Over streamable HTTP the session is the `Mcp-Session-Id` header.
    if let Some(session) = extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
    {
        span.record("mcp.session.id", session);
    }
    #[cfg(feature = "otel")]
    context::adopt(&span, meta);
    #[cfg(not(feature = "otel"))]
    let _ = meta;
    span
}

/// The span of a `tools/call` a client sends to a remote server.
///
/// The MCP conventions make a client's tool call an `execute_tool` span, and
/// ask for no second span where a GenAI instrumentation already traces the
/// tool's execution. So, with the `otel` feature, a call made inside an
/// engine's `tool_call` span (the gateway's, an agent's) puts the MCP
/// attributes on that span and is recorded there; any other call gets a
/// client span of its own.
pub(crate) fn client_tool_call(server: &str, tool: &str) -> tracing::Span {
    #[cfg(feature = "otel")]
    if let Some(span) = context::enclosing_tool_call(server) {
        return span;
    }
    tracing::info_span!(
        "mcp_request",
        otel.name = format_args!("tools/call {tool}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        server.address = server,
        error.type = tracing::field::Empty,
    )
}

/// Mark a request's span failed, with the conventions' `error.type`.
pub(crate) fn failed(span: &tracing::Span, kind: &'static str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}

/// The current span's trace context, to send in a request's `_meta`
/// (nothing without the `otel` feature or a propagator).
pub(crate) fn outgoing_meta() -> Option<RequestMetaObject> {
    #[cfg(feature = "otel")]
    return context::current();
    #[cfg(not(feature = "otel"))]
    None
}

/// A request id as it is written on the wire, formatted only when the span
/// is recorded.
struct RequestIdText<'a>(&'a rmcp::model::RequestId);

impl std::fmt::Display for RequestIdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            rmcp::model::RequestId::Number(n) => write!(f, "{n}"),
            rmcp::model::RequestId::String(s) => f.write_str(s),
        }
    }
}

#[cfg(feature = "otel")]
mod context {
    use opentelemetry::propagation::{Extractor, Injector};
    use rmcp::model::RequestMetaObject;
    use serde_json::Value;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// Make `span` a child of the trace context in `meta`, if it carries one
    /// the client samples.
    ///
    /// What is traced is the operator's to decide: a client's "sampled" flag
    /// may add a call to the traces (a parent-based sampler follows it), its
    /// "not sampled" must not take one out. So a context the client does
    /// not sample is no parent: the span starts a trace of its own, which
    /// the operator's sampler decides on as on any other, linked to the
    /// client's span.
    pub(super) fn adopt(span: &tracing::Span, meta: &RequestMetaObject) {
        use opentelemetry::trace::TraceContextExt;
        if meta.get_traceparent().is_none() {
            return;
        }
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Carrier(meta)));
        let remote = parent.span().span_context().clone();
        if !remote.is_valid() {
            return;
        }
        if remote.is_sampled() {
            // Fails only when the span has started already, which it has not.
            let _ = span.set_parent(parent);
        } else {
            span.add_link(remote);
        }
    }

    /// The engine's `tool_call` span this call runs in, given the MCP
    /// client attributes, if it is the current span and exported.
    pub(super) fn enclosing_tool_call(server: &str) -> Option<tracing::Span> {
        let span = tracing::Span::current();
        let metadata = span.metadata()?;
        if metadata.name() != "tool_call" || !metadata.target().starts_with("toolreg::engine") {
            return None;
        }
        span.set_attribute("mcp.method.name", "tools/call");
        span.set_attribute("server.address", server.to_owned());
        Some(span)
    }

    /// The current span's context as `_meta`, if a propagator writes one.
    pub(super) fn current() -> Option<RequestMetaObject> {
        let span = tracing::Span::current();
        if span.is_disabled() {
            return None;
        }
        let context = span.context();
        let mut meta = RequestMetaObject::new();
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&context, &mut Writer(&mut meta)));
        (!meta.is_empty()).then_some(meta)
    }

    struct Carrier<'a>(&'a RequestMetaObject);

    impl Extractor for Carrier<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    struct Writer<'a>(&'a mut RequestMetaObject);

    impl Injector for Writer<'_> {
        fn set(&mut self, key: &str, value: String) {
            self.0.0.0.insert(key.to_owned(), Value::String(value));
        }
    }
}
