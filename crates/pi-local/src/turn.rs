//! The words a prompt is made of: chat turns and their roles, and a tool call in the form the
//! model writes it (Hermes/Qwen: `<tool_call>` around Python-spaced JSON). Shared by the
//! prompt renderer, the example exchanges, the grammar and the output parser.

use serde_json::{Map, Value, json};

/// Opens a tool call in the model's output.
pub const CALL_OPEN: &str = "<tool_call>";
/// Closes it.
pub const CALL_CLOSE: &str = "</tool_call>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat-template message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub role: Role,
    pub content: String,
}

impl Turn {
    pub(crate) fn new(role: Role, content: impl Into<String>) -> Turn {
        Turn {
            role,
            content: content.into(),
        }
    }
}

/// A call as the model writes it.
pub fn render_call(name: &str, arguments: &Map<String, Value>) -> String {
    let call = py_json(&json!({"name": name, "arguments": arguments}));
    format!("{CALL_OPEN}\n{call}\n{CALL_CLOSE}")
}

/// JSON spaced as Python's `json.dumps` (and Jinja's `tojson`) writes it, `{"a": 1, "b": 2}`:
/// the form chat templates put in front of models.
pub fn py_json(value: &Value) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            w.write_all(if first { b"" } else { b", " })
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
        ) -> std::io::Result<()> {
            w.write_all(b": ")
        }
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            w.write_all(if first { b"" } else { b", " })
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    match serde::Serialize::serialize(value, &mut ser) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => value.to_string(),
    }
}
