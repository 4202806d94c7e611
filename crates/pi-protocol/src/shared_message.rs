//! [`SharedMessage`]: a message shared, never copied, between the session store, the agent's
//! transcript and the events that report it, which may still be the JSON text it was read as.
//!
//! A long session is mostly message text, and what a client does right after opening one is
//! read it back (`get_messages`, `get_tree`, `get_entries`). So a message read from a session
//! file in canonical form — exactly the text `JSON.stringify(JSON.parse(text))` gives, which the
//! reader checks — keeps that text and is parsed into an [`AgentMessage`] only when something
//! looks inside it; writing it copies the text. Messages built in Rust are typed from the start.

use crate::message::AgentMessage;
use bytes::Bytes;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// A shared, immutable message: typed, or canonical JSON text parsed on first use.
#[derive(Clone)]
pub struct SharedMessage(Shared);

#[derive(Clone)]
enum Shared {
    Typed(Arc<AgentMessage>),
    Text(Arc<TextMessage>),
}

/// A message as canonical JSON text.
struct TextMessage {
    /// The object's text, UTF-8 (checked once, when kept); `JSON.stringify` of its parse is
    /// this text again.
    text: Bytes,
    /// The `role`, one of [`KNOWN_ROLES`] (known without parsing, for the checks every entry
    /// gets when a session is indexed).
    role: &'static str,
    /// Boxed: an unparsed message should not carry the space of a parsed one.
    parsed: OnceLock<Box<AgentMessage>>,
}

/// The roles a message kept as text may have (the ones [`AgentMessage`] types).
pub const KNOWN_ROLES: &[&str] = &[
    "system",
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
];

/// The token serde_json's serializers recognize as "write this text verbatim" (what its own
/// `RawValue` serializes as); `serde_json::to_value` parses the text instead.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl SharedMessage {
    pub fn new(message: AgentMessage) -> SharedMessage {
        SharedMessage(Shared::Typed(Arc::new(message)))
    }

    /// A message kept as its JSON text. The caller guarantees that `text` is a JSON object in
    /// canonical form (`JSON.stringify(JSON.parse(text))` is `text`, byte for byte) whose
    /// `role` is `role`; `None` when `role` is not one of [`KNOWN_ROLES`] or `text` is not
    /// UTF-8.
    pub fn from_canonical_text(text: Bytes, role: &str) -> Option<SharedMessage> {
        let role = KNOWN_ROLES.iter().copied().find(|r| *r == role)?;
        // Message text is nearly always ASCII, which is UTF-8 and quicker to recognize.
        if !text.is_ascii() {
            std::str::from_utf8(&text).ok()?;
        }
        Some(SharedMessage(Shared::Text(Arc::new(TextMessage {
            text,
            role,
            parsed: OnceLock::new(),
        }))))
    }

    /// The `role`, without parsing a message kept as text.
    pub fn role(&self) -> &str {
        match &self.0 {
            Shared::Typed(m) => m.role(),
            Shared::Text(t) => t.role,
        }
    }

    /// The message if it is already typed (built in Rust, or parsed since it was read).
    pub fn parsed(&self) -> Option<&AgentMessage> {
        match &self.0 {
            Shared::Typed(m) => Some(m),
            Shared::Text(t) => t.parsed.get().map(|b| &**b),
        }
    }

    /// The canonical JSON text of a message read from a session file.
    pub fn canonical_text(&self) -> Option<&str> {
        match &self.0 {
            Shared::Typed(_) => None,
            Shared::Text(t) => Some(t.as_str()),
        }
    }

    /// Whether both handles share one message.
    pub fn ptr_eq(a: &SharedMessage, b: &SharedMessage) -> bool {
        match (&a.0, &b.0) {
            (Shared::Typed(x), Shared::Typed(y)) => Arc::ptr_eq(x, y),
            (Shared::Text(x), Shared::Text(y)) => Arc::ptr_eq(x, y),
            _ => false,
        }
    }
}

impl TextMessage {
    fn as_str(&self) -> &str {
        // SAFETY: `from_canonical_text`, the only constructor, checked that the bytes are UTF-8,
        // and `Bytes` never changes them. Writing a long session's messages is what this
        // saves a second check for.
        #[allow(unsafe_code)]
        unsafe {
            std::str::from_utf8_unchecked(&self.text)
        }
    }
}

/// Parses canonical message text as loading a session file would have: typed when the object
/// fits the types, verbatim ([`AgentMessage::Other`]) otherwise.
fn parse_text(text: &str) -> AgentMessage {
    let parse = || match pi_js::parse::parse_js_json(text) {
        Ok(Value::Object(map)) => map,
        // Unreachable: the reader checked the text is a JSON object before keeping it.
        _ => serde_json::Map::new(),
    };
    match AgentMessage::from_map(parse()) {
        Ok(m) => m,
        // Rare (a message a newer Pi or a hand edit shaped differently): parse again rather than
        // copy every map in case it is needed.
        Err(_) => AgentMessage::Other(parse()),
    }
}

impl Deref for SharedMessage {
    type Target = AgentMessage;

    fn deref(&self) -> &AgentMessage {
        match &self.0 {
            Shared::Typed(m) => m,
            Shared::Text(t) => t.parsed.get_or_init(|| Box::new(parse_text(t.as_str()))),
        }
    }
}

impl AsRef<AgentMessage> for SharedMessage {
    fn as_ref(&self) -> &AgentMessage {
        self
    }
}

impl std::borrow::Borrow<AgentMessage> for SharedMessage {
    fn borrow(&self) -> &AgentMessage {
        self
    }
}

impl From<AgentMessage> for SharedMessage {
    fn from(m: AgentMessage) -> Self {
        SharedMessage::new(m)
    }
}

impl From<Arc<AgentMessage>> for SharedMessage {
    fn from(m: Arc<AgentMessage>) -> Self {
        SharedMessage(Shared::Typed(m))
    }
}

impl PartialEq for SharedMessage {
    fn eq(&self, other: &Self) -> bool {
        SharedMessage::ptr_eq(self, other) || **self == **other
    }
}

impl fmt::Debug for SharedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for SharedMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let raw = |s: S, text: &str| {
            let mut raw = s.serialize_struct(RAW_VALUE_TOKEN, 1)?;
            raw.serialize_field(RAW_VALUE_TOKEN, text)?;
            raw.end()
        };
        match &self.0 {
            Shared::Typed(m) => match crate::message_json_memo::memo_text(m) {
                Some(text) => raw(s, &text),
                None => m.serialize(s),
            },
            Shared::Text(t) => raw(s, t.as_str()),
        }
    }
}

impl<'de> Deserialize<'de> for SharedMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        AgentMessage::deserialize(d).map(SharedMessage::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_js::json::to_js_string;

    const USER: &str = r#"{"role":"user","content":[{"type":"text","text":"hi \"there\"\n"}],"timestamp":1,"x":{"b":1,"a":[0.5,null]}}"#;

    fn text(s: &str) -> SharedMessage {
        SharedMessage::from_canonical_text(Bytes::copy_from_slice(s.as_bytes()), "user").unwrap()
    }

    #[test]
    fn text_is_written_verbatim_and_parsed_on_first_use() {
        let m = text(USER);
        assert_eq!(m.role(), "user");
        assert!(m.parsed().is_none());
        assert_eq!(to_js_string(&m).unwrap(), USER);
        assert_eq!(
            to_js_string(&vec![m.clone(), m.clone()]).unwrap(),
            format!("[{USER},{USER}]")
        );
        assert!(m.parsed().is_none(), "writing does not parse");
        assert!(matches!(&*m, AgentMessage::User(_)));
        assert!(m.parsed().is_some());
        assert_eq!(to_js_string(&m).unwrap(), USER);
        let typed: SharedMessage = serde_json::from_str(USER).unwrap();
        assert_eq!(typed, m);
        assert_eq!(to_js_string(&typed).unwrap(), USER);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::from_str::<Value>(USER).unwrap()
        );
    }

    #[test]
    fn misfits_parse_verbatim_and_unknown_roles_stay_typed() {
        let odd = r#"{"role":"user","content":5,"timestamp":1}"#;
        let m = text(odd);
        assert!(matches!(&*m, AgentMessage::Other(_)));
        assert_eq!(m.role(), "user");
        assert_eq!(to_js_string(&m).unwrap(), odd);
        assert!(SharedMessage::from_canonical_text(Bytes::new(), "note").is_none());
        let invalid = Bytes::from_static(b"{\"role\":\"user\",\"content\":\"\xff\"}");
        assert!(SharedMessage::from_canonical_text(invalid, "user").is_none());
    }
}
