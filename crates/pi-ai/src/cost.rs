//! What the wire adapters need of cost and thinking levels: thin names over the registry's
//! implementations, plus the `thinkingLevelMap` lookups the request builders use.

use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::Usage;

/// Fills `usage.cost` from `model.cost` (the registry owns the arithmetic).
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let _ = pi_registry::calculate_cost(model, usage);
}

/// The levels a model supports, in order (`getSupportedThinkingLevels`).
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    pi_registry::supported_thinking_levels(model)
}

/// The nearest supported level: the level itself, else the next higher, else the next lower.
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    pi_registry::clamp_thinking(model, level)
}

/// `model.thinkingLevelMap[level]`: `None` absent, `Some(None)` null, `Some(Some(v))` a value.
pub fn level_map_entry(model: &Model, level: ThinkingLevel) -> Option<Option<&str>> {
    let map = model.thinking_level_map.as_ref()?;
    let entry = match level {
        ThinkingLevel::Off => &map.off,
        ThinkingLevel::Minimal => &map.minimal,
        ThinkingLevel::Low => &map.low,
        ThinkingLevel::Medium => &map.medium,
        ThinkingLevel::High => &map.high,
        ThinkingLevel::Xhigh => &map.xhigh,
        ThinkingLevel::Max => &map.max,
    };
    entry.as_ref().map(|v| v.as_deref())
}

/// `thinkingLevelMap[level] ?? level` as a string (a null entry falls back to the level too).
pub fn mapped_level(model: &Model, level: ThinkingLevel) -> String {
    match level_map_entry(model, level) {
        Some(Some(v)) => v.to_string(),
        _ => level.as_str().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn model(json: &str) -> Model {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn cost_matches_pi_digits() {
        let m = model(
            r#"{"id":"m","name":"m","api":"a","provider":"p","baseUrl":"","reasoning":true,"input":["text"],"cost":{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75},"contextWindow":1,"maxTokens":1}"#,
        );
        let mut u = Usage {
            input: 80,
            output: 5,
            cache_read: 20,
            ..Usage::zero()
        };
        u.reasoning = Some(0);
        u.total_tokens = 105;
        calculate_cost(&m, &mut u);
        assert_eq!(
            to_js_string(&u).unwrap(),
            r#"{"input":80,"output":5,"cacheRead":20,"cacheWrite":0,"reasoning":0,"totalTokens":105,"cost":{"input":0.00024,"output":0.00007500000000000001,"cacheRead":0.000006,"cacheWrite":0,"total":0.000321,"totalFromProvider":false}}"#
        );
    }

    #[test]
    fn levels_follow_the_thinking_level_map() {
        let m = model(
            r#"{"id":"m","name":"m","api":"a","provider":"p","baseUrl":"","reasoning":true,"thinkingLevelMap":{"off":null,"xhigh":"xhigh"},"input":["text"],"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"contextWindow":1,"maxTokens":1}"#,
        );
        use ThinkingLevel::*;
        assert_eq!(
            supported_thinking_levels(&m),
            vec![Minimal, Low, Medium, High, Xhigh]
        );
        assert_eq!(clamp_thinking_level(&m, Off), Minimal);
        assert_eq!(clamp_thinking_level(&m, Max), Xhigh);
    }
}
