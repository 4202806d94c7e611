//! Choosing the model and thinking level at startup (`main.js` `buildSessionOptions`, `sdk.js`
//! `createAgentSession`, `findInitialModel`) and when switching models (`set_model`,
//! `cycle_model`).

use super::catalog::catalog;
use super::model_registry::ModelRegistry;
use super::scope::{Diagnostic, ScopedModel};
use super::thinking::clamp_thinking_str;
use pi_protocol::{Model, ThinkingLevel};
use std::sync::Arc;

/// Pi's default thinking level when nothing else sets one (clamped to the model).
pub const DEFAULT_THINKING_LEVEL: &str = "medium";

/// The settings that take part in model selection (merged global + project `settings.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    /// `defaultThinkingLevel`, unvalidated as Pi stores it.
    pub default_thinking_level: Option<String>,
    /// `modelThinkingLevels`: `"provider/id"` → level.
    pub model_thinking_levels: Vec<(String, String)>,
}

impl ModelSettings {
    fn per_model(&self, model: &Model) -> Option<&str> {
        let key = format!("{}/{}", model.provider, model.id);
        self.model_thinking_levels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What the session being resumed says about models (`None` fields for a new session).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionModelState {
    /// The session has messages (a resumed conversation).
    pub has_messages: bool,
    /// The last `model_change` on the current branch: `(provider, modelId)`.
    pub model: Option<(String, String)>,
    /// The level of the last `thinking_level_change` on the branch, if there is one.
    pub thinking_level: Option<String>,
}

/// Startup inputs: CLI flags, settings and the resumed session.
#[derive(Debug, Clone, Default)]
pub struct StartupRequest {
    pub cli_provider: Option<String>,
    pub cli_model: Option<String>,
    /// `--thinking` (already validated; an invalid value is only a warning elsewhere).
    pub cli_thinking: Option<ThinkingLevel>,
    pub cli_api_key: Option<String>,
    /// `--models` patterns, else the `enabledModels` setting.
    pub scope_patterns: Option<Vec<String>>,
    pub settings: ModelSettings,
    pub session: SessionModelState,
}

/// The result of startup selection.
#[derive(Debug, Clone, PartialEq)]
pub struct StartupSelection {
    /// `None` means Pi's placeholder model ([`Model::placeholder`]) is used.
    pub model: Option<Arc<Model>>,
    pub thinking_level: ThinkingLevel,
    /// The cycling scope (empty: cycle through all available models).
    pub scoped_models: Vec<ScopedModel>,
    /// In Pi's order; any error means Pi exits with status 1 after printing them.
    pub diagnostics: Vec<Diagnostic>,
}

impl StartupSelection {
    /// The model object `get_state` reports.
    pub fn model_or_placeholder(&self) -> Model {
        self.model
            .as_deref()
            .cloned()
            .unwrap_or_else(Model::placeholder)
    }
}

impl ModelRegistry {
    /// `findInitialModel` without scope: the saved default if usable, then a provider's
    /// preferred default among available models, then the first available model.
    pub fn initial_model(&self, settings: &ModelSettings) -> Option<Arc<Model>> {
        if let (Some(p), Some(id)) = (&settings.default_provider, &settings.default_model)
            && let Some(found) = self.find(p, id)
            && self.has_configured_auth(&found.provider)
        {
            return Some(found);
        }
        let available = self.available_models();
        for (provider, id) in catalog().default_models() {
            if let Some(m) = available
                .iter()
                .find(|m| m.provider == provider && m.id == id)
            {
                return Some(m.clone());
            }
        }
        available.first().cloned()
    }

    /// Runs Pi's startup model selection. `--api-key` is installed as a runtime key for the
    /// chosen model's provider, which is why this takes `&mut self`.
    pub fn select_startup(&mut self, req: &StartupRequest) -> StartupSelection {
        let mut diagnostics = Vec::new();
        let (scoped, scope_diagnostics) = match req.scope_patterns.as_deref() {
            Some(patterns) if !patterns.is_empty() => self.resolve_scope(patterns),
            _ => (Vec::new(), Vec::new()),
        };
        diagnostics.extend(scope_diagnostics);

        let mut model: Option<Arc<Model>> = None;
        let mut thinking: Option<String> = None;
        if let (Some(p), None) = (&req.cli_provider, &req.cli_model) {
            diagnostics.push(Diagnostic::error(format!(
                "--provider requires --model (for example: --provider {p} --model <pattern>)"
            )));
        }
        if let Some(pattern) = &req.cli_model {
            let resolved = self.resolve_cli_model(
                req.cli_provider.as_deref(),
                pattern,
                req.cli_thinking,
                req.cli_api_key.as_deref().is_some_and(|k| !k.is_empty()),
            );
            if let Some(w) = resolved.warning {
                diagnostics.push(Diagnostic::warning(w));
            }
            if let Some(e) = resolved.error {
                diagnostics.push(Diagnostic::error(e));
            }
            if let Some(m) = resolved.model {
                model = Some(m);
                if req.cli_thinking.is_none() {
                    thinking = resolved.thinking.map(|l| l.as_str().to_string());
                }
            }
        }
        if model.is_none() && !scoped.is_empty() && !req.session.has_messages {
            let s = &req.settings;
            let saved = match (&s.default_provider, &s.default_model) {
                (Some(p), Some(id)) => self.find(p, id),
                _ => None,
            };
            let pick = saved
                .and_then(|saved| {
                    scoped
                        .iter()
                        .find(|sm| sm.model.id == saved.id && sm.model.provider == saved.provider)
                })
                .unwrap_or(&scoped[0]);
            model = Some(pick.model.clone());
            if req.cli_thinking.is_none()
                && let Some(level) = pick.thinking
            {
                thinking = Some(level.as_str().to_string());
            }
        }
        if let Some(level) = req.cli_thinking {
            thinking = Some(level.as_str().to_string());
        }
        if let Some(key) = req.cli_api_key.as_deref().filter(|k| !k.is_empty()) {
            match &model {
                None => diagnostics.push(Diagnostic::error(
                    "--api-key requires a model to be specified via --model, --provider/--model, or --models",
                )),
                Some(m) => {
                    let provider = m.provider.clone();
                    self.set_runtime_api_key(&provider, key);
                }
            }
        }

        // createAgentSession: restore the session's model, else the initial model.
        let mut fallback: Option<String> = None;
        if model.is_none()
            && req.session.has_messages
            && let Some((p, id)) = &req.session.model
        {
            model = self
                .find(p, id)
                .filter(|m| self.has_configured_auth(&m.provider));
            if model.is_none() {
                fallback = Some(format!("Could not restore model {p}/{id}"));
            }
        }
        if model.is_none() {
            model = self.initial_model(&req.settings);
            fallback = match (&model, fallback) {
                (None, _) => Some(self.no_models_message()),
                (Some(m), Some(f)) => Some(format!("{f}. Using {}/{}", m.provider, m.id)),
                (Some(_), None) => None,
            };
        }
        let s = &req.settings;
        if thinking.is_none() && req.session.has_messages {
            thinking = Some(match &req.session.thinking_level {
                Some(level) => level.clone(),
                None => s
                    .default_thinking_level
                    .clone()
                    .unwrap_or_else(|| DEFAULT_THINKING_LEVEL.into()),
            });
        }
        if thinking.is_none() {
            thinking = model
                .as_deref()
                .and_then(|m| s.per_model(m))
                .map(str::to_string);
        }
        let level = thinking
            .or_else(|| s.default_thinking_level.clone())
            .unwrap_or_else(|| DEFAULT_THINKING_LEVEL.into());
        let thinking_level = match &model {
            None => ThinkingLevel::Off,
            Some(m) => clamp_thinking_str(m, &level),
        };
        if let Some(message) = fallback {
            diagnostics.push(Diagnostic::warning(message));
        }
        StartupSelection {
            model,
            thinking_level,
            scoped_models: scoped,
            diagnostics,
        }
    }

    /// `cycle_model`: the next model after `current` among the scoped models that are still
    /// available (or all available models without a scope). `None` when there is nothing else.
    /// Returns the model, its scoped thinking level, and whether the scope was used.
    pub fn cycle_target(
        &self,
        current: &Model,
        scoped: &[ScopedModel],
        forward: bool,
    ) -> Option<(Arc<Model>, Option<ThinkingLevel>, bool)> {
        let is_current = |m: &Model| m.id == current.id && m.provider == current.provider;
        if !scoped.is_empty() {
            let usable: Vec<&ScopedModel> = scoped
                .iter()
                .filter(|s| {
                    self.find_available(&s.model.provider, &s.model.id)
                        .is_some()
                })
                .collect();
            let index = usable.iter().position(|s| is_current(&s.model));
            let next = next_cycle_index(index, usable.len(), forward)?;
            return Some((usable[next].model.clone(), usable[next].thinking, true));
        }
        let available = self.available_models();
        let index = available.iter().position(|m| is_current(m));
        let next = next_cycle_index(index, available.len(), forward)?;
        Some((available[next].clone(), None, false))
    }
}

fn next_cycle_index(current: Option<usize>, len: usize, forward: bool) -> Option<usize> {
    if len == 0 {
        return None;
    }
    let Some(i) = current else {
        return Some(if forward { 0 } else { len - 1 });
    };
    if len == 1 {
        return None;
    }
    Some(if forward {
        (i + 1) % len
    } else {
        (i + len - 1) % len
    })
}

/// The thinking level after switching to `target` (`set_model`, `cycle_model`): the scoped
/// level, else the per-model setting, else `defaultThinkingLevel`, else the current level;
/// clamped to `target`.
pub fn thinking_for_model_switch(
    target: &Model,
    explicit: Option<ThinkingLevel>,
    settings: &ModelSettings,
    current: ThinkingLevel,
) -> ThinkingLevel {
    let level = match explicit {
        Some(l) => l.as_str().to_string(),
        None => settings
            .per_model(target)
            .map(str::to_string)
            .or_else(|| settings.default_thinking_level.clone())
            .unwrap_or_else(|| current.as_str().to_string()),
    };
    clamp_thinking_str(target, &level)
}
