//! The few facts compaction reads from session entries, for typed entries and for entries kept
//! verbatim alike (a file written by another version may not fit our types).

use pi_protocol::session_entry::SessionEntry;
use serde_json::Value;

pub fn is_compaction(e: &SessionEntry) -> bool {
    e.kind() == "compaction"
}

pub fn is_context_edit(e: &SessionEntry) -> bool {
    e.kind() == "context_edit"
}

fn raw<'a>(e: &'a SessionEntry, key: &str) -> Option<&'a Value> {
    match e {
        SessionEntry::Other(m) => m.get(key),
        _ => None,
    }
}

/// A context edit's target and whether its replacement is `null` (an omission).
pub fn context_edit(e: &SessionEntry) -> Option<(&str, bool)> {
    match e {
        SessionEntry::ContextEdit(c) => Some((&c.target_id, c.replacement.is_none())),
        SessionEntry::Other(_) if is_context_edit(e) => Some((
            raw(e, "targetId")?.as_str()?,
            matches!(raw(e, "replacement"), None | Some(Value::Null)),
        )),
        _ => None,
    }
}

/// A compaction's summary.
pub fn compaction_summary(e: &SessionEntry) -> Option<&str> {
    match e {
        SessionEntry::Compaction(c) => Some(&c.summary),
        _ if is_compaction(e) => raw(e, "summary")?.as_str(),
        _ => None,
    }
}

/// A compaction's `details` when Pi generated it (`fromHook` not true).
pub fn generated_compaction_details(e: &SessionEntry) -> Option<&Value> {
    match e {
        SessionEntry::Compaction(c) if c.from_hook != Some(true) => c.details.as_ref(),
        _ if is_compaction(e) && raw(e, "fromHook") != Some(&Value::Bool(true)) => {
            raw(e, "details")
        }
        _ => None,
    }
}

/// An entry's ISO timestamp as Unix milliseconds (`new Date(ts).getTime()`).
pub fn timestamp_ms(e: &SessionEntry) -> Option<i64> {
    let iso = match e {
        SessionEntry::Compaction(c) => c.timestamp.as_str(),
        _ => raw(e, "timestamp")?.as_str()?,
    };
    pi_js::time::parse_iso_ms(iso)
}

/// The newest compaction of a branch (root first).
pub fn latest_compaction<'a>(branch: &[&'a SessionEntry]) -> Option<&'a SessionEntry> {
    branch.iter().rev().find(|e| is_compaction(e)).copied()
}
