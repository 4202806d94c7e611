//! Normalization of everything that legitimately differs between two runs of the same scenario.
//! Each rule is listed, with its reason, in `conformance/README.md`; keep the two in sync.
//!
//! Random ids are not blanked but renamed consistently in order of first appearance
//! (`<id:1>`, `<uuid:1>`, ...), so the structure they encode (parent links, which session a
//! record belongs to) is still compared.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Stateful normalizer for one run: apply it to records in transcript order.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    /// Literal replacements (temp paths, port, install path), longest first.
    subs: Vec<(String, String)>,
    entry_ids: HashMap<String, String>,
    uuids: HashMap<String, String>,
}

const SYSTEM_PROMPT: &str = "<system-prompt>";
const DESCRIPTION: &str = "<description>";
const SUMMARIZATION_PROMPT: &str = "<summarization-prompt>";

impl Normalizer {
    /// `subs` are literal `(from, to)` pairs; they are applied longest `from` first.
    pub fn new(mut subs: Vec<(String, String)>) -> Self {
        subs.retain(|(from, _)| !from.is_empty());
        subs.sort_by_key(|s| std::cmp::Reverse(s.0.len()));
        Normalizer {
            subs,
            ..Normalizer::default()
        }
    }

    /// A stdout record, session entry or other protocol value.
    pub fn record(&mut self, v: &Value) -> Value {
        self.value(v)
    }

    /// A request body sent to the mock LLM.
    pub fn request_body(&mut self, v: &Value) -> Value {
        let mut out = self.value(v);
        if let Value::Object(map) = &mut out {
            blank_request_prompt(map);
        }
        out
    }

    fn value(&mut self, v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, val) in map {
                    let nv = match (k.as_str(), val) {
                        ("timestamp" | "labelTimestamp" | "checkedAt", Value::Number(_)) => {
                            Value::String("<ts>".into())
                        }
                        ("durationMs" | "wall_time_seconds", Value::Number(_)) => {
                            Value::String("<duration>".into())
                        }
                        // `list_sessions` (an addition): the cursor names a file's mtime in ns.
                        ("nextCursor", Value::String(_)) => Value::String("<cursor>".into()),
                        _ => self.value(val),
                    };
                    // Paths can be keys too (`trust.json` maps folders to decisions).
                    out.insert(self.paths_in(k), nv);
                }
                if out.get("role").and_then(Value::as_str) == Some("system") {
                    blank_system_message(&mut out);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|i| self.value(i)).collect()),
            Value::String(s) => Value::String(self.string(s)),
            other => other.clone(),
        }
    }

    /// Only the temp paths of `s` replaced (for object keys, which carry no ids).
    fn paths_in(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (from, to) in &self.subs {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        out
    }

    /// Normalizes free text (also used for file contents and paths).
    pub fn string(&mut self, s: &str) -> String {
        if is_entry_id(s) {
            let n = self.entry_ids.len() + 1;
            return self
                .entry_ids
                .entry(s.to_string())
                .or_insert_with(|| format!("<id:{n}>"))
                .clone();
        }
        let mut out = s.to_string();
        for (from, to) in &self.subs {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        out = self.replace_uuids(&out);
        out = replace_pattern(&out, is_iso_timestamp, 24, "<iso-ts>");
        out = replace_pattern(&out, is_file_timestamp, 24, "<file-ts>");
        out = replace_bash_log_names(&out);
        out = replace_wall_time(&out);
        for (id, name) in &self.entry_ids {
            if out.contains(id.as_str()) {
                out = out.replace(id.as_str(), name);
            }
        }
        out
    }

    /// Like [`Normalizer::string`] but without numbering new ids (for sort keys).
    pub fn mask(&self, s: &str) -> String {
        let mut scratch = Normalizer {
            subs: self.subs.clone(),
            ..Normalizer::default()
        };
        let out = scratch.string(s);
        let mut masked = String::new();
        let mut rest = out.as_str();
        while let Some(pos) = rest.find("<uuid:") {
            masked.push_str(&rest[..pos]);
            let after = &rest[pos..];
            let end = after.find('>').map(|e| e + 1).unwrap_or(after.len());
            masked.push_str("<uuid>");
            rest = &after[end..];
        }
        masked.push_str(rest);
        masked
    }

    fn replace_uuids(&mut self, s: &str) -> String {
        let bytes = s.as_bytes();
        if bytes.len() < 36 {
            return s.to_string();
        }
        let mut out = String::new();
        let mut i = 0;
        let mut last = 0;
        while i + 36 <= bytes.len() {
            if is_uuid(&bytes[i..i + 36]) {
                out.push_str(&s[last..i]);
                let found = &s[i..i + 36];
                let n = self.uuids.len() + 1;
                let name = self
                    .uuids
                    .entry(found.to_string())
                    .or_insert_with(|| format!("<uuid:{n}>"));
                out.push_str(name);
                i += 36;
                last = i;
            } else {
                i += 1;
            }
        }
        out.push_str(&s[last..]);
        out
    }
}

/// Entry ids are 8 lowercase hex characters.
fn is_entry_id(s: &str) -> bool {
    s.len() == 8
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => is_hex(c),
        })
}

/// `2025-01-02T03:04:05.678Z`
fn is_iso_timestamp(b: &[u8]) -> bool {
    shape(b, "dddd-dd-ddTdd:dd:dd.dddZ")
}

/// `2025-01-02T03-04-05-678Z` (session file names).
fn is_file_timestamp(b: &[u8]) -> bool {
    shape(b, "dddd-dd-ddTdd-dd-dd-dddZ")
}

fn shape(b: &[u8], pattern: &str) -> bool {
    b.len() == pattern.len()
        && b.iter().zip(pattern.bytes()).all(|(&c, p)| match p {
            b'd' => c.is_ascii_digit(),
            other => c == other,
        })
}

fn replace_pattern(s: &str, matches: fn(&[u8]) -> bool, len: usize, to: &str) -> String {
    let bytes = s.as_bytes();
    if bytes.len() < len {
        return s.to_string();
    }
    let mut out = String::new();
    let mut i = 0;
    let mut last = 0;
    while i + len <= bytes.len() {
        if matches(&bytes[i..i + len]) {
            out.push_str(&s[last..i]);
            out.push_str(to);
            i += len;
            last = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// `Wall time 0.5 seconds` in codemode results: elapsed time.
fn replace_wall_time(s: &str) -> String {
    const PREFIX: &str = "Wall time ";
    let Some(pos) = s.find(PREFIX) else {
        return s.to_string();
    };
    let after = &s[pos + PREFIX.len()..];
    let digits = after
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    if digits == 0 || !after[digits..].starts_with(" seconds") {
        return s.to_string();
    }
    format!("{}<duration>{}", &s[..pos + PREFIX.len()], &after[digits..])
}

/// `pi-bash-<16 hex>.log` temp files of the bash tool and command.
fn replace_bash_log_names(s: &str) -> String {
    const PREFIX: &str = "pi-bash-";
    if !s.contains(PREFIX) {
        return s.to_string();
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(pos) = rest.find(PREFIX) {
        let after = &rest[pos + PREFIX.len()..];
        let hex_len = after.bytes().take_while(|b| is_hex(*b)).count();
        out.push_str(&rest[..pos + PREFIX.len()]);
        if hex_len == 16 {
            out.push_str("<hex>");
            rest = &after[16..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A transcript `system` message carries our own prompt text and tool descriptions; only its
/// shape (section names, tool names and schemas) is compared.
fn blank_system_message(msg: &mut Map<String, Value>) {
    if let Some(Value::String(c)) = msg.get_mut("content")
        && !c.is_empty()
    {
        *c = SYSTEM_PROMPT.into();
    }
    if let Some(Value::Object(sections)) = msg.get_mut("sections") {
        for (name, v) in sections.iter_mut() {
            if v.is_string() {
                *v = Value::String(format!("<system-prompt:{name}>"));
            }
        }
    }
    for key in ["toolsAdded", "tools"] {
        if let Some(Value::Array(tools)) = msg.get_mut(key) {
            tools.iter_mut().for_each(blank_descriptions);
        }
    }
}

/// Replaces every `description` string inside a tool declaration.
fn blank_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if k == "description" && val.is_string() {
                    *val = Value::String(DESCRIPTION.into());
                } else {
                    blank_descriptions(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_descriptions),
        _ => {}
    }
}

/// Request bodies: the system prompt (Anthropic `system`, OpenAI `system`/`developer` message)
/// and tool descriptions are ours to write.
fn blank_request_prompt(body: &mut Map<String, Value>) {
    match body.get_mut("system") {
        Some(Value::String(s)) => *s = SYSTEM_PROMPT.into(),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(t) = b.get_mut("text") {
                    *t = Value::String(SYSTEM_PROMPT.into());
                }
            }
        }
        _ => {}
    }
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        for m in messages {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("");
            if role == "system" || role == "developer" {
                match m.get_mut("content") {
                    Some(Value::String(s)) => *s = SYSTEM_PROMPT.into(),
                    Some(Value::Array(blocks)) => {
                        for b in blocks {
                            if let Some(t) = b.get_mut("text") {
                                *t = Value::String(SYSTEM_PROMPT.into());
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        tools.iter_mut().for_each(blank_descriptions);
    }
    blank_summarization_prompt(body);
    for v in body.values_mut() {
        blank_summary_framing(v);
    }
}

/// The framing around compaction and branch summaries in later requests is prompt text, ours to
/// word (Pi's and ours both map to the same placeholder; the summary itself is compared).
const SUMMARY_FRAMINGS: &[(&str, &str)] = &[
    (
        "The conversation history before this point was compacted into the following summary:\n\n",
        "<compaction-summary-framing>",
    ),
    (
        "Earlier parts of this conversation were condensed into the summary below.\n\n",
        "<compaction-summary-framing>",
    ),
    (
        "The following is a summary of a branch that this conversation came back from:\n\n",
        "<branch-summary-framing>",
    ),
    (
        "The conversation returned here from another branch, summarized below.\n\n",
        "<branch-summary-framing>",
    ),
];

fn blank_summary_framing(v: &mut Value) {
    match v {
        Value::String(s) => {
            for (text, placeholder) in SUMMARY_FRAMINGS {
                if let Some(rest) = s.strip_prefix(text) {
                    *s = format!("{placeholder}{rest}");
                    break;
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_summary_framing),
        Value::Object(map) => map.values_mut().for_each(blank_summary_framing),
        _ => {}
    }
}

/// The text of a summarization request (see [`crate::summarization`]) is our own compaction
/// prompt wrapped around a serialization of the conversation.
fn blank_summarization_prompt(body: &mut Map<String, Value>) {
    if !crate::summarization::is_summarization_request(&Value::Object(body.clone())) {
        return;
    }
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let mut others = messages.iter_mut().filter(|m| {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        role != "system" && role != "developer"
    });
    let (Some(only), None) = (others.next(), others.next()) else {
        return;
    };
    if only.get("role").and_then(Value::as_str) != Some("user") {
        return;
    }
    match only.get_mut("content") {
        Some(Value::String(s)) => *s = SUMMARIZATION_PROMPT.into(),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(t) = b.get_mut("text") {
                    *t = Value::String(SUMMARIZATION_PROMPT.into());
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n() -> Normalizer {
        Normalizer::new(vec![
            ("/tmp/run1/work".into(), "<cwd>".into()),
            ("/tmp/run1".into(), "<root>".into()),
            ("127.0.0.1:4567".into(), "127.0.0.1:<port>".into()),
        ])
    }

    #[test]
    fn ids_are_renamed_consistently_in_order_of_appearance() {
        let mut norm = n();
        let a = norm.record(&json!({"id": "a1b2c3d4", "parentId": null}));
        let b = norm.record(&json!({"id": "00ff00ff", "parentId": "a1b2c3d4"}));
        let c = norm.record(&json!({"error": "Entry not found: 00ff00ff"}));
        assert_eq!(a, json!({"id": "<id:1>", "parentId": null}));
        assert_eq!(b, json!({"id": "<id:2>", "parentId": "<id:1>"}));
        assert_eq!(c, json!({"error": "Entry not found: <id:2>"}));
    }

    #[test]
    fn paths_ports_uuids_and_times_are_replaced() {
        let mut norm = n();
        let v = norm.record(&json!({
            "sessionFile": "/tmp/run1/agent/sessions/--tmp-run1-work--/2026-11-29T23-46-16-125Z_01a229b3-c1bc-743d-a81b-990c531284e0.jsonl",
            "sessionId": "01a229b3-c1bc-743d-a81b-990c531284e0",
            "timestamp": 1733234401000u64,
            "header": {"timestamp": "2026-11-29T23:46:16.125Z"},
            "durationMs": 12,
            "baseUrl": "http://127.0.0.1:4567/v1",
            "cwd": "/tmp/run1/work",
            "fullOutputPath": "/tmp/run1/tmp/pi-bash-0123456789abcdef.log"
        }));
        assert_eq!(
            v,
            json!({
                "sessionFile": "<root>/agent/sessions/--tmp-run1-work--/<file-ts>_<uuid:1>.jsonl",
                "sessionId": "<uuid:1>",
                "timestamp": "<ts>",
                "header": {"timestamp": "<iso-ts>"},
                "durationMs": "<duration>",
                "baseUrl": "http://127.0.0.1:<port>/v1",
                "cwd": "<cwd>",
                "fullOutputPath": "<root>/tmp/pi-bash-<hex>.log"
            })
        );
    }

    #[test]
    fn system_prompt_text_is_blanked_but_shape_kept() {
        let mut norm = n();
        let v = norm.record(&json!({"role": "system", "content": "", "sections": {"preamble": "You are", "docs": null},
            "toolsAdded": [{"name": "read", "description": "Read", "parameters": {"properties": {"path": {"type": "string", "description": "p"}}}}]}));
        assert_eq!(
            v,
            json!({"role": "system", "content": "", "sections": {"preamble": "<system-prompt:preamble>", "docs": null},
                "toolsAdded": [{"name": "read", "description": "<description>", "parameters": {"properties": {"path": {"type": "string", "description": "<description>"}}}}]})
        );
        let body = norm.request_body(&json!({"model": "m", "messages": [{"role": "system", "content": "long prompt"}, {"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "read", "description": "x"}}]}));
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "system", "content": "<system-prompt>"}, {"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "read", "description": "<description>"}}]})
        );
        let body = norm.request_body(&json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "<conversation>\n..."}]}]}));
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "system", "content": "<system-prompt>"}, {"role": "user", "content": [{"type": "text", "text": "<summarization-prompt>"}]}]})
        );
        let body = norm.request_body(&json!({"system": [{"type": "text", "text": "p", "cache_control": {"type": "ephemeral"}}]}));
        assert_eq!(
            body,
            json!({"system": [{"type": "text", "text": "<system-prompt>", "cache_control": {"type": "ephemeral"}}]})
        );
    }
}
