//! A provider whose models run in-process (`pi-local`; Pi has no such thing). It needs no
//! credentials: a model is usable when its weights are on disk. It is composed with its
//! `models.json` entry like a built-in provider and sorts after every other provider, so that
//! "the first available model" picks it only when nothing else is configured.

use super::messages;
use super::model_registry::ModelRegistry;

impl ModelRegistry {
    /// Whether `provider` is the in-process provider.
    pub fn is_local_provider(&self, provider: &str) -> bool {
        self.local.as_ref().is_some_and(|l| l.id == provider)
    }

    /// `No models available. <login help>`, plus how to install the local model when that
    /// provider is built in.
    pub fn no_models_message(&self) -> String {
        self.with_hint(messages::no_models_available(self.docs_dir.as_deref()))
    }

    /// `No API key found for <provider>.` with login help; for the placeholder model (nothing
    /// selected) also how to install the local model.
    pub fn no_api_key_message(&self, provider: &str) -> String {
        let base = messages::no_api_key_found(provider, self.docs_dir.as_deref());
        if provider == "unknown" {
            self.with_hint(base)
        } else {
            base
        }
    }

    fn with_hint(&self, base: String) -> String {
        match &self.local {
            Some(l) if !l.setup_hint.is_empty() => format!("{base}\n{}", l.setup_hint),
            _ => base,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Env, LoadOptions, ModelRegistry, RequestAuth};
    use pi_protocol::Model;

    fn model(id: &str, path: &str) -> Model {
        let mut m = Model::placeholder();
        m.id = id.into();
        m.name = id.into();
        m.api = "llama-cpp".into();
        m.provider = "local".into();
        m.base_url = path.into();
        m.context_window = 8192;
        m.max_tokens = 1024;
        m
    }

    fn exists(m: &Model) -> bool {
        m.base_url.starts_with("/present")
    }

    fn load(name: &str, models_json: &str, models: Vec<Model>) -> ModelRegistry {
        let dir = std::env::temp_dir().join(format!("pi-ai-local-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let _ = std::fs::write(dir.join("models.json"), models_json);
        let (registry, errors) = ModelRegistry::load(LoadOptions {
            agent_dir: dir.clone(),
            env: Env::default(),
            docs_dir: Some("/docs".into()),
            local: Some(crate::LocalProvider {
                id: "local".into(),
                name: "Local".into(),
                api: "llama-cpp".into(),
                models,
                runnable: exists,
                setup_hint: "Or run scripts/setup-local-model.".into(),
            }),
            llama: false,
        });
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(errors, vec![]);
        registry
    }

    fn ids(models: &[std::sync::Arc<Model>]) -> Vec<String> {
        models
            .iter()
            .map(|m| format!("{}/{}", m.provider, m.id))
            .collect()
    }

    #[test]
    fn local_model_with_weights_is_available_without_any_key_and_is_the_default() {
        let r = load(
            "present",
            r#"{"providers": {}}"#,
            vec![model("smol", "/present/smol.gguf")],
        );
        assert_eq!(ids(r.available_models()), vec!["local/smol"]);
        assert!(r.has_configured_auth("local"));
        assert_eq!(
            r.initial_model(&Default::default()).map(|m| m.id.clone()),
            Some("smol".into())
        );
        let model = r.find("local", "smol").map(|m| (*m).clone());
        assert_eq!(
            model.map(|m| r.request_auth(&m)),
            Some(Ok(RequestAuth::default()))
        );
    }

    #[test]
    fn local_model_without_weights_is_listed_but_not_available_and_messages_name_the_setup() {
        let r = load(
            "absent",
            r#"{"providers": {}}"#,
            vec![model("smol", "/absent/smol.gguf")],
        );
        assert!(r.available_models().is_empty());
        assert!(r.find("local", "smol").is_some());
        assert!(!r.has_configured_auth("local"));
        assert!(
            r.no_models_message()
                .ends_with("/docs/models.md\nOr run scripts/setup-local-model.")
        );
        assert!(
            r.no_api_key_message("unknown")
                .ends_with("\nOr run scripts/setup-local-model.")
        );
        assert!(!r.no_api_key_message("openai").contains("setup-local-model"));
    }

    #[test]
    fn models_json_adds_local_models_with_the_local_api_and_they_sort_after_custom_providers() {
        let r = load(
            "configured",
            r#"{"providers": {
                "local": {"models": [{"id": "qwen", "baseUrl": "/present/qwen.gguf",
                    "contextWindow": 4096, "samplingParams": {"threads": 3}}]},
                "p": {"baseUrl": "u", "api": "openai-completions", "apiKey": "k",
                    "models": [{"id": "m"}]}}}"#,
            vec![model("smol", "/absent/smol.gguf")],
        );
        assert_eq!(ids(r.available_models()), vec!["p/m", "local/qwen"]);
        let qwen = r.find("local", "qwen").map(|m| (*m).clone());
        let qwen = qwen.unwrap_or_else(Model::placeholder);
        assert_eq!(
            (qwen.api.as_str(), qwen.context_window),
            ("llama-cpp", 4096)
        );
        assert_eq!(
            qwen.sampling_params
                .as_ref()
                .and_then(|p| p.get("threads"))
                .and_then(|v| v.as_u64()),
            Some(3)
        );
        assert_eq!(
            r.initial_model(&Default::default()).map(|m| m.id.clone()),
            Some("m".into())
        );
    }
}
