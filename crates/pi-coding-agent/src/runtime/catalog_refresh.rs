//! Online catalog refreshes of built-in providers: RPC mode's background refresh at startup
//! (Pi runs it unless offline, for at most 15 s, and ignores its errors) and the network part
//! of an extension's `ctx.modelRegistry.refresh()`: the catalogs of configured built-in
//! providers from Pi's catalog service when the stored ones are older than four hours, the
//! llama.cpp extension's server listing, the account catalogs of OpenRouter and Radius
//! gateways (`pi_registry::account_catalogs`), and (at startup) the `refreshModels` hooks of
//! extension providers with network. What they store in `models-store.json` is applied to the
//! registry when they end.

use super::{Core, Runtime, lock};
use serde_json::{Map, Value};
use std::time::Duration;

/// Pi aborts the startup refresh after this long.
const STARTUP_REFRESH_LIMIT: Duration = Duration::from_secs(15);

impl Runtime {
    /// Runs the refresh (bounded by Pi's 15 s) and applies what it stored.
    pub async fn refresh_catalogs_online(&self) {
        let core = self.core.clone();
        let work = async move {
            let extensions = async {
                if let Some(host) = core.ext.host() {
                    let options = crate::extensions::model_refresh::RefreshOptions {
                        allow_network: true,
                        ..Default::default()
                    };
                    crate::extensions::model_refresh::refresh(&host, &core.registry, options).await;
                }
            };
            // Errors are not reported, as in Pi.
            tokio::join!(refresh_builtin(&core, None, false), extensions);
        };
        let _ = tokio::time::timeout(STARTUP_REFRESH_LIMIT, work).await;
        lock(&self.core.registry).reload_store();
    }
}

/// The online part of a refresh for built-in providers (`providers`: all when `None`): the
/// catalogs of configured ones from Pi's catalog service (when due, or always with `force`)
/// and the llama.cpp extension's server listing. Each failure's text by provider id. The
/// caller applies the store (`reload_store`).
pub(crate) async fn refresh_builtin(
    core: &Core,
    providers: Option<&[String]>,
    force: bool,
) -> Map<String, Value> {
    let selected = |id: &str| providers.is_none_or(|p| p.iter().any(|x| x == id));
    let (store, remote, llama, accounts) = {
        let r = lock(&core.registry);
        (
            r.models_store_path(),
            r.remote_catalog_providers(),
            r.llama_refresh_target(),
            r.account_catalog_targets(),
        )
    };
    let mut errors = Map::new();
    let mut tasks = tokio::task::JoinSet::new();
    for id in remote.into_iter().filter(|id| selected(id)) {
        let store = store.clone();
        tasks.spawn(async move {
            let result = if force {
                Some(pi_registry::catalog_refresh::refresh_provider(&store, &id).await)
            } else {
                pi_registry::catalog_refresh::refresh_provider_when_due(&store, &id).await
            };
            (id, result.and_then(Result::err))
        });
    }
    for target in accounts.into_iter().filter(|t| selected(&t.provider)) {
        let store = store.clone();
        tasks.spawn(async move {
            use pi_registry::account_catalogs::{Failure, refresh};
            let error = match refresh(&store, &target).await {
                Ok(()) => None,
                Err(Failure::OAuth(e) | Failure::Other(e)) => Some(e),
            };
            (target.provider, error)
        });
    }
    let llama_id = pi_registry::llama::LLAMA_PROVIDER_ID;
    let llama = async {
        match llama.filter(|_| selected(llama_id)) {
            Some((server, key)) => pi_registry::llama::refresh(&store, &server, Some(&key))
                .await
                .err(),
            None => None,
        }
    };
    let remote = async {
        let mut failed = Vec::new();
        while let Some(done) = tasks.join_next().await {
            if let Ok((id, Some(e))) = done {
                failed.push((id, e));
            }
        }
        failed
    };
    let (llama_error, remote_errors) = tokio::join!(llama, remote);
    for (id, e) in remote_errors {
        errors.insert(id, Value::String(e));
    }
    if let Some(e) = llama_error {
        errors.insert(llama_id.to_string(), Value::String(e));
    }
    errors
}
