//! toolreg's MCP client ([`RemoteServer`]) as the client under test of the
//! official MCP conformance suite's client scenarios.
//!
//! The suite starts a scenario's test server and runs this program with the
//! server's URL as its last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` (and, for a scenario that hands the client
//! data such as credentials, a JSON object in `MCP_CONFORMANCE_CONTEXT`).
//! The program connects as toolreg does to a server of an `mcpServers` file
//! (`Transport::Url`), imports the tools into a registry, does what the
//! scenario asks of a client (call a tool, echo a schema back, answer a
//! form...) through that registry, and exits non-zero when something fails.
//! The suite then judges what it saw on the wire.
//!
//! ```sh
//! cargo build -p toolreg-mcp --example conformance_client
//! npx @modelcontextprotocol/conformance client --spec-version 2025-11-25 \
//!     --scenario tools_call --command target/debug/examples/conformance_client
//! ```
//!
//! CI runs it this way, scenario by scenario and for each protocol revision,
//! in `scripts/check_mcp_client_conformance.sh`; the scenarios that do not
//! apply to toolreg's client (and why) are listed there and in the crate's
//! README ("Client conformance").

// rmcp marks sampling deprecated (a protocol draft drops it); the answerer
// below has to name it all the same.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult};
use serde_json::{Value, json};
use toolreg::{CallOptions, FunctionRegistry, ToolCall, ToolExecutor};
use toolreg_mcp::client::{Answerer, RemoteServer};
use toolreg_mcp::config::{ServerConfig, Transport, UpstreamOAuth};

/// The name the scenario's server is imported under (its tools become `suite__<tool>`).
const SERVER: &str = "suite";
/// The client id toolreg's OAuth settings name.
const ID_ENV: &str = "CONFORMANCE_CLIENT_ID";
/// The variable toolreg reads the client secret from (its settings name a
/// variable, never the secret itself).
const SECRET_ENV: &str = "CONFORMANCE_CLIENT_SECRET";

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=<scenario> conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);

    // The credentials go where toolreg reads them, the environment: run
    // again with them there (this program cannot set its own environment).
    if let Some((id, secret)) = credentials(&scenario, &context)
        && std::env::var_os(SECRET_ENV).is_none()
    {
        let me = std::env::current_exe();
        let status = me.and_then(|me| {
            std::process::Command::new(me)
                .args(std::env::args().skip(1))
                .env(ID_ENV, id)
                .env(SECRET_ENV, secret)
                .status()
        });
        return match status {
            Ok(status) if status.success() => ExitCode::SUCCESS,
            Ok(_) => ExitCode::FAILURE,
            Err(error) => {
                eprintln!("cannot run again with the credentials: {error}");
                ExitCode::FAILURE
            }
        };
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&scenario, &url, &context)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{scenario}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The OAuth client credentials toolreg is configured with for `scenario`:
/// those the scenario hands over, or, for `auth/metadata-issuer-mismatch`
/// (which hands over none: it checks that the client refuses a poisoned
/// authorization server metadata document before any token request),
/// made-up ones, so that toolreg starts the client-credentials grant.
fn credentials(scenario: &str, context: &Value) -> Option<(String, String)> {
    match (context["client_id"].as_str(), context["client_secret"].as_str()) {
        (Some(id), Some(secret)) => Some((id.to_owned(), secret.to_owned())),
        _ if scenario == "auth/metadata-issuer-mismatch" => Some(("toolreg".to_owned(), "unused".to_owned())),
        _ => None,
    }
}

/// Do what `scenario` asks of a client, against the server at `url`.
async fn run(scenario: &str, url: &str, context: &Value) -> Result<(), String> {
    let transport = Transport::Url { url: url.to_owned(), headers: BTreeMap::new() };
    let mut config = ServerConfig::new(transport).call_timeout(Duration::from_secs(20));
    // OAuth settings as an `mcpServers` file would have them: toolreg finds
    // the authorization server from the server's metadata and gets its
    // tokens with the client-credentials grant.
    if let Ok(id) = std::env::var(ID_ENV) {
        let oauth: UpstreamOAuth = serde_json::from_value(json!({"clientId": id, "clientSecretEnv": SECRET_ENV}))
            .map_err(|e| e.to_string())?;
        config = config.oauth(oauth);
    }
    // Connecting completes the handshake and lists the tools (`tools/list`).
    let server = RemoteServer::connect(SERVER, config).await.map_err(|e| e.to_string())?;
    server.answer_with(Arc::new(AcceptAsOffered));
    let mut registry = FunctionRegistry::new();
    for (tool, error) in server.register_into(&mut registry) {
        // A schema whose `$ref` names a network URI: toolreg leaves the tool
        // out rather than fetch it, which is what the scenario checks.
        if scenario != "json-schema-ref-no-deref" {
            return Err(format!("tool `{tool}` could not be imported: {error}"));
        }
        eprintln!("left out {tool}: {error}");
    }
    let result = act(scenario, &server, &registry, context).await;
    server.close().await;
    result
}

/// The client's part of `scenario`, once connected.
async fn act(
    scenario: &str,
    server: &RemoteServer,
    registry: &FunctionRegistry,
    context: &Value,
) -> Result<(), String> {
    match scenario {
        // Connecting is all these ask for (with the credentials handed over,
        // for the auth ones); `json-schema-ref-no-deref` checks that reading
        // the tools fetched no network `$ref`.
        "initialize"
        | "request-metadata"
        | "json-schema-ref-no-deref"
        | "auth/client-credentials-basic"
        | "auth/pre-registration" => Ok(()),
        // Connecting must fail: the authorization server's metadata names
        // another issuer, so toolreg may not use its token endpoint.
        "auth/metadata-issuer-mismatch" => Err("connected, with a token from a poisoned metadata document".to_owned()),
        "tools_call" => {
            let text = call(registry, "add_numbers", json!({"a": 2, "b": 3})).await?;
            expect(&text, "The sum of 2 and 3 is 5")
        }
        // The focal tool's schema as toolreg's client read it from
        // `tools/list`, sent back verbatim through the echo tool.
        "json-schema-2020-12-preservation" => {
            let focal = server
                .listed_tools()
                .into_iter()
                .find(|tool| tool.name == "json_schema_2020_12_tool")
                .ok_or("the focal tool was not listed")?;
            let schema = Value::Object((*focal.input_schema).clone());
            call(registry, "json_schema_echo", json!({"schema": schema})).await.map(drop)
        }
        // A form whose fields all have defaults, accepted with none filled in.
        "elicitation-sep1034-client-defaults" => {
            call(registry, "test_client_elicitation_defaults", json!({})).await.map(drop)
        }
        // The call's stream closes before its answer, which comes on the
        // stream the client opens again after the `retry` the server set.
        "sse-retry" => {
            let text = call(registry, "test_reconnection", json!({})).await?;
            expect(&text, "Reconnection test completed successfully")
        }
        // Every kind of request that names something (tool, resource, prompt).
        "http-standard-headers" => {
            for tool in ["test_headers", "my-hyphenated-tool"] {
                call(registry, tool, json!({})).await?;
            }
            for resource in server.list_resources().await.map_err(|e| e.to_string())? {
                server.read_resource(&resource.uri).await.map_err(|e| e.to_string())?;
            }
            for prompt in server.list_prompts().await.map_err(|e| e.to_string())? {
                server.get_prompt(&prompt.name, None).await.map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        // The calls the scenario names in its context, as given.
        "http-custom-headers" => {
            for tool_call in context["toolCalls"].as_array().ok_or("the context names no toolCalls")? {
                let name = tool_call["name"].as_str().ok_or("a tool call without a name")?;
                call(registry, name, tool_call["arguments"].clone()).await?;
            }
            Ok(())
        }
        // Every tool toolreg offers, called as a model might: the ones whose
        // declarations are invalid should not be offered at all.
        "http-invalid-tool-headers" => {
            let names: Vec<String> = registry.list().map(|tool| tool.name().to_owned()).collect();
            for name in names {
                let schema = &registry.get(&name).ok_or("a tool went away")?.declaration().input_schema;
                call_as(registry, &name, sample_arguments(schema)).await?;
            }
            Ok(())
        }
        // Tools that answer with `input_required` (Multi Round-Trip
        // Requests), one without `requestState`, one with no `resultType`.
        "sep-2322-client-request-state" => {
            for tool in
                ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"]
            {
                call(registry, tool, json!({})).await?;
            }
            Ok(())
        }
        other => Err(format!("no client behaviour for the scenario `{other}`")),
    }
}

/// Arguments that fit an object schema: a plain value of each required
/// property's type.
fn sample_arguments(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("object") => json!({}),
            Some("array") => json!([]),
            Some("null") => Value::Null,
            Some("boolean") => json!(true),
            Some("number" | "integer") => json!(1),
            _ => json!("x"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

/// Call the scenario server's tool `tool` through the registry; its text.
async fn call(registry: &FunctionRegistry, tool: &str, arguments: Value) -> Result<String, String> {
    call_as(registry, &format!("{SERVER}__{tool}"), arguments).await
}

/// Call the imported tool `name` (`suite__<tool>`); its text.
async fn call_as(registry: &FunctionRegistry, name: &str, arguments: Value) -> Result<String, String> {
    let result = registry.execute_call(ToolCall::new("conformance", name, arguments), CallOptions::default()).await;
    if result.is_error() {
        return Err(format!("calling `{name}` failed: {}", result.text()));
    }
    Ok(result.text().into_owned())
}

/// `Ok` when `text` says what was `wanted`.
fn expect(text: &str, wanted: &str) -> Result<(), String> {
    if text.contains(wanted) { Ok(()) } else { Err(format!("expected {wanted:?}, got {text:?}")) }
}

/// Stands in for the person at a host: accepts a form as offered, filling
/// in nothing (the fields keep their defaults); has no model to sample.
struct AcceptAsOffered;

impl Answerer for AcceptAsOffered {
    fn elicit<'a>(
        &'a self,
        _server: &'a str,
        _request: ElicitRequestParams,
    ) -> BoxFuture<'a, Result<ElicitResult, String>> {
        Box::pin(async { Ok(ElicitResult::new(rmcp::model::ElicitationAction::Accept).with_content(json!({}))) })
    }

    fn sample<'a>(
        &'a self,
        _server: &'a str,
        _request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, String>> {
        Box::pin(async { Err("this client has no model".to_owned()) })
    }
}
