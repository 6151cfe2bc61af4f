//! What verifying an OAuth access token costs a served `tools/call` over
//! streamable HTTP, against the shared bearer token, side by side: the same
//! stateless server and tool, a request at a time over one keep-alive
//! connection. The JWT (ES256) is verified against keys fetched once from a
//! local issuer (as they are cached in production), so the difference is the
//! per-request verification. Also 50 principals, each with its own token,
//! calling at once.

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use criterion::{Criterion, Throughput};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use toolreg::{FunctionRegistry, ParamType, SafetyLevel, ToolDeclaration};
use toolreg_mcp::server::{HttpOptions, McpServer, OAuth, ServerOptions};

const PRINCIPALS: usize = 50;

fn registry() -> FunctionRegistry {
    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("add")
        .description("Add two integers.")
        .param("a", ParamType::Integer, "The first addend")
        .param("b", ParamType::Integer, "The second addend")
        .safety(SafetyLevel::Safe)
        .build();
    r.register_sync_tool(
        "add",
        |args: Value| Ok::<_, String>(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))),
        decl,
    )
    .unwrap();
    r
}

/// An issuer's metadata and JWKS on a local listener; the key to sign with.
async fn issuer() -> (String, Vec<u8>) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap().as_ref().to_vec();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).unwrap();
    let point = pair.public_key().as_ref();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "x": B64.encode(&point[1..33]),
        "y": B64.encode(&point[33..]), "kid": "k", "alg": "ES256", "use": "sig"}]})
    .to_string();
    let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}).to_string();
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", axum::routing::get(move || std::future::ready(metadata.clone())))
        .route("/jwks", axum::routing::get(move || std::future::ready(jwks.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, pkcs8)
}

async fn serve(options: HttpOptions, listener: tokio::net::TcpListener) {
    let server = McpServer::from_registry(&registry(), ServerOptions::default());
    tokio::spawn(async move { server.serve_http_on(listener, options).await });
}

/// One stateless 2026-07-28 `tools/call`, its answer read whole.
async fn call(client: &reqwest::Client, addr: SocketAddr, token: &str, id: u64) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add",
        "arguments": {"a": 2, "b": 40},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = client
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let text = response.text().await.unwrap();
    assert!(text.contains("42"), "{text}");
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (bearer_addr, oauth_addr, tokens) = runtime.block_on(async {
        let (issuer, pkcs8) = issuer().await;
        let bearer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let bearer_addr = bearer.local_addr().unwrap();
        serve(HttpOptions::default().stateless(true).bearer_token("s3cret"), bearer).await;
        let oauth = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let oauth_addr = oauth.local_addr().unwrap();
        let audience = format!("http://{oauth_addr}/mcp");
        serve(HttpOptions::default().stateless(true).oauth(OAuth::new(&issuer, &audience)), oauth).await;
        let now = jsonwebtoken::get_current_timestamp();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("k".into());
        let tokens: Vec<String> = (0..PRINCIPALS)
            .map(|i| {
                let claims = json!({"iss": issuer, "aud": audience, "sub": format!("agent-{i}"),
                    "scope": "tools", "exp": now + 3600});
                jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&pkcs8)).unwrap()
            })
            .collect();
        (bearer_addr, oauth_addr, tokens)
    });
    let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
    // The keys are fetched by the first verified call, not measured.
    runtime.block_on(call(&client, oauth_addr, &tokens[0], 0));

    let mut c = Criterion::default().configure_from_args().measurement_time(Duration::from_secs(8));
    let mut group = c.benchmark_group("http_tools_call");
    group.bench_function("static_bearer_token", |b| {
        b.iter(|| runtime.block_on(call(&client, bearer_addr, "s3cret", 1)))
    });
    group.bench_function("verified_jwt", |b| b.iter(|| runtime.block_on(call(&client, oauth_addr, &tokens[0], 1))));
    group.throughput(Throughput::Elements(PRINCIPALS as u64));
    group.bench_function("50_principals_at_once_bearer", |b| {
        b.iter(|| {
            let calls = (0..PRINCIPALS).map(|i| call(&client, bearer_addr, "s3cret", i as u64));
            runtime.block_on(futures_util::future::join_all(calls))
        })
    });
    group.bench_function("50_principals_at_once_jwt", |b| {
        b.iter(|| {
            let calls = tokens.iter().enumerate().map(|(i, token)| call(&client, oauth_addr, token, i as u64));
            runtime.block_on(futures_util::future::join_all(calls))
        })
    });
    group.finish();
    c.final_summary();
}
