//! The JSON text of the long messages of a run, written once and copied into every record that
//! carries them again.
//!
//! A tool result goes out in `message_start`, `message_end`, its session line, `turn_end` and
//! `agent_end`: five times the same text escaped, most of the time between the last tool's end
//! and the next request (a 100 KB file read was 40 µs per copy); a run's first system message
//! (the prompt and every tool's schema) goes out four times. Inside [`with_json_memo`] such a
//! typed message ([`SharedMessage`](crate::SharedMessage), see `long_message`) is written from
//! this memo, keyed by the shared message itself (immutable, and kept alive here,
//! so the key cannot name another message). Only the callers that write JS-compatible JSON text
//! (events, session lines) turn it on: a pretty printer or `to_value` never sees a copied text.

use crate::content::{StringOrBlocks, UserBlock};
use crate::message::AgentMessage;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

/// Shorter results, and other messages, are written as before, straight into the record: their
/// text costs less to write again than to keep.
pub const MEMO_MIN: usize = 4096;
/// At most this much text is kept (the oldest goes first), and at most [`MEMO_ENTRIES`] messages.
const MEMO_BYTES: usize = 4 << 20;
const MEMO_ENTRIES: usize = 32;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static MEMO: RefCell<VecDeque<(Arc<AgentMessage>, Rc<str>)>> =
        const { RefCell::new(VecDeque::new()) };
}

/// Runs `write` (which serializes with `pi_js::json`'s compact JS formatter) with the memo in use.
pub fn with_json_memo<R>(write: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ON.set(self.0);
        }
    }
    let _restore = Restore(ON.replace(true));
    write()
}

/// Forgets every kept text (a run ended: its messages are not written again soon).
pub fn clear_json_memo() {
    MEMO.with_borrow_mut(VecDeque::clear);
}

/// The JSON text of `message` when the memo is in use and the message is long ([`long_message`]):
/// kept, or written now and kept. `None`: to be written directly.
pub(crate) fn memo_text(message: &Arc<AgentMessage>) -> Option<Rc<str>> {
    if !ON.get() || !long_message(message) {
        return None;
    }
    let kept = MEMO.with_borrow(|memo| {
        memo.iter()
            .find(|(m, _)| Arc::ptr_eq(m, message))
            .map(|(_, text)| text.clone())
    });
    if kept.is_some() {
        return kept;
    }
    // Written without the memo: an `AgentMessage` holds no shared message of its own.
    let text: Rc<str> = pi_js::json::to_js_string(&**message).ok()?.into();
    if text.len() <= MEMO_BYTES {
        MEMO.with_borrow_mut(|memo| {
            memo.push_back((message.clone(), text.clone()));
            let mut bytes: usize = memo.iter().map(|(_, t)| t.len()).sum();
            while memo.len() > MEMO_ENTRIES || bytes > MEMO_BYTES {
                if let Some((_, t)) = memo.pop_front() {
                    bytes -= t.len();
                }
            }
        });
    }
    Some(text)
}

/// A long message that goes out several times: a tool result whose content (text, image data)
/// has at least [`MEMO_MIN`] bytes (five times), or a system message that declares tools or
/// whose prompt and sections have at least [`MEMO_MIN`] bytes (a run's first one carries the
/// system prompt and every tool's schema: `message_start`, `message_end`, its session line and
/// `agent_end`; measured at ~70,000 instructions per copy on a fleet agent).
fn long_message(message: &AgentMessage) -> bool {
    match message {
        AgentMessage::ToolResult(result) => {
            let content: usize = result
                .content
                .iter()
                .map(|block| match block {
                    UserBlock::Text(t) => t.text.len(),
                    UserBlock::Image(i) => i.data.len(),
                })
                .sum();
            content >= MEMO_MIN
        }
        AgentMessage::System(system) => {
            if system.tools_added.as_ref().is_some_and(|t| !t.is_empty()) {
                return true;
            }
            let content = match &system.content {
                StringOrBlocks::Text(t) => t.len(),
                StringOrBlocks::Blocks(b) => b.iter().map(|t| t.text.len()).sum(),
            };
            let sections: usize = system.sections.as_ref().map_or(0, |s| {
                s.0.iter()
                    .map(|(k, v)| k.len() + v.as_ref().map_or(0, String::len))
                    .sum()
            });
            content + sections >= MEMO_MIN
        }
        _ => false,
    }
}

/// How many texts are kept.
#[cfg(test)]
fn kept_texts() -> usize {
    MEMO.with_borrow(VecDeque::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SharedMessage;
    use pi_js::json::{to_js_string, to_js_string_pretty};

    fn result(text: &str) -> SharedMessage {
        let m: AgentMessage = serde_json::from_value(serde_json::json!({
            "role": "toolResult", "toolCallId": "c1", "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 1,
        }))
        .unwrap();
        SharedMessage::new(m)
    }

    #[test]
    fn long_messages_are_written_once_and_copied_byte_for_byte() {
        clear_json_memo();
        let long = result(&"line \"quoted\"\t\u{1}é\n".repeat(400));
        let direct = to_js_string(&*long).unwrap();
        let record = serde_json::json!({"type": "message_end"});
        let first = with_json_memo(|| to_js_string(&(&record, &long)).unwrap());
        assert_eq!(
            first,
            to_js_string(&(&record, &direct_value(&direct))).unwrap()
        );
        assert_eq!(kept_texts(), 1);
        // The same shared message again (a clone is the same message): the kept text.
        let again = with_json_memo(|| to_js_string(&long.clone()).unwrap());
        assert_eq!(again, direct);
        assert_eq!(kept_texts(), 1);
        // An equal message built apart is another key.
        let other = result(&"line \"quoted\"\t\u{1}é\n".repeat(400));
        assert_eq!(with_json_memo(|| to_js_string(&other).unwrap()), direct);
        assert_eq!(kept_texts(), 2);
        clear_json_memo();
        assert_eq!(kept_texts(), 0);
    }

    #[test]
    fn short_messages_and_other_writers_do_not_use_it() {
        clear_json_memo();
        let short = result("ok");
        assert_eq!(
            with_json_memo(|| to_js_string(&short).unwrap()),
            to_js_string(&*short).unwrap()
        );
        assert_eq!(kept_texts(), 0);
        // Outside `with_json_memo` nothing is kept and a pretty printer stays pretty.
        let long = result(&"x".repeat(MEMO_MIN));
        let pretty = to_js_string_pretty(&long).unwrap();
        assert!(pretty.contains("\n  \"role\": \"toolResult\""), "{pretty}");
        assert_eq!(kept_texts(), 0);
        assert_eq!(serde_json::to_value(&long).unwrap()["toolName"], "read");
    }

    #[test]
    fn a_system_message_that_declares_tools_is_kept() {
        clear_json_memo();
        let system = |tools: serde_json::Value| -> SharedMessage {
            SharedMessage::new(
                serde_json::from_value(serde_json::json!({
                    "role": "system", "content": "You are pi.", "timestamp": 2,
                    "toolsAdded": tools,
                }))
                .unwrap(),
            )
        };
        let declares = system(serde_json::json!([{
            "name": "read", "description": "Reads a \"file\".\n",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }]));
        let direct = to_js_string(&*declares).unwrap();
        assert_eq!(with_json_memo(|| to_js_string(&declares).unwrap()), direct);
        assert_eq!(with_json_memo(|| to_js_string(&declares).unwrap()), direct);
        assert_eq!(kept_texts(), 1);
        // Declaring nothing, with a short prompt: written directly.
        let short = system(serde_json::json!([]));
        with_json_memo(|| to_js_string(&short).unwrap());
        assert_eq!(kept_texts(), 1);
        clear_json_memo();
    }

    #[test]
    fn the_memo_is_bounded() {
        clear_json_memo();
        let messages: Vec<SharedMessage> = (0..MEMO_ENTRIES + 5)
            .map(|i| result(&format!("{i}").repeat(MEMO_MIN)))
            .collect();
        for m in &messages {
            with_json_memo(|| to_js_string(m).unwrap());
        }
        assert_eq!(kept_texts(), MEMO_ENTRIES);
        // The oldest went first: the newest is still a hit.
        with_json_memo(|| to_js_string(messages.last().unwrap()).unwrap());
        assert_eq!(kept_texts(), MEMO_ENTRIES);
        clear_json_memo();
    }

    fn direct_value(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap()
    }
}
