//! The extension host as the runner of OAuth logins extensions register with their providers
//! (`registerProvider(id, { oauth })`): pi-registry keeps the credential in `auth.json` and asks
//! here to refresh it (`oauth_refresh`) or to turn it into a key (`oauth_api_key`).

use pi_ext_host::Host;
use pi_registry::oauth::extension::{ExtensionOAuth, HookFuture};
use serde_json::{Map, Value, json};
use std::sync::Arc;

struct HostOAuth(Host);

fn params(provider: &str, credential: Value) -> Map<String, Value> {
    let mut p = Map::new();
    p.insert("provider".into(), json!(provider));
    p.insert("credential".into(), credential);
    p
}

impl ExtensionOAuth for HostOAuth {
    fn refresh(&self, provider: &str, credential: Value) -> HookFuture<Value> {
        let host = self.0.clone();
        let params = params(provider, credential);
        Box::pin(async move {
            host.request("oauth_refresh", params)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn api_key(&self, provider: &str, credential: Value) -> HookFuture<String> {
        let host = self.0.clone();
        let params = params(provider, credential);
        Box::pin(async move {
            let key = host
                .request("oauth_api_key", params)
                .await
                .map_err(|e| e.to_string())?;
            // `getApiKey` returns a string; anything else is used as JS would print it.
            Ok(match key {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            })
        })
    }
}

/// Makes `host` the runner of extension OAuth logins for this process.
pub(crate) fn install(host: &Host) {
    pi_registry::oauth::extension::set_hooks(Some(Arc::new(HostOAuth(host.clone()))));
}
