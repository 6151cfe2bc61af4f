//! The HTTP server as an OAuth 2.1 resource server, as the MCP
//! authorization specification has it: JWT access tokens verified against
//! the authorization server's keys (JWKS), the Protected Resource Metadata
//! of RFC 9728 at its well-known path, and `401`/`403` answers whose
//! `WWW-Authenticate` tells a client where to go.
//!
//! A token is accepted when its signature verifies with a key of the
//! issuer's JWKS (found by `kid`; an algorithm from [`ALGORITHMS`] only, and
//! only with a key of its own family, so `alg: none` and an HMAC "signed"
//! with the public key are refused), its issuer is the configured one, its
//! audience holds this server's canonical URI (RFC 8707: a token minted for
//! another resource is refused), it has not expired and is already valid
//! (with [`OAuth::leeway`] of clock skew), and it carries every required
//! scope (else `403 insufficient_scope`). The caller becomes a
//! [`Principal`] (`sub`, `client_id` or `azp`, the scopes) for every call
//! of the request. The token itself goes nowhere else: not to a tool, not
//! to an upstream server (the gateway's upstream credentials come from its
//! own configuration).
//!
//! A token that is not a JWT (an opaque token) is accepted only when an
//! introspection endpoint is configured ([`OAuth::introspection`], RFC
//! 7662): the server asks it, with its own client credentials, and accepts
//! an `active` token of the same issuer (when named), for this audience,
//! not expired, with the required scopes. An answer is kept for at most a
//! minute (never past the token's `exp`), for at most
//! [`MAX_INTROSPECTED`] tokens, keyed by the token's hash.
//!
//! Keys are fetched from the issuer's metadata (`jwks_uri` of its OpenID or
//! RFC 8414 metadata) or a configured JWKS URL, with a time limit and a
//! size bound, and fetched again for a `kid` not yet known (key rotation) at
//! most once per [`OAuth::refresh_interval`], so a stream of made-up `kid`s
//! costs the issuer nothing. While the keys cannot be fetched, tokens signed
//! with keys already known still verify.
//!
//! ```no_run
//! use toolreg_mcp::server::{HttpOptions, OAuth};
//!
//! let oauth = OAuth::new("https://login.example.com", "https://tools.example.com/mcp").require_scope("tools");
//! let options = HttpOptions::default().oauth(oauth);
//! # let _ = options;
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Mutex as AsyncMutex;
use toolreg::Principal;

use crate::protocol::oauth::{form_encode, read_json, split_origin};

/// The signature algorithms accepted: asymmetric ones only.
pub const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The longest `Authorization` header read (a JWT of a few kilobytes is
/// usual; this leaves room for large claims, not for a flood).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The largest JWKS or metadata document read from the issuer.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// The most keys kept from one JWKS.
const MAX_KEYS: usize = 64;
/// The most introspection answers kept.
pub const MAX_INTROSPECTED: usize = 10_000;
/// The longest an introspection answer is kept.
const INTROSPECTION_TTL: Duration = Duration::from_secs(60);
/// The most verified JWTs remembered, so that a client's next request with
/// the same token costs a hash, not a signature check.
pub const MAX_REMEMBERED: usize = 10_000;
/// The longest a verified JWT is remembered (never past its `exp`).
const REMEMBERED_TTL: Duration = Duration::from_secs(300);

/// How the server verifies access tokens (see the module's docs).
#[derive(Clone)]
pub struct OAuth {
    issuer: String,
    audience: String,
    jwks_uri: Option<String>,
    scopes: Vec<String>,
    leeway: Duration,
    refresh_interval: Duration,
    fetch_timeout: Duration,
    keys: Arc<Keys>,
    introspection: Option<Arc<Introspection>>,
    /// Tokens verified lately, with whom they name.
    remembered: Arc<Remembered<Principal>>,
}

/// Answers about tokens, by the token's SHA-256 (the token itself is not
/// kept), each until a time; at most `limit` of them.
struct Remembered<T> {
    answers: Mutex<HashMap<[u8; 32], (Instant, T)>>,
    limit: usize,
}

impl<T: Clone> Remembered<T> {
    fn new(limit: usize) -> Self {
        Remembered { answers: Mutex::default(), limit }
    }

    fn get(&self, digest: &[u8; 32], now: Instant) -> Option<T> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        answers.get(digest).filter(|(until, _)| *until > now).map(|(_, answer)| answer.clone())
    }

    /// Keep `answer` until `until`; past the limit, the stale go first, and
    /// all of them if none is stale.
    fn put(&self, digest: [u8; 32], until: Instant, answer: T, now: Instant) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        if answers.len() >= self.limit {
            answers.retain(|_, (kept_until, _)| *kept_until > now);
            if answers.len() >= self.limit {
                answers.clear();
            }
        }
        answers.insert(digest, (until, answer));
    }
}

/// The SHA-256 of a token: how it is remembered.
fn digest(token: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).into()
}

/// Where opaque tokens are checked, with the server's own credentials, and
/// the answers kept.
struct Introspection {
    endpoint: String,
    client_id: String,
    client_secret: String,
    /// Who each token is, or why not.
    answers: Remembered<Result<Principal, TokenError>>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("jwks_uri", &self.jwks_uri)
            .field("scopes", &self.scopes)
            .field("introspection", &self.introspection.as_ref().map(|i| &i.endpoint))
            .finish_non_exhaustive()
    }
}

/// The issuer's keys, by `kid`, and when they were last fetched.
#[derive(Default)]
struct Keys {
    known: Mutex<HashMap<String, (Algorithm, Arc<DecodingKey>)>>,
    /// The one fetch in flight, and when the last one started.
    fetching: AsyncMutex<Option<Instant>>,
}

/// Why a token was refused: the text goes to the client (it names no key
/// and no secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// No `Authorization: Bearer` header.
    #[error("no bearer token")]
    Missing,
    /// The token is not one this server accepts (malformed, unsigned, bad
    /// signature, another issuer or audience, expired, not yet valid).
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token is good but lacks scopes the server requires.
    #[error("insufficient scope: {0} required")]
    InsufficientScope(String),
    /// The issuer's keys could not be had to check a token signed with a
    /// key not yet known.
    #[error("the authorization server's keys cannot be fetched: {0}")]
    Keys(String),
}

impl OAuth {
    /// Accept tokens from `issuer` (its `iss`, and where its metadata is)
    /// minted for `audience`: this server's canonical URI, as clients name
    /// it in their `resource` parameter (`https://tools.example.com/mcp`).
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        OAuth {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks_uri: None,
            scopes: Vec::new(),
            leeway: Duration::from_secs(60),
            refresh_interval: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(5),
            keys: Arc::default(),
            introspection: None,
            remembered: Arc::new(Remembered::new(MAX_REMEMBERED)),
        }
    }

    /// Also accept opaque tokens, checked at this introspection endpoint
    /// (RFC 7662) with these client credentials (HTTP Basic).
    pub fn introspection(
        mut self,
        endpoint: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.introspection = Some(Arc::new(Introspection {
            endpoint: endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            answers: Remembered::new(MAX_INTROSPECTED),
        }));
        self
    }

    /// Fetch the keys here instead of from the issuer's metadata.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// Require this scope of every token (`403 insufficient_scope` without).
    pub fn require_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.push(scope.into());
        self
    }

    /// The clock skew allowed on `exp` and `nbf` (default 60 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The shortest time between two fetches of the keys (default 30 s).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// The longest a fetch of the issuer's metadata or keys may take
    /// (default 5 s).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The issuer tokens must come from.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience tokens must be minted for.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The Protected Resource Metadata (RFC 9728) of this server. Its
    /// `scopes_supported` are the required scopes, an empty list when none
    /// are: a client that finds none asks for no scope, rather than for
    /// every scope the authorization server knows (which it may refuse).
    pub fn resource_metadata(&self) -> serde_json::Value {
        json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": self.scopes,
        })
    }

    /// Who the token in `authorization` (the header's value) belongs to. A
    /// JWT verified lately is remembered (by its hash, for at most five
    /// minutes and never past its `exp`): a client's next request with it
    /// costs a hash, not a signature check.
    pub async fn verify(&self, authorization: Option<&HeaderValue>) -> Result<Principal, TokenError> {
        let token = bearer(authorization)?;
        let digest = digest(token);
        let now = Instant::now();
        if let Some(principal) = self.remembered.get(&digest, now) {
            return Ok(principal);
        }
        let (principal, lasts) = self.verify_token(token).await?;
        if !lasts.is_zero() {
            self.remembered.put(digest, now + lasts, principal.clone(), now);
        }
        Ok(principal)
    }

    /// Who `token` belongs to, checked in full, and how long a JWT's answer
    /// may be remembered (zero: not at all).
    async fn verify_token(&self, token: &str) -> Result<(Principal, Duration), TokenError> {
        let header = match (jsonwebtoken::decode_header(token), &self.introspection) {
            (Ok(header), _) => header,
            (Err(_), Some(introspection)) if token.split('.').count() != 3 => {
                // Kept by the introspection's own answers.
                return self.introspect(introspection, token).await.map(|principal| (principal, Duration::ZERO));
            }
            (Err(error), _) => return Err(TokenError::Invalid(error.to_string())),
        };
        if !ALGORITHMS.contains(&header.alg) {
            return Err(TokenError::Invalid(format!("the algorithm {:?} is not accepted", header.alg)));
        }
        let kid = header.kid.unwrap_or_default();
        let (algorithm, key) = match self.key(&kid) {
            Some(found) => found,
            None => {
                self.refresh().await?;
                self.key(&kid)
                    .ok_or_else(|| TokenError::Invalid("signed with a key the issuer does not list".into()))?
            }
        };
        if algorithm != header.alg {
            return Err(TokenError::Invalid(format!("the key is for {algorithm:?}, not {:?}", header.alg)));
        }
        let mut validation = Validation::new(algorithm);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| TokenError::Invalid(e.to_string()))?
            .claims;
        let scopes: Vec<String> = match (claims.scope, claims.scp) {
            (Some(scope), _) => scope.split_whitespace().map(str::to_owned).collect(),
            (None, Some(scp)) => scp,
            (None, None) => Vec::new(),
        };
        let missing: Vec<&str> = self.scopes.iter().filter(|s| !scopes.contains(s)).map(String::as_str).collect();
        if !missing.is_empty() {
            return Err(TokenError::InsufficientScope(missing.join(" ")));
        }
        let mut principal = Principal::verified(&self.issuer, claims.sub).with_scopes(scopes);
        if let Some(client) = claims.client_id.or(claims.azp) {
            principal = principal.with_client_id(client);
        }
        let left = claims.exp.saturating_sub(jsonwebtoken::get_current_timestamp());
        Ok((principal, REMEMBERED_TTL.min(Duration::from_secs(left))))
    }

    /// Who an opaque token belongs to, by the introspection endpoint's word
    /// (kept for a while).
    async fn introspect(&self, introspection: &Introspection, token: &str) -> Result<Principal, TokenError> {
        let digest = digest(token);
        let now = Instant::now();
        if let Some(answer) = introspection.answers.get(&digest, now) {
            return answer;
        }
        let (answer, lasts) = self.ask_introspection(introspection, token).await?;
        introspection.answers.put(digest, now + lasts, answer.clone(), now);
        answer
    }

    /// Ask the endpoint; the answer and how long it may be kept. A failure
    /// to ask is not kept.
    async fn ask_introspection(
        &self,
        introspection: &Introspection,
        token: &str,
    ) -> Result<(Result<Principal, TokenError>, Duration), TokenError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(self.fetch_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let request = client
            .post(&introspection.endpoint)
            .basic_auth(&introspection.client_id, Some(&introspection.client_secret))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(body);
        let answer: Introspected = fetch_json_from(request, &introspection.endpoint).await?;
        let now = jsonwebtoken::get_current_timestamp();
        let refused = |why: &str| Ok((Err(TokenError::Invalid(why.to_owned())), INTROSPECTION_TTL));
        if !answer.active {
            return refused("the token is not active");
        }
        if answer.iss.as_deref().is_some_and(|iss| iss.trim_end_matches('/') != self.issuer.trim_end_matches('/')) {
            return refused("the token is from another issuer");
        }
        let audiences = match answer.aud {
            Some(Audience::One(aud)) => vec![aud],
            Some(Audience::Many(auds)) => auds,
            None => Vec::new(),
        };
        if !audiences.contains(&self.audience) {
            return refused("the token is not for this resource");
        }
        let lasts = match answer.exp {
            Some(exp) if exp + self.leeway.as_secs() <= now => return refused("the token has expired"),
            Some(exp) => INTROSPECTION_TTL.min(Duration::from_secs(exp + self.leeway.as_secs() - now)),
            None => INTROSPECTION_TTL,
        };
        let Some(subject) = answer.sub.filter(|s| !s.is_empty()) else { return refused("the token names no subject") };
        let scopes: Vec<String> = answer.scope.unwrap_or_default().split_whitespace().map(str::to_owned).collect();
        let missing: Vec<&str> = self.scopes.iter().filter(|s| !scopes.contains(s)).map(String::as_str).collect();
        if !missing.is_empty() {
            return Ok((Err(TokenError::InsufficientScope(missing.join(" "))), lasts));
        }
        let mut principal = Principal::verified(&self.issuer, subject).with_scopes(scopes);
        if let Some(client) = answer.client_id {
            principal = principal.with_client_id(client);
        }
        Ok((Ok(principal), lasts))
    }

    /// The key for `kid`, when known (a JWKS of one key without a `kid`
    /// serves tokens without one).
    fn key(&self, kid: &str) -> Option<(Algorithm, Arc<DecodingKey>)> {
        let known = self.keys.known.lock().unwrap_or_else(PoisonError::into_inner);
        known.get(kid).map(|(algorithm, key)| (*algorithm, Arc::clone(key)))
    }

    /// Fetch the keys again, unless a fetch happened within the refresh
    /// interval (then the keys known are what there is).
    async fn refresh(&self) -> Result<(), TokenError> {
        let mut last = self.keys.fetching.lock().await;
        if last.is_some_and(|at| at.elapsed() < self.refresh_interval) {
            return Ok(());
        }
        *last = Some(Instant::now());
        let keys = self.fetch_keys().await?;
        *self.keys.known.lock().unwrap_or_else(PoisonError::into_inner) = keys;
        Ok(())
    }

    async fn fetch_keys(&self) -> Result<HashMap<String, (Algorithm, Arc<DecodingKey>)>, TokenError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(self.fetch_timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| TokenError::Keys(e.to_string()))?;
        let jwks_uri = match &self.jwks_uri {
            Some(uri) => uri.clone(),
            None => self.discover(&client).await?,
        };
        let set: JwkSet = fetch_json(&client, &jwks_uri).await?;
        let mut keys = HashMap::new();
        for jwk in set.keys.iter().take(MAX_KEYS) {
            if let Some((kid, algorithm, key)) = usable(jwk) {
                keys.insert(kid, (algorithm, Arc::new(key)));
            }
        }
        if keys.is_empty() {
            return Err(TokenError::Keys(format!("{jwks_uri} lists no key usable for signatures")));
        }
        Ok(keys)
    }

    /// The issuer's `jwks_uri`, from its OpenID Connect metadata or, failing
    /// that, its RFC 8414 metadata; the metadata must name the same issuer.
    async fn discover(&self, client: &reqwest::Client) -> Result<String, TokenError> {
        let issuer = self.issuer.trim_end_matches('/');
        let (origin, path) = split_origin(issuer);
        let candidates = [
            format!("{issuer}/.well-known/openid-configuration"),
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
        ];
        let mut failures = Vec::new();
        for url in candidates {
            match fetch_json::<Metadata>(client, &url).await {
                Ok(metadata) if metadata.issuer.trim_end_matches('/') == issuer => return Ok(metadata.jwks_uri),
                Ok(metadata) => failures.push(format!("{url} names the issuer {}", metadata.issuer)),
                Err(error) => failures.push(error.to_string()),
            }
        }
        Err(TokenError::Keys(failures.join("; ")))
    }
}

#[derive(Deserialize)]
struct Metadata {
    issuer: String,
    jwks_uri: String,
}

/// An introspection answer (RFC 7662, section 2.2).
#[derive(Deserialize)]
struct Introspected {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
}

/// The token of an `Authorization: Bearer …` header.
fn bearer(authorization: Option<&HeaderValue>) -> Result<&str, TokenError> {
    let value = authorization.ok_or(TokenError::Missing)?;
    if value.len() > MAX_TOKEN_BYTES {
        return Err(TokenError::Invalid(format!("the token is longer than {MAX_TOKEN_BYTES} bytes")));
    }
    let text = value.to_str().map_err(|_| TokenError::Invalid("the header is not text".into()))?;
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => Ok(token.trim()),
        _ => Err(TokenError::Missing),
    }
}

/// A signing key of the set, with the one algorithm it may verify: the
/// key's own `alg` when it names one, else its family's usual one. Keys for
/// encryption and symmetric keys are left out.
fn usable(jwk: &Jwk) -> Option<(String, Algorithm, DecodingKey)> {
    use jsonwebtoken::jwk::{EllipticCurve, PublicKeyUse};
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let family: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &ALGORITHMS[..6],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(_) => &[Algorithm::EdDSA],
        AlgorithmParameters::OctetKey(_) => return None,
    };
    let algorithm = match jwk.common.key_algorithm {
        Some(named) => {
            let named = named.to_string().parse::<Algorithm>().ok()?;
            family.contains(&named).then_some(named)?
        }
        None => family[0],
    };
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some((jwk.common.key_id.clone().unwrap_or_default(), algorithm, key))
}

/// A JSON document of at most [`MAX_DOCUMENT_BYTES`].
async fn fetch_json<T: serde::de::DeserializeOwned>(client: &reqwest::Client, url: &str) -> Result<T, TokenError> {
    fetch_json_from(client.get(url), url).await
}

/// The JSON answer to `request`, of at most [`MAX_DOCUMENT_BYTES`].
async fn fetch_json_from<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<T, TokenError> {
    read_json(request, url, MAX_DOCUMENT_BYTES).await.map_err(TokenError::Keys)
}

/// The middleware: verify the request's token, refuse it as the
/// specification says, or hand its principal to the MCP service.
pub(super) async fn require_token(oauth: OAuth, metadata_url: Arc<str>, mut request: Request, next: Next) -> Response {
    match oauth.verify(request.headers().get(header::AUTHORIZATION)).await {
        Ok(principal) => {
            request.extensions_mut().insert(Arc::new(principal));
            next.run(request).await
        }
        Err(error) => refusal(&error, &metadata_url),
    }
}

/// `401` (or `403` for missing scopes) with the `WWW-Authenticate` that
/// points a client at the resource metadata.
fn refusal(error: &TokenError, metadata_url: &str) -> Response {
    let quoted = |text: &str| text.replace(['"', '\\'], "'");
    let (status, challenge) = match error {
        TokenError::Missing => (StatusCode::UNAUTHORIZED, format!("Bearer resource_metadata=\"{metadata_url}\"")),
        TokenError::InsufficientScope(scopes) => (
            StatusCode::FORBIDDEN,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata_url}\"",
                quoted(scopes)
            ),
        ),
        TokenError::Invalid(why) | TokenError::Keys(why) => (
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{metadata_url}\"",
                quoted(why)
            ),
        ),
    };
    let mut response = (status, format!("{error}\n")).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    // The body was never read: the connection ends with this answer, and
    // says so, so that a client does not send its next request on it.
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_answers_expire_and_stay_within_their_bound() {
        let kept = Remembered::new(3);
        let now = Instant::now();
        let later = now + Duration::from_secs(10);
        kept.put(digest("a"), later, 1, now);
        assert_eq!(kept.get(&digest("a"), now), Some(1));
        assert_eq!(kept.get(&digest("a"), later), None, "expired");
        kept.put(digest("b"), now + Duration::from_millis(1), 2, now);
        kept.put(digest("c"), later, 3, now);
        // Full: the stale one goes first.
        kept.put(digest("d"), later, 4, now + Duration::from_millis(5));
        assert_eq!(kept.answers.lock().unwrap().len(), 3);
        assert_eq!(kept.get(&digest("b"), now), None);
        // Full of live answers: all go, the bound holds.
        kept.put(digest("e"), later, 5, now + Duration::from_millis(5));
        assert_eq!(kept.answers.lock().unwrap().len(), 1);
    }
}
