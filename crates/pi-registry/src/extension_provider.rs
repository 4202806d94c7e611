//! Providers registered by extensions (`pi.registerProvider(name, config)`): a third layer over
//! the built-in catalog and `models.json` (`model-runtime.js:registerProvider`,
//! `provider-composer.js:applyExtension`). A registration merges its defined keys over the
//! provider's previous one; its `models` replace the provider's models, a lone `baseUrl` moves
//! the existing ones; its `apiKey`, `headers` and `authHeader` take precedence over models.json.
//!
//! Function-valued members (`streamSimple`, `oauth.login`, `refreshModels`) arrive as `true`:
//! running them is the extension host's business, not the registry's. A registration's `oauth`
//! replaces the provider's own login: its stored credentials are refreshed and turned into a key
//! by the extension ([`crate::oauth::Flow::Extension`]).

use super::extension_config::apply_extension;
use super::model_registry::ModelRegistry;
use super::models_json::{JsObject, str_of};
use serde_json::Value;

impl ModelRegistry {
    /// `registerProvider(id, config)`: validates the registration on its own (a broken one
    /// changes nothing and its error goes to the extension), merges its defined keys over the
    /// provider's previous registration and rebuilds the provider list and availability.
    pub fn register_extension_provider(
        &mut self,
        id: &str,
        config: &serde_json::Map<String, Value>,
    ) -> Result<(), String> {
        let streams = config.get("streamSimple").is_some_and(|v| !v.is_null());
        if streams && str_of(Some(config), "api").is_none() {
            return Err(format!(
                "Provider {id}: \"api\" is required when registering streamSimple."
            ));
        }
        self.validate_extension_layer(id, config)?;
        let mut merged = self
            .extensions
            .iter()
            .find(|(p, _)| p == id)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        for (key, value) in config {
            merged.insert(key.clone(), value.clone());
        }
        match self.extensions.iter_mut().find(|(p, _)| p == id) {
            Some(slot) => slot.1 = merged,
            None => self.extensions.push((id.to_string(), merged)),
        }
        self.rebuild();
        Ok(())
    }

    /// `unregisterProvider(id)`: the provider goes back to its built-in and models.json layers
    /// (or away, when it had none).
    pub fn unregister_extension_provider(&mut self, id: &str) {
        let before = self.extensions.len();
        self.extensions.retain(|(p, _)| p != id);
        if self.extensions.len() != before {
            self.rebuild();
        }
    }

    /// Drops every extension registration (a new generation of extensions registers anew).
    pub fn clear_extension_providers(&mut self) {
        if !self.extensions.is_empty() {
            self.extensions.clear();
            self.rebuild();
        }
    }

    /// A provider's registration as merged so far.
    pub fn extension_provider_config(&self, id: &str) -> Option<&serde_json::Map<String, Value>> {
        self.extensions
            .iter()
            .find(|(p, _)| p == id)
            .map(|(_, c)| c)
    }

    /// Ids of providers an extension registered, in registration order.
    pub fn extension_provider_ids(&self) -> Vec<&str> {
        self.extensions.iter().map(|(p, _)| p.as_str()).collect()
    }

    /// `validateExtensionProvider`: the registration applied on its own over the provider's
    /// current models must compose.
    fn validate_extension_layer(&self, id: &str, config: &JsObject) -> Result<(), String> {
        let current: Vec<JsObject> = self
            .providers
            .iter()
            .find(|p| p.id == id)
            .map(|p| {
                p.models()
                    .iter()
                    .filter_map(|m| match serde_json::to_value(m.as_ref()) {
                        Ok(Value::Object(o)) => Some(o),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        apply_extension(id, current, config).map(|_| ())
    }
}
