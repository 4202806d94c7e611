//! The model registry: Pi 1.6.0's built-in catalog, `models.json`, `auth.json` and environment
//! credentials, merged and resolved the way Pi's `ModelRuntime` does it, plus model selection
//! (`--model`, `--models`, settings defaults), thinking levels, cost and `--list-models`.
//!
//! ```no_run
//! use pi_registry::{Env, LoadOptions, ModelRegistry};
//! let (registry, problems) = ModelRegistry::load(LoadOptions {
//!     agent_dir: "/home/me/.pi/agent".into(),
//!     env: Env::from_process(),
//!     docs_dir: Some("/opt/pi/docs".into()),
//!     local: None,
//!     llama: false,
//! });
//! for m in registry.available_models() {
//!     println!("{}/{}", m.provider, m.id);
//! }
//! ```
//!
//! Stored OAuth logins are resolved and refreshed by [`oauth`] (see [`request_auth_shared`]);
//! `pi auth login`'s account flows are in [`oauth::login`].
//!
//! `pi update --models` and RPC's startup refresh update cached catalogs ([`catalog_refresh`]);
//! the built-in llama.cpp extension's provider lists a llama.cpp router ([`llama`]).
//!
//! Not implemented: virtual models, and extension providers' OAuth logins and model refresh.

pub mod account_catalogs;
mod auth;
mod auth_json;
mod builtin_auth;
mod catalog;
pub mod catalog_refresh;
mod compose;
mod config_value;
mod cost;
mod env;
mod extension_config;
mod extension_provider;
mod gateway;
mod glob;
mod headers;
mod jsonc;
mod list;
pub mod llama;
mod llama_url;
mod local;
mod local_provider;
mod messages;
mod model_registry;
mod models_json;
pub mod oauth;
mod reference;
mod request_auth;
mod schema;
mod scope;
mod selection;
mod store;
mod thinking;
mod typed_models;
mod virtual_api;
mod virtual_models;

pub use auth_json::ensure_agent_files;
pub use config_value::resolve_config_value;

pub use cost::calculate_cost;
pub use env::Env;
pub use headers::HeaderList;
pub use list::ListModelsOutput;
pub use local_provider::LocalProvider;
pub use messages::{
    login_help, model_not_found, no_api_key_found, no_model_selected, no_models_available,
    oauth_failed,
};
pub use model_registry::{LoadError, LoadOptions, ModelRegistry};
pub use request_auth::{AuthError, RequestAuth, request_auth_shared};
pub use scope::{CliModel, Diagnostic, DiagnosticKind, ScopedModel, resolve_scope};
pub use selection::{
    DEFAULT_THINKING_LEVEL, ModelSettings, SessionModelState, StartupRequest, StartupSelection,
    thinking_for_model_switch,
};
pub use thinking::{
    clamp_thinking, clamp_thinking_str, next_thinking_level, supported_thinking_levels,
};
pub use typed_models::MODEL_TYPES;
pub use virtual_api::{VIRTUAL_MODEL_API, is_virtual};
