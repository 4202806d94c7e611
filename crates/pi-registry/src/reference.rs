//! Turning a model reference typed by a user (`--model`, `--models`, `enabledModels`) into models
//! (`model-resolver.js` `resolveModelReference`): exact `provider/id` or id, then fuzzy id/name
//! matches, with an optional `:<thinking>` suffix.

use pi_js::locale_compare;
use pi_protocol::{Model, ThinkingLevel};
use std::collections::BTreeSet;
use std::sync::Arc;

/// What resolution needs to know of a model; identity (`same`) stands in for JavaScript object
/// identity.
pub(crate) trait Candidate: Clone {
    fn provider(&self) -> &str;
    fn id(&self) -> &str;
    fn name(&self) -> &str;
    fn same(&self, other: &Self) -> bool;
}

impl Candidate for Arc<Model> {
    fn provider(&self) -> &str {
        &self.provider
    }
    fn id(&self) -> &str {
        &self.id
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(self, other)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SuffixMode {
    /// `:level` is never split off.
    None,
    /// An invalid `:suffix` is dropped with a warning.
    Lenient,
    /// An invalid `:suffix` stays part of the id.
    Strict,
}

#[derive(Debug, Clone)]
pub(crate) struct Request<'a> {
    pub text: &'a str,
    pub provider: Option<&'a str>,
    pub suffix: SuffixMode,
    pub fuzzy: bool,
}

/// Where an unresolved reference would point if used as a custom id of a known provider.
#[derive(Debug, Clone)]
pub(crate) struct Target<C> {
    pub provider: String,
    pub provider_models: Vec<C>,
    pub model_text: String,
    pub model_id: String,
    pub thinking: Option<ThinkingLevel>,
}

#[derive(Debug, Clone)]
pub(crate) enum Status<C> {
    Resolved(C),
    Ambiguous {
        candidates: Vec<C>,
        usable_count: usize,
    },
    NotFound(Option<Target<C>>),
}

#[derive(Debug, Clone)]
pub(crate) struct Resolution<C> {
    pub status: Status<C>,
    pub thinking: Option<ThinkingLevel>,
    pub warning: Option<String>,
}

impl<C> Resolution<C> {
    fn of(status: Status<C>) -> Resolution<C> {
        Resolution {
            status,
            thinking: None,
            warning: None,
        }
    }

    fn not_found() -> Resolution<C> {
        Resolution::of(Status::NotFound(None))
    }

    fn is_not_found(&self) -> bool {
        matches!(self.status, Status::NotFound(_))
    }
}

fn split_thinking_suffix(text: &str) -> Option<(&str, ThinkingLevel)> {
    let colon = text.rfind(':')?;
    let level = ThinkingLevel::parse(&text[colon + 1..])?;
    Some((&text[..colon], level))
}

/// `provider/rest` against the known provider ids, longest id first.
fn split_provider_prefix<C: Candidate>(text: &str, models: &[C]) -> Option<(String, String)> {
    let lower: Vec<char> = text.to_lowercase().chars().collect();
    let original: Vec<char> = text.chars().collect();
    let mut best: Option<(String, String)> = None;
    let mut seen = BTreeSet::new();
    for model in models {
        let provider = model.provider();
        if !seen.insert(provider) {
            continue;
        }
        let prefix = provider.trim().to_lowercase();
        let prefix_len = prefix.chars().count();
        if prefix.is_empty()
            || best
                .as_ref()
                .is_some_and(|(p, _)| p.chars().count() >= provider.chars().count())
        {
            continue;
        }
        let Some(slash) = (prefix_len..lower.len()).find(|&i| lower[i] == '/') else {
            continue;
        };
        let head: String = lower[..slash].iter().collect();
        if head.trim() != prefix {
            continue;
        }
        let rest: String = original
            .get(slash + 1..)
            .unwrap_or_default()
            .iter()
            .collect();
        let rest = rest.trim();
        if !rest.is_empty() {
            best = Some((provider.to_string(), rest.to_string()));
        }
    }
    best
}

fn fuzzy_matches<C: Candidate>(text: &str, models: &[C]) -> Vec<C> {
    let lower = text.to_lowercase();
    models
        .iter()
        .filter(|m| {
            m.id().to_lowercase().contains(&lower) || m.name().to_lowercase().contains(&lower)
        })
        .cloned()
        .collect()
}

fn is_alias(id: &str) -> bool {
    let dated = id.len() >= 9 && {
        let tail = &id.as_bytes()[id.len() - 9..];
        tail[0] == b'-' && tail[1..].iter().all(u8::is_ascii_digit)
    };
    id.ends_with("-latest") || !dated
}

/// Aliases (`claude-sonnet-4-5`) before dated ids, then the id that sorts last.
fn best_fuzzy_match<C: Candidate>(matches: &[C]) -> Option<C> {
    let aliases: Vec<&C> = matches.iter().filter(|m| is_alias(m.id())).collect();
    let mut pool: Vec<&C> = if aliases.is_empty() {
        matches.iter().collect()
    } else {
        aliases
    };
    pool.sort_by(|a, b| locale_compare(b.id(), a.id()));
    pool.first().map(|m| (*m).clone())
}

fn distinct_providers<C: Candidate>(models: &[C]) -> usize {
    models
        .iter()
        .map(|m| m.provider())
        .collect::<BTreeSet<_>>()
        .len()
}

fn select_reference<C: Candidate>(
    text: &str,
    pool: &[C],
    fuzzy: bool,
    usable: &dyn Fn(&str) -> bool,
) -> Option<Resolution<C>> {
    let lower = text.to_lowercase();
    let raw: Vec<C> = pool
        .iter()
        .filter(|m| m.id().to_lowercase() == lower)
        .cloned()
        .collect();
    let named = split_provider_prefix(text, pool).and_then(|(provider, model_text)| {
        let provider_models: Vec<C> = pool
            .iter()
            .filter(|m| m.provider() == provider)
            .cloned()
            .collect();
        let lower_text = model_text.to_lowercase();
        provider_models
            .iter()
            .find(|m| m.id().to_lowercase() == lower_text)
            .cloned()
            .or_else(|| raw.iter().find(|m| m.provider() == provider).cloned())
            .or_else(|| {
                fuzzy
                    .then(|| best_fuzzy_match(&fuzzy_matches(&model_text, &provider_models)))
                    .flatten()
            })
    });
    let others: Vec<C> = raw
        .iter()
        .filter(|m| named.as_ref().is_none_or(|n| !n.same(m)))
        .cloned()
        .collect();
    let mut candidates: Vec<C> = named.iter().cloned().collect();
    candidates.extend(others.iter().cloned());
    if candidates.is_empty() {
        return None;
    }
    if distinct_providers(&candidates) == 1 {
        return Some(Resolution::of(Status::Resolved(candidates[0].clone())));
    }
    if let Some(n) = named.as_ref().filter(|n| usable(n.provider())) {
        return Some(Resolution::of(Status::Resolved(n.clone())));
    }
    let usable_others: Vec<&C> = others.iter().filter(|m| usable(m.provider())).collect();
    if usable_others.len() == 1 {
        return Some(Resolution::of(Status::Resolved(usable_others[0].clone())));
    }
    if let (0, Some(n)) = (usable_others.len(), named.as_ref()) {
        return Some(Resolution::of(Status::Resolved(n.clone())));
    }
    Some(Resolution::of(Status::Ambiguous {
        candidates,
        usable_count: usable_others.len(),
    }))
}

fn select_fuzzy<C: Candidate>(
    matches: Vec<C>,
    usable: &dyn Fn(&str) -> bool,
) -> Option<Resolution<C>> {
    if matches.is_empty() {
        return None;
    }
    let usable_matches: Vec<C> = if distinct_providers(&matches) > 1 {
        matches
            .iter()
            .filter(|m| usable(m.provider()))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    let has_usable = !usable_matches.is_empty();
    let pool = if has_usable { usable_matches } else { matches };
    let best = best_fuzzy_match(&pool)?;
    // The same id on several providers would otherwise be decided by catalog order.
    let tied: Vec<C> = pool
        .iter()
        .filter(|m| m.id() == best.id())
        .cloned()
        .collect();
    if distinct_providers(&tied) == 1 {
        return Some(Resolution::of(Status::Resolved(best)));
    }
    let usable_count = if has_usable { tied.len() } else { 0 };
    Some(Resolution::of(Status::Ambiguous {
        candidates: tied,
        usable_count,
    }))
}

fn resolve_text<C: Candidate>(
    text: &str,
    request: &Request,
    pool: &[C],
    usable: &dyn Fn(&str) -> bool,
) -> Resolution<C> {
    if let Some(r) = select_reference(text, pool, request.fuzzy, usable) {
        return r;
    }
    if request.fuzzy
        && let Some(r) = select_fuzzy(fuzzy_matches(text, pool), usable)
    {
        return r;
    }
    if request.suffix == SuffixMode::None {
        return Resolution::not_found();
    }
    if let Some((base, level)) = split_thinking_suffix(text) {
        let mut inner = resolve_text(base, request, pool, usable);
        if !inner.is_not_found() {
            inner.thinking = if inner.warning.is_some() {
                None
            } else {
                Some(level)
            };
        }
        return inner;
    }
    if request.suffix == SuffixMode::Strict {
        return Resolution::not_found();
    }
    let Some(colon) = text.rfind(':') else {
        return Resolution::not_found();
    };
    let mut inner = resolve_text(&text[..colon], request, pool, usable);
    if !inner.is_not_found() {
        inner.thinking = None;
        inner.warning = Some(format!(
            "Invalid thinking level \"{}\" in pattern \"{text}\". Using default instead.",
            &text[colon + 1..]
        ));
    }
    inner
}

/// `resolveModelReference`. `usable` only breaks ties between providers.
pub(crate) fn resolve_reference<C: Candidate>(
    request: &Request,
    models: &[C],
    usable: &dyn Fn(&str) -> bool,
) -> Resolution<C> {
    let text = request.text.trim();
    if text.is_empty() {
        return Resolution::not_found();
    }
    let constraint = request.provider.map(str::to_lowercase);
    let pool: Vec<C> = match &constraint {
        Some(c) => models
            .iter()
            .filter(|m| m.provider().to_lowercase() == *c)
            .cloned()
            .collect(),
        None => models.to_vec(),
    };
    let result = resolve_text(text, request, &pool, usable);
    if !result.is_not_found() {
        return result;
    }
    let split = split_provider_prefix(text, &pool);
    let anchor = match (&constraint, &split) {
        (Some(_), _) => pool.first().cloned(),
        (None, Some((provider, _))) => pool.iter().find(|m| m.provider() == provider).cloned(),
        (None, None) => None,
    };
    let Some(anchor) = anchor else {
        return result;
    };
    let model_text = split.map(|(_, t)| t).unwrap_or_else(|| text.to_string());
    let suffix = match request.suffix {
        SuffixMode::None => None,
        _ => split_thinking_suffix(&model_text).map(|(b, l)| (b.to_string(), l)),
    };
    let mut provider_models = vec![anchor.clone()];
    provider_models.extend(
        pool.iter()
            .filter(|m| m.provider() == anchor.provider() && !m.same(&anchor))
            .cloned(),
    );
    Resolution::of(Status::NotFound(Some(Target {
        provider: anchor.provider().to_string(),
        provider_models,
        model_id: suffix
            .as_ref()
            .map(|(b, _)| b.clone())
            .unwrap_or_else(|| model_text.clone()),
        thinking: suffix.map(|(_, l)| l),
        model_text,
    })))
}
