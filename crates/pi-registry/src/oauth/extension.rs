//! OAuth logins an extension registered with its provider (`registerProvider(id, { oauth })`):
//! the stored credential is refreshed by the extension's `refreshToken` and turned into a key by
//! its `getApiKey`. Both run in the extension host, which pi installs here when it starts one;
//! without a host (the extension gone) the login yields nothing, as an unknown provider would.

use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

pub type HookFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

/// The extension side of a registered OAuth login.
pub trait ExtensionOAuth: Send + Sync {
    /// `oauth.refreshToken(credential)`: the refreshed credential (as the extension returned it).
    fn refresh(&self, provider: &str, credential: Value) -> HookFuture<Value>;
    /// `oauth.getApiKey(credential)`.
    fn api_key(&self, provider: &str, credential: Value) -> HookFuture<String>;
}

fn slot() -> &'static RwLock<Option<Arc<dyn ExtensionOAuth>>> {
    static HOOKS: RwLock<Option<Arc<dyn ExtensionOAuth>>> = RwLock::new(None);
    &HOOKS
}

/// Installs (or removes) the process's extension side; one extension host per process.
pub fn set_hooks(hooks: Option<Arc<dyn ExtensionOAuth>>) {
    *slot()
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = hooks;
}

fn hooks(provider: &str) -> Result<Arc<dyn ExtensionOAuth>, String> {
    slot()
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .ok_or_else(|| format!("No OAuth provider registered for {provider}"))
}

/// Pi stores `{ ...refreshed, type: "oauth" }`.
pub(crate) async fn refresh(provider: &str, cred: &Map<String, Value>) -> Result<Value, String> {
    let next = hooks(provider)?
        .refresh(provider, Value::Object(cred.clone()))
        .await?;
    let mut out = match next {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    out.insert("type".into(), Value::String("oauth".into()));
    Ok(Value::Object(out))
}

pub(crate) async fn api_key(provider: &str, cred: &Map<String, Value>) -> Result<String, String> {
    hooks(provider)?
        .api_key(provider, Value::Object(cred.clone()))
        .await
}
