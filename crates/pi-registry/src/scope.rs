//! `--models` / `enabledModels` scope patterns and the `--model` flag (`model-resolver.js`
//! `resolveModelScopeFromModels`, `resolveCliModel`).

use super::catalog::catalog;
use super::glob::glob_match;
use super::model_registry::ModelRegistry;
use super::reference::{Request, Status, SuffixMode, resolve_reference};
use pi_js::locale_compare;
use pi_protocol::{Model, ThinkingLevel};
use std::sync::Arc;

/// A model in the cycling scope, with the thinking level its pattern asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedModel {
    pub model: Arc<Model>,
    pub thinking: Option<ThinkingLevel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagnosticKind {
    Error,
    Warning,
}

/// A startup message; Pi prints it to stderr as `Error: ...` / `Warning: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    pub message: String,
}

impl Diagnostic {
    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind: DiagnosticKind::Warning,
            message: message.into(),
        }
    }

    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind: DiagnosticKind::Error,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            DiagnosticKind::Error => write!(f, "Error: {}", self.message),
            DiagnosticKind::Warning => write!(f, "Warning: {}", self.message),
        }
    }
}

fn same_model(a: &Model, b: &Model) -> bool {
    a.id == b.id && a.provider == b.provider
}

fn ambiguous_warning(pattern: &str, candidates: &[Arc<Model>]) -> Diagnostic {
    let mut providers: Vec<&str> = candidates.iter().map(|m| m.provider.as_str()).collect();
    providers.sort_by(|a, b| locale_compare(a, b));
    providers.dedup();
    Diagnostic::warning(format!(
        "Pattern \"{pattern}\" matches several providers: {}. Use provider/id to choose one.",
        providers.join(", ")
    ))
}

/// Resolves scope patterns against `models` (the available ones). Patterns with `*`, `?` or `[`
/// are globs over `provider/id` and `id`; others resolve like `--model`, every candidate of an
/// ambiguous id being added with a warning.
pub fn resolve_scope(
    patterns: &[String],
    models: &[Arc<Model>],
) -> (Vec<ScopedModel>, Vec<Diagnostic>) {
    let mut scoped: Vec<ScopedModel> = Vec::new();
    let mut diagnostics = Vec::new();
    let add = |scoped: &mut Vec<ScopedModel>, model: &Arc<Model>, thinking| {
        if !scoped.iter().any(|s| same_model(&s.model, model)) {
            scoped.push(ScopedModel {
                model: model.clone(),
                thinking,
            });
        }
    };
    let no_match = |p: &str| Diagnostic::warning(format!("No models match pattern \"{p}\""));
    for pattern in patterns {
        if pattern.contains(['*', '?', '[']) {
            let (glob, thinking) = match pattern.rfind(':') {
                Some(i) => match ThinkingLevel::parse(&pattern[i + 1..]) {
                    Some(level) => (&pattern[..i], Some(level)),
                    None => (pattern.as_str(), None),
                },
                None => (pattern.as_str(), None),
            };
            // Ids such as `bracketed-model[1m]` are not globs.
            let exact = Request {
                text: glob,
                provider: None,
                suffix: SuffixMode::None,
                fuzzy: false,
            };
            let matches: Vec<Arc<Model>> = match resolve_reference(&exact, models, &|_| true).status
            {
                Status::Resolved(m) => vec![m],
                Status::Ambiguous { candidates, .. } => {
                    diagnostics.push(ambiguous_warning(pattern, &candidates));
                    candidates
                }
                Status::NotFound(_) => models
                    .iter()
                    .filter(|m| {
                        glob_match(&format!("{}/{}", m.provider, m.id), glob)
                            || glob_match(&m.id, glob)
                    })
                    .cloned()
                    .collect(),
            };
            if matches.is_empty() {
                diagnostics.push(no_match(pattern));
            }
            for m in &matches {
                add(&mut scoped, m, thinking);
            }
            continue;
        }
        let request = Request {
            text: pattern,
            provider: None,
            suffix: SuffixMode::Lenient,
            fuzzy: true,
        };
        let result = resolve_reference(&request, models, &|_| true);
        if let Some(w) = &result.warning {
            diagnostics.push(Diagnostic::warning(w.clone()));
        }
        let matches = match result.status {
            Status::NotFound(_) => {
                diagnostics.push(no_match(pattern));
                continue;
            }
            Status::Resolved(m) => vec![m],
            Status::Ambiguous { candidates, .. } => {
                diagnostics.push(ambiguous_warning(pattern, &candidates));
                candidates
            }
        };
        for m in &matches {
            add(&mut scoped, m, result.thinking);
        }
    }
    (scoped, diagnostics)
}

/// What `--provider` / `--model` selected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliModel {
    pub model: Option<Arc<Model>>,
    /// The `:<level>` suffix of the pattern, if it had a valid one.
    pub thinking: Option<ThinkingLevel>,
    pub warning: Option<String>,
    pub error: Option<String>,
}

impl ModelRegistry {
    /// `--models` patterns against the available models.
    pub fn resolve_scope(&self, patterns: &[String]) -> (Vec<ScopedModel>, Vec<Diagnostic>) {
        resolve_scope(patterns, self.available_models())
    }

    /// `resolveCliModel`: matches against all models (so `--api-key` can set a provider up);
    /// an unknown id on a known provider becomes a custom model cloned from the provider's
    /// default model, with a warning.
    pub fn resolve_cli_model(
        &self,
        cli_provider: Option<&str>,
        cli_model: &str,
        cli_thinking: Option<ThinkingLevel>,
        inline_api_key: bool,
    ) -> CliModel {
        if !self.has_models() {
            return CliModel {
                error: Some(
                    "No models available. Check your installation or add models to models.json."
                        .into(),
                ),
                ..CliModel::default()
            };
        }
        let provider = match cli_provider {
            Some(p) => match self.provider_with_models(p) {
                Some(id) => Some(id.to_string()),
                None => {
                    return CliModel {
                        error: Some(format!(
                            "Unknown provider \"{p}\". Use --list-models to see available providers/models."
                        )),
                        ..CliModel::default()
                    };
                }
            },
            None => None,
        };
        let models = self.model_refs_of(provider.as_deref());
        let request = Request {
            text: cli_model,
            provider: provider.as_deref(),
            suffix: SuffixMode::Strict,
            fuzzy: true,
        };
        let usable = |p: &str| !inline_api_key && self.has_configured_auth(p);
        let result = resolve_reference(&request, &models, &usable);
        let target = match result.status {
            Status::Resolved(found) => {
                let model = self.model_at(found.slot);
                return CliModel {
                    model,
                    thinking: result.thinking,
                    warning: result.warning,
                    error: None,
                };
            }
            Status::Ambiguous {
                candidates,
                usable_count,
            } => {
                let mut refs: Vec<String> = candidates
                    .iter()
                    .map(|m| format!("{}/{}", m.provider, m.id))
                    .collect();
                refs.sort_by(|a, b| locale_compare(a, b));
                let hint = if inline_api_key {
                    "--api-key does not choose a provider."
                } else if usable_count == 0 {
                    "No matching provider is authenticated."
                } else {
                    "More than one matching provider is authenticated."
                };
                return CliModel {
                    error: Some(format!(
                        "Model \"{cli_model}\" is ambiguous across providers: {}. {hint} Use --provider or provider/model.",
                        refs.join(", ")
                    )),
                    ..CliModel::default()
                };
            }
            Status::NotFound(None) => {
                return CliModel {
                    error: Some(format!(
                        "Model \"{cli_model}\" not found. Use --list-models to see available models."
                    )),
                    ..CliModel::default()
                };
            }
            Status::NotFound(Some(target)) => target,
        };
        // With --thinking the suffix stays part of the custom id.
        let model_id = if cli_thinking.is_some() {
            target.model_text.clone()
        } else {
            target.model_id.clone()
        };
        let fallback_thinking = if cli_thinking.is_some() {
            None
        } else {
            target.thinking
        };
        let default_id = catalog().default_model(&target.provider);
        let base = default_id
            .and_then(|d| target.provider_models.iter().find(|m| m.id == d))
            .or_else(|| target.provider_models.first())
            .and_then(|r| self.model_at(r.slot));
        let Some(base) = base else {
            return CliModel::default();
        };
        let mut model = (*base).clone();
        model.id = model_id.clone();
        model.name = model_id.clone();
        if cli_thinking
            .or(fallback_thinking)
            .is_some_and(|l| l != ThinkingLevel::Off)
        {
            model.reasoning = true;
        }
        CliModel {
            model: Some(Arc::new(model)),
            thinking: fallback_thinking,
            warning: Some(format!(
                "Model \"{model_id}\" not found for provider \"{}\". Using custom model id.",
                target.provider
            )),
            error: None,
        }
    }
}
