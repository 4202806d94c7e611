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

impl ModelsStore {
    /// The classifier and image models of `provider`: `base` (the bundled ones) with the cached
    /// catalog applied the way its chat models are (merged by id for a remote catalog, replaced
    /// for a personalized or replacing one).
    pub(crate) fn apply_typed(
        &self,
        provider: &str,
        kind: StoreKind,
        bundled_at: Option<f64>,
        base: Vec<JsObject>,
    ) -> Vec<JsObject> {
        let Some(cached) = self.cached(provider, kind, bundled_at) else {
            return base;
        };
        let has_chat = cached.iter().any(|m| model_type(m) == "chat");
        let typed: Vec<JsObject> = cached
            .into_iter()
            .filter(|m| model_type(m) != "chat")
            .collect();
        match kind {
            StoreKind::Remote => {
                let mut merged = base;
                for model in typed {
                    let id = model.get("id").cloned();
                    match merged.iter().position(|m| m.get("id") == id.as_ref()) {
                        Some(i) => merged[i] = model,
                        None => merged.push(model),
                    }
                }
                merged
            }
            StoreKind::Personalized if !has_chat => base,
            StoreKind::Personalized | StoreKind::Replace => typed,
        }
    }

    /// How `provider`'s cached catalog combines with its bundled models.
    pub(crate) fn kind_of(provider: &str) -> StoreKind {
        match provider {
            "openrouter" => StoreKind::Personalized,
            "radius" => StoreKind::Replace,
            _ => StoreKind::Remote,
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
    fn typed_models_follow_the_cached_catalog() {
        let s = store(json!({
            "typesafe": {"models": [
                {"id": "jev-latest", "provider": "typesafe", "type": "classifier", "name": "Jev 2"},
                {"id": "jev-next", "provider": "typesafe", "type": "classifier"},
                {"id": "chat-1", "provider": "typesafe"}], "lastModified": 10},
            "openrouter": {"models": [{"id": "img", "provider": "openrouter", "type": "image"}]}
        }));
        let base = vec![json!({"id": "jev-latest", "type": "classifier", "name": "Jev"})]
            .into_iter()
            .filter_map(|v| v.as_object().cloned())
            .collect::<Vec<_>>();
        let merged = s.apply_typed("typesafe", StoreKind::Remote, Some(5.0), base.clone());
        assert_eq!(
            ids(Some(merged.clone())),
            Some(vec!["jev-latest".into(), "jev-next".into()])
        );
        assert_eq!(merged[0]["name"], "Jev 2");
        let old = s.apply_typed("typesafe", StoreKind::Remote, Some(20.0), base.clone());
        assert_eq!(old[0]["name"], "Jev");
        // A personalized catalog without chat models leaves the bundled ones.
        let kept = s.apply_typed("openrouter", StoreKind::Personalized, None, base);
        assert_eq!(ids(Some(kept)), Some(vec!["jev-latest".into()]));
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
