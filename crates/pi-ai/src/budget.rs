//! Request sizing shared by the adapters (Pi's `simple-options.js` and `estimate.js`): the
//! input-token estimate, `max_tokens` clamped to the context window, thinking budgets and
//! sampling parameters.

use crate::cost::{clamp_thinking_level, level_map_entry};
use crate::transcript::system_text;
use pi_js::json::to_js_string;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::AgentMessage;
use pi_protocol::model::{Model, SamplingParams};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::Map;
use std::borrow::Borrow;

const CHARS_PER_TOKEN: f64 = 3.5;
const IMAGE_CHARS: usize = 4800;
const CONTEXT_SAFETY_TOKENS: i64 = 4096;
const CONTEXT_SAFETY_RATIO: f64 = 0.15;
const MIN_OUTPUT_WITH_RATIO_MARGIN: i64 = 32768;
/// Tokens always left for the answer when a thinking budget shares the response ceiling.
pub const MIN_ANSWER_TOKENS: u64 = 1024;

/// Per-level thinking budgets (token-based providers); unset levels use Pi's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingBudgets {
    pub minimal: Option<u64>,
    pub low: Option<u64>,
    pub medium: Option<u64>,
    pub high: Option<u64>,
}

fn tokens(chars: usize) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

fn blocks_chars(blocks: &[UserBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => pi_js::utf16_len(&t.text),
            UserBlock::Image(_) => IMAGE_CHARS,
        })
        .sum()
}

/// Estimated tokens of one message (`estimateMessageTokens`).
pub fn estimate_message_tokens(msg: &AgentMessage) -> u64 {
    match msg {
        AgentMessage::System(s) => {
            let tools = |json: Option<String>| json.map_or(0, |j| tokens(pi_js::utf16_len(&j)));
            tokens(pi_js::utf16_len(&system_text(s)))
                + tools(
                    s.tools_added
                        .as_ref()
                        .filter(|t| !t.is_empty())
                        .and_then(|t| to_js_string(t).ok()),
                )
                + tools(
                    s.tools_removed
                        .as_ref()
                        .filter(|t| !t.is_empty())
                        .and_then(|t| to_js_string(t).ok()),
                )
        }
        AgentMessage::User(u) => tokens(match &u.content {
            StringOrBlocks::Text(s) => pi_js::utf16_len(s),
            StringOrBlocks::Blocks(b) => blocks_chars(b),
        }),
        AgentMessage::ToolResult(t) => tokens(blocks_chars(&t.content)),
        AgentMessage::Assistant(a) => tokens(
            a.content
                .iter()
                .map(|b| match b {
                    AssistantBlock::Text(t) => pi_js::utf16_len(&t.text),
                    AssistantBlock::Thinking(t) => pi_js::utf16_len(&t.thinking),
                    AssistantBlock::ToolCall(tc) => {
                        pi_js::utf16_len(&tc.name)
                            + to_js_string(&tc.arguments).map_or(0, |s| pi_js::utf16_len(&s))
                    }
                })
                .sum(),
        ),
        _ => 0,
    }
}

/// Tokens a usage says the context had (`calculateContextTokens`).
pub fn context_tokens(u: &Usage) -> u64 {
    if u.total_tokens > 0 {
        u.total_tokens
    } else {
        u.input + u.output + u.cache_read + u.cache_write
    }
}

/// Estimated input tokens of a transcript, anchored on the last usable assistant usage.
pub fn estimate_context_tokens<M: Borrow<AgentMessage>>(messages: &[M]) -> u64 {
    let mut latest_prefix: i128 = i128::MIN;
    let mut anchor = None;
    for (i, m) in messages.iter().map(Borrow::borrow).enumerate() {
        if let AgentMessage::Assistant(a) = m
            && i128::from(a.timestamp) >= latest_prefix
            && !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error)
            && context_tokens(&a.usage) > 0
        {
            anchor = Some((context_tokens(&a.usage), i));
        }
        latest_prefix = latest_prefix.max(i128::from(m.timestamp().unwrap_or(0)));
    }
    match anchor {
        Some((used, i)) => {
            used + messages[i + 1..]
                .iter()
                .map(|m| estimate_message_tokens(m.borrow()))
                .sum::<u64>()
        }
        None => messages
            .iter()
            .map(|m| estimate_message_tokens(m.borrow()))
            .sum(),
    }
}

/// `maxTokens` fitted into the context window with a safety margin (`clampMaxTokensToContext`).
pub fn clamp_max_tokens_to_context<M: Borrow<AgentMessage>>(
    model: &Model,
    messages: &[M],
    max_tokens: u64,
) -> u64 {
    if model.context_window == 0 {
        return max_tokens.max(1);
    }
    let input = estimate_context_tokens(messages) as i64;
    let window = model.context_window as i64;
    let margin = CONTEXT_SAFETY_TOKENS.max((input as f64 * CONTEXT_SAFETY_RATIO).ceil() as i64);
    let mut room = window - input - margin;
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN {
        room = MIN_OUTPUT_WITH_RATIO_MARGIN.min(window - input - CONTEXT_SAFETY_TOKENS);
    }
    (max_tokens as i64).min(room.max(1)) as u64
}

/// The budget of a level (`xhigh`/`max` use `high`).
pub fn thinking_budget_for_level(level: ThinkingLevel, custom: &ThinkingBudgets) -> u64 {
    match level {
        ThinkingLevel::Minimal => custom.minimal.unwrap_or(1024),
        ThinkingLevel::Low => custom.low.unwrap_or(2048),
        ThinkingLevel::Medium => custom.medium.unwrap_or(8192),
        _ => custom.high.unwrap_or(16384),
    }
}

/// A budget capped so at least [`MIN_ANSWER_TOKENS`] remain under `ceiling`.
pub fn clamp_budget_to_answer_room(budget: u64, ceiling: u64) -> u64 {
    budget.min(ceiling.saturating_sub(MIN_ANSWER_TOKENS))
}

/// `(maxTokens, thinkingBudget)` for budget-based thinking (`adjustMaxTokensForThinking`).
pub fn adjust_max_tokens_for_thinking(
    base: Option<u64>,
    model_max: u64,
    level: ThinkingLevel,
    custom: &ThinkingBudgets,
) -> (u64, u64) {
    let mut budget = thinking_budget_for_level(level, custom);
    let max_tokens = match base {
        None => model_max,
        Some(b) => (b + budget).min(model_max),
    };
    if max_tokens <= budget {
        budget = clamp_budget_to_answer_room(budget, max_tokens);
    }
    (max_tokens, budget)
}

/// Model sampling parameters, then those of the effective thinking level, merged.
pub fn resolve_sampling_params(model: &Model, level: ThinkingLevel) -> Option<SamplingParams> {
    let effective = clamp_thinking_level(model, level);
    let by_level = model
        .sampling_params_by_thinking_level
        .as_ref()
        .and_then(|s| match effective {
            ThinkingLevel::Off => s.off.as_ref(),
            ThinkingLevel::Minimal => s.minimal.as_ref(),
            ThinkingLevel::Low => s.low.as_ref(),
            ThinkingLevel::Medium => s.medium.as_ref(),
            ThinkingLevel::High => s.high.as_ref(),
            ThinkingLevel::Xhigh => s.xhigh.as_ref(),
            ThinkingLevel::Max => s.max.as_ref(),
        });
    if model.sampling_params.is_none() && by_level.is_none() {
        return None;
    }
    let mut out = Map::new();
    for src in [model.sampling_params.as_ref(), by_level]
        .into_iter()
        .flatten()
    {
        for (k, v) in src {
            out.insert(k.clone(), v.clone());
        }
    }
    Some(out)
}

/// Whether `thinkingLevelMap.off` is explicitly `null` (thinking cannot be turned off).
pub fn off_is_null(model: &Model) -> bool {
    matches!(level_map_entry(model, ThinkingLevel::Off), Some(None))
}
