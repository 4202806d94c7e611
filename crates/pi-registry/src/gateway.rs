//! Radius gateways: a gateway's URL as Pi compares it, and a gateway config's models. Apart from
//! the registry and the account catalogs so that both use them without naming each other.

use crate::models_json::JsObject;
use serde_json::{Map, Value};

/// `https://radius.pi.dev` in the form Pi compares gateways.
pub(crate) fn normalize_gateway(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    let with_scheme = if lower.starts_with("http://") || lower.starts_with("https://") {
        url.to_string()
    } else {
        format!("https://{url}")
    };
    with_scheme.trim_end_matches('/').to_string()
}

pub(crate) fn radius_gateway(base_url: &str) -> String {
    let trimmed = base_url.strip_suffix('/').unwrap_or(base_url);
    let gateway = trimmed.strip_suffix("/v1").unwrap_or(base_url);
    normalize_gateway(gateway)
}

/// A gateway config's (`{baseUrl, models}`) gateway models as `provider`'s pi-messages models;
/// `None` when it has no base URL or model list.
pub(crate) fn gateway_models(provider: &str, config: &Map<String, Value>) -> Option<Vec<JsObject>> {
    let base_url = config.get("baseUrl").and_then(Value::as_str)?;
    let models = config.get("models").and_then(Value::as_array)?;
    Some(
        models
            .iter()
            .filter(|m| is_gateway_model(m))
            .filter_map(|m| {
                let mut m = m.as_object()?.clone();
                m.insert("api".into(), "pi-messages".into());
                m.insert("provider".into(), provider.into());
                m.insert("baseUrl".into(), base_url.into());
                Some(m)
            })
            .collect(),
    )
}

/// The gateway catalog an older Pi kept in a Radius login (`gatewayConfig`), for a provider
/// with no saved catalog yet: Pi imports it before any network refresh, offline included.
pub(crate) fn legacy_gateway_models(provider: &str, login: &Map<String, Value>) -> Vec<JsObject> {
    login
        .get("gatewayConfig")
        .and_then(Value::as_object)
        .and_then(|config| gateway_models(provider, config))
        .unwrap_or_default()
}

/// A gateway model has Pi's required fields with their types.
fn is_gateway_model(m: &Value) -> bool {
    let Some(o) = m.as_object() else {
        return false;
    };
    o.get("id").is_some_and(Value::is_string)
        && o.get("name").is_some_and(Value::is_string)
        && o.get("reasoning").is_some_and(Value::is_boolean)
        && o.get("input").is_some_and(Value::is_array)
        && o.get("cost").is_some_and(Value::is_object)
        && o.get("contextWindow").is_some_and(Value::is_number)
        && o.get("maxTokens").is_some_and(Value::is_number)
}
