//! Whole-session queries of the RPC layer: the user messages a fork can start from
//! (`get_fork_messages`) and the counters of `get_session_stats`.

use crate::content_text::raw_content_text;
use crate::store::SessionStore;
use pi_protocol::content::{StringOrBlocks, UserBlock, UserContent};
use pi_protocol::message::AgentMessage;
use pi_protocol::results::{ForkMessage, SessionStats, TokenTotals};
use pi_protocol::session_entry::SessionEntry;
use pi_protocol::usage::Usage;

/// The text blocks of user content joined without separator.
pub fn user_text(content: &UserContent) -> String {
    match content {
        StringOrBlocks::Text(s) => s.clone(),
        StringOrBlocks::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                UserBlock::Text(t) => Some(t.text.as_str()),
                UserBlock::Image(_) => None,
            })
            .collect(),
    }
}

/// The text of a user message (typed or kept verbatim).
pub(crate) fn user_message_text(message: &AgentMessage) -> Option<String> {
    match message {
        AgentMessage::User(u) => Some(user_text(&u.content)),
        AgentMessage::Other(m) if m.get("role").and_then(|r| r.as_str()) == Some("user") => {
            m.get("content").and_then(|c| raw_content_text(c, ""))
        }
        _ => None,
    }
}

fn add(t: &mut TokenTotals, cost: &mut f64, u: &Usage) {
    t.input += u.input;
    t.output += u.output;
    t.cache_read += u.cache_read;
    t.cache_write += u.cache_write;
    *cost += u.cost.total;
}

impl SessionStore {
    /// `get_fork_messages`: every user message with non-empty text, file order, all branches.
    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                SessionEntry::Message(m) => {
                    let text = user_message_text(&m.message)?;
                    (!text.is_empty()).then(|| ForkMessage {
                        entry_id: m.id.clone(),
                        text,
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// `get_session_stats` without `contextUsage`: message counts by role, tool calls, and
    /// usage of assistant messages, tool results, `usage` entries and summaries. Counts cover
    /// every entry of the file, all branches, compacted or edited away or not; `totalMessages`
    /// includes system and bash-execution messages; `cost` is summed in file order.
    pub fn stats(&self) -> SessionStats {
        let mut s = SessionStats {
            session_file: self
                .session_file()
                .map(|p| p.to_string_lossy().into_owned()),
            session_id: self.session_id().to_owned(),
            user_messages: 0,
            assistant_messages: 0,
            tool_calls: 0,
            tool_results: 0,
            total_messages: 0,
            tokens: TokenTotals::default(),
            cost: 0.0,
            context_usage: None,
        };
        let (tokens, cost) = (&mut s.tokens, &mut s.cost);
        for e in &self.entries {
            match e {
                SessionEntry::Usage(u) => add(tokens, cost, &u.usage),
                SessionEntry::Compaction(c) => c.usage.iter().for_each(|u| add(tokens, cost, u)),
                SessionEntry::BranchSummary(b) => b.usage.iter().for_each(|u| add(tokens, cost, u)),
                SessionEntry::Message(m) => {
                    s.total_messages += 1;
                    match &*m.message {
                        AgentMessage::User(_) => s.user_messages += 1,
                        AgentMessage::ToolResult(t) => {
                            s.tool_results += 1;
                            t.usage.iter().for_each(|u| add(tokens, cost, u));
                        }
                        AgentMessage::Assistant(a) => {
                            s.assistant_messages += 1;
                            s.tool_calls += a
                                .content
                                .iter()
                                .filter(|b| {
                                    matches!(b, pi_protocol::content::AssistantBlock::ToolCall(_))
                                })
                                .count() as u64;
                            add(tokens, cost, &a.usage);
                        }
                        other => match other.role() {
                            "user" => s.user_messages += 1,
                            "assistant" => s.assistant_messages += 1,
                            "toolResult" => s.tool_results += 1,
                            _ => {}
                        },
                    }
                }
                _ => {}
            }
        }
        s.tokens.total =
            s.tokens.input + s.tokens.output + s.tokens.cache_read + s.tokens.cache_write;
        s
    }
}
