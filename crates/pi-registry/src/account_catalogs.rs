//! The catalogs that come from the user's account rather than Pi's catalog service, refreshed
//! online (RPC startup, `pi update --models`, an extension's `modelRegistry.refresh()`) when the
//! provider has a credential (a stored or environment key, or an OAuth login, refreshed first
//! when expired), and saved in `models-store.json` where `store.rs` applies them:
//!
//! * OpenRouter: the bundled models with a newer catalog of Pi's service merged in, narrowed to
//!   the models the key may use with the key's limits and prices (`GET {baseUrl}/models/user`;
//!   the provider's `models.json` `baseUrl` applies). Asked on every refresh, as in Pi.
//! * Radius gateways (`radius`, and `models.json` providers with `"oauth": "radius"`): the
//!   gateway's `GET /v1/config` models, served over `pi-messages` at the config's `baseUrl`.

use crate::catalog_refresh::{self, TYPES};
use crate::gateway::gateway_models;
use crate::model_registry::ModelRegistry;
use crate::models_json::JsObject;
use crate::oauth::{Flow, store};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
const DEFAULT_RADIUS_GATEWAY: &str = "https://radius.pi.dev";
/// Pi's limit on OpenRouter's `/models/user`.
const USER_MODELS_TIMEOUT: Duration = Duration::from_secs(15);

/// Where a provider's account catalog comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    OpenRouter { base_url: String },
    Radius { gateway: String },
}

/// How the refresh gets the account's credential.
#[derive(Debug, Clone)]
pub enum Credential {
    Key(String),
    /// A stored OAuth login: resolved (and refreshed when due) before the request.
    OAuth(Flow, PathBuf),
}

/// One provider to refresh.
#[derive(Debug, Clone)]
pub struct Target {
    pub provider: String,
    pub source: Source,
    pub credential: Credential,
}

/// Why a refresh failed; Pi's `pi update` only warns about a stale login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    OAuth(String),
    Other(String),
}

impl ModelRegistry {
    /// The account-catalog providers that have a credential, in registry order.
    pub fn account_catalog_targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for id in self.provider_ids() {
            let config = self.config.provider(id);
            let radius_config = config.filter(|c| c.oauth.as_deref() == Some("radius"));
            let source = if let Some(url) = radius_config.and_then(|c| c.base_url.as_deref()) {
                Source::Radius {
                    gateway: crate::gateway::radius_gateway(url),
                }
            } else if id == "radius" {
                Source::Radius {
                    gateway: DEFAULT_RADIUS_GATEWAY.into(),
                }
            } else if id == "openrouter" {
                let base = config.and_then(|c| c.base_url.clone());
                Source::OpenRouter {
                    base_url: base.unwrap_or_else(|| OPENROUTER_BASE_URL.into()),
                }
            } else {
                continue;
            };
            let credential = if self.is_using_oauth(id) {
                match self.oauth_login(id) {
                    Some((flow, path)) => Credential::OAuth(flow, path),
                    None => continue,
                }
            } else {
                match self.api_key_for(id).filter(|k| !k.is_empty()) {
                    Some(key) => Credential::Key(key),
                    None => continue,
                }
            };
            out.push(Target {
                provider: id.to_string(),
                source,
                credential,
            });
        }
        out
    }
}

/// Refreshes one target's catalog into `store_path`.
pub async fn refresh(store_path: &Path, target: &Target) -> Result<(), Failure> {
    let key = match &target.credential {
        Credential::Key(k) => k.clone(),
        Credential::OAuth(flow, path) => {
            let stale = || Failure::OAuth(format!("OAuth refresh failed for {}", target.provider));
            match crate::oauth::resolve(path, &target.provider, flow, None).await {
                Ok(Some(auth)) => auth.api_key.unwrap_or_default(),
                Ok(None) | Err(_) => return Err(stale()),
            }
        }
    };
    let models = match &target.source {
        Source::OpenRouter { base_url } => openrouter_models(base_url, &key).await,
        Source::Radius { gateway } => radius_models(&target.provider, gateway, &key).await,
    }
    .map_err(Failure::Other)?;
    let entry = json!({
        "models": models,
        "checkedAt": pi_js::json::js_number_value(pi_js::now_ms() as f64),
    });
    store::modify(
        store_path,
        &target.provider,
        |_| async move { Ok(Some(entry)) },
    )
    .await
    .map(|_| ())
    .map_err(Failure::Other)
}

fn client(timeout: Option<Duration>) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder();
    if let Some(t) = timeout {
        b = b.timeout(t);
    }
    b.build().map_err(|e| e.to_string())
}

/// The bundled OpenRouter models (chat, image, classifier) with a newer catalog of Pi's service
/// merged in by type and id, then personalized for `key`.
async fn openrouter_models(base_url: &str, key: &str) -> Result<Vec<Value>, String> {
    let cat = crate::catalog::catalog();
    let mut models: Vec<JsObject> = cat
        .index_of("openrouter")
        .map(|i| cat.model_objects(i))
        .unwrap_or_default();
    models.extend(crate::typed_models::builtin_typed("openrouter"));
    let url = format!(
        "{}/api/models/providers/openrouter?types={}",
        catalog_refresh::catalog_base(),
        TYPES.join("%2C")
    );
    let (status, headers, body) = catalog_refresh::fetch(&url, None).await?;
    if status != 404 && status != 501 {
        if !(200..300).contains(&status) {
            return Err(format!(
                "Model catalog request failed for openrouter: {status}"
            ));
        }
        let value = pi_js::parse::parse_js_json(&body)?;
        let remote = catalog_refresh::parse_catalog("openrouter", &value)?;
        let modified = headers
            .iter()
            .find(|(k, _)| k == "last-modified")
            .and_then(|(_, v)| catalog_refresh::http_date_ms(v))
            .unwrap_or(0.0);
        let newer = cat.generated_at_ms().is_none_or(|at| modified > at);
        if newer {
            for model in remote.into_iter().filter_map(|m| m.as_object().cloned()) {
                let slot = models
                    .iter()
                    .position(|m| type_of(m) == type_of(&model) && m.get("id") == model.get("id"));
                match slot {
                    Some(i) => models[i] = model,
                    None => models.push(model),
                }
            }
        }
    }
    personalize(models, base_url, key).await
}

fn type_of(model: &JsObject) -> &str {
    model.get("type").and_then(Value::as_str).unwrap_or("chat")
}

/// `personalizeOpenRouterCatalog`: chat models the key may use, with its limits and prices.
async fn personalize(
    catalog: Vec<JsObject>,
    base_url: &str,
    key: &str,
) -> Result<Vec<Value>, String> {
    let into_values = |c: Vec<JsObject>| c.into_iter().map(Value::Object).collect::<Vec<_>>();
    if key.is_empty() {
        return Ok(into_values(catalog));
    }
    let url = format!("{}/models/user", base_url.trim_end_matches('/'));
    let resp = client(Some(USER_MODELS_TIMEOUT))?
        .get(&url)
        .header("accept", "application/json")
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .map_err(|_| "fetch failed".to_string())?;
    let status = resp.status().as_u16();
    if matches!(status, 401 | 403 | 404) {
        return Ok(into_values(catalog));
    }
    if !(200..300).contains(&status) {
        return Err(format!("OpenRouter model list request failed: {status}"));
    }
    let text = resp.text().await.map_err(|_| "fetch failed".to_string())?;
    let body = pi_js::parse::parse_js_json(&text)?;
    let Some(data) = body.get("data").and_then(Value::as_array) else {
        return Err("Invalid OpenRouter model list response".into());
    };
    let allowed: Map<String, Value> = data
        .iter()
        .filter_map(|e| Some((e.get("id")?.as_str()?.to_string(), e.clone())))
        .collect();
    Ok(catalog
        .into_iter()
        .filter_map(|mut model| {
            if type_of(&model) != "chat" {
                return Some(Value::Object(model));
            }
            let id = model.get("id").and_then(Value::as_str)?;
            let entry = allowed.get(id)?;
            let top = entry.get("top_provider");
            // `||`: a missing limit is absent, null or 0 at OpenRouter.
            let truthy = |v: Option<&Value>| v.filter(|v| pi_js::truthy(v)).cloned();
            if let Some(ctx) = truthy(top.and_then(|t| t.get("context_length")))
                .or_else(|| truthy(entry.get("context_length")))
            {
                model.insert("contextWindow".into(), ctx);
            }
            if let Some(max) = truthy(top.and_then(|t| t.get("max_completion_tokens"))) {
                model.insert("maxTokens".into(), max);
            }
            if let Some(pricing) = entry.get("pricing").filter(|p| pi_js::truthy(p)) {
                model.insert("cost".into(), openrouter_cost(pricing));
            }
            Some(Value::Object(model))
        })
        .collect())
}

/// One $/token price in $/1M tokens (`toFixed(6)`); missing, invalid or negative → `fallback`.
fn per_million(value: Option<&Value>, fallback: f64) -> f64 {
    let text = match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    match parse_float(&text) {
        Some(p) if p >= 0.0 => {
            let scaled = format!("{:.6}", p * 1_000_000.0);
            scaled.parse().unwrap_or(fallback)
        }
        _ => fallback,
    }
}

/// `Number.parseFloat`: the longest decimal prefix after leading whitespace.
fn parse_float(text: &str) -> Option<f64> {
    let t = pi_js::trim_start(text);
    let b = t.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if t[i..].starts_with("Infinity") {
        return Some(if b[0] == b'-' {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    let mut any = digits(&mut i);
    if b.get(i) == Some(&b'.') {
        let mut j = i + 1;
        if digits(&mut j) || any {
            any = true;
            i = j;
        }
    }
    if !any {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) {
            i = j;
        }
    }
    t[..i].parse().ok()
}

/// OpenRouter's $/token prices as Pi's cost (prompt-length overrides become tiers).
fn openrouter_cost(pricing: &Value) -> Value {
    let num = pi_js::json::js_number_value;
    let base = [
        ("input", "prompt"),
        ("output", "completion"),
        ("cacheRead", "input_cache_read"),
        ("cacheWrite", "input_cache_write"),
    ]
    .map(|(ours, theirs)| (ours, per_million(pricing.get(theirs), 0.0)));
    let mut cost = Map::new();
    for (k, v) in base {
        cost.insert(k.into(), num(v));
    }
    let tiers: Vec<Value> = pricing
        .get("overrides")
        .and_then(Value::as_array)
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|o| {
            o.get("min_prompt_tokens").is_some()
                && ["utc_start", "utc_end", "utc_days"]
                    .iter()
                    .all(|k| o.get(k).is_none())
        })
        .map(|o| {
            let mut tier = Map::new();
            tier.insert(
                "inputTokensAbove".into(),
                o.get("min_prompt_tokens").cloned().unwrap_or(Value::Null),
            );
            for ((ours, fallback), theirs) in base.iter().zip([
                "prompt",
                "completion",
                "input_cache_read",
                "input_cache_write",
            ]) {
                tier.insert((*ours).into(), num(per_million(o.get(theirs), *fallback)));
            }
            Value::Object(tier)
        })
        .collect();
    if !tiers.is_empty() {
        cost.insert("tiers".into(), Value::Array(tiers));
    }
    Value::Object(cost)
}

/// The first 512 characters of a trimmed body, with `…` when cut.
fn truncate_body(body: &str) -> String {
    let trimmed = pi_js::trim(body);
    if pi_js::utf16_len(trimmed) > 512 {
        let mut used = 0;
        let cut: String = trimmed
            .chars()
            .take_while(|c| {
                used += c.len_utf16();
                used <= 512
            })
            .collect();
        format!("{cut}…")
    } else {
        trimmed.to_string()
    }
}

/// A Radius gateway's models (`GET {gateway}/v1/config`) for `provider`.
async fn radius_models(provider: &str, gateway: &str, key: &str) -> Result<Vec<Value>, String> {
    // `new URL("/v1/config", gateway)`: the path replaces the gateway's.
    let origin = match gateway.split_once("://") {
        Some((scheme, rest)) => format!(
            "{scheme}://{}",
            rest.split(['/', '?', '#']).next().unwrap_or(rest)
        ),
        None => gateway.to_string(),
    };
    let mut req = client(None)?
        .get(format!("{origin}/v1/config"))
        .header("accept", "application/json");
    if !key.is_empty() {
        req = req.header("authorization", format!("Bearer {key}"));
    }
    let resp = req.send().await.map_err(|_| "fetch failed".to_string())?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|_| "fetch failed".to_string())?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "Could not load Radius config from {gateway}: {status}: {}",
            truncate_body(&text)
        ));
    }
    let invalid = || format!("Invalid Radius config from {gateway}");
    let config = pi_js::parse::parse_js_json(&text)?;
    let models = config
        .as_object()
        .and_then(|c| gateway_models(provider, c))
        .ok_or_else(invalid)?;
    Ok(models.into_iter().map(Value::Object).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_per_token_become_prices_per_million_with_tiers() {
        let cost = openrouter_cost(&json!({
            "prompt": "0.000003", "completion": "0.000015", "input_cache_read": "-1",
            "overrides": [
                {"min_prompt_tokens": 200000, "prompt": "0.000006"},
                {"min_prompt_tokens": 1, "utc_start": "00:00", "prompt": "0"}
            ]
        }));
        assert_eq!(
            cost,
            json!({"input": 3, "output": 15, "cacheRead": 0, "cacheWrite": 0,
                   "tiers": [{"inputTokensAbove": 200000, "input": 6, "output": 15,
                              "cacheRead": 0, "cacheWrite": 0}]})
        );
    }

    #[test]
    fn prices_parse_like_parse_float() {
        assert_eq!(parse_float(" 0.5e-6x"), Some(0.5e-6));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("-1"), Some(-1.0));
        assert_eq!(parse_float("abc"), None);
        assert_eq!(per_million(Some(&json!("0.0000001234567")), 9.0), 0.123457);
    }

    #[test]
    fn long_error_bodies_are_cut_at_512_characters() {
        assert_eq!(truncate_body("  short \n"), "short");
        let long = "x".repeat(600);
        assert_eq!(truncate_body(&long), format!("{}…", "x".repeat(512)));
    }
}
