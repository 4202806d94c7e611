//! The `llama.cpp` provider of Pi's built-in llama.cpp extension: the models a llama.cpp server
//! in router mode serves, as chat models on its OpenAI-compatible endpoint.
//!
//! * Configured by `LLAMA_BASE_URL` or a stored credential whose `env.LLAMA_BASE_URL` names the
//!   server; the key is the stored one, else `LLAMA_API_KEY`, else `local`. Requests go to
//!   `<server>/v1` (the credential's server, whatever the model says).
//! * Its catalog is what the last online refresh stored in `models-store.json` (entry
//!   `llama.cpp`): [`refresh`] lists the server (`GET /models`, the router's `GET /props`, and
//!   each loaded chat model's props for its chat template) and stores Pi's model objects, chat
//!   models and classifiers, with `checkedAt`.
//!
//! The `/llama` model manager (load, unload, download) is a terminal UI and not here.

use super::models_json::JsObject;
pub use crate::llama_url::{inference_url, normalize_server_url};
use crate::oauth::store;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::time::Duration;

pub const LLAMA_PROVIDER_ID: &str = "llama.cpp";
/// Pi's per-request limit for the server's management endpoints.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Without any known context size.
const DEFAULT_CONTEXT_WINDOW: f64 = 128_000.0;

/// One entry of the server's `GET /models`.
struct ServerModel<'a>(&'a Map<String, Value>);

impl ServerModel<'_> {
    fn id(&self) -> &str {
        self.0.get("id").and_then(Value::as_str).unwrap_or_default()
    }

    fn status(&self, key: &str) -> Option<&Value> {
        self.0.get("status")?.get(key)
    }

    fn status_value(&self) -> &str {
        self.status("value")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn failed(&self) -> bool {
        self.status("failed").is_some_and(js_truthy)
    }

    fn is_preset(&self) -> bool {
        self.0.get("source").and_then(Value::as_str) == Some("preset")
    }

    fn modalities(&self, key: &str) -> Vec<&str> {
        self.0
            .get("architecture")
            .and_then(|a| a.get(key))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    fn meta(&self, key: &str) -> Option<f64> {
        self.0.get("meta")?.get(key)?.as_f64().filter(|n| *n > 0.0)
    }

    /// Loaded and sleeping models answer (a request wakes a sleeping one); an unloaded preset
    /// only when the router loads models on first use.
    fn selectable(&self, router_autoload: bool) -> bool {
        match self.status_value() {
            "loaded" | "sleeping" => true,
            "unloaded" => router_autoload && !self.failed() && self.is_preset(),
            _ => false,
        }
    }

    /// llama.cpp 0.6.0 and later list `decisions` among a decision model's outputs.
    fn is_decision(&self) -> bool {
        self.modalities("output_modalities").contains(&"decisions")
    }

    fn is_chat(&self) -> bool {
        !self.is_decision() || self.modalities("output_modalities").contains(&"text")
    }

    /// `--ctx-size`/`-c`/`-ctx` in the arguments the router started the model with.
    fn configured_context(&self) -> Option<f64> {
        let args: Vec<&str> = self
            .status("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        args.windows(2).find_map(|pair| {
            if !matches!(pair[0], "--ctx-size" | "-c" | "-ctx") {
                return None;
            }
            let n: f64 = pair[1].trim().parse().ok()?;
            (n > 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0).then_some(n)
        })
    }

    /// The running context, else the configured one, else what an earlier refresh stored, else
    /// the training context, else 128k.
    fn context_window(&self, cached: Option<f64>) -> f64 {
        self.meta("n_ctx")
            .or_else(|| self.configured_context())
            .or_else(|| cached.filter(|c| *c > 0.0))
            .or_else(|| self.meta("n_ctx_train"))
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }
}

fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

fn zero_cost() -> Value {
    json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})
}

/// Pi's chat model for a server model; `chat_template` from its props (loaded models only).
fn chat_model(
    model: &ServerModel<'_>,
    server_url: &str,
    chat_template: Option<&str>,
    cached: Option<f64>,
) -> Value {
    let context = pi_js::json::js_number_value(model.context_window(cached));
    let reasoning = chat_template.is_some_and(|t| t.contains("enable_thinking"));
    let mut m = Map::new();
    m.insert("id".into(), model.id().into());
    m.insert("name".into(), model.id().into());
    m.insert("api".into(), "openai-completions".into());
    m.insert("provider".into(), LLAMA_PROVIDER_ID.into());
    m.insert("baseUrl".into(), inference_url(server_url).into());
    m.insert("reasoning".into(), reasoning.into());
    if reasoning {
        // The chat template switches thinking on or off; no effort levels in between.
        m.insert(
            "thinkingLevelMap".into(),
            json!({"off": "off", "minimal": null, "low": null, "medium": "medium", "high": null, "xhigh": null}),
        );
    }
    let image = model.modalities("input_modalities").contains(&"image");
    m.insert(
        "input".into(),
        if image {
            json!(["text", "image"])
        } else {
            json!(["text"])
        },
    );
    m.insert("cost".into(), zero_cost());
    m.insert("contextWindow".into(), context.clone());
    m.insert("maxTokens".into(), context);
    let mut compat = Map::new();
    compat.insert("supportsStore".into(), false.into());
    compat.insert("supportsReasoningEffort".into(), false.into());
    compat.insert("supportsUsageInStreaming".into(), true.into());
    compat.insert("supportsStrictMode".into(), false.into());
    compat.insert("maxTokensField".into(), "max_tokens".into());
    if reasoning {
        compat.insert("thinkingFormat".into(), "qwen-chat-template".into());
    }
    m.insert("compat".into(), Value::Object(compat));
    Value::Object(m)
}

/// Pi's classifier for a server model: decision models on llama.cpp's System One endpoint,
/// others through next-token label probabilities (stored for Pi; this program has no
/// classifier models).
fn classifier_model(model: &ServerModel<'_>, server_url: &str, cached: Option<f64>) -> Value {
    let decision = model.is_decision();
    let image = decision && model.modalities("input_modalities").contains(&"image");
    let mut m = Map::new();
    m.insert("type".into(), "classifier".into());
    m.insert("id".into(), model.id().into());
    m.insert("name".into(), model.id().into());
    m.insert(
        "api".into(),
        if decision {
            "typesafe-system-one"
        } else {
            "llama-cpp-classify"
        }
        .into(),
    );
    m.insert("provider".into(), LLAMA_PROVIDER_ID.into());
    let base = if decision {
        inference_url(server_url)
    } else {
        server_url.to_string()
    };
    m.insert("baseUrl".into(), base.into());
    m.insert(
        "input".into(),
        if image {
            json!(["text", "image"])
        } else {
            json!(["text"])
        },
    );
    m.insert("cost".into(), zero_cost());
    m.insert(
        "contextWindow".into(),
        pi_js::json::js_number_value(model.context_window(cached)),
    );
    if image {
        m.insert(
            "compat".into(),
            json!({"imageInput": "images", "sendImageOptInHeader": false}),
        );
    }
    Value::Object(m)
}

/// The stored chat models a restart restores: this provider's `openai-completions` chat models.
pub(crate) fn stored_chat_models(entry: Option<&Value>) -> Vec<JsObject> {
    stored_models(entry, |kind, api| {
        kind == "chat" && api == Some("openai-completions")
    })
}

/// The stored classifiers (`llama-cpp-classify` for chat models, System One for decision models).
pub(crate) fn stored_classifiers(entry: Option<&Value>) -> Vec<JsObject> {
    stored_models(entry, |kind, api| {
        kind == "classifier" && matches!(api, Some("llama-cpp-classify" | "typesafe-system-one"))
    })
}

/// This provider's stored models whose `type` (default `chat`) and `api` pass `keep`.
fn stored_models(
    entry: Option<&Value>,
    keep: impl Fn(&str, Option<&str>) -> bool,
) -> Vec<JsObject> {
    entry
        .and_then(|e| e.get("models"))
        .and_then(Value::as_array)
        .map(|models| {
            models
                .iter()
                .filter_map(Value::as_object)
                .filter(|m| m.get("provider").and_then(Value::as_str) == Some(LLAMA_PROVIDER_ID))
                .filter(|m| {
                    let kind = m.get("type").and_then(Value::as_str).unwrap_or("chat");
                    keep(kind, m.get("api").and_then(Value::as_str))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Context windows of the models an earlier refresh stored, by id (chat models and this
/// provider's classifiers), for models whose server reports none now.
fn cached_context_windows(entry: Option<&Value>) -> Vec<(String, f64)> {
    let Some(models) = entry
        .and_then(|e| e.get("models"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    models
        .iter()
        .filter(|m| m.get("provider").and_then(Value::as_str) == Some(LLAMA_PROVIDER_ID))
        .filter(|m| {
            let api = m.get("api").and_then(Value::as_str);
            match m.get("type").and_then(Value::as_str).unwrap_or("chat") {
                "chat" => api == Some("openai-completions"),
                "classifier" => matches!(api, Some("llama-cpp-classify" | "typesafe-system-one")),
                _ => false,
            }
        })
        .filter_map(|m| {
            Some((
                m.get("id")?.as_str()?.to_string(),
                m.get("contextWindow")?.as_f64()?,
            ))
        })
        .collect()
}

impl crate::ModelRegistry {
    /// The server and key an online refresh of the `llama.cpp` provider uses, when the
    /// extension is loaded and a server is configured (as its requests would resolve them).
    pub fn llama_refresh_target(&self) -> Option<(String, String)> {
        if !self.llama {
            return None;
        }
        let credential = match self.credential(LLAMA_PROVIDER_ID).ok()? {
            crate::auth::Credential::ApiKey(c) => Some(c),
            crate::auth::Credential::None => None,
            _ => return None,
        };
        let resolved =
            crate::builtin_auth::KeyAuth::Llama.resolve(credential.as_ref(), &self.env)?;
        let server = resolved.env?.get("LLAMA_BASE_URL")?.as_str()?.to_string();
        Some((server, resolved.api_key?))
    }
}

/// A client of one llama.cpp server's management API.
pub struct LlamaClient {
    server_url: String,
    api_key: Option<String>,
    http: reqwest::Client,
}

/// `error.message` of an error answer.
fn error_message(payload: Option<&Value>) -> Option<String> {
    payload?
        .get("error")?
        .get("message")?
        .as_str()
        .filter(|m| !m.is_empty())
        .map(str::to_string)
}

impl LlamaClient {
    pub fn new(server_url: &str, api_key: Option<&str>) -> Result<LlamaClient, String> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(LlamaClient {
            server_url: normalize_server_url(server_url)?,
            api_key: api_key.filter(|k| !k.is_empty()).map(str::to_string),
            http,
        })
    }

    async fn get(&self, path: &str) -> Result<Option<Value>, String> {
        let mut req = self.http.get(format!("{}{path}", self.server_url));
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {key}"));
        }
        let resp = req.send().await.map_err(|e| {
            let detail = if e.is_timeout() {
                "The operation was aborted due to timeout".to_string()
            } else if e.is_connect() {
                "connect ECONNREFUSED".to_string()
            } else {
                "fetch failed".to_string()
            };
            format!(
                "Could not reach llama.cpp server at {}: {detail}",
                self.server_url
            )
        })?;
        let status = resp.status();
        let payload = resp
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if !status.is_success() {
            return Err(error_message(payload.as_ref())
                .unwrap_or_else(|| format!("llama.cpp returned HTTP {}", status.as_u16())));
        }
        Ok(payload)
    }

    /// `GET /models`: the router's catalog.
    pub async fn list(&self) -> Result<Vec<Map<String, Value>>, String> {
        let payload = self.get("/models").await?;
        let Some(data) = payload
            .as_ref()
            .and_then(|p| p.get("data"))
            .and_then(Value::as_array)
        else {
            return Err("llama.cpp returned an invalid model catalog".into());
        };
        let router = data.iter().all(|m| {
            m.get("id").is_some_and(Value::is_string)
                && m.get("status")
                    .and_then(|s| s.get("value"))
                    .is_some_and(Value::is_string)
        });
        if !router {
            return Err("Server is not running in llama.cpp router mode".into());
        }
        Ok(data.iter().filter_map(Value::as_object).cloned().collect())
    }

    /// `GET /props` (of one model with `model`, without loading it): whether the router loads
    /// models on first use, and the chat template.
    pub async fn props(
        &self,
        model: Option<&str>,
    ) -> Result<(Option<bool>, Option<String>), String> {
        let path = match model {
            Some(m) => format!("/props?model={}&autoload=false", form_encode(m)),
            None => "/props".into(),
        };
        let payload = self.get(&path).await?;
        let p = payload.as_ref();
        Ok((
            p.and_then(|p| p.get("models_autoload"))
                .and_then(Value::as_bool),
            p.and_then(|p| p.get("chat_template"))
                .and_then(Value::as_str)
                .map(str::to_string),
        ))
    }
}

/// `URLSearchParams` encoding of a value.
fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Lists the server and stores Pi's models for it in `store_path` (entry `llama.cpp`, with
/// `checkedAt`), under the store's lock. Returns the stored chat models' ids.
pub async fn refresh(
    store_path: &Path,
    server_url: &str,
    api_key: Option<&str>,
) -> Result<Vec<String>, String> {
    let server_url = normalize_server_url(server_url)?;
    let client = LlamaClient::new(&server_url, api_key)?;
    let stored = store::read(store_path)
        .ok()
        .and_then(|d| d.get(LLAMA_PROVIDER_ID).cloned());
    let cached = cached_context_windows(stored.as_ref());
    let cached_for = |id: &str| cached.iter().find(|(i, _)| i == id).map(|(_, c)| *c);
    let catalog = client.list().await?;
    let models: Vec<ServerModel<'_>> = catalog.iter().map(ServerModel).collect();
    // Only a catalog with autoloadable presets needs the router's setting.
    let autoload = if models
        .iter()
        .any(|m| m.status_value() == "unloaded" && m.is_preset())
    {
        matches!(client.props(None).await, Ok((Some(true), _)))
    } else {
        false
    };
    let selectable: Vec<&ServerModel<'_>> =
        models.iter().filter(|m| m.selectable(autoload)).collect();
    let mut chat = Vec::new();
    // Only a loaded model's props are read: others would load or wake.
    for m in selectable.iter().filter(|m| m.is_chat()) {
        let template = if m.status_value() == "loaded" {
            client.props(Some(m.id())).await?.1
        } else {
            None
        };
        chat.push(chat_model(
            m,
            &server_url,
            template.as_deref(),
            cached_for(m.id()),
        ));
    }
    let ids = chat
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    let classifiers = selectable
        .iter()
        .map(|m| classifier_model(m, &server_url, cached_for(m.id())));
    let all: Vec<Value> = chat.into_iter().chain(classifiers).collect();
    let mut entry = Map::new();
    entry.insert("models".into(), Value::Array(all));
    entry.insert(
        "checkedAt".into(),
        pi_js::json::js_number_value(pi_js::now_ms() as f64),
    );
    let entry = Value::Object(entry);
    store::modify(
        store_path,
        LLAMA_PROVIDER_ID,
        |_| async move { Ok(Some(entry)) },
    )
    .await?;
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_classifiers_are_this_providers_label_and_decision_classifiers() {
        let entry = json!({"models": [
            {"id": "a", "provider": "llama.cpp", "api": "openai-completions"},
            {"id": "a", "provider": "llama.cpp", "type": "classifier", "api": "llama-cpp-classify"},
            {"id": "d", "provider": "llama.cpp", "type": "classifier", "api": "typesafe-system-one"},
            {"id": "x", "provider": "other", "type": "classifier", "api": "llama-cpp-classify"},
            {"id": "y", "provider": "llama.cpp", "type": "classifier", "api": "openai-decisions"},
        ]});
        let ids: Vec<String> = stored_classifiers(Some(&entry))
            .iter()
            .map(|m| format!("{}:{}", m["id"], m["api"]))
            .collect();
        assert_eq!(
            ids,
            [
                "\"a\":\"llama-cpp-classify\"",
                "\"d\":\"typesafe-system-one\""
            ]
        );
        assert!(stored_classifiers(None).is_empty());
    }

    #[test]
    fn context_windows_follow_pi_precedence() {
        let m = |v: Value| v.as_object().cloned().unwrap();
        let a = m(
            json!({"id": "a", "status": {"value": "loaded", "args": ["-c", "2048"]}, "meta": {"n_ctx_train": 9}}),
        );
        assert_eq!(ServerModel(&a).context_window(Some(7.0)), 2048.0);
        let b = m(
            json!({"id": "b", "status": {"value": "loaded", "args": ["-c", "x"]}, "meta": {"n_ctx_train": 9}}),
        );
        assert_eq!(ServerModel(&b).context_window(Some(7.0)), 7.0);
        assert_eq!(ServerModel(&b).context_window(None), 9.0);
        let c = m(json!({"id": "c", "status": {"value": "loaded"}}));
        assert_eq!(ServerModel(&c).context_window(None), 128_000.0);
    }

    #[test]
    fn selection_and_model_kinds() {
        let m = |v: Value| v.as_object().cloned().unwrap();
        let preset = m(json!({"id": "p", "source": "preset", "status": {"value": "unloaded"}}));
        assert!(ServerModel(&preset).selectable(true));
        assert!(!ServerModel(&preset).selectable(false));
        let failed = m(
            json!({"id": "f", "source": "preset", "status": {"value": "unloaded", "failed": true}}),
        );
        assert!(!ServerModel(&failed).selectable(true));
        let both = m(
            json!({"id": "d", "status": {"value": "loaded"}, "architecture": {"output_modalities": ["decisions", "text"]}}),
        );
        assert!(ServerModel(&both).is_chat() && ServerModel(&both).is_decision());
        assert_eq!(form_encode("org/m:Q4 x"), "org%2Fm%3AQ4+x");
    }
}
