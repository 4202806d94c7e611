//! Models of other types than chat: classifiers and image models (`Models.getModelsOfType`,
//! `getAvailableOfType`, `getModelOfType`). They never appear in `/model` or the chat listings;
//! codemode scripts reach them through `models.*`.
//!
//! The built-in ones come from `data/typed-models.json` (generated from Pi 1.6.0's pi-ai by
//! `scripts/gen-typed-models.mjs`), updated by a refreshed catalog in `models-store.json` as the
//! chat models are. As in Pi, a `models.json` provider entry's `baseUrl` applies
//! to them too (except for `oauth: "radius"` providers), and its provider-level `compat` merges
//! into classifier models' `compat` (how a System One service takes images); `models` and
//! `modelOverrides` entries are chat-only.

use crate::model_registry::ModelRegistry;
use crate::models_json::JsObject;
use serde_json::Value;
use std::sync::OnceLock;

static TYPED_TEXT: &str = include_str!("../data/typed-models.json");

/// The three model types Pi knows.
pub const MODEL_TYPES: [&str; 3] = ["chat", "image", "classifier"];

/// `{provider: [model, ...]}` in pi-ai's provider order. The file is ours and checked by tests,
/// so a malformed one only yields no typed models.
fn builtin() -> &'static Vec<(String, Vec<JsObject>)> {
    static TYPED: OnceLock<Vec<(String, Vec<JsObject>)>> = OnceLock::new();
    TYPED.get_or_init(|| {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(TYPED_TEXT) else {
            return Vec::new();
        };
        map.into_iter()
            .map(|(provider, models)| {
                let models = match models {
                    Value::Array(a) => a
                        .into_iter()
                        .filter_map(|m| match m {
                            Value::Object(o) => Some(o),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                (provider, models)
            })
            .collect()
    })
}

/// The bundled non-chat models of `provider`, as pi-ai lists them.
pub(crate) fn builtin_typed(provider: &str) -> Vec<JsObject> {
    builtin()
        .iter()
        .find(|(p, _)| p == provider)
        .map(|(_, m)| m.clone())
        .unwrap_or_default()
}

fn type_of(model: &JsObject) -> &str {
    model.get("type").and_then(Value::as_str).unwrap_or("chat")
}

impl ModelRegistry {
    /// The non-chat models of one provider, with its `models.json` entry applied.
    fn typed_models_of(&self, provider: &str) -> Vec<JsObject> {
        let base = if crate::catalog::catalog().index_of(provider).is_some() {
            let builtin_models = builtin()
                .iter()
                .find(|(p, _)| p == provider)
                .map(|(_, m)| m.clone())
                .unwrap_or_default();
            self.store.apply_typed(
                provider,
                crate::store::ModelsStore::kind_of(provider),
                crate::catalog::catalog().generated_at_ms(),
                builtin_models,
            )
        } else if self.llama && provider == crate::llama::LLAMA_PROVIDER_ID {
            // The classifiers the last refresh of the llama.cpp server stored.
            crate::llama::stored_classifiers(self.store.entry(provider))
        } else {
            Vec::new()
        };
        let config = self.config.provider(provider);
        let models: Vec<JsObject> = base
            .into_iter()
            .map(|mut model| {
                if let Some(c) = config {
                    if c.oauth.as_deref() != Some("radius")
                        && let Some(url) = &c.base_url
                    {
                        model.insert("baseUrl".into(), Value::String(url.clone()));
                    }
                    if type_of(&model) == "classifier"
                        && let Some(compat) = &c.compat
                    {
                        let mut merged = match model.remove("compat") {
                            Some(Value::Object(o)) => o,
                            _ => JsObject::new(),
                        };
                        for (k, v) in compat {
                            merged.insert(k.clone(), v.clone());
                        }
                        model.insert("compat".into(), Value::Object(merged));
                    }
                }
                model
            })
            .collect();
        // An extension's registration: its `models` replace these too (typed entries among
        // them), a lone `baseUrl` moves them.
        let Some(ext) = self.extension(provider) else {
            return models;
        };
        match crate::extension_config::apply_extension(provider, models.clone(), ext) {
            Ok(applied) => applied
                .into_iter()
                .filter(|m| type_of(m) != "chat")
                .map(|mut m| {
                    // `headers: undefined` as Pi leaves it: not listed.
                    if m.get("headers").is_some_and(Value::is_null) {
                        m.remove("headers");
                    }
                    m
                })
                .collect(),
            Err(_) => models,
        }
    }

    /// Whether `provider` is a built-in one with classifier or image models of its own (pi-ai
    /// runs their calls).
    pub fn has_builtin_typed_models(&self, provider: &str) -> bool {
        builtin().iter().any(|(p, _)| p == provider)
            || (self.llama && provider == crate::llama::LLAMA_PROVIDER_ID)
    }

    /// A chat model as pi-ai holds it (catalog models carry `"type": "chat"`, `models.json`
    /// ones no `type`).
    fn chat_entry(model: &pi_protocol::Model) -> Option<JsObject> {
        match serde_json::to_value(model) {
            Ok(Value::Object(fields)) => Some(fields),
            _ => None,
        }
    }

    /// Every known model of `model_type` (`"chat"`, `"image"` or `"classifier"`), optionally of
    /// one provider, in provider order.
    pub fn models_of_type(&self, model_type: &str, provider: Option<&str>) -> Vec<JsObject> {
        let providers = self
            .providers
            .iter()
            .filter(|p| provider.is_none_or(|want| p.id == want));
        if model_type == "chat" {
            return providers
                .flat_map(|p| p.models().iter().cloned().collect::<Vec<_>>())
                .filter_map(|m| Self::chat_entry(&m))
                .collect();
        }
        providers
            .flat_map(|p| self.typed_models_of(&p.id))
            .filter(|m| type_of(m) == model_type)
            .collect()
    }

    /// The models of `model_type` whose provider has working credentials. A ChatGPT login of
    /// `openai` does not reach its classifier (the Decisions API takes API keys only).
    pub fn available_of_type(&self, model_type: &str, provider: Option<&str>) -> Vec<JsObject> {
        if model_type == "chat" {
            return self
                .available_models()
                .iter()
                .filter(|m| provider.is_none_or(|want| m.provider == want))
                .filter_map(|m| Self::chat_entry(m))
                .collect();
        }
        self.providers
            .iter()
            .filter(|p| provider.is_none_or(|want| p.id == want))
            .filter(|p| self.has_configured_auth(&p.id))
            .filter(|p| {
                !(p.id == "openai" && model_type == "classifier" && self.is_using_oauth(&p.id))
            })
            .flat_map(|p| self.typed_models_of(&p.id))
            .filter(|m| type_of(m) == model_type)
            .collect()
    }

    /// One catalog entry by type, provider and id.
    pub fn model_of_type(&self, model_type: &str, provider: &str, id: &str) -> Option<JsObject> {
        self.models_of_type(model_type, Some(provider))
            .into_iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_catalog_has_pi_s_classifier_and_image_models() {
        let typed = builtin();
        let find = |p: &str, id: &str| {
            typed
                .iter()
                .find(|(q, _)| q == p)
                .and_then(|(_, ms)| ms.iter().find(|m| m["id"] == id))
                .cloned()
        };
        let jev = find("typesafe", "jev-latest").unwrap_or_default();
        assert_eq!(jev["type"], "classifier");
        assert_eq!(jev["api"], "typesafe-system-one");
        let luna = find("openai", "gpt-6-luna").unwrap_or_default();
        assert_eq!(luna["api"], "openai-decisions");
        let clef = find("cloudflare-workers-ai", "@cf/cloudflare/clef").unwrap_or_default();
        assert_eq!(clef["api"], "cloudflare-workers-ai-system-one");
        let painter = find("openrouter", "google/gemini-2.5-flash-image").unwrap_or_default();
        assert_eq!(painter["type"], "image");
        assert_eq!(painter["api"], "openrouter-images");
        assert!(
            typed
                .iter()
                .all(|(_, ms)| ms.iter().all(|m| type_of(m) != "chat"))
        );
    }

    fn registry(models_json: &str, env: &[(&str, &str)]) -> (ModelRegistry, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("models.json"), models_json)
            .unwrap_or_else(|e| panic!("{e}"));
        let (registry, _) = ModelRegistry::load(crate::LoadOptions {
            agent_dir: dir.path().to_path_buf(),
            env: crate::Env::from_pairs(env.iter().copied()),
            ..Default::default()
        });
        (registry, dir)
    }

    #[test]
    fn models_json_moves_typed_models_and_credentials_make_them_available() {
        let (r, _dir) = registry(
            r#"{"providers": {"typesafe": {"baseUrl": "http://127.0.0.1:9/v1", "compat": {"imageInput": "images"}},
                "openrouter": {"baseUrl": "http://127.0.0.1:9/api"}}}"#,
            &[("TYPESAFE_API_KEY", "k")],
        );
        let jev = r
            .model_of_type("classifier", "typesafe", "jev-latest")
            .unwrap_or_default();
        assert_eq!(jev["baseUrl"], "http://127.0.0.1:9/v1");
        assert_eq!(
            jev["compat"],
            serde_json::json!({"imageInput": "images", "sendImageOptInHeader": true})
        );
        let painter = r
            .model_of_type("image", "openrouter", "google/gemini-2.5-flash-image")
            .unwrap_or_default();
        assert_eq!(painter["baseUrl"], "http://127.0.0.1:9/api");
        let available: Vec<String> = r
            .available_of_type("classifier", None)
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["provider"].as_str().unwrap_or(""),
                    m["id"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(available, ["typesafe/jev-latest"]);
        assert!(r.available_of_type("image", None).is_empty());
        assert!(r.model_of_type("image", "typesafe", "jev-latest").is_none());
        let chat = r.models_of_type("chat", Some("anthropic"));
        assert!(!chat.is_empty() && chat.iter().all(|m| m["type"] == "chat"));
        assert!(r.models_of_type("chat", Some("typesafe")).is_empty());
    }

    #[test]
    fn an_extension_registration_lists_its_typed_models_by_type_only() {
        let (mut r, _dir) = registry("{}", &[]);
        let config = serde_json::json!({
            "apiKey": "k", "baseUrl": "http://media.invalid",
            "models": [
                {"type": "classifier", "id": "c", "name": "C", "api": "c-api", "headers": {"X": "1"}},
                {"type": "image", "id": "i", "name": "I", "api": "i-api", "baseUrl": "http://own.invalid"},
                {"id": "chat", "name": "Chat", "api": "openai-completions", "reasoning": false,
                    "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    "contextWindow": 10, "maxTokens": 5},
            ],
            "classifiers": {"c-api": {"classify": true}},
        });
        let config = config.as_object().cloned().unwrap_or_default();
        assert_eq!(r.register_extension_provider("media", &config), Ok(()));
        let classifiers = r.models_of_type("classifier", Some("media"));
        assert_eq!(
            Value::Object(classifiers[0].clone()),
            serde_json::json!({"type": "classifier", "id": "c", "name": "C", "api": "c-api",
                "provider": "media", "baseUrl": "http://media.invalid"})
        );
        let image = r.model_of_type("image", "media", "i").unwrap_or_default();
        assert_eq!(image["baseUrl"], "http://own.invalid");
        let chat: Vec<String> = r
            .all_models()
            .iter()
            .filter(|m| m.provider == "media")
            .map(|m| m.id.clone())
            .collect();
        assert_eq!(chat, ["chat"]);
        assert_eq!(r.available_of_type("classifier", Some("media")).len(), 1);
        assert!(!r.has_builtin_typed_models("media"));
        assert!(r.has_builtin_typed_models("typesafe"));
        r.unregister_extension_provider("media");
        assert!(r.models_of_type("classifier", Some("media")).is_empty());
    }
}
