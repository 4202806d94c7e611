//! Virtual models (`pi.registerVirtualModel`): a model an extension routes to a physical one
//! per request. The registry lists them under their provider (hiding a physical chat model of
//! the same id), counts a provider of only virtual models as configured, and resolves what a
//! router answers (`model-runtime.js:resolveModel`): a physical model with credentials.

use super::model_registry::ModelRegistry;
use super::virtual_api::{VIRTUAL_MODEL_API, is_virtual};
use pi_protocol::Model;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];

/// `createVirtualModel`: the model a definition describes, in Pi's key order.
fn virtual_model(def: &Map<String, Value>) -> Result<Model, String> {
    let text = |k: &str| def.get(k).and_then(Value::as_str).unwrap_or("");
    let levels: Vec<String> = def
        .get("thinkingLevels")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|l| l.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_else(|| vec!["off".to_string()]);
    let mut map = Map::new();
    for level in LEVELS {
        let v = if levels.iter().any(|l| l == level) {
            json!(level)
        } else {
            Value::Null
        };
        map.insert(level.to_string(), v);
    }
    let model = json!({
        "id": text("id"),
        // Pi leaves `name` out when the definition has none; our model always has one.
        "name": def.get("name").cloned().unwrap_or_else(|| json!(text("id"))),
        "api": VIRTUAL_MODEL_API,
        "provider": text("provider"),
        "baseUrl": "",
        "reasoning": levels.iter().any(|l| l != "off"),
        "thinkingLevelMap": map,
        "input": def.get("input").cloned().unwrap_or_else(|| json!(["text", "image"])),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": def.get("contextWindow").cloned().unwrap_or(json!(0)),
        "maxTokens": def.get("maxTokens").cloned().unwrap_or(json!(0)),
    });
    serde_json::from_value(model).map_err(|e| format!("invalid virtual model: {e}"))
}

impl ModelRegistry {
    /// `registerVirtualModel(definition)`: replaces a virtual model of the same provider and id.
    pub fn register_virtual_model(&mut self, def: &Map<String, Value>) -> Result<(), String> {
        let provider = def.get("provider").and_then(Value::as_str).unwrap_or("");
        let id = def.get("id").and_then(Value::as_str).unwrap_or("");
        if pi_js::trim(provider).is_empty() || pi_js::trim(id).is_empty() {
            return Err("Virtual model provider and id must not be empty.".into());
        }
        if self.find(provider, id).is_some_and(|m| !is_virtual(&m)) {
            return Err(format!(
                "Virtual model {provider}/{id} conflicts with a physical model."
            ));
        }
        let model = Arc::new(virtual_model(def)?);
        match self
            .virtual_models
            .iter_mut()
            .find(|m| m.provider == provider && m.id == id)
        {
            Some(slot) => *slot = model,
            None => self.virtual_models.push(model),
        }
        self.rebuild();
        Ok(())
    }

    /// `unregisterVirtualModel(provider, id)`.
    pub fn unregister_virtual_model(&mut self, provider: &str, id: &str) {
        let before = self.virtual_models.len();
        self.virtual_models
            .retain(|m| !(m.provider == provider && m.id == id));
        if self.virtual_models.len() != before {
            self.rebuild();
        }
    }

    /// Drops every virtual model (a new generation of extensions registers anew).
    pub fn clear_virtual_models(&mut self) {
        if !self.virtual_models.is_empty() {
            self.virtual_models.clear();
            self.rebuild();
        }
    }

    /// A chat model that is not virtual (`getPhysicalModel`).
    pub fn find_physical(&self, provider: &str, id: &str) -> Option<Arc<Model>> {
        self.find(provider, id).filter(|m| !is_virtual(m))
    }

    /// What a router answered, checked (`resolveModel`): the physical model, or Pi's error.
    pub fn resolve_route(
        &self,
        virtual_model: &Model,
        provider: &str,
        id: &str,
    ) -> Result<Arc<Model>, String> {
        let routed = format!(
            "Virtual model {}/{} routed to {provider}/{id}",
            virtual_model.provider, virtual_model.id
        );
        let target = self
            .find_physical(provider, id)
            .ok_or_else(|| format!("{routed}, which is not a physical model."))?;
        if !self.has_configured_auth(&target.provider) {
            return Err(format!("{routed}, which has no credentials."));
        }
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_becomes_pis_virtual_model() {
        let def = json!({"provider": "jev", "id": "auto", "name": "Auto", "thinkingLevels": ["low", "high"],
            "contextWindow": 1000, "maxTokens": 10, "route": true});
        let m = virtual_model(def.as_object().unwrap_or(&Map::new()))
            .map(|m| pi_js::json::to_js_string(&m).unwrap_or_default());
        assert_eq!(
            m,
            Ok(r#"{"id":"auto","name":"Auto","api":"pi-virtual","provider":"jev","baseUrl":"","reasoning":true,"thinkingLevelMap":{"off":null,"minimal":null,"low":"low","medium":null,"high":"high","xhigh":null,"max":null},"input":["text","image"],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":1000,"maxTokens":10}"#.to_string())
        );
    }
}
