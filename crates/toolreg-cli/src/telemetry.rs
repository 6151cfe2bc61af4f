//! Logging and OpenTelemetry export, set up once at start.
//!
//! Logs always go to stderr (filtered by `TOOLREG_LOG`). When the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! variable is set, the same `tracing` spans the libraries emit (agent
//! runs, model requests, tool calls, MCP requests) are also exported over
//! OTLP/HTTP with protobuf bodies, named after OpenTelemetry's GenAI and MCP
//! conventions; `OTEL_SERVICE_NAME` names the service (`toolreg` when
//! unset), and the SDK reads the other standard variables itself
//! (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`,
//! `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_RESOURCE_ATTRIBUTES`).
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn export off.
//!
//! Spans leave through a batch span processor, on its own thread, with a
//! bounded queue: a call never waits for the collector, and a collector
//! that is down or slow loses spans (dropped when the queue is full), never
//! a call. What is queued is flushed at exit, within [`FLUSH_TIMEOUT`].
//!
//! The W3C trace-context propagator is installed globally, so that
//! `toolreg-mcp` (feature `otel`) reads and writes `traceparent` /
//! `tracestate` in MCP `_meta`.
//!
//! This module is self-contained on purpose: a program that embeds the
//! toolreg crates can copy it as it is.

use std::io::IsTerminal;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How long the exit waits for queued spans to reach the collector.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The export, while it runs; [`Telemetry::shutdown`] flushes it.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Flush what is queued (within [`FLUSH_TIMEOUT`]) and stop exporting.
    pub fn shutdown(mut self) {
        if let Some(provider) = self.provider.take() {
            // A collector that is gone loses these spans; the exit goes on.
            let _ = provider.shutdown_with_timeout(FLUSH_TIMEOUT);
        }
    }
}

/// Install the global subscriber: logs to stderr, and OTLP export when the
/// environment asks for it. A bad export set-up is one warning on stderr
/// and no export, never a failure to start.
pub fn init() -> Telemetry {
    // Logs go to stderr: on stdio, stdout carries the protocol.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLREG_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=off")),
        );
    let (provider, warning) = match export_requested() {
        false => (None, None),
        true => match provider() {
            Ok(provider) => (Some(provider), None),
            Err(error) => (None, Some(error)),
        },
    };
    let otel = provider.as_ref().map(|provider| {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("toolreg"))
            // Source locations and thread names are noise beside the
            // conventions' attributes.
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            // Neither busy/idle times nor an OpenTelemetry context made
            // current on every poll: parents come from the `tracing` spans.
            // With the audit event left out (below), this halved what an
            // exported tool call costs (6.1 → 3.2 µs, `benches/otel.rs`).
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            // toolreg's own spans and events only: not the HTTP client's or
            // the exporter's (which would feed on themselves). The audit
            // event stays in the logs: its fields are the `execute_tool`
            // span's own, and exporting them twice only cost time.
            .with_filter(
                Targets::new()
                    .with_target("toolreg::audit", LevelFilter::OFF)
                    .with_target("toolreg", LevelFilter::INFO)
                    .with_target("toolreg_llm", LevelFilter::INFO)
                    .with_target("toolreg_mcp", LevelFilter::INFO)
                    .with_target("toolreg_builtins", LevelFilter::INFO)
                    .with_target("toolreg_code", LevelFilter::INFO),
            )
    });
    let _ = tracing_subscriber::registry().with(logs).with(otel).try_init();
    if let Some(error) = warning {
        tracing::warn!("OpenTelemetry export is off: {error}");
    }
    Telemetry { provider }
}

/// Whether the standard variables ask for trace export.
fn export_requested() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let is = |name: &str, value: &str| std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value));
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// The tracer provider: OTLP over HTTP/protobuf behind a batch processor.
fn provider() -> Result<SdkTracerProvider, String> {
    // Only HTTP/protobuf is built in (no gRPC stack): say so rather than
    // send protobuf to a port that expects something else unannounced.
    let protocol = std::env::var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .unwrap_or_default();
    if !matches!(protocol.trim(), "" | "http/protobuf") {
        return Err(format!("OTLP protocol `{protocol}` is not supported; toolreg exports http/protobuf"));
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()
        .map_err(|error| error.to_string())?;
    let resource = match std::env::var("OTEL_SERVICE_NAME") {
        Ok(name) if !name.trim().is_empty() => Resource::builder().build(),
        _ => Resource::builder().with_service_name("toolreg").build(),
    };
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build())
}
