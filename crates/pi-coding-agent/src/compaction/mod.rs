//! Context compaction (Pi's `core/compaction`): the pure part. Token estimates, the decision
//! to compact, the choice of what to summarize and keep, file tracking, and the summarization
//! requests. The session runtime (`runtime/compaction.rs`) runs it and records the result.

pub mod branch;
mod entries;
mod estimate;
mod files;
mod prepare;
mod prompt;
mod serialize;
mod summarize;
mod trigger;

#[cfg(test)]
mod tests;

pub use estimate::{
    calculate_context_tokens, estimate_messages_tokens, estimate_projected_context_tokens,
    estimate_tokens, should_compact,
};
pub use prepare::{Preparation, prepare_compaction};
pub use serialize::serialize_conversation;
pub use summarize::{RetryNotice, RetryNotices, RetryPolicy, SummarizeError, Summarizer};
pub use trigger::{CheckInput, Trigger, check, exceeds_threshold, persisted_entry_id};

use entries::{is_compaction, latest_compaction};
use pi_protocol::model::Model;
use pi_protocol::results::ContextUsage;
use pi_session::SessionStore;

/// Why a manual compaction has nothing to do, in Pi's words.
pub fn nothing_to_compact_reason(store: &SessionStore) -> &'static str {
    match store.leaf_entry() {
        Some(e) if is_compaction(e) => "Already compacted",
        _ => "Nothing to compact (session too small)",
    }
}

/// `contextUsage` of `get_session_stats` (Pi's `getContextUsage`): `None` without a usable
/// window; unknown tokens after a compaction until a response with valid usage follows it.
pub fn context_usage(store: &SessionStore, model: &Model) -> Option<ContextUsage> {
    let window = model.context_window;
    if window == 0 {
        return None;
    }
    let projection = store.build_projection();
    let branch = store.branch_entries(None);
    if let Some(compaction) = latest_compaction(&branch) {
        let at = branch
            .iter()
            .position(|e| std::ptr::eq(*e, compaction))
            .unwrap_or(0);
        let valid_usage_after = branch[at + 1..].iter().any(|e| {
            projection
                .entries
                .iter()
                .zip(&projection.ranges)
                .any(|(p, r)| {
                    p.id().is_some()
                        && p.id() == e.id()
                        && projection.messages[r.clone()]
                            .iter()
                            .any(|m| estimate::valid_usage(m).is_some())
                })
        });
        if !valid_usage_after {
            return Some(ContextUsage {
                tokens: None,
                context_window: window,
                percent: None,
            });
        }
    }
    let tokens = estimate_projected_context_tokens(&projection, &branch).tokens;
    Some(ContextUsage {
        tokens: Some(tokens),
        context_window: window,
        percent: Some(tokens as f64 / window as f64 * 100.0),
    })
}
