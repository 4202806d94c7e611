//! Summarizing a branch the session leaves (tree navigation, Pi's `branch-summarization.js`):
//! which entries are left behind, what of them fits the model, and the summary entry's text.
//! The request's wording is ours; the stored summary's fixed parts (its opening lines and the
//! file lists) are Pi's, since they end up in session files.

use super::estimate::estimate_tokens;
use super::files::FileOps;
use super::prompt::FORMAT;
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::SessionEntry;
use pi_session::SessionStore;

/// The text every stored branch summary starts with (a session-file string, kept as Pi's).
pub const SUMMARY_PREAMBLE: &str = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// What navigating from `old_leaf` to `target` leaves behind: the entries from the old leaf
/// up to (not including) the deepest entry both paths share, oldest first, and that entry.
pub fn collect_entries(
    store: &SessionStore,
    old_leaf: Option<&str>,
    target: &str,
) -> (Vec<SessionEntry>, Option<String>) {
    let Some(old_leaf) = old_leaf else {
        return (Vec::new(), None);
    };
    let old_path: std::collections::HashSet<&str> = store
        .branch_entries(Some(old_leaf))
        .iter()
        .filter_map(|e| e.id())
        .collect();
    let common = store
        .branch_entries(Some(target))
        .iter()
        .rev()
        .filter_map(|e| e.id())
        .find(|id| old_path.contains(id))
        .map(str::to_string);
    let mut entries = Vec::new();
    let mut current = Some(old_leaf.to_string());
    while let Some(id) = current.filter(|id| Some(id) != common.as_ref()) {
        let Some(entry) = store.entry(&id) else { break };
        current = entry.parent_id().map(str::to_string);
        entries.push(entry.clone());
    }
    entries.reverse();
    (entries, common)
}

/// The messages to summarize, newest kept first within `budget` tokens (0: no limit), and the
/// files they read and changed (earlier generated branch summaries' lists included).
pub fn prepare(entries: &[SessionEntry], budget: u64) -> (Vec<AgentMessage>, FileOps) {
    let mut files = FileOps::default();
    for entry in entries {
        if let SessionEntry::BranchSummary(b) = entry
            && b.from_hook != Some(true)
            && let Some(details) = &b.details
        {
            files.add_details(details);
        }
    }
    let messages = pi_session::branch_summary_messages(entries);
    let mut kept = Vec::new();
    let mut total = 0u64;
    for (entry, message) in entries.iter().zip(messages).rev() {
        let Some(message) = message else { continue };
        files.add_message(&message);
        let tokens = estimate_tokens(&message);
        if budget > 0 && total + tokens > budget {
            let summary = matches!(
                entry,
                SessionEntry::Compaction(_) | SessionEntry::BranchSummary(_)
            );
            if summary && (total as f64) < budget as f64 * 0.9 {
                kept.push(message);
            }
            break;
        }
        total += tokens;
        kept.push(message);
    }
    kept.reverse();
    (kept, files)
}

/// The user text of a branch summary request: the conversation, then the instructions (the
/// caller's replace ours when asked to, otherwise they add a focus).
pub fn prompt(conversation: &str, custom: Option<&str>, replace: bool) -> String {
    let ours = format!(
        "The conversation inside <conversation> is a branch the user is leaving to continue from \
an earlier point. Write a checkpoint of it, so the work done there is not lost when they \
return.\n\n{FORMAT}"
    );
    let instructions = match custom.filter(|c| !c.is_empty()) {
        Some(c) if replace => c.to_string(),
        Some(c) => format!("{ours}\n\nAdditional focus: {c}"),
        None => ours,
    };
    format!("<conversation>\n{conversation}\n</conversation>\n\n{instructions}")
}
