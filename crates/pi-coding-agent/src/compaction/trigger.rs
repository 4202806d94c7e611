//! Whether a finished response calls for automatic compaction (the decision part of Pi's
//! `_checkCompaction`), and whether the projected context crossed the threshold mid-run.

use super::entries::{
    context_edit, is_compaction, is_context_edit, latest_compaction, timestamp_ms,
};
use super::estimate::{
    calculate_context_tokens, estimate_context_tokens, estimate_projected_context_tokens,
    should_compact,
};
use crate::settings::model::CompactionSettings;
use pi_protocol::SharedMessage;
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::session_entry::SessionEntry;
use pi_protocol::usage::StopReason;
use pi_session::SessionStore;

/// What to do after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Nothing,
    /// A completed response overflowed the window: compact, keep the response.
    CompletedOverflow,
    /// A failed (overflow) or truncated (`length`) response: omit it, compact and retry the
    /// turn, once per prompt. `overflow` is false for a truncated response.
    Recover {
        overflow: bool,
    },
    Threshold,
}

/// The facts the decision reads besides the session.
pub struct CheckInput<'a> {
    pub message: &'a AssistantMessage,
    /// The current model.
    pub model: &'a Model,
    pub settings: CompactionSettings,
    /// The agent's transcript (for estimates when the response has no usable usage).
    pub agent_messages: &'a [SharedMessage],
    /// False for the check before a prompt, which also looks at aborted responses.
    pub skip_aborted: bool,
}

/// The id of the `message` entry holding `message`, searching the branch from the leaf.
pub fn persisted_entry_id<'a>(
    branch: &[&'a SessionEntry],
    message: &AgentMessage,
) -> Option<&'a str> {
    branch.iter().rev().find_map(|e| match e {
        SessionEntry::Message(m)
            if m.message.timestamp() == message.timestamp() && *m.message == *message =>
        {
            Some(m.id.as_str())
        }
        _ => None,
    })
}

fn is_newer_than(timestamp: u64, compaction: Option<&SessionEntry>) -> bool {
    match compaction.and_then(timestamp_ms) {
        Some(at) => i128::from(timestamp) > i128::from(at),
        None => true,
    }
}

pub fn check(store: &SessionStore, input: &CheckInput<'_>) -> Trigger {
    let message = input.message;
    if !input.settings.enabled || (input.skip_aborted && message.stop_reason == StopReason::Aborted)
    {
        return Trigger::Nothing;
    }
    // A response from another model says nothing about this model's window.
    let same_model = input.model.provider == message.provider && input.model.id == message.model;
    let window = input.model.context_window;
    let branch = store.branch_entries(None);
    let compaction = latest_compaction(&branch);
    if compaction.is_some() && !is_newer_than(message.timestamp, compaction) {
        return Trigger::Nothing;
    }
    let projection = store.build_projection();
    let wrapped = AgentMessage::Assistant(message.clone());
    let entry_id = persisted_entry_id(&branch, &wrapped);
    let projected = entry_id.is_none_or(|id| {
        projection
            .entries
            .iter()
            .zip(&projection.ranges)
            .any(|(e, r)| {
                e.id() == Some(id)
                    && projection.messages[r.clone()]
                        .iter()
                        .any(|m| m.role() == "assistant")
            })
    });
    let after: &[&SessionEntry] =
        match entry_id.and_then(|id| branch.iter().position(|e| e.id() == Some(id))) {
            Some(i) => &branch[i + 1..],
            None => &[],
        };
    let edited_after = after.iter().any(|e| is_context_edit(e));
    let omitted_by_edit = after
        .iter()
        .rev()
        .filter_map(|e| context_edit(e))
        .find(|(target, _)| Some(*target) == entry_id)
        .is_some_and(|(_, is_null)| is_null);
    let retained =
        entry_id.is_none() || (!after.iter().any(|e| is_compaction(e)) && !omitted_by_edit);
    let usage_matches_projection = projected && !edited_after;
    let explicit = message.stop_reason == StopReason::Error
        && pi_ai::errors::is_context_overflow(message, None);
    let overflow = same_model
        && ((explicit && retained)
            || (usage_matches_projection
                && pi_ai::errors::is_context_overflow(message, Some(window))));
    let length = same_model
        && projected
        && pi_ai::errors::is_recoverable_length(message, input.model.max_tokens);
    if overflow || length {
        return if message.stop_reason == StopReason::Stop {
            Trigger::CompletedOverflow
        } else {
            Trigger::Recover { overflow }
        };
    }
    let has_edits = projection.entries.iter().any(|e| is_context_edit(e));
    let direct = calculate_context_tokens(&message.usage);
    let tokens = if has_edits {
        estimate_projected_context_tokens(&projection, &branch).tokens
    } else if message.stop_reason == StopReason::Error || direct == 0 {
        let estimate = estimate_context_tokens(input.agent_messages);
        // Usage from before the latest compaction describes the old, larger context.
        if let Some(i) = estimate.last_usage_index
            && let AgentMessage::Assistant(a) = &*input.agent_messages[i]
            && compaction.is_some()
            && !is_newer_than(a.timestamp, compaction)
        {
            return Trigger::Nothing;
        }
        estimate.tokens
    } else {
        direct
    };
    if should_compact(
        tokens,
        window,
        input.settings.enabled,
        input.settings.reserve_tokens,
    ) {
        Trigger::Threshold
    } else {
        Trigger::Nothing
    }
}

/// Whether the projected context of the session exceeds the threshold of `model` (checked
/// before each request after a tool batch).
pub fn exceeds_threshold(
    store: &SessionStore,
    model: &Model,
    settings: CompactionSettings,
) -> bool {
    if model.context_window == 0 {
        return false;
    }
    let projection = store.build_projection();
    let branch = store.branch_entries(None);
    let tokens = estimate_projected_context_tokens(&projection, &branch).tokens;
    should_compact(
        tokens,
        model.context_window,
        settings.enabled,
        settings.reserve_tokens,
    )
}
