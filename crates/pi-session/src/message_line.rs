//! A `message` line exactly as Pi writes it, taken apart without parsing its message.
//!
//! Pi writes every message entry as
//! `{"type":"message","id":"…","parentId":"…"|null,"timestamp":"…","message":{…}}`. For such a
//! line whose message is in canonical form (see [`crate::canonical`]), the entry is built from
//! the envelope alone and the message keeps its text ([`SharedMessage::from_canonical_text`]):
//! a long session opens at the speed of a scan, and `get_messages` writes the text back. Any
//! other line — a different key order, escapes in the envelope, a message that would not
//! round-trip — returns `None` and is parsed as before, so the result is the same either way.

use crate::canonical::{self, Checker, Member};
use bytes::Bytes;
use pi_protocol::SharedMessage;
use pi_protocol::record::Rest;
use pi_protocol::session_entry::{MessageEntry, SessionEntry};

/// Roles whose stored `content` the context normalizes when it is missing or null (see
/// `context::normalized`): such messages are parsed at once, as they were.
const CONTENT_ROLES: &[&[u8]] = &[b"system", b"user", b"assistant", b"toolResult"];

/// The entry of line `line` of `block` (`line` is a range of it, without its `\n`), when it is
/// a `message` line in Pi's form with a canonical message; `None` otherwise.
pub(crate) fn message_entry(
    checker: &mut Checker,
    block: &Bytes,
    line: (usize, usize),
) -> Option<SessionEntry> {
    let b = block.get(line.0..line.1)?;
    let mut c = Cursor { b, i: 0 };
    c.literal(br#"{"type":"message","id":"#)?;
    let id = c.plain_string()?;
    c.literal(br#","parentId":"#)?;
    let parent_id = match c.literal(b"null") {
        Some(()) => None,
        None => Some(c.plain_string()?),
    };
    c.literal(br#","timestamp":"#)?;
    let timestamp = c.plain_string()?;
    c.literal(br#","message":"#)?;
    let start = c.i;
    // One check for the whole line: JSON allows no raw control bytes in strings, and the
    // canonical message has none anywhere. Trailing `\r` and blanks (JSON whitespace) are cut.
    let body = trim_end(b);
    if body.last() != Some(&b'}') || !canonical::no_control_bytes(body) {
        return None;
    }
    let end = checker.object(&body[..body.len() - 1], start)?;
    if end != body.len() - 1 {
        return None;
    }
    let role = role(b, checker.members())?;
    let text = block.slice(line.0 + start..line.0 + end);
    let message = SharedMessage::from_canonical_text(text, role)?;
    Some(SessionEntry::Message(MessageEntry {
        id,
        parent_id,
        timestamp,
        message,
        rest: Rest::default(),
    }))
}

/// The message's `role` when it is a plain string and the message needs no normalization.
fn role<'a>(b: &'a [u8], members: &[Member]) -> Option<&'a str> {
    let value = |name: &[u8]| {
        members
            .iter()
            .find(|m| &b[m.key.0..m.key.1] == name)
            .map(|m| &b[m.value.0..m.value.1])
    };
    let role = value(b"role")?.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if role.contains(&b'\\') {
        return None;
    }
    if CONTENT_ROLES.contains(&role) && matches!(value(b"content"), None | Some(b"null")) {
        return None;
    }
    std::str::from_utf8(role).ok()
}

fn trim_end(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t' | b'\r'))
        .map_or(0, |i| i + 1);
    &b[..n]
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A string without escapes (what Pi writes for ids and timestamps), as text.
    fn plain_string(&mut self) -> Option<String> {
        let rest = self.b.get(self.i..)?.strip_prefix(b"\"")?;
        let len = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[len] != b'"' {
            return None;
        }
        let s = std::str::from_utf8(&rest[..len]).ok()?;
        self.i += len + 2;
        Some(s.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lenient::entry_from_line;
    use pi_js::json::to_js_string;
    use pi_js::parse::parse_js_json;
    use serde_json::Value;

    fn fast(line: &str) -> Option<SessionEntry> {
        let block = Bytes::copy_from_slice(format!("xx{line}\nyy").as_bytes());
        message_entry(&mut Checker::default(), &block, (2, 2 + line.len()))
    }

    fn slow(line: &str) -> SessionEntry {
        let Ok(Value::Object(map)) = parse_js_json(line) else {
            panic!("{line}")
        };
        entry_from_line(map, line)
    }

    #[test]
    fn pi_lines_keep_their_message_text_and_equal_the_parsed_entry() {
        for line in [
            r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi\n\"x\""}],"timestamp":1}}"#,
            r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.0043,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0043}},"stopReason":"stop","timestamp":5}}"#,
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":5,"timestamp":1}}"#,
            r#"{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"compactionSummary","summary":"s","tokensBefore":1,"timestamp":2}}"#,
        ] {
            let e = fast(line).unwrap_or_else(|| panic!("not taken: {line}"));
            let SessionEntry::Message(m) = &e else {
                panic!()
            };
            assert!(m.message.parsed().is_none());
            assert_eq!(to_js_string(&e).unwrap(), line);
            assert_eq!(e, slow(line));
            assert_eq!(to_js_string(&e).unwrap(), line);
        }
    }

    #[test]
    fn anything_else_is_left_to_the_parser() {
        for line in [
            r#"{"id":"a","type":"message","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}"#,
            r#"{"type":"message","id":"a\u0062","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1.0}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":null,"timestamp":1}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","timestamp":1}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"note","timestamp":1}}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1},"x":1}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}} x"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}"#,
            "{\"type\":\"message\",\"id\":\"a\t\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\",\"timestamp\":1}}",
        ] {
            assert!(fast(line).is_none(), "{line}");
        }
        let mut invalid = br#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"#.to_vec();
        invalid.extend_from_slice(b"\xff\",\"timestamp\":1}}");
        let block = Bytes::from(invalid);
        assert!(message_entry(&mut Checker::default(), &block, (0, block.len())).is_none());
        let padded = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}} "#;
        assert!(fast(padded).is_some());
        assert!(fast(&format!("{padded}\r")).is_some());
    }
}
