//! Migrations of older session files to version 3, applied on load (the caller then rewrites
//! the file). They work on the raw objects so that keys Pi adds land where JavaScript property
//! assignment puts them: an existing key keeps its place, a new one goes last.
//!
//! * v1 → v2: every entry gets `id` and `parentId` (the previous entry), and a compaction's
//!   `firstKeptEntryIndex` (an index into the parsed lines, header = 0) becomes
//!   `firstKeptEntryId`.
//! * v2 → v3: the message role `hookMessage` becomes `custom`.

use crate::ids::new_entry_id;
use pi_js::to_number;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// The version migration starts from: `header.version ?? 1`, as a JavaScript number.
fn version_of(header: &Map<String, Value>) -> f64 {
    match header.get("version") {
        None | Some(Value::Null) => 1.0,
        Some(v) => to_number(v),
    }
}

/// Migrates `header` and the objects after it in place. Returns whether the file must be
/// rewritten (any version below 3; an unreadable version is rewritten unchanged, as in Pi).
pub(crate) fn migrate(header: &mut Map<String, Value>, entries: &mut [Map<String, Value>]) -> bool {
    let version = version_of(header);
    if version >= 3.0 {
        return false;
    }
    if version < 2.0 {
        v1_to_v2(header, entries);
    }
    if version < 3.0 {
        v2_to_v3(header, entries);
    }
    true
}

fn is_session(m: &Map<String, Value>) -> bool {
    m.get("type").and_then(Value::as_str) == Some("session")
}

fn v1_to_v2(header: &mut Map<String, Value>, entries: &mut [Map<String, Value>]) {
    header.insert("version".into(), Value::from(2));
    let mut taken: HashSet<String> = HashSet::new();
    let mut prev: Option<String> = None;
    for i in 0..entries.len() {
        if is_session(&entries[i]) {
            entries[i].insert("version".into(), Value::from(2));
            continue;
        }
        let id = new_entry_id(|id| taken.contains(id));
        taken.insert(id.clone());
        entries[i].insert("id".into(), Value::String(id.clone()));
        entries[i].insert(
            "parentId".into(),
            prev.replace(id).map_or(Value::Null, Value::String),
        );
        if entries[i].get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        let Some(Value::Number(n)) = entries[i].get("firstKeptEntryIndex") else {
            continue;
        };
        // Index 0 is the header; a fractional or out-of-range index names nothing.
        let target = n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 1.0)
            .map(|f| f as usize - 1)
            .and_then(|k| entries.get(k));
        let kept_id = match target {
            Some(t) if !is_session(t) => t.get("id").cloned(),
            _ => None,
        };
        // A target after this entry has no id yet: JavaScript assigns `undefined`, which
        // JSON drops.
        if let Some(id) = kept_id {
            entries[i].insert("firstKeptEntryId".into(), id);
        }
        entries[i].shift_remove("firstKeptEntryIndex");
    }
}

fn v2_to_v3(header: &mut Map<String, Value>, entries: &mut [Map<String, Value>]) {
    header.insert("version".into(), Value::from(3));
    for entry in entries.iter_mut() {
        if is_session(entry) {
            entry.insert("version".into(), Value::from(3));
            continue;
        }
        if entry.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(Value::Object(message)) = entry.get_mut("message")
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), Value::String("custom".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!(),
        }
    }

    #[test]
    fn v1_gets_ids_parents_and_first_kept_ids() {
        let mut header = obj(json!({"type":"session","id":"s","timestamp":"t","cwd":"/"}));
        let mut entries = vec![
            obj(json!({"type":"message","timestamp":"t","message":{"role":"user","content":"a"}})),
            obj(json!({"type":"message","timestamp":"t","message":{"role":"hookMessage","x":1}})),
            obj(
                json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}),
            ),
            obj(
                json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":0,"tokensBefore":5}),
            ),
        ];
        assert!(migrate(&mut header, &mut entries));
        assert_eq!(
            to_js_string(&header).unwrap(),
            r#"{"type":"session","id":"s","timestamp":"t","cwd":"/","version":3}"#
        );
        let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(entries[0]["parentId"], Value::Null);
        assert_eq!(entries[1]["parentId"], json!(ids[0]));
        assert_eq!(entries[1]["message"]["role"], json!("custom"));
        assert_eq!(entries[2]["firstKeptEntryId"], json!(ids[1]));
        assert!(!entries[2].contains_key("firstKeptEntryIndex"));
        assert!(!entries[3].contains_key("firstKeptEntryId"));
        let keys: Vec<&String> = entries[2].keys().collect();
        assert_eq!(
            keys,
            [
                "type",
                "timestamp",
                "summary",
                "tokensBefore",
                "id",
                "parentId",
                "firstKeptEntryId"
            ]
        );
    }

    #[test]
    fn v2_only_renames_hook_messages_and_v3_is_untouched() {
        let mut header = obj(json!({"type":"session","version":2,"id":"s"}));
        let mut entries = vec![obj(
            json!({"type":"message","id":"a","parentId":null,"message":{"role":"hookMessage"}}),
        )];
        assert!(migrate(&mut header, &mut entries));
        assert_eq!(header["version"], json!(3));
        assert_eq!(entries[0]["message"]["role"], json!("custom"));
        assert_eq!(entries[0]["id"], json!("a"));
        let mut header = obj(json!({"type":"session","version":"3","id":"s"}));
        assert!(!migrate(&mut header, &mut []));
    }
}
