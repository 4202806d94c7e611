//! Tool results as Chat Completions messages, written as JSON text instead of a tree, and kept
//! from one request to the next.
//!
//! Tool output is most of a coding agent's transcript, and every request sends all of it again:
//! built as a `serde_json` tree it was copied into the tree, escaped, and freed at every request
//! (~0.2 ms of the ~370 KB request after the bench's tool turn, on the path from the last tool's
//! end to the request). Here a result's message is escaped once into its final text, and a
//! result the transcript shares with the previous request (same message, same id and name) is
//! not escaped again.

use super::messages::Piece;
use pi_js::json_str::push_json_str;
use pi_protocol::SharedMessage;
use pi_protocol::message::AgentMessage;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Shorter results are written at every request: their text costs less than keeping it.
const KEEP_MIN: usize = 1024;
/// At most this much text is kept; the results of the latest request go first.
const KEEP_BYTES: usize = 16 << 20;

thread_local! {
    /// Kept texts by the address of their message (alive, held by the entry, so no other
    /// message can have it).
    static KEPT: RefCell<HashMap<usize, Entry>> = RefCell::new(HashMap::new());
}

struct Entry {
    /// Never read: holding it keeps the message, and so its address, taken.
    _owner: SharedMessage,
    id: String,
    name: Option<String>,
    text: Rc<str>,
}

/// The tool messages of one request: texts kept from the last request, and the messages of
/// this one that may be kept for the next.
pub struct ToolTexts<'a> {
    /// This request's messages by address, for the ones it shares with the transcript.
    owners: HashMap<usize, &'a SharedMessage>,
    /// The entries this request used or made, to keep once it is built.
    used: Vec<(usize, Entry)>,
}

fn address(m: &AgentMessage) -> usize {
    std::ptr::from_ref(m) as usize
}

impl<'a> ToolTexts<'a> {
    /// For a request built from `context` (tool results found in the transcript by address are
    /// the context's own messages, not copies).
    pub fn new(context: &'a [SharedMessage]) -> ToolTexts<'a> {
        let owners = context
            .iter()
            .filter(|m| matches!(&***m, AgentMessage::ToolResult(_)))
            .map(|m| (address(m), m))
            .collect();
        ToolTexts {
            owners,
            used: Vec::new(),
        }
    }

    /// `{"role":"tool","content":…,"tool_call_id":…[,"name":…]}` for `message` (as resolved
    /// for the request: a copy made for it is written, not kept); `content` makes the content
    /// text when it is not kept.
    pub fn message(
        &mut self,
        message: &AgentMessage,
        id: &str,
        name: Option<&str>,
        content: impl FnOnce() -> String,
    ) -> Piece {
        let key = address(message);
        let kept = KEPT.with_borrow_mut(|kept| {
            let entry = kept.remove(&key)?;
            if entry.id == id && entry.name.as_deref() == name {
                Some(entry)
            } else {
                kept.insert(key, entry);
                None
            }
        });
        if let Some(entry) = kept {
            let text = entry.text.clone();
            self.used.push((key, entry));
            return Piece::Text(text);
        }
        let content = content();
        let text: Rc<str> = write(&content, id, name).into();
        if content.len() >= KEEP_MIN
            && let Some(owner) = self.owners.get(&key)
        {
            self.used.push((
                key,
                Entry {
                    _owner: SharedMessage::clone(owner),
                    id: id.to_string(),
                    name: name.map(str::to_string),
                    text: text.clone(),
                },
            ));
        }
        Piece::Text(text)
    }
}

impl Drop for ToolTexts<'_> {
    /// Keeps what this request used, newest first up to [`KEEP_BYTES`], and forgets the rest
    /// (a result the transcript no longer sends, after a compaction or a branch switch).
    fn drop(&mut self) {
        let mut bytes = 0;
        let mut next = HashMap::new();
        for (key, entry) in self.used.drain(..).rev() {
            bytes += entry.text.len();
            if bytes > KEEP_BYTES {
                break;
            }
            next.insert(key, entry);
        }
        KEPT.with_borrow_mut(|kept| *kept = next);
    }
}

fn write(content: &str, id: &str, name: Option<&str>) -> String {
    let mut out = String::with_capacity(content.len() + content.len() / 16 + id.len() + 64);
    out.push_str(r#"{"role":"tool","content":"#);
    push_json_str(&mut out, content);
    out.push_str(r#","tool_call_id":"#);
    push_json_str(&mut out, id);
    if let Some(name) = name {
        out.push_str(r#","name":"#);
        push_json_str(&mut out, name);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::UserBlock;
    use pi_protocol::message::ToolResultMessage;
    use serde_json::json;

    fn result(text: &str) -> SharedMessage {
        SharedMessage::new(AgentMessage::ToolResult(ToolResultMessage::text(
            "call_1", "read", text, false, 1,
        )))
    }

    fn text(p: Piece) -> Rc<str> {
        match p {
            Piece::Text(t) => t,
            Piece::Tree(_) => panic!("a tool message is written as text"),
        }
    }

    #[test]
    fn written_as_the_tree_would_be_and_kept_for_the_next_request_only() {
        let long = format!("{}\n\"quoted\" \u{1}", "x".repeat(KEEP_MIN));
        let context = vec![result(&long), result("short")];
        let tree =
            json!({"role": "tool", "content": long, "tool_call_id": "call_1", "name": "read"});
        let calls = std::cell::Cell::new(0);
        let request = |context: &[SharedMessage], name: Option<&str>| {
            let mut texts = ToolTexts::new(context);
            let mut out = Vec::new();
            for m in context {
                let AgentMessage::ToolResult(t) = &**m else {
                    unreachable!()
                };
                let content = || {
                    calls.set(calls.get() + 1);
                    match &t.content[0] {
                        UserBlock::Text(t) => t.text.clone(),
                        UserBlock::Image(_) => unreachable!(),
                    }
                };
                out.push(text(texts.message(m, "call_1", name, content)));
            }
            out
        };
        let first = request(&context, Some("read"));
        assert_eq!(
            &*first[0],
            pi_js::json_str::value_to_js_string(&tree).unwrap()
        );
        assert_eq!(calls.get(), 2);
        let again = request(&context, Some("read"));
        assert_eq!(again, first);
        assert_eq!(calls.get(), 3, "only the short result is written again");
        assert!(Rc::ptr_eq(&again[0], &first[0]));
        let unnamed = request(&context, None);
        assert_eq!(calls.get(), 5, "another name is another text");
        assert!(!unnamed[0].contains("\"name\""));
        // A request without the long result forgets it: its message may go.
        request(&context[1..], None);
        assert_eq!(KEPT.with_borrow(HashMap::len), 0);
    }
}
