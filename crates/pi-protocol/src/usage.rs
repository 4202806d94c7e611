//! Token usage and cost of one model call (`Usage` in pi-ai), and why a response stopped.

use crate::record::record;
use serde::{Deserialize, Serialize};

record! {
    /// Cost in dollars of the tokens of one call, computed from the model's per-million rates
    /// (or reported by the provider, then `totalFromProvider:true`).
    #[derive(Default)]
    pub struct UsageCost {
        req input: f64 = "input";
        req output: f64 = "output";
        req cache_read: f64 = "cacheRead";
        req cache_write: f64 = "cacheWrite";
        req total: f64 = "total";
        opt total_from_provider: bool = "totalFromProvider";
    }
}

record! {
    /// Token counts of one model call.
    ///
    /// The canonical key order covers the three orders Pi writes: the zero placeholder
    /// (`input, output, cacheRead, cacheWrite, totalTokens, cost`), openai-completions (with
    /// `reasoning` before `totalTokens`) and anthropic-messages (with `cacheWrite1h` after `cost`).
    /// `reasoning` is part of `output`; `cacheWrite1h` is part of `cacheWrite`.
    #[derive(Default)]
    pub struct Usage {
        req input: u64 = "input" via crate::num::de_u64;
        req output: u64 = "output" via crate::num::de_u64;
        req cache_read: u64 = "cacheRead" via crate::num::de_u64;
        req cache_write: u64 = "cacheWrite" via crate::num::de_u64;
        opt reasoning: u64 = "reasoning" via crate::num::de_u64;
        req total_tokens: u64 = "totalTokens" via crate::num::de_u64;
        req cost: UsageCost = "cost";
        opt cache_write_1h: u64 = "cacheWrite1h" via crate::num::de_u64;
    }
}

impl Usage {
    /// All counts and costs zero, no optional keys: what a response reports before any data.
    pub fn zero() -> Usage {
        Usage::default()
    }
}

/// Why an assistant response ended. `pending` only appears on the streaming snapshot in
/// `message_start`; `deferred` marks a response whose result is fetched later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Pending,
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Deferred,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Pending => "pending",
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
            StopReason::Deferred => "deferred",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    #[test]
    fn the_three_observed_orders_are_canonical() {
        for s in [
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#,
            r#"{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":2,"totalTokens":15,"cost":{"input":0.00003,"output":0.00007500000000000001,"cacheRead":0,"cacheWrite":0,"total":0.000105,"totalFromProvider":false}}"#,
            r#"{"input":10,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":11,"cost":{"input":0.00003,"output":0.000015,"cacheRead":0,"cacheWrite":0,"total":0.000045,"totalFromProvider":false},"cacheWrite1h":0}"#,
        ] {
            let u: Usage = serde_json::from_value(pi_js::parse::parse_js_json(s).unwrap()).unwrap();
            assert!(u.rest.order().is_canonical(), "{s}");
            assert_eq!(to_js_string(&u).unwrap(), s);
        }
        assert_eq!(
            to_js_string(&Usage::zero()).unwrap(),
            r#"{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#
        );
    }
}
