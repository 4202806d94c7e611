//! `refreshModels` of providers extensions registered (`registerProvider(id, { refreshModels })`),
//! as Pi's model refresh runs it: once at startup without network (the provider may restore a
//! catalog it stored), and on `ctx.modelRegistry.refresh()` with network when asked. Each
//! provider's hook runs first with the stored credential and `allowNetwork: false`, then, when
//! the network is allowed and the provider has a credential, with that credential (an OAuth
//! login refreshed first). The list a hook returns replaces the registration's models; what it
//! publishes with `persist` is written to `models-store.json` (`null` removes the entry).

use crate::runtime::lock;
use pi_ext_host::Host;
use pi_registry::ModelRegistry;
use pi_registry::oauth::store;
use serde_json::{Map, Value, json};
use std::sync::Mutex;

/// Which providers to refresh and how.
#[derive(Default)]
pub(crate) struct RefreshOptions {
    /// `None`: every provider with a hook.
    pub providers: Option<Vec<String>>,
    pub allow_network: bool,
    pub force: Option<bool>,
}

/// Providers whose registration has a `refreshModels` hook, in registration order.
fn refreshable(registry: &ModelRegistry, selected: Option<&[String]>) -> Vec<String> {
    registry
        .extension_provider_ids()
        .into_iter()
        .filter(|id| {
            registry
                .extension_provider_config(id)
                .and_then(|c| c.get("refreshModels"))
                .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
        })
        .filter(|id| selected.is_none_or(|s| s.iter().any(|p| p == id)))
        .map(str::to_string)
        .collect()
}

/// The credential of the network phase (`resolveRefreshCredential`): a stored OAuth login,
/// refreshed when expired; else the key the provider resolves to; `None` skips the phase.
async fn network_credential(
    registry: &Mutex<ModelRegistry>,
    id: &str,
    stored: Option<&Value>,
) -> Result<Option<Value>, String> {
    let is_oauth = stored.and_then(|c| c.get("type")).and_then(Value::as_str) == Some("oauth");
    if is_oauth {
        let Some((flow, path)) = lock(registry).oauth_login(id) else {
            return Ok(None);
        };
        pi_registry::oauth::resolve(&path, id, &flow, None).await?;
        return Ok(store::read(&path)?.get(id).cloned());
    }
    Ok(lock(registry)
        .api_key_for(id)
        .map(|key| json!({"type": "api_key", "key": key})))
}

/// Runs the hooks and applies what they returned; the error text of each provider that failed.
pub(crate) async fn refresh(
    host: &Host,
    registry: &Mutex<ModelRegistry>,
    options: RefreshOptions,
) -> Map<String, Value> {
    let mut errors = Map::new();
    let (ids, auth_path, store_path) = {
        let r = lock(registry);
        (
            refreshable(&r, options.providers.as_deref()),
            r.auth_path().to_path_buf(),
            r.models_store_path(),
        )
    };
    if ids.is_empty() {
        return errors;
    }
    let credentials = store::read(&auth_path);
    let catalogs = store::read(&store_path).unwrap_or_default();
    let mut providers = Map::new();
    for id in &ids {
        let stored_credential = match &credentials {
            Ok(c) => c.get(id).cloned(),
            Err(e) => {
                errors.insert(
                    id.clone(),
                    json!(format!("Credential store read failed for {id}: {e}")),
                );
                continue;
            }
        };
        let mut phases = vec![json!({"allowNetwork": false, "credential": stored_credential})];
        if options.allow_network {
            match network_credential(registry, id, stored_credential.as_ref()).await {
                Ok(Some(credential)) => {
                    phases.push(json!({"allowNetwork": true, "credential": credential}));
                }
                Ok(None) => {}
                Err(e) => {
                    errors.insert(id.clone(), json!(e));
                    continue;
                }
            }
        }
        let base_url = lock(registry)
            .extension_provider_config(id)
            .and_then(|c| c.get("baseUrl").cloned());
        let mut p = Map::new();
        p.insert(
            "stored".into(),
            catalogs.get(id).cloned().unwrap_or(Value::Null),
        );
        p.insert("baseUrl".into(), base_url.unwrap_or(Value::Null));
        p.insert("phases".into(), Value::Array(phases));
        providers.insert(id.clone(), Value::Object(p));
    }
    let mut params = Map::new();
    params.insert("providers".into(), Value::Object(providers));
    if let Some(force) = options.force {
        params.insert("force".into(), json!(force));
    }
    let results = match host.request("refresh_models", params).await {
        Ok(Value::Object(r)) => r,
        Ok(_) => Map::new(),
        Err(e) => {
            for id in &ids {
                errors.insert(id.clone(), json!(e.to_string()));
            }
            return errors;
        }
    };
    for (id, result) in results {
        if let Some(persist) = result.get("persist") {
            let written = if persist.is_null() {
                store::remove(&store_path, &id).await
            } else {
                let next = persist.clone();
                store::modify(&store_path, &id, |_| async move { Ok(Some(next)) })
                    .await
                    .map(|_| ())
            };
            if let Err(e) = written {
                errors.insert(id.clone(), json!(e));
                continue;
            }
        }
        if let Some(models) = result.get("models") {
            let mut update = Map::new();
            update.insert("models".into(), models.clone());
            if let Err(e) = lock(registry).register_extension_provider(&id, &update) {
                errors.insert(id.clone(), json!(e));
                continue;
            }
        }
        if let Some(error) = result.get("error") {
            errors.insert(id.clone(), error.clone());
        }
    }
    errors
}
