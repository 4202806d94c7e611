//! Model and thinking-level commands (Pi's `setModel`, `cycleModel`, `setThinkingLevel`, ...).

use super::{Runtime, lock};
use pi_protocol::QueueMode;
use pi_protocol::event::SessionEvent;
use pi_protocol::model::Model;
use pi_protocol::results::CycleModelData;
use pi_protocol::thinking::ThinkingLevel;
use pi_registry::{clamp_thinking, next_thinking_level, supported_thinking_levels};
use std::sync::Arc;

impl Runtime {
    pub fn model(&self) -> Model {
        self.agent.with_state(|s| s.model.clone())
    }

    pub fn thinking_level(&self) -> ThinkingLevel {
        self.agent.with_state(|s| s.thinking_level)
    }

    pub fn available_models(&self) -> Vec<Model> {
        lock(&self.core.registry)
            .available_models()
            .iter()
            .map(|m| (**m).clone())
            .collect()
    }

    /// `set_model`: only models whose provider has usable auth; always records a model change.
    pub async fn set_model(&self, provider: &str, model_id: &str) -> Result<Model, String> {
        let found = lock(&self.core.registry).find_available(provider, model_id);
        let Some(model) = found else {
            return Err(pi_registry::model_not_found(provider, model_id));
        };
        let level = self.level_for_switch(&model, None);
        let previous = self.model();
        self.apply_model(&model);
        self.set_thinking_level(level).await;
        self.model_selected(&model, &previous, "set").await;
        Ok((*model).clone())
    }

    /// Extensions' `model_select`, awaited before the command's answer; not for the same model.
    async fn model_selected(&self, model: &Model, previous: &Model, source: &str) {
        if model.provider == previous.provider && model.id == previous.id {
            return;
        }
        self.core
            .ext_emit(
                "model_select",
                serde_json::json!({ "model": model, "previousModel": previous, "source": source }),
            )
            .await;
    }

    /// `cycle_model`: next scoped model (or next available one); `None` with nothing to switch to.
    pub async fn cycle_model(&self) -> Option<CycleModelData> {
        let current = self.model();
        let same = |m: &Model| m.provider == current.provider && m.id == current.id;
        let scoped_models = lock(&self.core.scoped_models).clone();
        let (next, explicit, is_scoped) = if !scoped_models.is_empty() {
            let available = self.available_models();
            let scoped: Vec<_> = scoped_models
                .iter()
                .filter(|s| {
                    available
                        .iter()
                        .any(|a| a.provider == s.model.provider && a.id == s.model.id)
                })
                .collect();
            let index = next_index(scoped.iter().position(|s| same(&s.model)), scoped.len())?;
            (
                Arc::clone(&scoped[index].model),
                scoped[index].thinking,
                true,
            )
        } else {
            let available: Vec<Arc<Model>> = lock(&self.core.registry).available_models().to_vec();
            let index = next_index(available.iter().position(|m| same(m)), available.len())?;
            (Arc::clone(&available[index]), None, false)
        };
        let level = self.level_for_switch(&next, explicit);
        self.apply_model(&next);
        self.set_thinking_level(level).await;
        self.model_selected(&next, &current, "cycle").await;
        Some(CycleModelData {
            model: (*next).clone(),
            thinking_level: self.thinking_level(),
            is_scoped,
        })
    }

    fn apply_model(&self, model: &Arc<Model>) {
        self.agent.with_state(|s| s.model = (**model).clone());
        if let Err(e) = lock(&self.core.session).append_model_change(&model.provider, &model.id) {
            eprintln!("pi: could not write to the session file: {e}");
        }
        self.core.tool_session.update(|info| {
            info.provider = Some(model.provider.clone());
            info.model_id = Some(model.id.clone());
            info.model_accepts_images = Some(
                model
                    .input
                    .iter()
                    .any(|i| matches!(i, pi_protocol::model::InputModality::Image)),
            );
        });
    }

    /// Pi's `_getThinkingLevelForModelSwitch`.
    fn level_for_switch(&self, model: &Model, explicit: Option<ThinkingLevel>) -> ThinkingLevel {
        if let Some(level) = explicit {
            return level;
        }
        let s = self.core.settings();
        s.model_thinking_level(&model.provider, &model.id)
            .or(s.default_thinking_level)
            .unwrap_or_else(|| self.thinking_level())
    }

    /// `set_thinking_level`: clamps to the model; records and announces only a real change.
    pub async fn set_thinking_level(&self, level: ThinkingLevel) {
        if let Some(event) = self.change_thinking_level(level).await {
            self.core.ext_emit("thinking_level_select", event).await;
        }
    }

    /// The change itself; returns the `thinking_level_select` payload when the level changed
    /// (callers answering an extension's synchronous call must not wait for the extensions).
    pub(crate) async fn change_thinking_level(
        &self,
        level: ThinkingLevel,
    ) -> Option<serde_json::Value> {
        let model = self.model();
        let effective = if supported_thinking_levels(&model).contains(&level) {
            level
        } else {
            clamp_thinking(&model, level)
        };
        let previous = self
            .agent
            .with_state(|s| std::mem::replace(&mut s.thinking_level, effective));
        self.core
            .tool_session
            .update(|info| info.thinking_level = Some(effective.as_str().to_string()));
        if effective != previous {
            if let Err(e) =
                lock(&self.core.session).append_thinking_level_change(effective.as_str())
            {
                eprintln!("pi: could not write to the session file: {e}");
            }
            self.core
                .emit(SessionEvent::ThinkingLevelChanged { level: effective })
                .await;
            return Some(serde_json::json!({ "level": effective, "previousLevel": previous }));
        }
        None
    }

    /// `cycle_thinking_level`: `None` for a model without reasoning.
    pub async fn cycle_thinking_level(&self) -> Option<ThinkingLevel> {
        let model = self.model();
        if !model.reasoning {
            return None;
        }
        let next = next_thinking_level(&model, self.thinking_level())?;
        self.set_thinking_level(next).await;
        Some(next)
    }

    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        supported_thinking_levels(&self.model())
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.agent.set_steering_mode(mode);
        if let Err(e) = lock(&self.core.res).settings.set_steering_mode(mode) {
            eprintln!("pi: {e}");
        }
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.agent.set_follow_up_mode(mode);
        if let Err(e) = lock(&self.core.res).settings.set_follow_up_mode(mode) {
            eprintln!("pi: {e}");
        }
    }

    pub fn set_auto_compaction(&self, enabled: bool) {
        if let Err(e) = lock(&self.core.res)
            .settings
            .set_compaction_enabled(enabled)
        {
            eprintln!("pi: {e}");
        }
    }

    pub fn set_auto_retry(&self, enabled: bool) {
        if let Err(e) = lock(&self.core.res).settings.set_retry_enabled(enabled) {
            eprintln!("pi: {e}");
        }
    }

    /// `abort_retry`: cancels a pending retry backoff. Returns false when the answer is left
    /// to the retry, which writes it right after its `auto_retry_end`.
    pub fn abort_retry(&self, id: Option<serde_json::Value>) -> bool {
        let mut run = lock(&self.core.run);
        match run.retry_cancel.clone() {
            Some(cancel) => {
                run.abort_retry_waiters.push(id);
                cancel.cancel();
                false
            }
            None => true,
        }
    }
}

/// Pi's `getNextCycleIndex` going forward: `None` when there is nothing else to switch to.
fn next_index(current: Option<usize>, len: usize) -> Option<usize> {
    match current {
        _ if len == 0 => None,
        None => Some(0),
        Some(_) if len == 1 => None,
        Some(i) => Some((i + 1) % len),
    }
}
