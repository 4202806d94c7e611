//! The in-process `local` provider (`pi-local`, feature `local-model`).

use pi_registry::LocalProvider;

/// Routes `llama-cpp` models to the local engine and returns the provider's registry entry;
/// `None` in a build without the feature (the registry then matches Pi's exactly).
pub fn install() -> Option<LocalProvider> {
    #[cfg(feature = "local-model")]
    {
        pi_ai::register_api(pi_local::API, pi_local::stream);
        Some(pi_local::registry_provider())
    }
    #[cfg(not(feature = "local-model"))]
    None
}
