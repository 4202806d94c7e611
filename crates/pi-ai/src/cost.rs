//! Cost of a response from the model's per-million-token rates (Pi's `calculateCost`), and the
//! thinking levels a model supports.
//!
//! The arithmetic is done in the same order as Pi's so the doubles (and so the wire digits) match.

use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::Usage;

/// Fills `usage.cost` from `model.cost`; the tier with the highest `inputTokensAbove` below the
/// request's input (incl. cache) applies to the whole request. Anthropic's 1-hour cache writes
/// cost twice the input rate.
pub fn calculate_cost(model: &Model, usage: &mut Usage) {
    let input_tokens = usage.input + usage.cache_read + usage.cache_write;
    let c = &model.cost;
    let (mut input, mut output, mut cache_read, mut cache_write) =
        (c.input, c.output, c.cache_read, c.cache_write);
    let mut matched: i128 = -1;
    for tier in c.tiers.iter().flatten() {
        let above = i128::from(tier.input_tokens_above);
        if i128::from(input_tokens) > above && above > matched {
            (input, output, cache_read, cache_write) =
                (tier.input, tier.output, tier.cache_read, tier.cache_write);
            matched = above;
        }
    }
    let long_write = usage.cache_write_1h.unwrap_or(0) as f64;
    let short_write = usage.cache_write as f64 - long_write;
    let cost = &mut usage.cost;
    cost.input = (input / 1_000_000.0) * usage.input as f64;
    cost.output = (output / 1_000_000.0) * usage.output as f64;
    cost.cache_read = (cache_read / 1_000_000.0) * usage.cache_read as f64;
    cost.cache_write = (cache_write * short_write + input * 2.0 * long_write) / 1_000_000.0;
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
    cost.total_from_provider = Some(false);
}

/// The levels a model supports, in order (`getSupportedThinkingLevels`).
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = level_map_entry(model, *level);
            match mapped {
                Some(None) => false,
                m if matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max) => m.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// The nearest supported level: the level itself, else the next higher, else the next lower.
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let supported = supported_thinking_levels(model);
    if supported.contains(&level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let idx = all.iter().position(|l| *l == level).unwrap_or(0);
    all[idx..]
        .iter()
        .chain(all[..idx].iter().rev())
        .copied()
        .find(|l| supported.contains(l))
        .or_else(|| supported.first().copied())
        .unwrap_or(ThinkingLevel::Off)
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
    use pi_protocol::json::to_js_string;

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
