//! Claude's limits on strict tools (20 tools, 16 optional or union-typed parameters across
//! them): the rejection texts, and the sessions whose strict tools were rejected, whose later
//! requests send `strict: "prefer"` tools non-strict at once (trying again would only repeat
//! the rejection and rewrite the tool definitions, missing the prompt cache).

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, OnceLock, PoisonError};

const LIMIT_MESSAGES: [&str; 3] = [
    "The compiled grammar is too large",
    "Too many strict tools (",
    "Schemas contains too many parameters with union types (",
];
/// At most this many sessions are remembered (a forgotten one pays one more rejection).
const MAX_SESSIONS: usize = 10_000;

/// Whether a provider's error text says the strict tools exceed Claude's limits.
pub fn is_limit_error(message: &str) -> bool {
    LIMIT_MESSAGES.iter().any(|m| message.contains(m))
}

#[derive(Default)]
struct Sessions {
    set: HashSet<String>,
    order: VecDeque<String>,
}

fn sessions() -> &'static Mutex<Sessions> {
    static SESSIONS: OnceLock<Mutex<Sessions>> = OnceLock::new();
    SESSIONS.get_or_init(Mutex::default)
}

/// Remembers that `session`'s strict tools were rejected (nothing without a session).
pub fn mark_exceeded(session: Option<&str>) {
    let Some(id) = session else { return };
    let mut s = sessions().lock().unwrap_or_else(PoisonError::into_inner);
    if s.set.insert(id.to_string()) {
        s.order.push_back(id.to_string());
    }
    while s.order.len() > MAX_SESSIONS {
        if let Some(oldest) = s.order.pop_front() {
            s.set.remove(&oldest);
        }
    }
}

/// Whether an earlier request of `session` had its strict tools rejected.
pub fn has_exceeded(session: Option<&str>) -> bool {
    session.is_some_and(|id| {
        sessions()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set
            .contains(id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_remembered_and_texts_recognized() {
        assert!(is_limit_error(
            "Validation: Too many strict tools (21 > 20)"
        ));
        assert!(!is_limit_error("Too many tools"));
        assert!(!has_exceeded(Some("strict-test-a")));
        mark_exceeded(Some("strict-test-a"));
        mark_exceeded(None);
        assert!(has_exceeded(Some("strict-test-a")));
        assert!(!has_exceeded(None));
    }
}
