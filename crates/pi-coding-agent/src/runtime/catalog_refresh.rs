//! RPC mode's background catalog refresh at startup (Pi runs it unless offline, for at most
//! 15 s, and ignores its errors): the catalogs of configured built-in providers from Pi's
//! catalog service when the stored ones are older than four hours, the llama.cpp extension's
//! server listing, and the `refreshModels` hooks of extension providers with network. What it
//! stores in `models-store.json` is applied to the registry when it ends.

use super::{Runtime, lock};
use std::time::Duration;

/// Pi aborts the startup refresh after this long.
const STARTUP_REFRESH_LIMIT: Duration = Duration::from_secs(15);

impl Runtime {
    /// Runs the refresh (bounded by Pi's 15 s) and applies what it stored.
    pub async fn refresh_catalogs_online(&self) {
        let core = self.core.clone();
        let work = async move {
            let (store, remote, llama) = {
                let r = lock(&core.registry);
                (
                    r.models_store_path(),
                    r.remote_catalog_providers(),
                    r.llama_refresh_target(),
                )
            };
            let remote = async {
                let mut tasks = tokio::task::JoinSet::new();
                for id in remote {
                    let store = store.clone();
                    tasks.spawn(async move {
                        pi_registry::catalog_refresh::refresh_provider_when_due(&store, &id).await
                    });
                }
                while tasks.join_next().await.is_some() {}
            };
            let llama = async {
                if let Some((server, key)) = &llama {
                    // A failed listing leaves the stored catalog as it was, as in Pi.
                    let _ = pi_registry::llama::refresh(&store, server, Some(key)).await;
                }
            };
            let extensions = async {
                if let Some(host) = core.ext.host().cloned() {
                    let options = crate::extensions::model_refresh::RefreshOptions {
                        allow_network: true,
                        ..Default::default()
                    };
                    crate::extensions::model_refresh::refresh(&host, &core.registry, options).await;
                }
            };
            tokio::join!(remote, llama, extensions);
        };
        let _ = tokio::time::timeout(STARTUP_REFRESH_LIMIT, work).await;
        lock(&self.core.registry).reload_store();
    }
}
