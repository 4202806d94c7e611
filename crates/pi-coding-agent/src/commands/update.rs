//! `pi update --models`: refreshes the cached model catalogs of configured providers (the
//! arguments of `pi update` are read by the packages command, which hands this target here).

use pi_registry::{account_catalogs, catalog_refresh};

/// Refreshes every configured provider's remote catalog; the process exit code.
pub fn refresh_models() -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: {e}");
            return 1;
        }
    };
    let registry = crate::runtime::cli_registry();
    let store = registry.models_store_path();
    let providers = registry.remote_catalog_providers();
    let accounts = registry.account_catalog_targets();
    let failures: Vec<String> = runtime.block_on(async {
        let mut failures = Vec::new();
        for p in &providers {
            if let Err(e) = catalog_refresh::refresh_provider(&store, p).await {
                failures.push(format!("{p}: {e}"));
            }
        }
        for target in &accounts {
            let p = &target.provider;
            match account_catalogs::refresh(&store, target).await {
                Ok(()) => {}
                // A stale login only costs that provider's catalog, as in Pi.
                Err(account_catalogs::Failure::OAuth(e)) => eprintln!(
                    "Warning: skipped model catalog for {p}: {e}\nLog in again with `pi auth login {p}` to refresh it."
                ),
                Err(account_catalogs::Failure::Other(e)) => failures.push(format!("{p}: {e}")),
            }
        }
        failures
    });
    if failures.is_empty() {
        println!("Model catalogs refreshed");
        0
    } else {
        eprintln!(
            "Error: Could not refresh model catalogs: {}",
            failures.join("; ")
        );
        1
    }
}
