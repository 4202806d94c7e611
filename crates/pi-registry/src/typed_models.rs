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
        let builtin_models = builtin()
            .iter()
            .find(|(p, _)| p == provider)
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        // Only built-in providers have typed models; a refreshed catalog updates them.
        if crate::catalog::catalog().index_of(provider).is_none() {
            return Vec::new();
        }
        let models = self.store.apply_typed(
            provider,
            crate::store::ModelsStore::kind_of(provider),
            crate::catalog::catalog().generated_at_ms(),
            builtin_models,
        );
        let config = self.config.provider(provider);
        models
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
            .collect()
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
}
