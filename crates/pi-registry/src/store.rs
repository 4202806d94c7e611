//! `<agent-dir>/models-store.json`: provider catalogs Pi cached from earlier online refreshes.
//! Pi restores them even offline; this module applies them (`pi update --models` writes them,
//! see `catalog_refresh.rs`):
//!
//! * built-in providers: a cached pi.dev catalog newer than the bundled data overlays it by id;
//! * `openrouter`: a saved personalized list replaces the catalog when non-empty;
//! * `radius` (and `oauth: "radius"` providers): a saved gateway catalog replaces the baseline.

use super::models_json::JsObject;
use serde_json::{Map, Value};
use std::path::Path;

#[derive(Debug, Default)]
pub(crate) struct ModelsStore {
    entries: Map<String, Value>,
}

/// How a provider's cached catalog combines with its bundled models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKind {
    Remote,
    Personalized,
    Replace,
}

impl ModelsStore {
    /// An unreadable or invalid store is ignored, as Pi's refresh of it fails per provider.
    pub(crate) fn load(path: &Path) -> ModelsStore {
        let entries = std::fs::read(path)
            .ok()
            .and_then(|b| {
                let text = String::from_utf8_lossy(&b).into_owned();
                let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_string();
                pi_js::parse::parse_js_json(&text).ok()
            })
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        ModelsStore { entries }
    }

    /// `provider`'s entry as stored.
    pub(crate) fn entry(&self, provider: &str) -> Option<&Value> {
        self.entries.get(provider)
    }

    /// The cached models of `provider` to apply, if any, given the bundled data's date.
    fn cached(
        &self,
        provider: &str,
        kind: StoreKind,
        bundled_at: Option<f64>,
    ) -> Option<Vec<JsObject>> {
        let entry = self.entries.get(provider)?.as_object()?;
        if kind == StoreKind::Remote {
            let newer = match (
                entry.get("lastModified").and_then(Value::as_f64),
                bundled_at,
            ) {
                (_, None) => true,
                (Some(modified), Some(at)) => modified > at,
                (None, Some(_)) => false,
            };
            if !newer {
                return None;
            }
        }
        let models = entry.get("models")?.as_array()?;
        Some(
            models
                .iter()
                .filter_map(Value::as_object)
                .filter(|m| m.get("provider").and_then(Value::as_str) == Some(provider))
                .filter(|m| matches!(model_type(m), "chat" | "image" | "classifier"))
                .cloned()
                .collect(),
        )
    }

    /// `base` with the cached catalog applied; `None` when nothing changes.
    pub(crate) fn apply(
        &self,
        provider: &str,
        kind: StoreKind,
        bundled_at: Option<f64>,
        base: impl FnOnce() -> Vec<JsObject>,
    ) -> Option<Vec<JsObject>> {
        let cached = self.cached(provider, kind, bundled_at)?;
        let chat: Vec<JsObject> = cached
            .into_iter()
            .filter(|m| model_type(m) == "chat")
            .collect();
        match kind {
            StoreKind::Remote => {
                let mut merged = base();
                for model in chat {
                    let id = model.get("id").cloned();
                    match merged.iter().position(|m| m.get("id") == id.as_ref()) {
                        Some(i) => merged[i] = model,
                        None => merged.push(model),
                    }
                }
                Some(merged)
            }
            StoreKind::Personalized if chat.is_empty() => None,
            StoreKind::Personalized | StoreKind::Replace => Some(chat),
        }
    }
}

fn model_type(model: &JsObject) -> &str {
    model.get("type").and_then(Value::as_str).unwrap_or("chat")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store(v: Value) -> ModelsStore {
        ModelsStore {
            entries: v.as_object().cloned().unwrap_or_default(),
        }
    }

    fn ids(models: Option<Vec<JsObject>>) -> Option<Vec<String>> {
        models.map(|m| {
            m.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
    }

    #[test]
    fn remote_overlay_applies_only_when_newer() {
        let s = store(json!({"groq": {"models": [
            {"id": "b", "provider": "groq", "name": "B2"},
            {"id": "c", "provider": "groq"},
            {"id": "x", "provider": "other"}], "lastModified": 10}}));
        let base = || {
            vec![json!({"id": "a"}), json!({"id": "b"})]
                .into_iter()
                .filter_map(|v| v.as_object().cloned())
                .collect()
        };
        assert_eq!(
            ids(s.apply("groq", StoreKind::Remote, Some(5.0), base)),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(
            ids(s.apply("groq", StoreKind::Remote, Some(20.0), base)),
            None
        );
    }

    #[test]
    fn replace_kinds_drop_the_baseline() {
        let s = store(json!({"radius": {"models": []}, "openrouter": {"models": []}}));
        assert_eq!(
            ids(s.apply("radius", StoreKind::Replace, None, Vec::new)),
            Some(vec![])
        );
        assert_eq!(
            ids(s.apply("openrouter", StoreKind::Personalized, None, Vec::new)),
            None
        );
    }
}
