//! `models.*` of codemode scripts on this session: the registry's catalog by type, and classifier
//! and image calls with the provider's credentials resolved as for chat requests (`models.json`
//! keys and `!commands`, environment variables, `auth.json`, OAuth logins refreshed when due).

use super::{Core, lock};
use pi_mcp::codemode_models::ModelsHost;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Weak;
use tokio_util::sync::CancellationToken;

pub(crate) struct SessionModels {
    pub core: Weak<Core>,
}

type Entry = Map<String, Value>;

/// Which call, for the error result shape.
#[derive(Clone, Copy)]
enum Kind {
    Classify,
    Images,
}

impl SessionModels {
    fn run(
        &self,
        kind: Kind,
        model: Entry,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        let core = self.core.clone();
        Box::pin(async move {
            let error = |m: &Entry, text: &str, aborted: bool| match kind {
                Kind::Classify => pi_ai::classify::error_result(m, text, aborted),
                Kind::Images => pi_ai::images::error_result(m, text, aborted),
            };
            let Some(core) = core.upgrade() else {
                return error(&model, "The session has ended", false);
            };
            let provider = model["provider"].as_str().unwrap_or("").to_string();
            let id = model["id"].as_str().unwrap_or("").to_string();
            if matches!(kind, Kind::Classify) {
                let has_images = context["images"].as_array().is_some_and(|i| !i.is_empty());
                let takes_images = model["input"]
                    .as_array()
                    .is_some_and(|i| i.iter().any(|m| m == "image"));
                if has_images && !takes_images {
                    let text = format!("Model {provider}/{id} does not accept image input");
                    return error(&model, &text, false);
                }
            }
            if !lock(&core.registry)
                .provider_ids()
                .contains(&provider.as_str())
            {
                return error(&model, &format!("Unknown provider: {provider}"), false);
            }
            // The registry resolves credentials for a model by its provider, headers and id.
            let probe = json!({
                "id": id, "name": model["name"], "api": model["api"], "provider": provider,
                "baseUrl": model["baseUrl"], "reasoning": false, "input": ["text"],
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                "contextWindow": 0, "maxTokens": 0, "headers": model.get("headers"),
            });
            let Ok(probe) = serde_json::from_value::<pi_protocol::Model>(probe) else {
                return error(
                    &model,
                    &format!("Provider is not configured: {provider}"),
                    false,
                );
            };
            let auth = match pi_registry::request_auth_shared(&core.registry, &probe).await {
                Ok(a) => a,
                Err(pi_registry::AuthError::NoApiKey { .. }) => {
                    let text = format!("Provider is not configured: {provider}");
                    return error(&model, &text, false);
                }
                Err(e) => return error(&model, &e.to_string(), false),
            };
            let mut model = model;
            if let Some(url) = auth.base_url {
                model.insert("baseUrl".into(), Value::String(url));
            }
            let options = pi_ai::classify::CallOptions {
                api_key: auth.api_key,
                headers: auth.headers.unwrap_or_default(),
                env: auth
                    .env
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
                    .collect(),
                max_retries: None,
                temperature: None,
                cancel,
            };
            match kind {
                Kind::Classify => pi_ai::classify::classify(&model, &context, &options).await,
                Kind::Images => pi_ai::images::generate_images(&model, &context, &options).await,
            }
        })
    }
}

impl ModelsHost for SessionModels {
    fn models_of_type(&self, model_type: &str, provider: Option<&str>) -> Vec<Entry> {
        match self.core.upgrade() {
            Some(core) => lock(&core.registry).models_of_type(model_type, provider),
            None => Vec::new(),
        }
    }

    fn available_of_type(&self, model_type: &str, provider: Option<&str>) -> Vec<Entry> {
        match self.core.upgrade() {
            Some(core) => lock(&core.registry).available_of_type(model_type, provider),
            None => Vec::new(),
        }
    }

    fn classify(
        &self,
        model: Entry,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        self.run(Kind::Classify, model, context, cancel)
    }

    fn generate_images(
        &self,
        model: Entry,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        self.run(Kind::Images, model, context, cancel)
    }

    fn docs_path(&self) -> String {
        let package = self
            .core
            .upgrade()
            .map(|c| c.env.package_dir.clone())
            .unwrap_or_default();
        package
            .join("docs")
            .join("codemode.md")
            .display()
            .to_string()
    }
}
