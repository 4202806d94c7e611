//! What an HTTP connection authenticates with: an OAuth server's stored access token, refreshed
//! when about to expire or after a 401 (never a browser flow), or a provider's credential
//! (`auth.provider`), read on every request so the provider's own refreshes apply.

use super::discovery::{Challenge, parse_www_authenticate};
use super::flow::Outcome;
use super::signin::{BoxFuture, refresh_stored_tokens};
use super::store::ServerStore;
use super::{FlowError, Settings, now_ms};
use crate::jsonrpc::McpError;
use serde_json::Value;
use std::sync::Arc;

/// Access tokens this close to expiry are refreshed before they are sent.
const REFRESH_SKEW_MS: f64 = 30_000.0;

/// The credentials of an HTTP transport.
pub trait HttpAuth: Send + Sync {
    /// The bearer token for the next request, if any.
    fn token(&self) -> BoxFuture<'_, Option<String>>;
    /// Whether a 401 (or a 403 asking for more scope) is worth [`HttpAuth::on_unauthorized`].
    fn recovers(&self) -> bool;
    /// After such an answer: `Ok` retries the request once with whatever credentials are left.
    fn on_unauthorized(
        &self,
        www_authenticate: Option<String>,
        token: Option<String>,
    ) -> BoxFuture<'_, Result<(), McpError>>;
    /// Waits for a refresh in progress (its rotated tokens must be saved before pi exits).
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// A provider's API key or OAuth access token, by provider name.
pub type ProviderToken = Arc<dyn Fn(String) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// `auth.provider`: the provider's credential as a bearer token.
pub struct ProviderAuth {
    pub provider: String,
    pub token: ProviderToken,
}

impl HttpAuth for ProviderAuth {
    fn token(&self) -> BoxFuture<'_, Option<String>> {
        (self.token)(self.provider.clone())
    }
    fn recovers(&self) -> bool {
        false
    }
    fn on_unauthorized(
        &self,
        _: Option<String>,
        _: Option<String>,
    ) -> BoxFuture<'_, Result<(), McpError>> {
        Box::pin(async { Ok(()) })
    }
}

/// An OAuth server's tokens from `mcp-auth.json`. Refreshes in this process run one at a
/// time, and other processes are kept out by the store's refresh lock, held from reading the
/// tokens to saving new ones: with rotating refresh tokens two refreshes would lose the grant.
/// Tokens that changed meanwhile (another process refreshed, the user signed in) are used as
/// they are.
pub struct OAuthAuth {
    pub store: ServerStore,
    pub server_url: String,
    /// Read only when a refresh is needed: a secret that fails to resolve fails the refresh,
    /// not the connection.
    pub settings: Arc<dyn Fn() -> Result<Settings, String> + Send + Sync>,
    /// Receives each challenge, so a sign-in can use its metadata URL and scope.
    pub on_challenge: Arc<dyn Fn(Challenge) + Send + Sync>,
    refreshing: tokio::sync::Mutex<()>,
}

fn to_mcp(e: FlowError) -> McpError {
    match e {
        FlowError::AuthorizationRequired => McpError::AuthorizationRequired,
        FlowError::Network(m) => McpError::Http {
            status: None,
            message: m,
        },
        other => McpError::Other(other.to_string()),
    }
}

fn access_token(state: Option<&serde_json::Map<String, Value>>) -> Option<String> {
    state?
        .get("tokens")?
        .get("access_token")?
        .as_str()
        .map(str::to_string)
}

impl OAuthAuth {
    pub fn new(
        store: ServerStore,
        server_url: &str,
        settings: Arc<dyn Fn() -> Result<Settings, String> + Send + Sync>,
        on_challenge: Arc<dyn Fn(Challenge) + Send + Sync>,
    ) -> OAuthAuth {
        OAuthAuth {
            store,
            server_url: server_url.to_string(),
            settings,
            on_challenge,
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// Replaces `stale`, the access token that expired or was rejected.
    async fn refresh(
        &self,
        stale: Option<&str>,
        challenge: Option<&Challenge>,
    ) -> Result<(), McpError> {
        let _one_at_a_time = self.refreshing.lock().await;
        let work = async {
            let state = self.store.load_raw().await.map_err(FlowError::Other)?;
            if access_token(state.as_ref()).as_deref() != stale {
                return Ok(());
            }
            let Some(state) = state.filter(|s| {
                s.get("tokens")
                    .and_then(|t| t.get("refresh_token"))
                    .is_some_and(Value::is_string)
            }) else {
                return Err(FlowError::AuthorizationRequired);
            };
            let settings = (self.settings)().map_err(FlowError::Other)?;
            match refresh_stored_tokens(
                &self.store,
                &self.server_url,
                &settings,
                &state,
                challenge,
                None,
            )
            .await?
            {
                Outcome::Authorized => Ok(()),
                Outcome::Redirect(_) => Err(FlowError::AuthorizationRequired),
            }
        };
        match self.store.with_refresh_lock(work).await {
            Ok(result) => result.map_err(to_mcp),
            Err(busy) => Err(McpError::Other(busy.to_string())),
        }
    }
}

impl HttpAuth for OAuthAuth {
    fn token(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            drop(self.refreshing.lock().await);
            let state = self.store.load_raw().await.ok().flatten();
            let token = access_token(state.as_ref());
            let state = state.unwrap_or_default();
            let expired = state
                .get("tokensExpireAt")
                .and_then(Value::as_f64)
                .is_some_and(|at| at - REFRESH_SKEW_MS <= now_ms());
            let refreshable = state
                .get("tokens")
                .and_then(|t| t.get("refresh_token"))
                .is_some_and(Value::is_string);
            if !expired || !refreshable {
                return token;
            }
            // A failure falls through: the request goes out with the old token and a 401
            // decides what happens.
            let _ = self.refresh(token.as_deref(), None).await;
            access_token(self.store.load_raw().await.ok().flatten().as_ref())
        })
    }

    fn recovers(&self) -> bool {
        true
    }

    fn on_unauthorized(
        &self,
        www_authenticate: Option<String>,
        token: Option<String>,
    ) -> BoxFuture<'_, Result<(), McpError>> {
        Box::pin(async move {
            let challenge = parse_www_authenticate(www_authenticate.as_deref());
            (self.on_challenge)(challenge.clone());
            // A refresh keeps the granted scope: more scope needs a new sign-in.
            if challenge.error.as_deref() == Some("insufficient_scope") {
                return Err(McpError::AuthorizationRequired);
            }
            self.refresh(token.as_deref(), Some(&challenge)).await
        })
    }

    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            drop(self.refreshing.lock().await);
        })
    }
}
