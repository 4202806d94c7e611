//! Token counts without a tokenizer (Pi's `estimateTokens` family): a message costs its
//! characters ÷ 4, rounded up, where characters are UTF-16 code units as in JavaScript; the
//! context costs the last trustworthy provider usage plus the estimates of what came after it.

use super::entries::{is_compaction, is_context_edit};
use pi_js::json::to_js_string;
use pi_protocol::SharedMessage;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::SessionEntry;
use pi_protocol::usage::{StopReason, Usage};
use pi_session::SessionProjection;
use serde_json::Value;

/// What an image is assumed to cost, in characters.
const IMAGE_CHARS: usize = 4800;

fn tokens_of(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn user_content_chars(content: &StringOrBlocks<UserBlock>) -> usize {
    match content {
        StringOrBlocks::Text(s) => pi_js::utf16_len(s),
        StringOrBlocks::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                UserBlock::Text(t) => pi_js::utf16_len(&t.text),
                UserBlock::Image(_) => IMAGE_CHARS,
            })
            .sum(),
    }
}

fn json_len(value: &impl serde::Serialize) -> usize {
    to_js_string(value).map_or(0, |s| pi_js::utf16_len(&s))
}

/// Estimated tokens of one message (0 for roles that cost nothing).
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::System(s) => {
            let content = match &s.content {
                StringOrBlocks::Text(t) => pi_js::utf16_len(t),
                StringOrBlocks::Blocks(blocks) => {
                    blocks.iter().map(|b| pi_js::utf16_len(&b.text)).sum()
                }
            };
            let sections: usize = s
                .sections
                .iter()
                .flat_map(|m| m.iter())
                .filter_map(|(_, v)| v.as_deref())
                .map(pi_js::utf16_len)
                .sum();
            content + sections + s.tools_added.as_ref().map_or(0, json_len)
        }
        AgentMessage::User(u) => user_content_chars(&u.content),
        AgentMessage::Custom(c) => user_content_chars(&c.content),
        AgentMessage::ToolResult(t) => t
            .content
            .iter()
            .map(|b| match b {
                UserBlock::Text(t) => pi_js::utf16_len(&t.text),
                UserBlock::Image(_) => IMAGE_CHARS,
            })
            .sum(),
        AgentMessage::Assistant(a) => a
            .content
            .iter()
            .map(|b| match b {
                AssistantBlock::Text(t) => pi_js::utf16_len(&t.text),
                AssistantBlock::Thinking(t) => pi_js::utf16_len(&t.thinking),
                AssistantBlock::ToolCall(c) => pi_js::utf16_len(&c.name) + json_len(&c.arguments),
            })
            .sum(),
        AgentMessage::BashExecution(b) => {
            pi_js::utf16_len(&b.command) + pi_js::utf16_len(&b.output)
        }
        AgentMessage::BranchSummary(b) => pi_js::utf16_len(&b.summary),
        AgentMessage::CompactionSummary(c) => pi_js::utf16_len(&c.summary),
        AgentMessage::Other(m) => raw_chars(m),
    };
    tokens_of(chars)
}

/// [`estimate_tokens`] for a message kept verbatim (a shape our types do not accept).
fn raw_chars(m: &serde_json::Map<String, Value>) -> usize {
    let str_len = |k: &str| m.get(k).and_then(Value::as_str).map_or(0, pi_js::utf16_len);
    let blocks = || {
        m.get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    };
    let block_str =
        |b: &Value, k: &str| b.get(k).and_then(Value::as_str).map_or(0, pi_js::utf16_len);
    match m.get("role").and_then(Value::as_str) {
        Some("user" | "custom" | "toolResult") => match m.get("content") {
            Some(Value::String(s)) => pi_js::utf16_len(s),
            _ => blocks()
                .map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") => block_str(b, "text"),
                    Some("image") => IMAGE_CHARS,
                    _ => 0,
                })
                .sum(),
        },
        Some("assistant") => blocks()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => block_str(b, "text"),
                Some("thinking") => block_str(b, "thinking"),
                Some("toolCall") => block_str(b, "name") + b.get("arguments").map_or(0, json_len),
                _ => 0,
            })
            .sum(),
        Some("bashExecution") => str_len("command") + str_len("output"),
        Some("branchSummary" | "compactionSummary") => str_len("summary"),
        _ => 0,
    }
}

/// The context size a response's usage reports: `totalTokens`, or the sum of its parts when
/// the provider left the total at 0.
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

/// The usage of a response that describes a real context: not aborted, not failed, not zero.
pub fn valid_usage(message: &AgentMessage) -> Option<&Usage> {
    match message {
        AgentMessage::Assistant(a)
            if !matches!(a.stop_reason, StopReason::Aborted | StopReason::Error)
                && calculate_context_tokens(&a.usage) > 0 =>
        {
            Some(&a.usage)
        }
        _ => None,
    }
}

/// A message or a borrowed context message (the projection holds the latter).
pub trait AsMessage {
    fn message(&self) -> &AgentMessage;
}

impl AsMessage for AgentMessage {
    fn message(&self) -> &AgentMessage {
        self
    }
}

impl AsMessage for SharedMessage {
    fn message(&self) -> &AgentMessage {
        self
    }
}

impl AsMessage for pi_session::ContextMessage<'_> {
    fn message(&self) -> &AgentMessage {
        self
    }
}

/// A context size and where its provider-reported part came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextEstimate {
    pub tokens: u64,
    /// Index of the message whose usage was used; `None` for a pure estimate.
    pub last_usage_index: Option<usize>,
}

/// The last valid usage plus estimates of the later messages; without one, the sum of all
/// estimates.
pub fn estimate_context_tokens<M: AsMessage>(messages: &[M]) -> ContextEstimate {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| valid_usage(m.message()).map(|u| (i, u)));
    match last {
        Some((i, usage)) => ContextEstimate {
            tokens: calculate_context_tokens(usage)
                + messages[i + 1..]
                    .iter()
                    .map(|m| estimate_tokens(m.message()))
                    .sum::<u64>(),
            last_usage_index: Some(i),
        },
        None => ContextEstimate {
            tokens: messages.iter().map(|m| estimate_tokens(m.message())).sum(),
            last_usage_index: None,
        },
    }
}

/// [`estimate_context_tokens`] of the projected context, trusting the usage only when the
/// entry that produced it comes after the latest context edit or compaction of `branch`;
/// otherwise the estimate of the replayed system prompt plus every other message.
pub fn estimate_projected_context_tokens(
    projection: &SessionProjection<'_>,
    branch: &[&SessionEntry],
) -> ContextEstimate {
    let estimate = estimate_context_tokens(&projection.messages);
    if let Some(index) = estimate.last_usage_index {
        let source = projection
            .ranges
            .iter()
            .position(|r| index < r.end)
            .and_then(|k| projection.entries[k].id());
        let usage_at = source.and_then(|id| branch.iter().position(|e| e.id() == Some(id)));
        let invalidated_at = branch
            .iter()
            .rposition(|e| is_context_edit(e) || is_compaction(e));
        if let Some(at) = usage_at
            && invalidated_at.is_none_or(|inv| at > inv)
        {
            return estimate;
        }
    }
    let system = pi_session::current_system_message(projection.messages.iter().map(|m| &**m))
        .map_or(0, |s| estimate_tokens(&AgentMessage::System(s)));
    let rest: u64 = projection
        .messages
        .iter()
        .filter(|m| m.role() != "system")
        .map(|m| estimate_tokens(m))
        .sum();
    ContextEstimate {
        tokens: system + rest,
        last_usage_index: None,
    }
}

/// Sum of the estimates of `messages` (`estimatedTokensAfter`).
pub fn estimate_messages_tokens<M: AsMessage>(messages: &[M]) -> u64 {
    messages.iter().map(|m| estimate_tokens(m.message())).sum()
}

/// Pi's `shouldCompact`: enabled and above `contextWindow − reserveTokens`.
pub fn should_compact(
    tokens: u64,
    context_window: u64,
    enabled: bool,
    reserve_tokens: u64,
) -> bool {
    enabled && i128::from(tokens) > i128::from(context_window) - i128::from(reserve_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::{TextContent, ToolCall};
    use pi_protocol::message::{AssistantMessage, UserMessage};
    use serde_json::json;

    fn user(text: &str) -> AgentMessage {
        AgentMessage::User(UserMessage::new(StringOrBlocks::Text(text.into()), 1))
    }

    fn assistant(blocks: Vec<AssistantBlock>, stop: StopReason, total: u64) -> AgentMessage {
        let mut a = AssistantMessage::new("api", "p", "m", stop, 2);
        a.content = blocks;
        a.usage.total_tokens = total;
        AgentMessage::Assistant(a)
    }

    #[test]
    fn characters_are_utf16_units_rounded_up_by_four() {
        assert_eq!(estimate_tokens(&user("abcde")), 2);
        // One astral character is two UTF-16 units.
        assert_eq!(estimate_tokens(&user("😀😀")), 1);
        assert_eq!(estimate_tokens(&user("")), 0);
    }

    #[test]
    fn tool_calls_cost_their_name_and_json_arguments() {
        let args = json!({"path": "f.txt"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let call = AssistantBlock::ToolCall(ToolCall::new("id", "read", args));
        let text = AssistantBlock::Text(TextContent::new("ok"));
        // "read" (4) + {"path":"f.txt"} (16) + "ok" (2) = 22 → 6.
        assert_eq!(
            estimate_tokens(&assistant(vec![call, text], StopReason::Stop, 0)),
            6
        );
    }

    #[test]
    fn context_estimate_uses_the_last_valid_usage_and_estimates_the_rest() {
        let messages = vec![
            user("aaaa"),
            assistant(vec![], StopReason::Stop, 100),
            user("bbbbbbbb"),
            assistant(vec![], StopReason::Error, 500),
        ];
        assert_eq!(
            estimate_context_tokens(&messages),
            ContextEstimate {
                tokens: 102,
                last_usage_index: Some(1)
            }
        );
        assert_eq!(
            estimate_context_tokens(&messages[..1]),
            ContextEstimate {
                tokens: 1,
                last_usage_index: None
            }
        );
    }

    #[test]
    fn zero_total_falls_back_to_the_parts() {
        let mut u = Usage::zero();
        u.input = 3;
        u.cache_read = 4;
        assert_eq!(calculate_context_tokens(&u), 7);
        u.total_tokens = 9;
        assert_eq!(calculate_context_tokens(&u), 9);
    }

    #[test]
    fn threshold_is_strictly_above_window_minus_reserve() {
        assert!(!should_compact(1000, 2000, true, 1000));
        assert!(should_compact(1001, 2000, true, 1000));
        assert!(should_compact(1, 100, true, 200));
        assert!(!should_compact(5000, 2000, false, 1000));
    }
}
