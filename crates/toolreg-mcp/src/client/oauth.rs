//! Access tokens for a remote server that requires OAuth, obtained with the
//! client-credentials grant (a service reaching a service): the server's
//! Protected Resource Metadata (RFC 9728) names its authorization server,
//! whose metadata (RFC 8414, or OpenID discovery) gives the token endpoint;
//! the token is asked for this server alone (`resource`, RFC 8707) with the
//! gateway's own client credentials, kept in memory, and asked for again
//! when it is about to expire or the server refused it — with the scope the
//! server's `403 insufficient_scope` named as well, once (step-up). The credentials and
//! the token go to that authorization server and that server only: never
//! the token a client of the gateway presented (the confused-deputy rule).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::config::UpstreamOAuth;
use crate::protocol::oauth::{form_encode as encode, read_json, split_origin};

/// The largest metadata or token answer read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// How long before its expiry a token is replaced.
const EARLY: Duration = Duration::from_secs(30);

/// A remote server's current token, and how to get the next.
pub(crate) struct TokenSource {
    settings: UpstreamOAuth,
    /// The server's URL (the `resource` the token is for).
    resource: String,
    current: Mutex<Option<(String, Option<Instant>)>>,
    /// Scopes a server asked for beyond the configured ones (step-up).
    more: Mutex<Vec<String>>,
}

impl TokenSource {
    pub(crate) fn new(settings: UpstreamOAuth, resource: &str) -> Self {
        TokenSource { settings, resource: resource.to_owned(), current: Mutex::default(), more: Mutex::default() }
    }

    /// Ask for `scope` (space-separated) too from now on; whether that is
    /// more than was asked for already.
    pub(crate) fn step_up(&self, scope: &str) -> bool {
        let configured = self.settings.scope.as_deref().unwrap_or_default();
        let mut more = self.more.lock().unwrap_or_else(PoisonError::into_inner);
        let mut added = false;
        for word in scope.split_whitespace() {
            if !configured.split_whitespace().any(|w| w == word) && !more.iter().any(|w| w == word) {
                more.push(word.to_owned());
                added = true;
            }
        }
        added
    }

    /// A token valid for a while yet: the kept one, or a new one.
    pub(crate) async fn token(&self, timeout: Duration) -> Result<String, String> {
        {
            let current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((token, expires)) = current.as_ref()
                && expires.is_none_or(|at| Instant::now() + EARLY < at)
            {
                return Ok(token.clone());
            }
        }
        let (token, lasts) = self.fetch(timeout).await?;
        let expires = lasts.map(|lasts| Instant::now() + lasts);
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = Some((token.clone(), expires));
        Ok(token)
    }

    /// Forget the kept token (the server refused it).
    pub(crate) fn forget(&self) {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    async fn fetch(&self, timeout: Duration) -> Result<(String, Option<Duration>), String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| e.to_string())?;
        let token_endpoint = match &self.settings.token_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => self.discover(&client).await?,
        };
        let secret = std::env::var(&self.settings.client_secret_env)
            .map_err(|_| format!("the client secret variable {} is not set", self.settings.client_secret_env))?;
        let scope = {
            let more = self.more.lock().unwrap_or_else(PoisonError::into_inner);
            let words: Vec<&str> = self
                .settings
                .scope
                .iter()
                .flat_map(|s| s.split_whitespace())
                .chain(more.iter().map(String::as_str))
                .collect();
            words.join(" ")
        };
        let mut form = vec![("grant_type", "client_credentials"), ("resource", self.resource.as_str())];
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let body: String =
            form.iter().map(|(key, value)| format!("{key}={}", encode(value))).collect::<Vec<_>>().join("&");
        let request = client
            .post(&token_endpoint)
            .basic_auth(encode(&self.settings.client_id), Some(encode(&secret)))
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(body);
        let answer: TokenAnswer = read_json(request, &token_endpoint, MAX_DOCUMENT_BYTES).await?;
        if !answer.token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!("{token_endpoint} gave a {} token, not a bearer token", answer.token_type));
        }
        Ok((answer.access_token, answer.expires_in.map(Duration::from_secs)))
    }

    /// The token endpoint: from the server's resource metadata, the
    /// authorization server it names, and that server's metadata.
    async fn discover(&self, client: &reqwest::Client) -> Result<String, String> {
        let (origin, path) = split_origin(&self.resource);
        let issuer = match &self.settings.authorization_server {
            Some(issuer) => issuer.clone(),
            None => {
                let mut found = None;
                let mut failures = Vec::new();
                for url in [
                    format!("{origin}/.well-known/oauth-protected-resource{path}"),
                    format!("{origin}/.well-known/oauth-protected-resource"),
                ] {
                    match read_json::<ResourceMetadata>(client.get(&url), &url, MAX_DOCUMENT_BYTES).await {
                        // Metadata for another resource is not this server's (RFC 9728, section 3.3):
                        // its authorization server is not asked.
                        Ok(ResourceMetadata { resource: Some(resource), .. })
                            if resource.trim_end_matches('/') != self.resource.trim_end_matches('/') =>
                        {
                            return Err(format!("{url} describes the resource {resource}, not {}", self.resource));
                        }
                        Ok(metadata) => {
                            found = metadata.authorization_servers.into_iter().next();
                            break;
                        }
                        Err(error) => failures.push(error),
                    }
                }
                found.ok_or_else(|| {
                    format!("no authorization server found for {}: {}", self.resource, failures.join("; "))
                })?
            }
        };
        let (as_origin, as_path) = split_origin(&issuer);
        let mut failures = Vec::new();
        for url in [
            format!("{as_origin}/.well-known/oauth-authorization-server{as_path}"),
            format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/')),
        ] {
            match read_json::<ServerMetadata>(client.get(&url), &url, MAX_DOCUMENT_BYTES).await {
                Ok(metadata) if metadata.issuer.trim_end_matches('/') == issuer.trim_end_matches('/') => {
                    return Ok(metadata.token_endpoint);
                }
                Ok(metadata) => failures.push(format!("{url} names the issuer {}", metadata.issuer)),
                Err(error) => failures.push(error),
            }
        }
        Err(failures.join("; "))
    }
}

#[derive(Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
}

#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    token_endpoint: String,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
}
