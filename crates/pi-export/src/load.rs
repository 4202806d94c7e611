//! Reading a session file the way Pi's `SessionManager.open` does for `--export`: blank and
//! malformed (torn) lines are skipped, the first parsed line must be the header, v1/v2 files
//! are migrated in memory (never rewritten here), and the leaf is the last entry.

use pi_js::parse::parse_js_json;
use pi_protocol::SharedMessage;
use pi_protocol::message::AgentMessage;
use pi_protocol::record::Rest;
use pi_protocol::session_entry::{MessageEntry, SessionEntry, SessionHeader};
use serde_json::{Map, Value};

/// A session file's header, its entries in file order, and its leaf.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    pub header: SessionHeader,
    pub entries: Vec<SessionEntry>,
    /// The id of the last entry (what Pi's leaf is right after opening the file).
    pub leaf: Option<String>,
}

/// Parses the text of a session file, or `None` when it is not a Pi session (its first
/// parsable line is not a `session` header with a string `id`). Entries whose shape does not
/// fit the typed model are kept verbatim rather than dropped.
pub fn parse_session_text(text: &str) -> Option<LoadedSession> {
    let mut maps = text
        .split('\n')
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| match parse_js_json(line) {
            Ok(Value::Object(map)) => Some(Some(map)),
            // Pi keeps any parsed value; only objects can be entries, but a non-object first
            // line still disqualifies the file.
            Ok(_) => Some(None),
            Err(_) => None,
        });
    let header_map = maps.next()??;
    if header_map.get("type").and_then(Value::as_str) != Some("session")
        || !header_map.get("id").is_some_and(Value::is_string)
    {
        return None;
    }
    let version = header_map
        .get("version")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    let mut raw: Vec<Map<String, Value>> = maps
        .flatten()
        // Only the first header counts; Pi skips later `session` lines.
        .filter(|m| m.get("type").and_then(Value::as_str) != Some("session"))
        .collect();
    if version < 2.0 {
        migrate_v1(&mut raw);
    }
    if version < 3.0 {
        for map in &mut raw {
            if let Some(Value::Object(message)) = map.get_mut("message")
                && message.get("role").and_then(Value::as_str) == Some("hookMessage")
            {
                message.insert("role".into(), Value::String("custom".into()));
            }
        }
    }
    let entries: Vec<SessionEntry> = raw.into_iter().map(entry_from_map).collect();
    let leaf = entries.last().and_then(|e| e.id()).map(str::to_string);
    Some(LoadedSession {
        header: header_from_map(header_map),
        entries,
        leaf,
    })
}

/// v1 files have no tree: every entry gets an id and the previous entry as parent, and
/// compactions name their first kept entry by index (counting the header as index 0).
fn migrate_v1(raw: &mut [Map<String, Value>]) {
    let ids: Vec<String> = (0..raw.len()).map(|i| format!("v1-{i:06}")).collect();
    for (i, map) in raw.iter_mut().enumerate() {
        map.insert("id".into(), Value::String(ids[i].clone()));
        let parent = i
            .checked_sub(1)
            .map_or(Value::Null, |p| Value::String(ids[p].clone()));
        map.insert("parentId".into(), parent);
    }
    for map in raw.iter_mut() {
        if map.get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        if let Some(index) = map.remove("firstKeptEntryIndex").and_then(|v| v.as_u64()) {
            let target = usize::try_from(index).ok().and_then(|i| i.checked_sub(1));
            if let Some(id) = target.and_then(|t| ids.get(t)) {
                map.insert("firstKeptEntryId".into(), Value::String(id.clone()));
            }
        }
    }
}

fn header_from_map(map: Map<String, Value>) -> SessionHeader {
    let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_string);
    let fallback = SessionHeader {
        version: map.get("version").and_then(Value::as_u64),
        id: text("id").unwrap_or_default(),
        timestamp: text("timestamp").unwrap_or_default(),
        cwd: text("cwd").unwrap_or_default(),
        parent_session: text("parentSession"),
        rest: Rest::default(),
    };
    SessionHeader::from_map(map).unwrap_or(fallback)
}

/// The typed entry when it fits; a `message` entry whose message does not fit keeps its
/// envelope typed and its message verbatim; anything else is kept verbatim.
fn entry_from_map(map: Map<String, Value>) -> SessionEntry {
    if let Ok(entry) = SessionEntry::from_map(map.clone()) {
        return entry;
    }
    if map.get("type").and_then(Value::as_str) == Some("message")
        && let Some(Value::Object(message)) = map.get("message")
    {
        let mut envelope = map.clone();
        // A message with an unknown role always parses, so only the envelope can fail here.
        let mut placeholder = Map::new();
        placeholder.insert("role".into(), Value::String("\u{0}placeholder".into()));
        envelope.insert("message".into(), Value::Object(placeholder));
        if let Ok(mut entry) = MessageEntry::from_map(envelope) {
            entry.message = SharedMessage::new(AgentMessage::Other(message.clone()));
            return SessionEntry::Message(entry);
        }
    }
    SessionEntry::Other(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_torn_lines_and_takes_the_last_entry_as_leaf() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n\n{not json\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n",
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":5,"timestamp":1}}"#,
            "\n",
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","mess"#,
        );
        let s = parse_session_text(text).unwrap();
        assert_eq!(s.header.id, "s1");
        assert_eq!(s.entries.len(), 2);
        assert_eq!(s.leaf.as_deref(), Some("b"));
        let SessionEntry::Message(b) = &s.entries[1] else {
            panic!("{:?}", s.entries[1])
        };
        assert_eq!(b.message.role(), "user");
        assert!(matches!(*b.message, AgentMessage::Other(_)));
    }

    #[test]
    fn rejects_files_that_do_not_start_with_a_header() {
        assert!(parse_session_text("").is_none());
        assert!(parse_session_text("5\n").is_none());
        assert!(parse_session_text(r#"{"type":"message","id":"a"}"#).is_none());
        assert!(parse_session_text(r#"{"type":"session","id":7}"#).is_none());
        let lenient = parse_session_text("garbage\n{\"type\":\"session\",\"id\":\"x\"}").unwrap();
        assert_eq!(
            (lenient.header.id.as_str(), lenient.header.cwd.as_str()),
            ("x", "")
        );
    }

    #[test]
    fn migrates_v1_and_v2_in_memory() {
        let text = concat!(
            r#"{"type":"session","id":"s","timestamp":"t","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"a","timestamp":1}}"#,
            "\n",
            r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":1,"tokensBefore":9}"#,
            "\n",
            r#"{"type":"message","timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":2}}"#,
        );
        let s = parse_session_text(text).unwrap();
        let ids: Vec<_> = s.entries.iter().map(|e| (e.id(), e.parent_id())).collect();
        assert_eq!(
            ids,
            [
                (Some("v1-000000"), None),
                (Some("v1-000001"), Some("v1-000000")),
                (Some("v1-000002"), Some("v1-000001"))
            ]
        );
        let SessionEntry::Compaction(c) = &s.entries[1] else {
            panic!()
        };
        assert_eq!(c.first_kept_entry_id, "v1-000000");
        let SessionEntry::Message(m) = &s.entries[2] else {
            panic!()
        };
        assert_eq!(m.message.role(), "custom");
        assert!(matches!(*m.message, AgentMessage::Custom(_)));
    }
}
