//! Dollar cost of a call (pi-ai `calculateCost`): per-million rates, the highest input tier the
//! request exceeds applied to the whole request, 1-hour cache writes at twice the input rate.

use pi_protocol::model::ModelCost;
use pi_protocol::{Model, Usage, UsageCost};

/// Computes `usage.cost` from the model's rates (same floating-point operations, in the same
/// order, as Pi) and returns it. `totalFromProvider` becomes `false`.
pub fn calculate_cost(model: &Model, usage: &mut Usage) -> UsageCost {
    let cost = &model.cost;
    let input_tokens = (usage.input + usage.cache_read + usage.cache_write) as f64;
    let mut rates = Rates::of(cost);
    let mut matched = -1.0;
    for tier in cost.tiers.iter().flatten() {
        let above = tier.input_tokens_above as f64;
        if input_tokens > above && above > matched {
            rates = Rates {
                input: tier.input,
                output: tier.output,
                cache_read: tier.cache_read,
                cache_write: tier.cache_write,
            };
            matched = above;
        }
    }
    let long_write = usage.cache_write_1h.unwrap_or(0) as f64;
    let short_write = usage.cache_write as f64 - long_write;
    let c = &mut usage.cost;
    c.input = (rates.input / 1_000_000.0) * usage.input as f64;
    c.output = (rates.output / 1_000_000.0) * usage.output as f64;
    c.cache_read = (rates.cache_read / 1_000_000.0) * usage.cache_read as f64;
    c.cache_write =
        (rates.cache_write * short_write + rates.input * 2.0 * long_write) / 1_000_000.0;
    c.total = c.input + c.output + c.cache_read + c.cache_write;
    c.total_from_provider = Some(false);
    c.clone()
}

struct Rates {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
}

impl Rates {
    fn of(cost: &ModelCost) -> Rates {
        Rates {
            input: cost.input,
            output: cost.output,
            cache_read: cost.cache_read,
            cache_write: cost.cache_write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn model(cost: &str) -> Model {
        let mut m = Model::placeholder();
        m.cost = serde_json::from_str(cost).unwrap();
        m
    }

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: input + output + cache_read + cache_write,
            ..Usage::default()
        }
    }

    #[test]
    fn base_rates_match_js_arithmetic() {
        let m = model(r#"{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75}"#);
        let mut u = usage(100, 10, 0, 0);
        let c = calculate_cost(&m, &mut u);
        assert_eq!(
            to_js_string(&c).unwrap(),
            r#"{"input":0.00030000000000000003,"output":0.00015000000000000001,"cacheRead":0,"cacheWrite":0,"total":0.00045000000000000004,"totalFromProvider":false}"#
        );
    }

    #[test]
    fn highest_exceeded_tier_applies_to_everything() {
        let m = model(
            r#"{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"tiers":[
            {"inputTokensAbove":100,"input":10,"output":20,"cacheRead":0,"cacheWrite":0},
            {"inputTokensAbove":50,"input":5,"output":8,"cacheRead":0,"cacheWrite":0}]}"#,
        );
        let mut u = usage(80, 1_000_000, 0, 0);
        assert_eq!(calculate_cost(&m, &mut u).output, 8.0);
        let mut u = usage(100, 1_000_000, 0, 0);
        assert_eq!(calculate_cost(&m, &mut u).output, 8.0);
        let mut u = usage(101, 1_000_000, 0, 0);
        assert_eq!(calculate_cost(&m, &mut u).output, 20.0);
        let mut u = usage(50, 1_000_000, 0, 0);
        assert_eq!(calculate_cost(&m, &mut u).output, 2.0);
    }

    #[test]
    fn one_hour_cache_writes_cost_twice_input() {
        let m = model(r#"{"input":3,"output":15,"cacheRead":0.3,"cacheWrite":3.75}"#);
        let mut u = usage(0, 0, 0, 1_000_000);
        u.cache_write_1h = Some(400_000);
        let c = calculate_cost(&m, &mut u);
        assert_eq!(
            c.cache_write,
            (3.75 * 600_000.0 + 3.0 * 2.0 * 400_000.0) / 1_000_000.0
        );
    }
}
