//! The HTTP server as an OAuth resource server, against an issuer served
//! here (its metadata and JWKS, with keys made per test by ring): discovery
//! from the 401, what is accepted and what is refused, key rotation, and an
//! issuer that is down, slow or hostile.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use toolreg::policy::MemorySink;
use toolreg::{FunctionRegistry, PrincipalSource, SafetyLevel, ToolDeclaration};
use toolreg_mcp::server::{HttpOptions, McpServer, OAuth, ServerOptions};

/// A signing key (P-256) and its public JWK.
pub(crate) struct Key {
    kid: String,
    pkcs8: Vec<u8>,
    jwk: Value,
}

impl Key {
    pub(crate) fn new(kid: &str) -> Key {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap().as_ref().to_vec();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).unwrap();
        let point = pair.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
            "kid": kid, "alg": "ES256", "use": "sig"});
        Key { kid: kid.to_owned(), pkcs8, jwk }
    }

    pub(crate) fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8)).unwrap()
    }
}

/// What the issuer's JWKS endpoint does.
#[derive(Clone)]
enum Jwks {
    Keys(Value),
    Down,
    Slow,
    Huge,
}

/// An authorization server's metadata and keys, on a real listener.
pub(crate) struct Issuer {
    pub(crate) url: String,
    /// Access tokens its token endpoint handed out.
    pub(crate) minted: Arc<AtomicUsize>,
    jwks: Arc<Mutex<Jwks>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    pub(crate) async fn start(keys: &[&Key]) -> Issuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let jwks =
            Arc::new(Mutex::new(Jwks::Keys(json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}))));
        let fetches = Arc::new(AtomicUsize::new(0));
        let metadata =
            json!({"issuer": url, "jwks_uri": format!("{url}/jwks"), "token_endpoint": format!("{url}/token")})
                .to_string();
        let (served, counted) = (Arc::clone(&jwks), Arc::clone(&fetches));
        let minted = Arc::new(AtomicUsize::new(0));
        let token_endpoint = token_endpoint(&url, keys[0], Arc::clone(&minted));
        let app = axum::Router::new()
            .route("/token", axum::routing::post(token_endpoint))
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || std::future::ready(metadata.clone())),
            )
            .route(
                "/jwks",
                axum::routing::get(move || {
                    let now = served.lock().unwrap().clone();
                    counted.fetch_add(1, Ordering::SeqCst);
                    async move {
                        match now {
                            Jwks::Keys(set) => (axum::http::StatusCode::OK, set.to_string()),
                            Jwks::Down => (axum::http::StatusCode::SERVICE_UNAVAILABLE, String::new()),
                            Jwks::Slow => {
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                (axum::http::StatusCode::OK, String::new())
                            }
                            Jwks::Huge => (
                                axum::http::StatusCode::OK,
                                format!("{{\"keys\": [], \"pad\": \"{}\"}}", "x".repeat(1 << 20)),
                            ),
                        }
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Issuer { url, minted, jwks, fetches }
    }

    fn set(&self, jwks: Jwks) {
        *self.jwks.lock().unwrap() = jwks;
    }
}

/// The client id and the variable whose value is its secret (any variable
/// set in every test process: the point is that the secret comes from the
/// environment, never from the configuration file).
pub(crate) const GATEWAY_CLIENT: (&str, &str) = ("gateway", "PATH");

/// A client-credentials token endpoint for `GATEWAY_CLIENT`: a JWT for the
/// `resource` asked for, with the scope asked for, 120 s long.
fn token_endpoint(
    issuer: &str,
    key: &Key,
    minted: Arc<AtomicUsize>,
) -> impl Fn(axum::http::HeaderMap, String) -> std::future::Ready<(axum::http::StatusCode, String)> + Clone + use<> {
    let issuer = issuer.to_owned();
    let (kid, pkcs8) = (key.kid.clone(), key.pkcs8.clone());
    move |headers: axum::http::HeaderMap, body: String| {
        let form: std::collections::HashMap<String, String> = body
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), percent_decode(v)))
            .collect();
        let secret = std::env::var(GATEWAY_CLIENT.1).unwrap();
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", GATEWAY_CLIENT.0, form_encode(&secret)))
        );
        let answer = if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
            (axum::http::StatusCode::UNAUTHORIZED, json!({"error": "invalid_client"}).to_string())
        } else if form.get("grant_type").map(String::as_str) != Some("client_credentials") {
            (axum::http::StatusCode::BAD_REQUEST, json!({"error": "unsupported_grant_type"}).to_string())
        } else {
            minted.fetch_add(1, Ordering::SeqCst);
            let claims = json!({"iss": issuer, "aud": form.get("resource"), "sub": GATEWAY_CLIENT.0,
                "client_id": GATEWAY_CLIENT.0, "scope": form.get("scope").cloned().unwrap_or_default(),
                "exp": now() + 120});
            let mut header = Header::new(Algorithm::ES256);
            header.kid = Some(kid.clone());
            let token = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&pkcs8)).unwrap();
            let answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": 120});
            (axum::http::StatusCode::OK, answer.to_string())
        };
        std::future::ready(answer)
    }
}

fn form_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A served `echo` tool behind `oauth` (built for this server's address),
/// and the audit of its calls.
async fn serve(oauth: impl FnOnce(&str) -> OAuth) -> (SocketAddr, String, Arc<MemorySink>, HttpOptions) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let audience = format!("http://{addr}/mcp");
    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("echo").description("Echo.").safety(SafetyLevel::Safe).build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), decl).unwrap();
    let audit = Arc::new(MemorySink::new());
    let engine = McpServer::engine_builder(&r, &ServerOptions::default()).audit(Arc::clone(&audit)).build();
    let options = HttpOptions::default().oauth(oauth(&audience));
    let running = options.clone();
    let served = McpServer::new(engine, ServerOptions::default());
    tokio::spawn(async move { served.serve_http_on(listener, running).await });
    (addr, audience, audit, options)
}

pub(crate) fn claims(issuer: &str, audience: &str) -> Value {
    json!({"iss": issuer, "aud": audience, "sub": "alice", "client_id": "agent-1", "scope": "tools files",
        "iat": now(), "exp": now() + 300})
}

async fn initialize(addr: SocketAddr, token: Option<&str>) -> reqwest::Response {
    let mut request = crate::support::http_client()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

#[tokio::test]
async fn a_client_finds_the_issuer_from_the_401_and_calls_with_a_verified_token() {
    let key = Key::new("k1");
    let issuer = Issuer::start(&[&key]).await;
    let (addr, audience, audit, options) = serve(|aud| OAuth::new(&issuer.url, aud).require_scope("tools")).await;

    let missing = initialize(addr, None).await;
    assert_eq!(missing.status(), 401);
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge(&missing), format!("Bearer resource_metadata=\"{metadata_url}\""));
    let metadata: Value = crate::support::http_client().get(&metadata_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], audience);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["scopes_supported"], json!(["tools"]));
    let root: Value = crate::support::http_client()
        .get(format!("http://{addr}/.well-known/oauth-protected-resource"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root, metadata);

    // The official client's way in, with the token.
    let token = key.sign(&claims(&issuer.url, &audience));
    crate::support::install_tls();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")).auth_header(token);
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    client.call_tool(CallToolRequestParams::new("echo")).await.unwrap();
    client.cancel().await.unwrap();
    let events = audit.take();
    let who = events[0].principal.clone().unwrap();
    assert_eq!((who.subject.as_str(), who.client_id.as_deref()), ("alice", Some("agent-1")));
    assert_eq!(who.scopes, ["files", "tools"]);
    assert_eq!(who.source, PrincipalSource::Token { issuer: issuer.url.clone() });
    options.shutdown.cancel();
}

#[tokio::test]
async fn tokens_that_are_not_for_this_server_now_are_refused() {
    let key = Key::new("k1");
    let stranger = Key::new("k1"); // the same kid, another key
    let issuer = Issuer::start(&[&key]).await;
    let (addr, audience, audit, options) = serve(|aud| OAuth::new(&issuer.url, aud).require_scope("tools")).await;
    let good = claims(&issuer.url, &audience);
    let with = |change: Value| {
        let mut claims = good.clone();
        for (name, value) in change.as_object().unwrap() {
            claims[name] = value.clone();
        }
        claims
    };
    let good_token = key.sign(&good);
    let (head, rest) = good_token.split_once('.').unwrap();
    let (payload, signature) = rest.split_once('.').unwrap();
    let none_header = B64.encode(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#);
    // HS256 with the issuer's public key as the secret (the classic confusion).
    let public = serde_json::to_vec(&key.jwk).unwrap();
    let mut hs = Header::new(Algorithm::HS256);
    hs.kid = Some("k1".into());
    let hs_token = jsonwebtoken::encode(&hs, &good, &EncodingKey::from_secret(&public)).unwrap();
    let mut flipped = signature.to_owned().into_bytes();
    flipped[3] = if flipped[3] == b'A' { b'B' } else { b'A' };
    let mut unknown = Header::new(Algorithm::ES256);
    unknown.kid = Some("nobody-knows".into());
    let unknown_kid = jsonwebtoken::encode(&unknown, &good, &EncodingKey::from_ec_der(&key.pkcs8)).unwrap();

    let refused = [
        ("expired", key.sign(&with(json!({"exp": now() - 600})))),
        ("not yet valid", key.sign(&with(json!({"nbf": now() + 600})))),
        ("another issuer", key.sign(&with(json!({"iss": "https://evil.example"})))),
        ("another resource", key.sign(&with(json!({"aud": "https://other.example/mcp"})))),
        ("no subject", key.sign(&json!({"iss": issuer.url, "aud": audience, "exp": now() + 60, "scope": "tools"}))),
        ("alg none", format!("{none_header}.{payload}.")),
        ("HS256 with the public key", hs_token),
        ("unknown kid", unknown_kid),
        ("tampered signature", format!("{head}.{payload}.{}", String::from_utf8(flipped).unwrap())),
        ("tampered claims", format!("{head}.{}.{signature}", B64.encode(with(json!({"sub": "root"})).to_string()))),
        ("another key, same kid", stranger.sign(&good)),
        ("not a token", "not.a.token".to_owned()),
        ("huge", "e".repeat(64 * 1024)),
    ];
    for (what, token) in &refused {
        let response = initialize(addr, Some(token)).await;
        assert_eq!(response.status(), 401, "{what}");
        // Its body unread, the connection ends with the answer, and says so.
        assert_eq!(response.headers().get("connection").map(|v| v.to_str().unwrap()), Some("close"), "{what}");
        let challenge = challenge(&response);
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="),
            "{what}: {challenge}"
        );
    }
    // Good, but short of the scope the server requires.
    let narrow = initialize(addr, Some(&key.sign(&with(json!({"scope": "files"}))))).await;
    assert_eq!(narrow.status(), 403);
    assert!(
        challenge(&narrow).starts_with("Bearer error=\"insufficient_scope\", scope=\"tools\""),
        "{}",
        challenge(&narrow)
    );
    assert_eq!(initialize(addr, Some(&good_token)).await.status(), 200);
    assert!(audit.events().is_empty(), "nothing ran for a refused token");
    options.shutdown.cancel();
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_made_up_kids_cost_the_issuer_nothing() {
    let (old, new) = (Key::new("2026-11"), Key::new("2026-12"));
    let issuer = Issuer::start(&[&old]).await;
    let (addr, audience, _audit, options) =
        serve(|aud| OAuth::new(&issuer.url, aud).refresh_interval(Duration::from_millis(300))).await;
    assert_eq!(initialize(addr, Some(&old.sign(&claims(&issuer.url, &audience)))).await.status(), 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);

    issuer.set(Jwks::Keys(json!({"keys": [old.jwk, new.jwk]})));
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(initialize(addr, Some(&new.sign(&claims(&issuer.url, &audience)))).await.status(), 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    // Tokens naming keys nobody has: at most one more fetch per interval.
    let flood = std::time::Instant::now();
    for i in 0..20 {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(format!("made-up-{i}"));
        let token =
            jsonwebtoken::encode(&header, &claims(&issuer.url, &audience), &EncodingKey::from_ec_der(&new.pkcs8))
                .unwrap();
        assert_eq!(initialize(addr, Some(&token)).await.status(), 401);
    }
    let allowed = 3 + (flood.elapsed().as_millis() / 300) as usize;
    let fetched = issuer.fetches.load(Ordering::SeqCst);
    assert!(fetched <= allowed, "{fetched} fetches for 20 made-up kids in {:?}", flood.elapsed());
    options.shutdown.cancel();
}

#[tokio::test]
async fn an_issuer_that_is_down_slow_or_hostile_leaves_known_keys_working() {
    let (known, rotated) = (Key::new("a"), Key::new("b"));
    let issuer = Issuer::start(&[&known]).await;
    let (addr, audience, _audit, options) = serve(|aud| {
        OAuth::new(&issuer.url, aud)
            .refresh_interval(Duration::from_millis(1))
            .fetch_timeout(Duration::from_millis(500))
    })
    .await;
    let good = known.sign(&claims(&issuer.url, &audience));
    assert_eq!(initialize(addr, Some(&good)).await.status(), 200);
    for state in [Jwks::Down, Jwks::Slow, Jwks::Huge] {
        issuer.set(state);
        let started = std::time::Instant::now();
        let unknown = initialize(addr, Some(&rotated.sign(&claims(&issuer.url, &audience)))).await;
        assert_eq!(unknown.status(), 401);
        assert!(challenge(&unknown).contains("invalid_token"), "{}", challenge(&unknown));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(initialize(addr, Some(&good)).await.status(), 200, "a known key still verifies");
    }
    options.shutdown.cancel();
}

/// Two principals under one access policy: each is shown, can search and
/// can call only what its role grants; a refusal names the rule and never
/// another tool; the audit names who asked.
#[tokio::test]
async fn each_principal_sees_searches_and_calls_only_what_its_role_grants() {
    use rmcp::model::ListToolsResult;
    use toolreg::engine::Deferral;
    use toolreg::policy::AccessPolicy;

    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let audience = format!("http://{addr}/mcp");
    let mut r = FunctionRegistry::new();
    for (name, safety, description) in [
        ("issues__get_issue", SafetyLevel::Safe, "Read an issue of the tracker."),
        ("issues__list_issues", SafetyLevel::Safe, "List the issues of the tracker."),
        ("issues__close_issue", SafetyLevel::Cautious, "Close an issue of the tracker."),
        ("issues__delete_project", SafetyLevel::Dangerous, "Delete a whole project of the tracker."),
    ] {
        let decl = ToolDeclaration::builder(name).description(description).safety(safety).category("mcp").build();
        let ran = name.to_owned();
        r.register_sync_tool(name, move |_: Value| Ok::<_, String>(format!("{ran} ran")), decl).unwrap();
    }
    let policy: AccessPolicy = serde_json::from_value(json!({"roles": {
        "reader": {"allow": ["issues__get_*", "issues__list_*"], "max_safety": "safe"},
        "maintainer": {"allow": ["issues__*"], "deny": ["issues__delete_*"]}
    }}))
    .unwrap();
    let options = ServerOptions::default().deferred(Deferral::new().past(0)).allow_dangerous(true);
    let audit = Arc::new(MemorySink::new());
    let engine = McpServer::engine_builder(&r, &options).access(policy).audit(Arc::clone(&audit)).build();
    let http = HttpOptions::default().oauth(OAuth::new(&issuer.url, &audience));
    let running = http.clone();
    let served = McpServer::new(engine, options);
    tokio::spawn(async move { served.serve_http_on(listener, running).await });

    let connect = |sub: &str, scope: &str| {
        let mut c = claims(&issuer.url, &audience);
        c["sub"] = json!(sub);
        c["scope"] = json!(scope);
        let config =
            StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")).auth_header(key.sign(&c));
        crate::support::install_tls();
        ().serve(StreamableHttpClientTransport::from_config(config))
    };
    let reader = connect("rita", "reader").await.unwrap();
    let maintainer = connect("max", "maintainer").await.unwrap();
    let call = |name: &str, arguments: Value| {
        CallToolRequestParams::new("call_tool")
            .with_arguments(json!({"name": name, "arguments": arguments}).as_object().cloned().unwrap())
    };
    let search = |query: &str| {
        CallToolRequestParams::new("search_tools")
            .with_arguments(json!({"query": query, "limit": 10}).as_object().cloned().unwrap())
    };
    let found = |result: &rmcp::model::CallToolResult| -> Vec<String> {
        let tools = result.structured_content.as_ref().unwrap()["tools"].as_array().unwrap().clone();
        let mut names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
        names.sort();
        names
    };

    let read = found(&reader.call_tool(search("issue tracker project")).await.unwrap());
    assert_eq!(read, ["issues__get_issue", "issues__list_issues"]);
    let maintained = found(&maintainer.call_tool(search("issue tracker project")).await.unwrap());
    assert_eq!(maintained, ["issues__close_issue", "issues__get_issue", "issues__list_issues"]);

    let refused = reader.call_tool(call("issues__close_issue", json!({}))).await.unwrap();
    let text = refused.content[0].as_text().unwrap().text.clone();
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text.contains("you may not call `issues__close_issue`") && text.contains("role `reader` does not allow it"),
        "{text}"
    );
    let refused = maintainer.call_tool(call("issues__delete_project", json!({}))).await.unwrap();
    let text = refused.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("role `maintainer` denies `issues__delete_*`"), "{text}");
    let ran = maintainer.call_tool(call("issues__close_issue", json!({}))).await.unwrap();
    assert_eq!(ran.content[0].as_text().unwrap().text, "issues__close_issue ran");
    // A mistyped name lists only what the caller may call.
    let unknown = reader.call_tool(call("issues__get_isue", json!({}))).await.unwrap();
    let text = unknown.content[0].as_text().unwrap().text.clone();
    assert!(!text.contains("close") && !text.contains("delete"), "{text}");
    // The direct list: the meta-tools, and nothing hidden loaded into it.
    let listed: ListToolsResult = reader.list_tools(None).await.unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.iter().all(|n| !n.contains("close") && !n.contains("delete")), "{names:?}");

    let events = audit.take();
    let who: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| (e.principal.as_ref().unwrap().subject.as_str(), e.tool.as_str(), e.outcome.as_ref()))
        .collect();
    assert!(who.contains(&("rita", "issues__close_issue", "forbidden")), "{who:?}");
    assert!(who.contains(&("max", "issues__delete_project", "forbidden")), "{who:?}");
    assert!(who.contains(&("max", "issues__close_issue", "ok")), "{who:?}");
    reader.cancel().await.unwrap();
    maintainer.cancel().await.unwrap();
    http.shutdown.cancel();
}

/// An introspection endpoint (RFC 7662) that knows a few opaque tokens and
/// wants the resource server's own credentials.
async fn introspection_endpoint(answers: Value) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/introspect", listener.local_addr().unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&asked);
    let app = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            counted.fetch_add(1, Ordering::SeqCst);
            let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("toolreg:rs-secret"));
            let answer = if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                (axum::http::StatusCode::UNAUTHORIZED, String::new())
            } else {
                let token = body.split('&').find_map(|pair| pair.strip_prefix("token=")).unwrap_or_default();
                let found = answers.get(token).cloned().unwrap_or(json!({"active": false}));
                (axum::http::StatusCode::OK, found.to_string())
            };
            std::future::ready(answer)
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, asked)
}

#[tokio::test]
async fn opaque_tokens_are_checked_at_the_introspection_endpoint_and_the_answer_kept_a_while() {
    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let audience = format!("http://{addr}/mcp");
    let good = |sub: &str, scope: &str| {
        json!({"active": true, "sub": sub, "iss": issuer.url, "aud": [audience], "scope": scope,
            "client_id": "opaque-client", "exp": now() + 300})
    };
    let mut other = good("olga", "tools");
    other["aud"] = json!("https://other.example/mcp");
    let mut expired = good("ed", "tools");
    expired["exp"] = json!(now() - 600);
    let mut foreign = good("fred", "tools");
    foreign["iss"] = json!("https://evil.example");
    let (endpoint, asked) = introspection_endpoint(json!({
        "opaque-good": good("otto", "tools"), "opaque-narrow": good("nina", "files"),
        "opaque-other": other, "opaque-expired": expired, "opaque-foreign": foreign,
        "opaque-nobody": {"active": true, "aud": audience, "scope": "tools"}
    }))
    .await;
    let audit = Arc::new(MemorySink::new());
    let mut r = FunctionRegistry::new();
    let decl = ToolDeclaration::builder("echo").description("Echo.").safety(SafetyLevel::Safe).build();
    r.register_sync_tool("echo", |args: Value| Ok::<_, String>(args), decl).unwrap();
    let engine = McpServer::engine_builder(&r, &ServerOptions::default()).audit(Arc::clone(&audit)).build();
    let oauth =
        OAuth::new(&issuer.url, &audience).require_scope("tools").introspection(&endpoint, "toolreg", "rs-secret");
    let options = HttpOptions::default().oauth(oauth);
    let running = options.clone();
    tokio::spawn(
        async move { McpServer::new(engine, ServerOptions::default()).serve_http_on(listener, running).await },
    );

    assert_eq!(initialize(addr, Some("opaque-good")).await.status(), 200);
    assert_eq!(initialize(addr, Some("opaque-good")).await.status(), 200);
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the answer is kept");
    for token in ["opaque-unknown", "opaque-other", "opaque-expired", "opaque-foreign", "opaque-nobody"] {
        let response = initialize(addr, Some(token)).await;
        assert_eq!(response.status(), 401, "{token}");
        assert!(challenge(&response).contains("invalid_token"), "{token}: {}", challenge(&response));
    }
    assert_eq!(initialize(addr, Some("opaque-narrow")).await.status(), 403);
    // JWTs still verify by signature, without asking the endpoint.
    let before = asked.load(Ordering::SeqCst);
    assert_eq!(initialize(addr, Some(&key.sign(&claims(&issuer.url, &audience)))).await.status(), 200);
    assert_eq!(asked.load(Ordering::SeqCst), before);

    crate::support::install_tls();
    let config = StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")).auth_header("opaque-good");
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    client.call_tool(CallToolRequestParams::new("echo")).await.unwrap();
    client.cancel().await.unwrap();
    let who = audit.take()[0].principal.clone().unwrap();
    assert_eq!((who.subject.as_str(), who.client_id.as_deref()), ("otto", Some("opaque-client")));
    options.shutdown.cancel();

    // Without an introspection endpoint, an opaque token is simply invalid.
    let (addr, _, _, options) = serve(|aud| OAuth::new(&issuer.url, aud)).await;
    assert_eq!(initialize(addr, Some("opaque-good")).await.status(), 401);
    options.shutdown.cancel();
}

/// The gateway reaches a server that requires OAuth with its own client
/// credentials: the authorization server found from the server's resource
/// metadata, a token for that server alone, kept and reused; the remote
/// server sees the gateway as the principal, never a client of the gateway.
#[tokio::test]
async fn the_gateway_gets_its_own_token_for_a_server_that_requires_oauth() {
    use toolreg_mcp::client::RemoteServer;
    use toolreg_mcp::config::McpConfig;

    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let (addr, _audience, audit, options) = serve(|aud| OAuth::new(&issuer.url, aud).require_scope("tools")).await;
    let config = |scope: &str, secret_var: &str| {
        McpConfig::from_json(
            &json!({"mcpServers": {"tracker": {"url": format!("http://{addr}/mcp"),
            "oauth": {"clientId": GATEWAY_CLIENT.0, "clientSecretEnv": secret_var, "scope": scope}}}})
            .to_string(),
        )
        .unwrap()
        .servers["tracker"]
            .clone()
    };
    let remote = RemoteServer::connect("tracker", config("tools", GATEWAY_CLIENT.1)).await.unwrap();
    let mut registry = FunctionRegistry::new();
    assert!(remote.register_into(&mut registry).is_empty());
    for _ in 0..3 {
        let result = toolreg::ToolExecutor::execute_call(
            &registry,
            toolreg::ToolCall::new("c", "tracker__echo", json!({})),
            toolreg::CallOptions::default(),
        )
        .await;
        assert!(result.outcome.is_ok(), "{:?}", result.outcome);
    }
    assert_eq!(issuer.minted.load(Ordering::SeqCst), 1, "one token, kept");
    let events = audit.take();
    assert!(!events.is_empty());
    for event in &events {
        let who = event.principal.as_ref().unwrap();
        assert_eq!((who.subject.as_str(), who.scopes.as_slice()), ("gateway", ["tools".to_owned()].as_slice()));
    }
    remote.close().await;

    // The secret's variable unset: no connection, said why.
    let error = RemoteServer::connect("tracker", config("tools", "TOOLREG_TEST_NO_SUCH_VARIABLE")).await.unwrap_err();
    assert!(error.to_string().contains("TOOLREG_TEST_NO_SUCH_VARIABLE is not set"), "{error}");
    // Too little scope: the server's 403 names what it needs, and the
    // gateway asks for it too (step-up), once.
    let stepped = RemoteServer::connect("tracker", config("other", GATEWAY_CLIENT.1)).await.unwrap();
    assert_eq!(issuer.minted.load(Ordering::SeqCst), 3, "the refused token, then one with the scope asked for");
    stepped.close().await;
    options.shutdown.cancel();

    // A server whose resource metadata describes another resource: its
    // authorization server is not asked, and nothing connects.
    let before = issuer.minted.load(Ordering::SeqCst);
    let (addr, _, _, options) = serve(|_| OAuth::new(&issuer.url, "https://elsewhere.example/mcp")).await;
    let config = McpConfig::from_json(
        &json!({"mcpServers": {"tracker": {"url": format!("http://{addr}/mcp"),
            "oauth": {"clientId": GATEWAY_CLIENT.0, "clientSecretEnv": GATEWAY_CLIENT.1}}}})
        .to_string(),
    )
    .unwrap();
    let error = RemoteServer::connect("tracker", config.servers["tracker"].clone()).await.unwrap_err();
    assert!(error.to_string().contains("describes the resource https://elsewhere.example/mcp"), "{error}");
    assert_eq!(issuer.minted.load(Ordering::SeqCst), before);
    options.shutdown.cancel();
}

/// An MCP session belongs to the principal that opened it: another
/// principal naming its id is told the session does not exist.
#[tokio::test]
async fn another_principal_cannot_use_a_session_it_did_not_open() {
    let key = Key::new("k");
    let issuer = Issuer::start(&[&key]).await;
    let (addr, audience, audit, options) = serve(|aud| OAuth::new(&issuer.url, aud)).await;
    let token = |sub: &str| {
        let mut c = claims(&issuer.url, &audience);
        c["sub"] = json!(sub);
        key.sign(&c)
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let opened = initialize(addr, Some(&alice)).await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let send = |token: &str, body: Value| {
        crate::support::http_client()
            .post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", &session)
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    let stolen = send(&bob, call.clone()).await.unwrap();
    assert_eq!(stolen.status(), 404);
    assert!(audit.events().is_empty(), "nothing ran in alice's session for bob");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(send(&alice, initialized).await.unwrap().status().is_success());
    let own = send(&alice, call).await.unwrap();
    assert_eq!(own.status(), 200);
    let _ = own.text().await;
    assert_eq!(audit.take()[0].principal.as_ref().unwrap().subject, "alice");
    options.shutdown.cancel();
}
