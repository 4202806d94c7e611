//! Turning a parsed line into an entry without ever rejecting it.
//!
//! Pi parses session lines without validation, so every JSON object it wrote (or a newer Pi, an
//! extension, a hand edit) must load. The typed entry is tried first; when its shape does not fit
//! the types of `pi-protocol`, a `message` entry keeps its envelope typed and its message
//! verbatim ([`AgentMessage::Other`]), and any other entry is kept verbatim
//! ([`SessionEntry::Other`]). Either way the entry re-serializes to the same JSON.

use pi_js::parse::parse_js_json;
use pi_protocol::SharedMessage;
use pi_protocol::message::AgentMessage;
use pi_protocol::session_entry::{MessageEntry, SessionEntry};
use serde_json::{Map, Value};

/// The entry for a parsed line; `line` is its text, re-parsed only on the rare fallback path
/// (the typed conversion consumes the map).
pub(crate) fn entry_from_line(map: Map<String, Value>, line: &str) -> SessionEntry {
    match SessionEntry::from_map(map) {
        Ok(entry) => entry,
        Err(_) => match parse_js_json(line) {
            Ok(Value::Object(map)) => entry_from_map_lenient(map),
            // Unreachable: the line parsed a moment ago.
            _ => SessionEntry::Other(Map::new()),
        },
    }
}

/// The entry for a map (typed when possible), for callers that own the only copy.
pub(crate) fn entry_from_map(map: Map<String, Value>) -> SessionEntry {
    // Keep a copy only for the fallback; maps reaching this are few (migrations, forks of
    // migrated files), unlike the lines of a large file.
    match SessionEntry::from_map(map.clone()) {
        Ok(entry) => entry,
        Err(_) => entry_from_map_lenient(map),
    }
}

fn entry_from_map_lenient(mut map: Map<String, Value>) -> SessionEntry {
    if map.get("type").and_then(Value::as_str) == Some("message")
        && let Some(slot @ Value::Object(_)) = map.get_mut("message")
    {
        // A placeholder message with an unknown role always converts, so the envelope alone
        // decides whether the typed entry can be built.
        let Value::Object(message) = std::mem::replace(slot, placeholder()) else {
            return SessionEntry::Other(map);
        };
        if let Ok(mut entry) = MessageEntry::from_map(map.clone()) {
            entry.message = SharedMessage::new(message_from_map(message));
            return SessionEntry::Message(entry);
        }
        map.insert("message".into(), Value::Object(message));
    }
    SessionEntry::Other(map)
}

fn placeholder() -> Value {
    let mut m = Map::new();
    m.insert("role".into(), Value::String("\u{0}placeholder".into()));
    Value::Object(m)
}

/// The message for a map: typed when it fits, verbatim otherwise.
pub(crate) fn message_from_map(map: Map<String, Value>) -> AgentMessage {
    match AgentMessage::from_map(map.clone()) {
        Ok(m) => m,
        Err(_) => AgentMessage::Other(map),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    fn load(line: &str) -> SessionEntry {
        let Ok(Value::Object(map)) = parse_js_json(line) else {
            panic!("not an object: {line}")
        };
        let e = entry_from_line(map, line);
        assert_eq!(to_js_string(&e).unwrap(), line);
        e
    }

    #[test]
    fn odd_messages_keep_a_typed_envelope() {
        let e = load(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":null,"timestamp":1},"x":1}"#,
        );
        let SessionEntry::Message(m) = e else {
            panic!("{e:?}")
        };
        assert!(matches!(*m.message, AgentMessage::Other(_)));
        let e = load(
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"toolResult","content":[{"type":"audio"}]}}"#,
        );
        assert!(matches!(e, SessionEntry::Message(_)));
    }

    #[test]
    fn broken_envelopes_stay_verbatim() {
        for line in [
            r#"{"type":"message","id":5,"parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}"#,
            r#"{"type":"compaction","id":"a","parentId":null,"timestamp":"t","summary":"s","tokensBefore":"many"}"#,
            r#"{"type":"label","id":"a"}"#,
        ] {
            assert!(matches!(load(line), SessionEntry::Other(_)), "{line}");
        }
    }
}
