//! Layering a `models.json` provider entry over a provider's models (`provider-composer.js`):
//! provider `baseUrl`/`compat` onto existing models, `models` entries replacing or appending,
//! then `modelOverrides`. Models are handled as JavaScript objects so keys land where Pi's object
//! spreads put them; `Value::Null` at the top level of a model stands for a key that exists with
//! the value `undefined` (it keeps its position but is not written).

use super::models_json::{JsObject, ProviderConfig, str_of};
use pi_protocol::Model;
use serde_json::Value;

const UNDEFINED: Value = Value::Null;
const LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

fn defined<'a>(obj: &'a JsObject, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn object<'a>(obj: Option<&'a JsObject>, key: &str) -> Option<&'a JsObject> {
    obj?.get(key)?.as_object()
}

fn set(obj: &mut JsObject, key: &str, value: Option<Value>) {
    obj.insert(key.to_string(), value.unwrap_or(UNDEFINED));
}

/// `{...a, ...b}` for two optional objects.
fn spread(a: Option<&JsObject>, b: Option<&JsObject>) -> JsObject {
    let mut out = a.cloned().unwrap_or_default();
    for (k, v) in b.into_iter().flatten() {
        out.insert(k.clone(), v.clone());
    }
    out
}

/// `mergeCompat`: a shallow merge, with the routing and chat-template objects merged one level
/// deeper.
pub(crate) fn merge_compat(base: Option<&JsObject>, over: Option<&JsObject>) -> Option<JsObject> {
    let over = match over {
        None => return base.cloned(),
        Some(o) => o,
    };
    let mut merged = spread(base, Some(over));
    for key in [
        "openRouterRouting",
        "vercelGatewayRouting",
        "chatTemplateKwargs",
        "chatTemplateArgs",
    ] {
        let b = object(base, key);
        let o = object(Some(over), key);
        if b.is_some() || o.is_some() {
            merged.insert(key.to_string(), Value::Object(spread(b, o)));
        }
    }
    Some(merged)
}

fn merge_input_limits(base: Option<&JsObject>, over: Option<&JsObject>) -> Option<JsObject> {
    let over = match over {
        None => return base.cloned(),
        Some(o) => o,
    };
    let mut merged = spread(base, Some(over));
    let base_images = object(base, "images");
    let images = match object(Some(over), "images") {
        Some(over_images) => {
            let mut images = spread(base_images, Some(over_images));
            let resize = match object(Some(over_images), "resize") {
                Some(r) => Some(spread(object(base_images, "resize"), Some(r))),
                None => object(base_images, "resize").cloned(),
            };
            match resize {
                Some(r) => images.insert("resize".into(), Value::Object(r)),
                None => images.remove("resize"),
            };
            Some(images)
        }
        None => base_images.cloned(),
    };
    match images {
        Some(i) => merged.insert("images".into(), Value::Object(i)),
        None => merged.remove("images"),
    };
    Some(merged)
}

fn merge_sampling_by_level(base: Option<&JsObject>, over: Option<&JsObject>) -> Option<JsObject> {
    let over = match over {
        None => return base.cloned(),
        Some(o) => o,
    };
    let mut merged = base.cloned().unwrap_or_default();
    for level in LEVELS {
        if let Some(params) = object(Some(over), level) {
            let value = spread(object(base, level), Some(params));
            merged.insert(level.to_string(), Value::Object(value));
        }
    }
    Some(merged)
}

fn spread_if(base: Option<&JsObject>, over: Option<&JsObject>) -> Option<Value> {
    match over {
        Some(o) => Some(Value::Object(spread(base, Some(o)))),
        None => base.cloned().map(Value::Object),
    }
}

/// `applyModelOverride`: fields replace, object fields merge per key.
pub(crate) fn apply_model_override(mut model: JsObject, ov: &JsObject) -> JsObject {
    let m = model.clone();
    let pick = |key: &str| defined(ov, key).or_else(|| defined(&m, key)).cloned();
    let own = |key: &str| m.get(key).and_then(Value::as_object);
    let theirs = |key: &str| ov.get(key).and_then(Value::as_object);

    set(&mut model, "name", pick("name"));
    set(&mut model, "reasoning", pick("reasoning"));
    set(
        &mut model,
        "thinkingLevelMap",
        spread_if(own("thinkingLevelMap"), theirs("thinkingLevelMap")),
    );
    set(&mut model, "input", pick("input"));
    set(
        &mut model,
        "inputLimits",
        merge_input_limits(own("inputLimits"), theirs("inputLimits")).map(Value::Object),
    );
    let cost = match theirs("cost") {
        Some(over_cost) => {
            let base = own("cost");
            let mut cost = JsObject::new();
            for key in ["input", "output", "cacheRead", "cacheWrite", "tiers"] {
                let v = defined(over_cost, key).or_else(|| base.and_then(|b| defined(b, key)));
                if let Some(v) = v {
                    cost.insert(key.to_string(), v.clone());
                }
            }
            Some(Value::Object(cost))
        }
        None => defined(&m, "cost").cloned(),
    };
    set(&mut model, "cost", cost);
    set(
        &mut model,
        "promptCache",
        spread_if(own("promptCache"), theirs("promptCache")),
    );
    set(&mut model, "contextWindow", pick("contextWindow"));
    set(&mut model, "maxTokens", pick("maxTokens"));
    set(
        &mut model,
        "samplingParams",
        spread_if(own("samplingParams"), theirs("samplingParams")),
    );
    set(
        &mut model,
        "samplingParamsByThinkingLevel",
        merge_sampling_by_level(
            own("samplingParamsByThinkingLevel"),
            theirs("samplingParamsByThinkingLevel"),
        )
        .map(Value::Object),
    );
    set(
        &mut model,
        "compat",
        merge_compat(own("compat"), theirs("compat")).map(Value::Object),
    );
    model
}

/// `modelFromJson`: a `models` entry with Pi's defaults, keys in Pi's order.
fn model_from_json(
    provider: &str,
    def: &JsObject,
    config: &ProviderConfig,
    defaults: Option<&JsObject>,
) -> Result<JsObject, String> {
    let id = str_of(Some(def), "id").unwrap_or_default();
    let api = str_of(Some(def), "api")
        .or(config.api.as_deref())
        .or_else(|| str_of(defaults, "api"))
        .ok_or_else(|| {
            format!("Provider {provider}, model {id}: no \"api\" specified. Set at provider or model level.")
        })?;
    let base_url = str_of(Some(def), "baseUrl")
        .or(config.base_url.as_deref())
        .or_else(|| str_of(defaults, "baseUrl"))
        .ok_or_else(|| {
            format!("Provider {provider}: \"baseUrl\" is required when defining custom models.")
        })?;
    for key in ["contextWindow", "maxTokens"] {
        if defined(def, key)
            .and_then(Value::as_f64)
            .is_some_and(|n| n <= 0.0)
        {
            return Err(format!("Provider {provider}, model {id}: invalid {key}"));
        }
    }
    let field = |key: &str| defined(def, key).cloned();
    let zero_cost = serde_json::json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0});
    let mut m = JsObject::new();
    set(&mut m, "id", Some(Value::String(id.to_string())));
    set(
        &mut m,
        "name",
        Some(field("name").unwrap_or_else(|| Value::String(id.to_string()))),
    );
    set(&mut m, "api", Some(Value::String(api.to_string())));
    set(
        &mut m,
        "provider",
        Some(Value::String(provider.to_string())),
    );
    set(&mut m, "baseUrl", Some(Value::String(base_url.to_string())));
    set(
        &mut m,
        "reasoning",
        Some(field("reasoning").unwrap_or(Value::Bool(false))),
    );
    set(&mut m, "thinkingLevelMap", field("thinkingLevelMap"));
    set(
        &mut m,
        "input",
        Some(field("input").unwrap_or_else(|| serde_json::json!(["text"]))),
    );
    set(&mut m, "inputLimits", field("inputLimits"));
    set(&mut m, "cost", Some(field("cost").unwrap_or(zero_cost)));
    set(&mut m, "promptCache", field("promptCache"));
    set(
        &mut m,
        "contextWindow",
        Some(field("contextWindow").unwrap_or(128000.into())),
    );
    set(
        &mut m,
        "maxTokens",
        Some(field("maxTokens").unwrap_or(16384.into())),
    );
    set(&mut m, "samplingParams", field("samplingParams"));
    set(
        &mut m,
        "samplingParamsByThinkingLevel",
        field("samplingParamsByThinkingLevel"),
    );
    set(&mut m, "headers", None);
    let compat = merge_compat(
        config.compat.as_ref(),
        def.get("compat").and_then(Value::as_object),
    );
    set(&mut m, "compat", compat.map(Value::Object));
    Ok(m)
}

/// `findModelDefaults`: where a new model takes a missing `api`/`baseUrl` from.
fn find_defaults<'a>(models: &'a [JsObject], id: &str, api: Option<&str>) -> Option<&'a JsObject> {
    let by = |key: &str, want: &str| models.iter().find(|m| str_of(Some(m), key) == Some(want));
    by("id", id)
        .or_else(|| api.and_then(|a| by("api", a)))
        .or_else(|| by("api", "openai-completions"))
        .or_else(|| models.first())
}

/// `applyModelsJson`, then an extension's registration (`applyExtension`), then the
/// `models.json` `modelOverrides`: the provider's models, or the structural error Pi reports.
pub(crate) fn compose_models(
    provider: &str,
    base: Vec<JsObject>,
    config: Option<&ProviderConfig>,
    extension: Option<&JsObject>,
) -> Result<Vec<JsObject>, String> {
    let models = match config {
        Some(config) => apply_models_json(provider, base, config)?,
        None => base,
    };
    let models = match extension {
        Some(ext) => super::extension_config::apply_extension(provider, models, ext)?,
        None => models,
    };
    let Some(config) = config else {
        return Ok(models);
    };
    Ok(models
        .into_iter()
        .map(|m| {
            let id = str_of(Some(&m), "id").unwrap_or_default().to_string();
            match config.model_override(&id) {
                Some(ov) => apply_model_override(m, ov),
                None => m,
            }
        })
        .collect())
}

/// `applyModelsJson`: the provider's `baseUrl`/`compat` onto its models, `models` entries
/// replacing or appending.
fn apply_models_json(
    provider: &str,
    base: Vec<JsObject>,
    config: &ProviderConfig,
) -> Result<Vec<JsObject>, String> {
    if config.oauth.is_some() && config.base_url.is_none() {
        return Err(format!(
            "Provider {provider}: \"baseUrl\" is required when \"oauth\" is set."
        ));
    }
    let has_models = config.models.as_ref().is_some_and(|m| !m.is_empty());
    let has_overrides = config
        .model_overrides
        .as_ref()
        .is_some_and(|o| !o.is_empty());
    let specifies_something = has_models
        || config.base_url.is_some()
        || config.headers.is_some()
        || config.compat.is_some()
        || has_overrides
        || config.api_key.is_some()
        || config.oauth.is_some()
        || config.auth_header.is_some();
    if !specifies_something {
        return Err(format!(
            "Provider {provider}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
        ));
    }
    let keep_base_url = config.oauth.as_deref() == Some("radius");
    let mut models: Vec<JsObject> = base
        .into_iter()
        .map(|mut m| {
            if !keep_base_url && let Some(url) = &config.base_url {
                m.insert("baseUrl".into(), Value::String(url.clone()));
            }
            let compat = merge_compat(
                m.get("compat").and_then(Value::as_object),
                config.compat.as_ref(),
            );
            set(&mut m, "compat", compat.map(Value::Object));
            m
        })
        .collect();
    for def in config.models.iter().flatten() {
        let id = str_of(Some(def), "id").unwrap_or_default();
        let existing = models
            .iter()
            .position(|m| str_of(Some(m), "id") == Some(id));
        let api = str_of(Some(def), "api").or(config.api.as_deref());
        let model = model_from_json(provider, def, config, find_defaults(&models, id, api))?;
        match existing {
            Some(i) => models[i] = model,
            None => models.push(model),
        }
    }
    Ok(models)
}

/// Drops `undefined` keys and reads the object as a [`Model`] (key order kept).
pub(crate) fn to_model(mut obj: JsObject) -> Result<Model, String> {
    obj.retain(|_, v| !v.is_null());
    let id = str_of(Some(&obj), "id").unwrap_or_default().to_string();
    serde_json::from_value(Value::Object(obj)).map_err(|e| format!("model {id}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use serde_json::json;

    fn obj(v: Value) -> JsObject {
        v.as_object().cloned().unwrap_or_default()
    }

    fn config(v: Value) -> ProviderConfig {
        ProviderConfig::from_object(&obj(v))
    }

    #[test]
    fn custom_model_gets_defaults_in_pi_key_order() {
        let c = config(
            json!({"baseUrl": "http://h/v1", "api": "openai-completions", "apiKey": "k",
            "models": [{"id": "m"}]}),
        );
        let models = compose_models("p", vec![], Some(&c), None).unwrap_or_default();
        let m = to_model(models[0].clone()).map(|m| to_js_string(&m).unwrap_or_default());
        assert_eq!(
            m,
            Ok(r#"{"id":"m","name":"m","api":"openai-completions","provider":"p","baseUrl":"http://h/v1","reasoning":false,"input":["text"],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":128000,"maxTokens":16384}"#.to_string())
        );
    }

    #[test]
    fn override_on_catalog_model_appends_new_keys_after_existing() {
        let base = obj(
            json!({"id": "a", "name": "A", "api": "x", "provider": "p", "baseUrl": "u",
            "reasoning": true, "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0,
            "cacheWrite": 0}, "contextWindow": 10, "maxTokens": 5, "type": "chat"}),
        );
        let c = config(json!({"modelOverrides": {"a": {"cost": {"input": 3},
            "samplingParams": {"temperature": 0.5}, "compat": {"supportsStore": false}}}}));
        let models = compose_models("p", vec![base], Some(&c), None).unwrap_or_default();
        let m = to_model(models[0].clone()).map(|m| to_js_string(&m).unwrap_or_default());
        assert_eq!(
            m,
            Ok(r#"{"id":"a","name":"A","api":"x","provider":"p","baseUrl":"u","reasoning":true,"input":["text"],"cost":{"input":3,"output":2,"cacheRead":0,"cacheWrite":0},"contextWindow":10,"maxTokens":5,"type":"chat","compat":{"supportsStore":false},"samplingParams":{"temperature":0.5}}"#.to_string())
        );
    }

    #[test]
    fn structural_errors_name_the_provider() {
        let c = config(json!({"models": [{"id": "m"}], "apiKey": "k"}));
        assert_eq!(
            compose_models("p", vec![], Some(&c), None),
            Err(
                "Provider p, model m: no \"api\" specified. Set at provider or model level.".into()
            )
        );
        let c = config(json!({"name": "x"}));
        assert_eq!(
            compose_models("p", vec![], Some(&c), None),
            Err("Provider p: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\".".into())
        );
    }

    #[test]
    fn compat_merges_nested_routing_objects() {
        let base = obj(json!({"openRouterRouting": {"only": ["a"]}, "x": 1}));
        let over = obj(json!({"openRouterRouting": {"sort": "price"}, "y": 2}));
        assert_eq!(
            merge_compat(Some(&base), Some(&over)).map(Value::Object),
            Some(json!({"openRouterRouting": {"only": ["a"], "sort": "price"}, "x": 1, "y": 2}))
        );
    }
}
