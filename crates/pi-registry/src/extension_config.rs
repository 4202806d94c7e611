//! How one extension registration changes a provider's models and its `models.json` entry
//! (`provider-composer.js:applyExtension`). Apart from the registration methods in
//! `extension_provider.rs` so that the registry and the composer use it without naming them.

use super::models_json::{JsObject, ProviderConfig, str_of};
use serde_json::Value;

/// `applyExtension`: the provider's models with one registration applied.
pub(crate) fn apply_extension(
    provider: &str,
    models: Vec<JsObject>,
    ext: &JsObject,
) -> Result<Vec<JsObject>, String> {
    let base_url = ext.get("baseUrl").and_then(Value::as_str);
    let Some(definitions) = ext.get("models").and_then(Value::as_array) else {
        return Ok(match base_url {
            Some(url) if !url.is_empty() => models
                .into_iter()
                .map(|mut m| {
                    m.insert("baseUrl".into(), Value::String(url.to_string()));
                    m
                })
                .collect(),
            _ => models,
        });
    };
    definitions
        .iter()
        .map(|d| model_from_definition(provider, &models, ext, d))
        .collect()
}

fn is_type(model: &JsObject, kind: &str) -> bool {
    str_of(Some(model), "type").unwrap_or("chat") == kind
}

/// `extensionModelFromDefinition`: the definition as given, with `api`, `provider` and `baseUrl`
/// resolved (from the provider, else the closest existing model) and no `headers`.
fn model_from_definition(
    provider: &str,
    models: &[JsObject],
    ext: &JsObject,
    definition: &Value,
) -> Result<JsObject, String> {
    let def = definition.as_object().cloned().unwrap_or_default();
    let kind = str_of(Some(&def), "type").unwrap_or("chat").to_string();
    let id = str_of(Some(&def), "id").unwrap_or_default().to_string();
    let candidates: Vec<&JsObject> = models.iter().filter(|m| is_type(m, &kind)).collect();
    let by = |key: &str, want: &str| {
        candidates
            .iter()
            .find(|m| str_of(Some(m), key) == Some(want))
            .copied()
    };
    let defaults = by("id", &id)
        .or_else(|| str_of(Some(&def), "api").and_then(|a| by("api", a)))
        .or_else(|| {
            (kind == "chat")
                .then(|| by("api", "openai-completions"))
                .flatten()
        })
        .or_else(|| candidates.first().copied());
    let provider_api = (kind == "chat").then(|| str_of(Some(ext), "api")).flatten();
    let api = str_of(Some(&def), "api")
        .or(provider_api)
        .or_else(|| str_of(defaults, "api"))
        .ok_or_else(|| {
            let level = if kind == "chat" {
                " or provider level"
            } else {
                ""
            };
            format!(
                "Provider {provider}, model {id}: no \"api\" specified. Set it at model level{level}."
            )
        })?
        .to_string();
    let base_url = str_of(Some(&def), "baseUrl")
        .or_else(|| str_of(Some(ext), "baseUrl"))
        .or_else(|| str_of(defaults, "baseUrl"))
        .ok_or_else(|| {
            format!("Provider {provider}: \"baseUrl\" is required when defining custom models.")
        })?
        .to_string();
    let mut model = def;
    model.insert("api".into(), Value::String(api));
    model.insert("provider".into(), Value::String(provider.to_string()));
    model.insert("baseUrl".into(), Value::String(base_url));
    // `headers: undefined`: the key keeps its place but is not written.
    model.insert("headers".into(), Value::Null);
    Ok(model)
}

/// The `models.json` entry as the registration leaves it for requests: the registration's
/// `apiKey` first, headers merged (`{...config.headers, ...extension.headers}`), its
/// `authHeader` first, and its `name`.
fn overlay_config(config: Option<ProviderConfig>, ext: &JsObject) -> ProviderConfig {
    let mut out = config.unwrap_or_default();
    if let Some(key) = ext.get("apiKey").and_then(Value::as_str) {
        out.api_key = Some(key.to_string());
    }
    if let Some(headers) = ext.get("headers").and_then(Value::as_object) {
        let mut merged = out.headers.take().unwrap_or_default();
        for (k, v) in headers {
            let Some(v) = v.as_str() else { continue };
            match merged.iter_mut().find(|(name, _)| name == k) {
                Some(slot) => slot.1 = v.to_string(),
                None => merged.push((k.clone(), v.to_string())),
            }
        }
        out.headers = Some(merged);
    }
    if let Some(flag) = ext.get("authHeader").and_then(Value::as_bool) {
        out.auth_header = Some(flag);
    }
    if let Some(name) = ext.get("name").and_then(Value::as_str) {
        out.name = Some(name.to_string());
    }
    if let Some(oauth) = ext.get("oauth").and_then(Value::as_object) {
        let name = oauth
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        out.extension_oauth = Some(name.to_string());
    }
    out
}

/// What a provider entry is built from: its models.json entry with the registration over it.
pub(crate) fn effective_config(
    config: Option<ProviderConfig>,
    ext: Option<&JsObject>,
) -> Option<ProviderConfig> {
    match ext {
        Some(ext) => Some(overlay_config(config, ext)),
        None => config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsObject {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn models_replace_and_take_api_and_url_from_the_registration() {
        let base = vec![obj(
            json!({"id": "old", "api": "openai-completions", "baseUrl": "b"}),
        )];
        let ext = obj(json!({"baseUrl": "http://x", "api": "my-api",
            "models": [{"id": "m", "name": "M", "headers": {"a": "b"}}]}));
        let models = apply_extension("p", base, &ext).unwrap_or_default();
        assert_eq!(
            Value::Object(models[0].clone()),
            json!({"id": "m", "name": "M", "headers": null, "api": "my-api", "provider": "p",
                "baseUrl": "http://x"})
        );
    }

    #[test]
    fn a_lone_base_url_moves_existing_models() {
        let base = vec![obj(json!({"id": "a", "baseUrl": "old"}))];
        let models = apply_extension("p", base, &obj(json!({"baseUrl": "new"})));
        assert_eq!(models.map(|m| m[0]["baseUrl"].clone()), Ok(json!("new")));
    }

    #[test]
    fn missing_api_and_url_are_pi_errors() {
        let ext = obj(json!({"models": [{"id": "m"}]}));
        assert_eq!(
            apply_extension("p", vec![], &ext),
            Err("Provider p, model m: no \"api\" specified. Set it at model level or provider level.".into())
        );
        let ext = obj(json!({"api": "x", "models": [{"id": "m"}]}));
        assert_eq!(
            apply_extension("p", vec![], &ext),
            Err("Provider p: \"baseUrl\" is required when defining custom models.".into())
        );
    }

    #[test]
    fn registration_overrides_key_headers_and_name() {
        let config = ProviderConfig::from_object(&obj(
            json!({"apiKey": "cfg", "headers": {"a": "1", "b": "2"}, "name": "C"}),
        ));
        let out = overlay_config(
            Some(config),
            &obj(json!({"apiKey": "ext", "headers": {"b": "3", "c": "4"}, "authHeader": true})),
        );
        assert_eq!(out.api_key.as_deref(), Some("ext"));
        assert_eq!(
            out.headers,
            Some(vec![
                ("a".into(), "1".into()),
                ("b".into(), "3".into()),
                ("c".into(), "4".into())
            ])
        );
        assert_eq!(
            (out.auth_header, out.name.as_deref()),
            (Some(true), Some("C"))
        );
    }
}
