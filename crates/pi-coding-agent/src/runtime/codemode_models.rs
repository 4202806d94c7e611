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
pub(crate) enum Kind {
    Classify,
    Images,
}

/// The caller's options of one call.
#[derive(Clone, Copy, Default)]
pub(crate) struct Tuning {
    /// Whether an extension's implementation gets an abort signal (codemode calls pass one,
    /// `ctx.modelRegistry` calls none).
    pub signal: bool,
    /// `temperature` of `ctx.modelRegistry.classify(model, context, options)`.
    pub temperature: Option<f64>,
    /// `maxRetries` of the same options.
    pub max_retries: Option<u32>,
}

/// How a provider runs calls of one kind for a model's api.
enum Runner {
    /// pi-ai's wire APIs (built-in providers).
    Builtin,
    /// The implementation an extension registered for the api, run in the extension host.
    Extension,
    /// An extension's implementations, none for this api.
    NoImplementation,
    /// No implementation of this kind at all.
    Unsupported,
}

fn runner(core: &Core, kind: Kind, provider: &str, api: &str) -> Runner {
    let group = match kind {
        Kind::Classify => "classifiers",
        Kind::Images => "images",
    };
    let registry = lock(&core.registry);
    let registered = registry
        .extension_provider_config(provider)
        .and_then(|c| c.get(group))
        .and_then(Value::as_object);
    if registered.is_some_and(|r| r.get(api).is_some_and(|i| i.is_object())) {
        return Runner::Extension;
    }
    if registry.has_builtin_typed_models(provider) {
        return Runner::Builtin;
    }
    if registered.is_some_and(|r| r.values().any(Value::is_object)) {
        Runner::NoImplementation
    } else {
        Runner::Unsupported
    }
}

impl SessionModels {
    /// A codemode call: the implementation gets the script's signal.
    fn run(
        &self,
        kind: Kind,
        model: Entry,
        context: Value,
        cancel: CancellationToken,
    ) -> Pin<Box<dyn Future<Output = Value> + Send + 'static>> {
        let tuning = Tuning {
            signal: true,
            ..Tuning::default()
        };
        self.run_with(kind, model, context, cancel, tuning)
    }

    pub(crate) fn run_with(
        &self,
        kind: Kind,
        model: Entry,
        context: Value,
        cancel: CancellationToken,
        tuning: Tuning,
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
            let api = model["api"].as_str().unwrap_or("").to_string();
            let runs = runner(&core, kind, &provider, &api);
            if matches!(runs, Runner::Unsupported) {
                let what = match kind {
                    Kind::Classify => "classification",
                    Kind::Images => "image generation",
                };
                return error(
                    &model,
                    &format!("Provider {provider} does not support {what}"),
                    false,
                );
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
            match runs {
                Runner::NoImplementation => {
                    let noun = match kind {
                        Kind::Classify => "classifier",
                        Kind::Images => "image",
                    };
                    let text =
                        format!("Provider {provider} has no {noun} implementation for \"{api}\"");
                    return error(&model, &text, false);
                }
                Runner::Extension => {
                    let call = TypedCall {
                        kind,
                        provider: &provider,
                        api_key: auth.api_key,
                        headers: auth.headers.unwrap_or_default(),
                        env: auth.env,
                        tuning,
                    };
                    return match run_in_host(&core, call, &model, context, cancel).await {
                        Ok(result) => result,
                        Err((text, aborted)) => error(&model, &text, aborted),
                    };
                }
                Runner::Builtin | Runner::Unsupported => {}
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
                max_retries: tuning.max_retries,
                temperature: tuning.temperature,
                cancel,
            };
            match kind {
                Kind::Classify => pi_ai::classify::classify(&model, &context, &options).await,
                Kind::Images => pi_ai::images::generate_images(&model, &context, &options).await,
            }
        })
    }
}

/// What an extension's implementation gets besides the model and the context.
struct TypedCall<'a> {
    kind: Kind,
    provider: &'a str,
    api_key: Option<String>,
    headers: Vec<(String, Option<String>)>,
    env: Option<Map<String, Value>>,
    tuning: Tuning,
}

/// Runs an extension's `classify`/`generateImages` in the extension host; its result comes
/// back as it is. `Err`: the text of the error result, and whether the call was aborted.
async fn run_in_host(
    core: &Core,
    call: TypedCall<'_>,
    model: &Entry,
    context: Value,
    cancel: CancellationToken,
) -> Result<Value, (String, bool)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(host) = core.ext.host() else {
        return Err(("The extension host is not running".into(), false));
    };
    let call_id = format!("tc-{}", NEXT.fetch_add(1, Ordering::SeqCst) + 1);
    let mut options = Map::new();
    if let Some(key) = call.api_key {
        options.insert("apiKey".into(), json!(key));
    }
    let headers: Map<String, Value> = call
        .headers
        .into_iter()
        .filter_map(|(k, v)| Some((k, Value::String(v?))))
        .collect();
    if !headers.is_empty() {
        options.insert("headers".into(), Value::Object(headers));
    }
    if let Some(t) = call.tuning.temperature {
        options.insert("temperature".into(), pi_js::json::js_number_value(t));
    }
    if let Some(n) = call.tuning.max_retries {
        options.insert("maxRetries".into(), json!(n));
    }
    if let Some(env) = call.env.filter(|e| !e.is_empty()) {
        options.insert("env".into(), Value::Object(env));
    }
    let mut params = Map::new();
    params.insert("callId".into(), json!(call_id));
    params.insert("provider".into(), json!(call.provider));
    let kind = match call.kind {
        Kind::Classify => "classify",
        Kind::Images => "images",
    };
    params.insert("kind".into(), json!(kind));
    params.insert("model".into(), Value::Object(model.clone()));
    params.insert("context".into(), context);
    params.insert("options".into(), Value::Object(options));
    params.insert("signal".into(), json!(call.tuning.signal));
    let request = host.request("provider_typed", params);
    tokio::pin!(request);
    let answer = tokio::select! {
        r = &mut request => r,
        () = cancel.cancelled() => {
            let mut abort = Map::new();
            abort.insert("callId".into(), json!(call_id));
            host.notify("typed_abort", abort);
            request.await
        }
    };
    match answer {
        Ok(Value::Object(mut answer)) => match answer.remove("result") {
            Some(result) => Ok(result),
            None => Err((
                answer
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                answer.get("aborted").and_then(Value::as_bool) == Some(true),
            )),
        },
        Ok(_) => Err(("The extension returned no result".into(), false)),
        Err(e) => Err((e.to_string(), cancel.is_cancelled())),
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
