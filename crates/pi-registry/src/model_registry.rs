//! [`ModelRegistry`]: every known model, which providers are usable, and the credentials for a
//! request (Pi's `ModelRuntime` without network refresh, OAuth flows or extensions).

use super::auth::{Credential, ProviderAuth};
use super::auth_json::{AuthFile, StoredCredential};
use super::builtin_auth::{self, BuiltinAuth, KeyCredential};
use super::catalog::catalog;
use super::compose::{compose_models, to_model};
use super::config_value::{self, CommandCache};
use super::env::Env;
use super::extension_config::effective_config;
use super::gateway::{normalize_gateway, radius_gateway};
use super::local_provider::LocalProvider;
use super::models_json::{JsObject, ModelsConfig, ProviderConfig};
use super::reference::Candidate;
use super::store::{ModelsStore, StoreKind};
use pi_protocol::Model;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Inputs of [`ModelRegistry::load`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `~/.pi/agent` or `PI_CODING_AGENT_DIR`: holds `models.json`, `auth.json`, `models-store.json`.
    pub agent_dir: PathBuf,
    /// The environment credentials and `$VAR` values are read from.
    pub env: Env,
    /// The directory of Pi's docs, named in login help (`<docs>/providers.md`, `<docs>/models.md`);
    /// `None` where there are none (the help then names what this program has).
    pub docs_dir: Option<PathBuf>,
    /// The in-process provider, when this build has one (`pi-local`).
    pub local: Option<LocalProvider>,
    /// Pi's built-in llama.cpp extension is loaded: its `llama.cpp` provider exists.
    pub llama: bool,
}

/// A problem found while loading, in Pi's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// `models.json` could not be read, parsed or validated and was ignored.
    ModelsJson(String),
    /// One provider entry of `models.json` was inconsistent; that provider keeps only its
    /// built-in models (or is dropped if it has none).
    Provider { provider: String, message: String },
    /// `auth.json` could not be read: no provider is available.
    Availability(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::ModelsJson(m) => f.write_str(m),
            LoadError::Provider { provider, message } => {
                write!(f, "Provider \"{provider}\": {message}")
            }
            LoadError::Availability(m) => write!(f, "Availability refresh: {m}"),
        }
    }
}

#[derive(Debug, Clone)]
enum Models {
    /// Untouched built-in models (shared, parsed on first use).
    Catalog(usize),
    Built(Arc<[Arc<Model>]>),
}

#[derive(Debug, Clone)]
pub(crate) struct ProviderEntry {
    pub id: String,
    pub name: String,
    pub builtin: Option<BuiltinAuth>,
    /// The `models.json` entry, kept only when it composed without error.
    pub config: Option<ProviderConfig>,
    models: Models,
    /// Only virtual models: configured without credentials.
    pub virtual_only: bool,
}

impl ProviderEntry {
    /// The provider with `virtual_models` of its own listed after its physical ones; a
    /// physical chat model with a virtual one's id is hidden.
    fn with_virtual(&mut self, virtual_models: &[Arc<Model>]) {
        let ids: Vec<&str> = virtual_models.iter().map(|m| m.id.as_str()).collect();
        let mut models: Vec<Arc<Model>> = self
            .models()
            .iter()
            .filter(|m| !super::virtual_api::is_virtual(m) && !ids.contains(&m.id.as_str()))
            .cloned()
            .collect();
        models.extend(virtual_models.iter().cloned());
        self.models = Models::Built(models.into());
    }

    /// Whether the provider has a model (every built-in provider has).
    fn has_models(&self) -> bool {
        match &self.models {
            Models::Catalog(_) => true,
            Models::Built(m) => !m.is_empty(),
        }
    }

    pub(crate) fn models(&self) -> Arc<[Arc<Model>]> {
        match &self.models {
            Models::Catalog(i) => catalog().models(*i),
            Models::Built(m) => m.clone(),
        }
    }

    pub(crate) fn auth(&self) -> ProviderAuth<'_> {
        ProviderAuth {
            id: &self.id,
            builtin: self.builtin,
            config: self.config.as_ref(),
        }
    }
}

/// The models Pi knows, and which of them are usable.
#[derive(Debug)]
pub struct ModelRegistry {
    pub(crate) env: Env,
    pub(crate) docs_dir: Option<PathBuf>,
    pub(crate) config: ModelsConfig,
    auth_file: AuthFile,
    runtime_keys: Vec<(String, String)>,
    pub(crate) providers: Vec<ProviderEntry>,
    errors: Vec<LoadError>,
    commands: CommandCache,
    /// Providers whose auth check passed, in provider order.
    configured: Vec<String>,
    available: Vec<Arc<Model>>,
    pub(crate) local: Option<LocalProvider>,
    /// `models-store.json`, kept to rebuild the providers when an extension registers one.
    pub(crate) store: ModelsStore,
    /// Extension registrations (merged per provider), in registration order.
    pub(crate) extensions: Vec<(String, JsObject)>,
    /// Virtual models extensions registered, in registration order.
    pub(crate) virtual_models: Vec<Arc<Model>>,
    /// `<agent-dir>/auth.json`, where OAuth refreshes are written back.
    pub(crate) auth_path: PathBuf,
    /// The built-in llama.cpp extension's provider is registered.
    pub(crate) llama: bool,
}

impl ModelRegistry {
    /// Reads `models.json`, `auth.json` and `models-store.json` from `options.agent_dir` (none is
    /// created; see [`super::ensure_agent_files`]). Never fails: problems are returned as
    /// [`LoadError`]s and the affected part is ignored, as in Pi.
    pub fn load(options: LoadOptions) -> (ModelRegistry, Vec<LoadError>) {
        let dir = &options.agent_dir;
        let config = ModelsConfig::load(&dir.join("models.json"));
        let auth_file = AuthFile::load(&dir.join("auth.json"));
        let mut registry = ModelRegistry {
            env: options.env,
            docs_dir: options.docs_dir,
            config,
            auth_file,
            runtime_keys: Vec::new(),
            providers: Vec::new(),
            errors: Vec::new(),
            commands: CommandCache::default(),
            configured: Vec::new(),
            available: Vec::new(),
            local: options.local,
            store: ModelsStore::load(&dir.join("models-store.json")),
            extensions: Vec::new(),
            virtual_models: Vec::new(),
            auth_path: dir.join("auth.json"),
            llama: options.llama,
        };
        if let Some(e) = &registry.config.error {
            registry.errors.push(LoadError::ModelsJson(e.clone()));
        }
        registry.build_providers();
        registry.refresh_availability();
        let errors = registry.errors.clone();
        (registry, errors)
    }

    /// Reads the environment again (an extension changed `process.env`): credentials from
    /// environment variables, and with them availability, follow it.
    pub fn reload_env(&mut self) {
        self.env = Env::from_process();
        self.refresh_availability();
    }

    /// Reads `models-store.json` again (an online refresh wrote it) and recomposes the
    /// providers with the catalogs it holds.
    pub fn reload_store(&mut self) {
        self.store = ModelsStore::load(&self.models_store_path());
        self.rebuild();
    }

    /// The providers composed anew (after an extension registration changed), and availability.
    pub(crate) fn rebuild(&mut self) {
        self.providers.clear();
        self.errors
            .retain(|e| !matches!(e, LoadError::Provider { .. }));
        self.build_providers();
        self.refresh_availability();
    }

    /// Built-in providers in pi-ai's order (then `oauth: "radius"` entries), then `models.json`
    /// providers in file order, then extension registrations, then the in-process provider.
    fn build_providers(&mut self) {
        let store = std::mem::take(&mut self.store);
        self.build_providers_from(&store);
        self.store = store;
        self.attach_virtual_models();
    }

    fn build_providers_from(&mut self, store: &ModelsStore) {
        let cat = catalog();
        let bundled_at = cat.generated_at_ms();
        let mut ids: Vec<String> = cat.providers().iter().map(|p| p.id.to_owned()).collect();
        let radius_ids: Vec<String> = self
            .config
            .providers
            .iter()
            .filter(|(_, c)| c.oauth.as_deref() == Some("radius") && c.base_url.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        let extension_ids: Vec<String> = self.extensions.iter().map(|(id, _)| id.clone()).collect();
        // Pi's order: built-ins (Radius gateways among them), native extension providers (the
        // llama.cpp extension's), `models.json` providers, extension registrations.
        let llama = self
            .llama
            .then(|| crate::llama::LLAMA_PROVIDER_ID.to_string());
        for id in radius_ids
            .iter()
            .chain(llama.iter())
            .chain(self.config.providers.iter().map(|(id, _)| id))
            .chain(extension_ids.iter())
        {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        for id in ids {
            if self.is_local_provider(&id) {
                continue;
            }
            let config = self.config.provider(&id).cloned();
            let radius = radius_ids.contains(&id);
            let builtin_index = cat.index_of(&id).filter(|_| !radius);
            let (name, builtin, base) = if radius {
                let cfg = config.clone().unwrap_or_default();
                let gateway = radius_gateway(cfg.base_url.as_deref().unwrap_or_default());
                let baseline = (gateway == normalize_gateway("https://radius.pi.dev"))
                    .then(|| cat.index_of("radius"))
                    .flatten();
                let name = cfg.name.clone().unwrap_or_else(|| id.clone());
                let id_for_models = id.clone();
                let base = move || {
                    baseline
                        .map(|i| cat.model_objects(i))
                        .unwrap_or_default()
                        .into_iter()
                        .map(|mut m| {
                            m.insert("provider".into(), Value::String(id_for_models.clone()));
                            m
                        })
                        .collect::<Vec<JsObject>>()
                };
                let stored = store
                    .apply(&id, StoreKind::Replace, bundled_at, &base)
                    .or_else(|| self.legacy_radius_models(&id));
                (
                    name,
                    Some(builtin_auth::RADIUS_AUTH),
                    Some((None, stored.unwrap_or_else(base))),
                )
            } else if let Some(i) = builtin_index {
                let meta = &cat.providers()[i];
                let kind = ModelsStore::kind_of(&id);
                let mut stored = store.apply(&id, kind, bundled_at, || cat.model_objects(i));
                if stored.is_none() && id == "radius" {
                    stored = self.legacy_radius_models(&id);
                }
                let base = match stored {
                    Some(objects) => Some((None, objects)),
                    None => Some((Some(i), Vec::new())),
                };
                (meta.name.to_owned(), builtin_auth::builtin_auth(&id), base)
            } else if llama.as_deref() == Some(id.as_str()) {
                let models = crate::llama::stored_chat_models(store.entry(&id));
                (
                    id.clone(),
                    Some(builtin_auth::LLAMA_AUTH),
                    Some((None, models)),
                )
            } else {
                (id.clone(), None, None)
            };
            let extension = self.extension(&id).cloned();
            self.push_provider(id, name, builtin, base, config, extension.as_ref());
        }
        self.push_local_provider();
    }

    /// A Radius login's legacy gateway catalog, when it holds one.
    fn legacy_radius_models(&self, id: &str) -> Option<Vec<JsObject>> {
        let Ok(Credential::OAuth(login)) = self.credential(id) else {
            return None;
        };
        let models = crate::gateway::legacy_gateway_models(id, &login);
        (!models.is_empty()).then_some(models)
    }

    /// The in-process provider: its built-in models under its `models.json` entry, whose models
    /// default to its `api`.
    fn push_local_provider(&mut self) {
        let Some(local) = self.local.clone() else {
            return;
        };
        let mut config = self.config.provider(&local.id).cloned();
        if let Some(c) = &mut config {
            c.api.get_or_insert_with(|| local.api.clone());
        }
        let objects = local
            .models
            .iter()
            .filter_map(|m| match serde_json::to_value(m) {
                Ok(Value::Object(o)) => Some(o),
                _ => None,
            })
            .collect();
        let extension = self.extension(&local.id).cloned();
        self.push_provider(
            local.id,
            local.name,
            None,
            Some((None, objects)),
            config,
            extension.as_ref(),
        );
    }

    /// Composes one provider. `base` is `(catalog index, objects)`: an index means the untouched
    /// catalog models, otherwise the objects are the base.
    fn push_provider(
        &mut self,
        id: String,
        name: String,
        builtin: Option<BuiltinAuth>,
        base: Option<(Option<usize>, Vec<JsObject>)>,
        config: Option<ProviderConfig>,
        extension: Option<&JsObject>,
    ) {
        let base_models = |objects: Vec<JsObject>| -> Models {
            Models::Built(
                objects
                    .into_iter()
                    .filter_map(|o| to_model(o).ok())
                    .map(Arc::new)
                    .collect(),
            )
        };
        let uncomposed = base.clone().map(|(index, objects)| match index {
            Some(i) => Models::Catalog(i),
            None => base_models(objects),
        });
        let models_json = config;
        let config = effective_config(models_json.clone(), extension);
        let Some(cfg) = config else {
            if let Some(models) = uncomposed {
                self.providers.push(ProviderEntry {
                    id,
                    name,
                    builtin,
                    config: None,
                    models,
                    virtual_only: false,
                });
            }
            return;
        };
        let base_objects = match &base {
            Some((Some(i), _)) => catalog().model_objects(*i),
            Some((None, objects)) => objects.clone(),
            None => Vec::new(),
        };
        match compose_models(&id, base_objects, models_json.as_ref(), extension) {
            Ok(objects) => {
                // Our `Model` keeps counts as integers; Pi would accept e.g. `contextWindow:
                // 1000.5`. Such a model is skipped and reported instead of failing the provider.
                let mut models = Vec::with_capacity(objects.len());
                // Image and classifier entries of a registration are listed by type
                // (`typed_models`), never as chat models.
                let chat = objects
                    .into_iter()
                    .filter(|o| o.get("type").and_then(Value::as_str).unwrap_or("chat") == "chat");
                for object in chat {
                    match to_model(object) {
                        Ok(m) => models.push(Arc::new(m)),
                        Err(message) => self.errors.push(LoadError::Provider {
                            provider: id.clone(),
                            message,
                        }),
                    }
                }
                let name = cfg.name.clone().unwrap_or(name);
                self.providers.push(ProviderEntry {
                    id,
                    name,
                    builtin,
                    config: Some(cfg),
                    models: Models::Built(models.into()),
                    virtual_only: false,
                });
            }
            Err(message) => {
                self.errors.push(LoadError::Provider {
                    provider: id.clone(),
                    message,
                });
                if let Some(models) = uncomposed {
                    self.providers.push(ProviderEntry {
                        id,
                        name,
                        builtin,
                        config: None,
                        models,
                        virtual_only: false,
                    });
                }
            }
        }
    }

    /// Lists the virtual models under their providers (a new provider for one that has none).
    fn attach_virtual_models(&mut self) {
        let vms = self.virtual_models.clone();
        let mut providers: Vec<String> = Vec::new();
        for m in &vms {
            if !providers.contains(&m.provider) {
                providers.push(m.provider.clone());
            }
        }
        for provider in providers {
            let own: Vec<Arc<Model>> = vms
                .iter()
                .filter(|m| m.provider == provider)
                .cloned()
                .collect();
            match self.providers.iter_mut().find(|p| p.id == provider) {
                Some(entry) => entry.with_virtual(&own),
                None => self.providers.push(ProviderEntry {
                    id: provider.clone(),
                    name: provider,
                    builtin: None,
                    config: None,
                    models: Models::Built(own.into()),
                    virtual_only: true,
                }),
            }
        }
    }

    /// The stored credential for `provider`: `--api-key` first, then auth.json (its key resolved
    /// once per registry).
    pub(crate) fn extension(&self, id: &str) -> Option<&JsObject> {
        self.extensions
            .iter()
            .find(|(p, _)| p == id)
            .map(|(_, c)| c)
    }

    pub(crate) fn credential(&self, provider: &str) -> Result<Credential, String> {
        if let Some((_, key)) = self
            .runtime_keys
            .iter()
            .find(|(p, k)| p == provider && !k.is_empty())
        {
            return Ok(Credential::ApiKey(KeyCredential {
                key: Some(key.clone()),
                env: None,
            }));
        }
        Ok(match self.auth_file.get(provider)? {
            None => Credential::None,
            Some(StoredCredential::ApiKey { key, env }) => {
                let resolved = key.as_deref().and_then(|raw| {
                    config_value::resolve_cached(raw, env.as_ref(), &self.env, &self.commands)
                });
                Credential::ApiKey(KeyCredential {
                    key: resolved,
                    env: env.clone(),
                })
            }
            Some(StoredCredential::OAuth { fields }) => Credential::OAuth(fields.clone()),
            Some(StoredCredential::Other { .. }) => Credential::Other,
        })
    }

    fn refresh_availability(&mut self) {
        self.errors
            .retain(|e| !matches!(e, LoadError::Availability(_)));
        let mut configured = Vec::new();
        let mut available = Vec::new();
        for entry in &self.providers {
            // A provider of only virtual models needs no credentials.
            if entry.virtual_only {
                configured.push(entry.id.clone());
                available.extend(entry.models().iter().cloned());
                continue;
            }
            // No credentials: a local model is usable when its weights are on disk.
            if let Some(local) = self.local.as_ref().filter(|l| l.id == entry.id) {
                let runnable: Vec<Arc<Model>> = entry
                    .models()
                    .iter()
                    .filter(|m| (local.runnable)(m))
                    .cloned()
                    .collect();
                if !runnable.is_empty() {
                    configured.push(entry.id.clone());
                    available.extend(runnable);
                }
                continue;
            }
            let credential = match self.credential(&entry.id) {
                Ok(c) => c,
                Err(message) => {
                    self.errors.push(LoadError::Availability(message));
                    self.configured.clear();
                    self.available.clear();
                    return;
                }
            };
            if !entry.auth().check(&credential, &self.env) {
                continue;
            }
            configured.push(entry.id.clone());
            let models = entry.models();
            available.extend(filter_for_credential(&entry.id, &credential, &models));
        }
        self.configured = configured;
        self.available = available;
    }

    /// `--api-key`: a key for `provider` that is used instead of any stored one for this
    /// process; availability is recomputed.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.runtime_keys.retain(|(p, _)| p != provider);
        self.runtime_keys
            .push((provider.to_string(), key.to_string()));
        self.refresh_availability();
    }

    /// Every chat model, usable or not, in Pi's order.
    pub fn all_models(&self) -> Vec<Arc<Model>> {
        self.providers
            .iter()
            .flat_map(|p| p.models().iter().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// The models of providers with usable credentials (`get_available_models`).
    pub fn available_models(&self) -> &[Arc<Model>] {
        &self.available
    }

    /// A model by provider and id, usable or not.
    pub fn find(&self, provider: &str, id: &str) -> Option<Arc<Model>> {
        let entry = self.providers.iter().find(|p| p.id == provider)?;
        entry.models().iter().find(|m| m.id == id).cloned()
    }

    /// A usable model by provider and id (what `set_model` accepts).
    pub fn find_available(&self, provider: &str, id: &str) -> Option<Arc<Model>> {
        self.available
            .iter()
            .find(|m| m.provider == provider && m.id == id)
            .cloned()
    }

    /// Whether `provider`'s auth check passed (`hasConfiguredAuth`).
    pub fn has_configured_auth(&self, provider: &str) -> bool {
        self.configured.iter().any(|p| p == provider)
    }

    /// Whether the provider's credential is a stored OAuth login.
    pub fn is_using_oauth(&self, provider: &str) -> bool {
        self.has_configured_auth(provider)
            && matches!(self.credential(provider), Ok(Credential::OAuth(_)))
    }

    /// Provider ids in Pi's order.
    pub fn provider_ids(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.id.as_str()).collect()
    }

    /// The stored credentials of `auth.json`: provider id and `type`, in file order (an
    /// unreadable file is its error text).
    pub fn stored_credentials(&self) -> Result<Vec<(String, String)>, String> {
        match &self.auth_file {
            AuthFile::Entries(e) => Ok(e
                .iter()
                .map(|(id, c)| {
                    let kind = match c {
                        crate::auth_json::StoredCredential::ApiKey { .. } => "api_key".to_string(),
                        crate::auth_json::StoredCredential::OAuth { .. } => "oauth".to_string(),
                        crate::auth_json::StoredCredential::Other { kind } => kind.clone(),
                    };
                    (id.clone(), kind)
                })
                .collect()),
            AuthFile::Invalid(msg) => Err(msg.clone()),
        }
    }

    /// `<agent-dir>/auth.json`.
    pub fn auth_path(&self) -> &Path {
        &self.auth_path
    }

    /// A provider's first model (what provider-level auth resolves against).
    pub fn first_model(&self, provider: &str) -> Option<Arc<Model>> {
        self.providers
            .iter()
            .find(|p| p.id == provider)
            .and_then(|p| p.models().first().cloned())
    }

    /// Whether the provider takes an API key typed at login (its key comes from a variable or
    /// `auth.json`, not from ambient files like AWS's or Google's).
    pub fn offers_api_key_login(&self, provider: &str) -> bool {
        self.providers
            .iter()
            .find(|p| p.id == provider)
            .is_some_and(|p| p.auth().offers_key_login())
    }

    /// Whether the provider offers an account (OAuth) login.
    pub fn offers_oauth(&self, provider: &str) -> bool {
        self.providers
            .iter()
            .find(|p| p.id == provider)
            .is_some_and(|p| p.auth().has_oauth())
    }

    /// A provider's display name (`name` in models.json, else the built-in name, else the id).
    pub fn provider_name(&self, provider: &str) -> Option<&str> {
        self.providers
            .iter()
            .find(|p| p.id == provider)
            .map(|p| p.name.as_str())
    }

    /// The load problems, joined the way `--list-models` prints them after
    /// `Warning: errors loading models.json:\n`.
    pub fn error_text(&self) -> Option<String> {
        let parts: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    pub fn docs_dir(&self) -> Option<&Path> {
        self.docs_dir.as_deref()
    }
}

/// A model seen only by provider, id and name, so `--model` patterns can be matched against all
/// ~1700 models without parsing them.
#[derive(Debug, Clone)]
pub(crate) struct ModelRef<'a> {
    pub provider: &'a str,
    pub id: &'a str,
    pub name: &'a str,
    /// (provider position, model position)
    pub slot: (usize, usize),
}

impl Candidate for ModelRef<'_> {
    fn provider(&self) -> &str {
        self.provider
    }
    fn id(&self) -> &str {
        self.id
    }
    fn name(&self) -> &str {
        self.name
    }
    fn same(&self, other: &Self) -> bool {
        self.slot == other.slot
    }
}

impl ModelRegistry {
    /// Every model of provider `only` (of every provider for `None`) as a [`ModelRef`], in the
    /// order of [`ModelRegistry::all_models`]. Naming the provider spares
    /// reading the built-in catalog's index of every other provider's models.
    pub(crate) fn model_refs_of(&self, only: Option<&str>) -> Vec<ModelRef<'_>> {
        let mut out = Vec::new();
        for (p, entry) in self.providers.iter().enumerate() {
            if only.is_some_and(|id| id != entry.id) {
                continue;
            }
            match &entry.models {
                Models::Catalog(i) => {
                    for (m, (id, name)) in catalog().ids_and_names(*i).iter().enumerate() {
                        out.push(ModelRef {
                            provider: &entry.id,
                            id,
                            name,
                            slot: (p, m),
                        });
                    }
                }
                Models::Built(models) => {
                    for (m, model) in models.iter().enumerate() {
                        out.push(ModelRef {
                            provider: &entry.id,
                            id: &model.id,
                            name: &model.name,
                            slot: (p, m),
                        });
                    }
                }
            }
        }
        out
    }

    /// The first provider (in model order) that has models and whose id equals `name` ignoring
    /// case, as JavaScript's `toLowerCase` compares.
    pub(crate) fn provider_with_models(&self, name: &str) -> Option<&str> {
        self.providers
            .iter()
            .find(|e| e.has_models() && same_lowercase(&e.id, name))
            .map(|e| e.id.as_str())
    }

    /// Whether any provider has a model.
    pub(crate) fn has_models(&self) -> bool {
        self.providers.iter().any(ProviderEntry::has_models)
    }

    pub(crate) fn model_at(&self, slot: (usize, usize)) -> Option<Arc<Model>> {
        self.providers.get(slot.0)?.models().get(slot.1).cloned()
    }
}

/// GitHub Copilot logins list the model ids the account may use.
fn filter_for_credential(
    provider: &str,
    credential: &Credential,
    models: &[Arc<Model>],
) -> Vec<Arc<Model>> {
    if provider == "github-copilot"
        && let Credential::OAuth(fields) = credential
        && let Some(Value::Array(ids)) = fields.get("availableModelIds")
        && ids.iter().all(Value::is_string)
    {
        return models
            .iter()
            .filter(|m| ids.iter().any(|id| id.as_str() == Some(m.id.as_str())))
            .cloned()
            .collect();
    }
    models.to_vec()
}

/// `a.toLowerCase() === b.toLowerCase()`, without allocating for ASCII text.
pub(crate) fn same_lowercase(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, models_json: &str, env: Env) -> (ModelRegistry, Vec<LoadError>) {
        let dir =
            std::env::temp_dir().join(format!("pi-ai-registry-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("models.json"), models_json).unwrap();
        let loaded = ModelRegistry::load(LoadOptions {
            agent_dir: dir.clone(),
            env,
            docs_dir: Some("/docs".into()),
            local: None,
            llama: false,
        });
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    }

    #[test]
    fn a_model_our_types_cannot_hold_is_skipped_and_reported() {
        let (registry, errors) = load(
            "fractional",
            r#"{"providers": {"p": {"baseUrl": "u", "api": "openai-completions", "apiKey": "k",
                "models": [{"id": "odd", "contextWindow": 1000.5}, {"id": "fine"}]}}}"#,
            Env::default(),
        );
        let ids: Vec<&str> = registry
            .available_models()
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        assert_eq!(ids, vec!["fine"]);
        assert_eq!(errors.len(), 1);
        assert!(matches!(&errors[0], LoadError::Provider { provider, .. } if provider == "p"));
    }

    #[test]
    fn runtime_key_makes_a_provider_available_and_wins() {
        let (mut registry, _) = load(
            "runtime-key",
            r#"{"providers": {"p": {"baseUrl": "u", "api": "openai-completions", "models": [{"id": "m"}]}}}"#,
            Env::default(),
        );
        assert!(registry.available_models().is_empty());
        assert_eq!(registry.api_key_for("p"), None);
        registry.set_runtime_api_key("p", "inline");
        assert_eq!(registry.available_models().len(), 1);
        assert_eq!(registry.api_key_for("p"), Some("inline".into()));
    }
}
