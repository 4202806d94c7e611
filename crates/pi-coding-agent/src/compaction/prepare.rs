//! What a compaction summarizes and what it keeps (Pi's `prepareCompaction`).
//!
//! Works on the projected context of the branch: each selected entry with the messages it
//! contributes after edits. The newest `keepRecentTokens` worth of entries are kept verbatim,
//! cutting only where a message can start the kept part (never at a lone tool result); if the
//! cut falls inside a turn, the turn's beginning is summarized separately (a split turn).

use super::entries::{
    compaction_summary, context_edit, generated_compaction_details, is_compaction, is_context_edit,
};
use super::estimate::{estimate_projected_context_tokens, estimate_tokens};
use super::files::FileOps;
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::SessionEntry;
use pi_session::{SessionProjection, project_entry};
use std::collections::HashSet;

/// Everything the summarization needs, detached from the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    pub first_kept_entry_id: String,
    /// The history before the kept part (or before the split turn).
    pub messages_to_summarize: Vec<AgentMessage>,
    /// The beginning of a split turn; empty when the cut starts a turn.
    pub turn_prefix_messages: Vec<AgentMessage>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    /// The summary of the compaction this one builds on.
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
}

/// The projected entries of a branch: each selected entry with the messages it contributes.
struct Projected<'p, 'a> {
    projection: &'p SessionProjection<'a>,
}

impl<'a> Projected<'_, 'a> {
    fn len(&self) -> usize {
        self.projection.entries.len()
    }

    fn entry(&self, i: usize) -> &'a SessionEntry {
        self.projection.entries[i]
    }

    fn messages(&self, i: usize) -> impl Iterator<Item = &AgentMessage> {
        self.projection.messages[self.projection.ranges[i].clone()]
            .iter()
            .map(|m| &**m)
    }

    fn has_messages(&self, i: usize) -> bool {
        !self.projection.ranges[i].is_empty()
    }

    fn tokens(&self, i: usize) -> u64 {
        self.messages(i).map(estimate_tokens).sum()
    }

    /// A message here may begin the kept part.
    fn is_cut_point(&self, i: usize) -> bool {
        !is_compaction(self.entry(i))
            && self.messages(i).any(|m| {
                matches!(
                    m.role(),
                    "user"
                        | "assistant"
                        | "bashExecution"
                        | "custom"
                        | "branchSummary"
                        | "compactionSummary"
                )
            })
    }

    /// A message here begins a turn.
    fn is_turn_start(&self, i: usize) -> bool {
        !is_compaction(self.entry(i))
            && self.messages(i).any(|m| {
                matches!(
                    m.role(),
                    "user" | "bashExecution" | "custom" | "branchSummary" | "compactionSummary"
                )
            })
    }

    /// Contributes messages by itself, before any edit.
    fn intrinsically_visible(&self, i: usize) -> bool {
        let e = self.entry(i);
        if is_context_edit(e) {
            return false;
        }
        let mut out = Vec::new();
        project_entry(e, &mut out);
        !out.is_empty()
    }

    /// Visible by itself but edited away.
    fn is_omitted(&self, i: usize) -> bool {
        self.intrinsically_visible(i) && !self.has_messages(i)
    }

    /// The messages compaction takes from entries `range`: no system messages (the compaction
    /// entry replays them) and nothing from compaction entries.
    fn conversation(&self, range: std::ops::Range<usize>) -> Vec<AgentMessage> {
        range
            .filter(|&i| !is_compaction(self.entry(i)))
            .flat_map(|i| self.messages(i).filter(|m| m.role() != "system").cloned())
            .collect()
    }
}

/// Where the kept part starts, and where the split turn starts if the cut splits one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CutPoint {
    first_kept: usize,
    turn_start: Option<usize>,
}

fn find_cut_point(p: &Projected<'_, '_>, start: usize, keep_recent_tokens: u64) -> CutPoint {
    let end = p.len();
    let candidates: Vec<usize> = (start..end).filter(|&i| p.is_cut_point(i)).collect();
    let (Some(&first), Some(&last)) = (candidates.first(), candidates.last()) else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut cut = first;
    let mut exceeded = false;
    let mut accumulated = 0;
    for i in (start..end).rev() {
        let tokens = p.tokens(i);
        if tokens == 0 {
            continue;
        }
        accumulated += tokens;
        if accumulated >= keep_recent_tokens {
            exceeded = true;
            cut = candidates.iter().copied().find(|&c| c >= i).unwrap_or(last);
            break;
        }
    }
    if exceeded && is_recovery_omission_suffix(p, cut + 1, end) {
        // Only a failed recovery attempt follows: summarize the input that overflowed too.
        cut += 1;
    }
    // Metadata right before the cut (model changes, labels, edits) stays with the kept part.
    while cut > start {
        let previous = cut - 1;
        if is_compaction(p.entry(previous)) || p.has_messages(previous) {
            break;
        }
        cut = previous;
    }
    let starts_turn = cut < end && p.is_turn_start(cut);
    let turn_start = if starts_turn || cut >= end {
        None
    } else {
        (start..=cut).rev().find(|&i| p.is_turn_start(i))
    };
    CutPoint {
        first_kept: cut,
        turn_start,
    }
}

/// Entries `from..end` are an omitted assistant attempt plus invisible metadata and the edits
/// that omitted it, and nothing else.
fn is_recovery_omission_suffix(p: &Projected<'_, '_>, from: usize, end: usize) -> bool {
    let suffix = from.min(end)..end;
    let omitted: HashSet<&str> = suffix
        .clone()
        .filter(|&i| p.is_omitted(i))
        .filter_map(|i| p.entry(i).id())
        .collect();
    let external_replacement = suffix.clone().any(|i| {
        context_edit(p.entry(i))
            .is_some_and(|(target, is_null)| !is_null && !omitted.contains(target))
    });
    let omitted_assistant = suffix.clone().any(|i| {
        matches!(p.entry(i), SessionEntry::Message(m) if m.message.role() == "assistant")
            && p.is_omitted(i)
    });
    let only_invisible = suffix
        .clone()
        .all(|i| !is_compaction(p.entry(i)) && (!p.intrinsically_visible(i) || p.is_omitted(i)));
    !external_replacement && omitted_assistant && only_invisible
}

/// Decides what to summarize. `None` when there is nothing to do: the branch ends with a
/// compaction, or nothing lies before the kept part.
pub fn prepare_compaction(
    projection: &SessionProjection<'_>,
    branch: &[&SessionEntry],
    keep_recent_tokens: u64,
) -> Option<Preparation> {
    if branch.last().is_some_and(|e| is_compaction(e)) {
        return None;
    }
    let p = Projected { projection };
    // Only the newest compaction, projected first, contributes messages.
    let previous = (0..p.len()).find(|&i| is_compaction(p.entry(i)) && p.has_messages(i));
    let start = previous.map_or(0, |i| i + 1);
    let tokens_before = estimate_projected_context_tokens(projection, branch).tokens;
    let cut = find_cut_point(&p, start, keep_recent_tokens);
    let first_kept_entry_id = (cut.first_kept < p.len())
        .then(|| p.entry(cut.first_kept).id())
        .flatten()?
        .to_string();
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let messages_to_summarize = p.conversation(start..history_end);
    let turn_prefix_messages = match cut.turn_start {
        Some(turn) => p.conversation(turn..cut.first_kept),
        None => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return None;
    }
    let mut file_ops = FileOps::default();
    if let Some(details) = previous.and_then(|i| generated_compaction_details(p.entry(i))) {
        file_ops.add_details(details);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(m);
    }
    Some(Preparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.turn_start.is_some(),
        tokens_before,
        previous_summary: previous
            .and_then(|i| compaction_summary(p.entry(i)))
            .map(str::to_string),
        file_ops,
    })
}
