//! OAuth for HTTP MCP servers, as Pi 1.6.0 does it (`pi-mcp/oauth` and pi's `mcp/oauth.ts`).
//!
//! Connections never start a browser flow on their own: they send the stored access token,
//! refresh it when it is about to expire or after a 401 ([`auth::OAuthAuth`]), and otherwise
//! fail with "authorization requires user interaction", which marks the server as needing a
//! sign-in. The user signs in with `/mcp login` or `pi mcp login` ([`signin::sign_in`]): PKCE,
//! pi's Client ID Metadata Document or dynamic client registration, a loopback callback (or a
//! pasted redirect URL). Everything is kept in `<agent-dir>/mcp-auth.json` ([`store`]).

pub mod auth;
pub mod discovery;
pub mod flow;
pub mod http;
pub mod signin;
pub mod store;

use serde_json::Value;

/// Why a sign-in or refresh failed; `Display` is Pi's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// An OAuth error answer (`error`, and `error_description` or the code as the message).
    #[error("{message}")]
    OAuth { code: String, message: String },
    #[error("Refusing to send OAuth credentials to non-HTTPS endpoint {0}")]
    InsecureEndpoint(String),
    #[error(
        "OAuth issuer mismatch: expected {}, received {}",
        quoted(expected),
        quoted(received)
    )]
    IssuerMismatch {
        expected: Option<String>,
        received: Option<String>,
    },
    #[error("OAuth dynamic client registration failed with status {status}: {body}")]
    Registration { status: u16, body: String },
    /// The request did not get an answer (Node's `fetch failed`).
    #[error("{0}")]
    Network(String),
    #[error("MCP OAuth authorization requires user interaction")]
    AuthorizationRequired,
    #[error("Another process is refreshing the MCP server's tokens")]
    LockBusy,
    #[error("Sign-in cancelled")]
    Cancelled,
    #[error("{0}")]
    Other(String),
}

fn quoted(v: &Option<String>) -> String {
    match v {
        None => "none".into(),
        Some(s) => Value::String(s.clone()).to_string(),
    }
}

/// A server's `oauth` settings (`mcp.json`), the client secret resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub callback_port: Option<u16>,
    pub callback_url: Option<String>,
    pub scope: Option<String>,
    pub client_name: Option<String>,
    /// `auto` (default), `dcr` or `cimd`.
    pub client_registration: Option<String>,
    pub auth_server_metadata_url: Option<String>,
}

impl Settings {
    /// The settings of a server's `oauth` object; `clientSecret` may be `${VAR}` or `!command`.
    pub fn from_config(name: &str, oauth: Option<&Value>) -> Result<Settings, String> {
        let Some(o) = oauth else {
            return Ok(Settings::default());
        };
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let client_secret = match text("clientSecret") {
            Some(raw) => Some(pi_registry::resolve_config_value(
                &raw,
                &format!("MCP server \"{name}\" oauth.clientSecret"),
            )?),
            None => None,
        };
        Ok(Settings {
            client_id: text("clientId"),
            client_secret,
            callback_port: o
                .get("callbackPort")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok()),
            callback_url: text("callbackUrl"),
            scope: text("scope"),
            client_name: text("clientName"),
            client_registration: text("clientRegistration"),
            auth_server_metadata_url: text("authServerMetadataUrl"),
        })
    }

    pub fn registration(&self) -> &str {
        self.client_registration.as_deref().unwrap_or("auto")
    }
}

/// pi's name as an OAuth client.
pub const CLIENT_NAME: &str = "pi";

/// pi's Client ID Metadata Documents: `client.json` and `<callback id>/client.json` under this.
pub const CLIENT_METADATA_BASE_URL: &str = "https://pi.dev/oauth";

/// Whether pi's Client ID Metadata Documents list a redirect URI for the loopback
/// `callbackUrl`: they list `/callback` on localhost and 127.0.0.1, on any port.
pub fn documents_list_redirect(callback_url: Option<&str>) -> bool {
    let Some(url) = callback_url else {
        return true;
    };
    reqwest::Url::parse(url).is_ok_and(|u| u.host_str() != Some("[::1]") && u.path() == "/callback")
}

/// 32 random bytes.
pub(crate) fn random_bytes() -> Result<[u8; 32], FlowError> {
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| FlowError::Other("no random numbers available".into()))?;
    Ok(bytes)
}

pub(crate) fn now_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}
