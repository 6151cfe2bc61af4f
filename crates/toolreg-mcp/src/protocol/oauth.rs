//! The OAuth plumbing of MCP authorization both sides use: where a URL's
//! well-known documents are, form encoding, and reading a bounded JSON
//! answer from an authorization server or a resource.

use futures_util::StreamExt;

/// `https://host:port` and the path after it, without a trailing slash:
/// the halves a well-known path goes between (RFC 8414, RFC 9728).
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let url = url.trim_end_matches('/');
    match url.find("://").and_then(|at| url[at + 3..].find('/').map(|p| at + 3 + p)) {
        Some(at) => url.split_at(at),
        None => (url, ""),
    }
}

/// `application/x-www-form-urlencoded` (RFC 6749 asks for it in Basic
/// credentials too).
pub(crate) fn form_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The JSON answer to `request` (to `url`), of at most `limit` bytes, or
/// why not in one line naming the URL.
pub(crate) async fn read_json<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
    limit: usize,
) -> Result<T, String> {
    let response = request.send().await.map_err(|e| format!("{url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}: {}", response.status()));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("{url}: {e}"))?;
        if body.len() + chunk.len() > limit {
            return Err(format!("{url}: larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_halves_and_form_encoding() {
        assert_eq!(split_origin("https://as.example/tenant/"), ("https://as.example", "/tenant"));
        assert_eq!(split_origin("http://127.0.0.1:8080"), ("http://127.0.0.1:8080", ""));
        assert_eq!(form_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
