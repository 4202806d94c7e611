//! Requests to authorization servers: each bounded by 15 s (so an unresponsive server cannot
//! hold the refresh lock or a sign-in for long), failures worded as Node's `fetch` reports them.

use super::FlowError;
use serde_json::Value;
use std::time::Duration;

/// Per request, on top of the caller's own cancellation.
const OAUTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A finished response: status and body text.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub text: String,
}

impl Response {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn json(&self) -> Result<Value, FlowError> {
        serde_json::from_str(&self.text).map_err(|e| FlowError::Other(e.to_string()))
    }
}

/// The HTTP client of sign-ins and refreshes.
#[derive(Clone)]
pub struct OAuthHttp {
    client: reqwest::Client,
}

impl Default for OAuthHttp {
    fn default() -> Self {
        OAuthHttp::new()
    }
}

impl OAuthHttp {
    pub fn new() -> OAuthHttp {
        let client = reqwest::Client::builder()
            .timeout(OAUTH_REQUEST_TIMEOUT)
            .build()
            .unwrap_or_default();
        OAuthHttp { client }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Response, FlowError> {
        // Node's fetch says no more than this about a refused, dropped or timed-out request.
        let response = req
            .send()
            .await
            .map_err(|_| FlowError::Network("fetch failed".into()))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|_| FlowError::Network("fetch failed".into()))?;
        Ok(Response { status, text })
    }

    pub async fn get_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Response, FlowError> {
        let mut req = self.client.get(url).header("accept", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: String,
    ) -> Result<Response, FlowError> {
        let mut req = self.client.post(url).body(body);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        self.send(req).await
    }
}

/// `application/x-www-form-urlencoded`, as `URLSearchParams` writes it.
pub fn form(pairs: &[(String, String)]) -> String {
    let Ok(mut url) = reqwest::Url::parse("http://form.invalid/") else {
        return String::new();
    };
    url.query_pairs_mut()
        .extend_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    url.query().unwrap_or("").to_string()
}
