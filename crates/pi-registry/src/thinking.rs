//! Which thinking levels a model supports, clamping a requested level to them, and cycling
//! (pi-ai `getSupportedThinkingLevels` / `clampThinkingLevel`, `AgentSession.cycleThinkingLevel`).

use pi_protocol::{Model, ThinkingLevel};

/// `["off"]` without `reasoning`; otherwise every level whose `thinkingLevelMap` entry is not
/// `null`, where `xhigh` and `max` also need an explicit entry.
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    let map = model.thinking_level_map.as_ref();
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let entry = map.and_then(|m| match level {
                ThinkingLevel::Off => m.off.as_ref(),
                ThinkingLevel::Minimal => m.minimal.as_ref(),
                ThinkingLevel::Low => m.low.as_ref(),
                ThinkingLevel::Medium => m.medium.as_ref(),
                ThinkingLevel::High => m.high.as_ref(),
                ThinkingLevel::Xhigh => m.xhigh.as_ref(),
                ThinkingLevel::Max => m.max.as_ref(),
            });
            match entry {
                Some(None) => false,
                Some(Some(_)) => true,
                None => !matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max),
            }
        })
        .collect()
}

/// The supported level nearest to `level`: itself, else the next higher supported one, else the
/// next lower one.
pub fn clamp_thinking(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let supported = supported_thinking_levels(model);
    if supported.contains(&level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let index = all.iter().position(|l| *l == level).unwrap_or(0);
    all[index..]
        .iter()
        .chain(all[..index].iter().rev())
        .find(|l| supported.contains(l))
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}

/// Clamping a level given as text: an unknown string yields the first supported level.
pub fn clamp_thinking_str(model: &Model, level: &str) -> ThinkingLevel {
    match ThinkingLevel::parse(level) {
        Some(l) => clamp_thinking(model, l),
        None => supported_thinking_levels(model)
            .first()
            .copied()
            .unwrap_or(ThinkingLevel::Off),
    }
}

/// `cycle_thinking_level`: the level after `current` in the supported list (wrapping), or `None`
/// for a model without reasoning.
pub fn next_thinking_level(model: &Model, current: ThinkingLevel) -> Option<ThinkingLevel> {
    if !model.reasoning {
        return None;
    }
    let levels = supported_thinking_levels(model);
    let next = match levels.iter().position(|l| *l == current) {
        Some(i) => (i + 1) % levels.len(),
        None => 0,
    };
    levels.get(next).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ThinkingLevel::*;

    fn model(reasoning: bool, map: &str) -> Model {
        let mut m = Model::placeholder();
        m.reasoning = reasoning;
        m.thinking_level_map = serde_json::from_str(map).ok();
        m
    }

    #[test]
    fn levels_follow_reasoning_and_map() {
        assert_eq!(supported_thinking_levels(&model(false, "{}")), vec![Off]);
        assert_eq!(
            supported_thinking_levels(&model(true, "{}")),
            vec![Off, Minimal, Low, Medium, High]
        );
        assert_eq!(
            supported_thinking_levels(&model(true, r#"{"off":null,"xhigh":"xhigh","max":"max"}"#)),
            vec![Minimal, Low, Medium, High, Xhigh, Max]
        );
        assert_eq!(
            supported_thinking_levels(&model(
                true,
                r#"{"minimal":null,"low":null,"high":null,"xhigh":null}"#
            )),
            vec![Off, Medium]
        );
    }

    #[test]
    fn clamp_searches_up_then_down() {
        let m = model(true, r#"{"minimal":null,"low":null,"high":null}"#);
        assert_eq!(clamp_thinking(&m, Minimal), Medium);
        assert_eq!(clamp_thinking(&m, Xhigh), Medium);
        assert_eq!(clamp_thinking(&model(false, "{}"), High), Off);
        let no_off = model(true, r#"{"off":null}"#);
        assert_eq!(clamp_thinking_str(&no_off, "bogus"), Minimal);
        assert_eq!(clamp_thinking_str(&no_off, "off"), Minimal);
    }

    #[test]
    fn cycling_wraps_and_skips_non_reasoning() {
        let m = model(true, "{}");
        assert_eq!(next_thinking_level(&m, High), Some(Off));
        assert_eq!(next_thinking_level(&m, Max), Some(Off));
        assert_eq!(next_thinking_level(&model(false, "{}"), Off), None);
    }
}
