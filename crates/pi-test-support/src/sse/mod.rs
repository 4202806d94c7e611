//! Server-sent-event bodies built from small helpers, one module per wire API:
//! `sse(vec![anthropic::ev_message_start(..), anthropic::ev_text_delta(0, "hi"), ..])`.
//! Each API module also renders a scripted [`Reply`](crate::mock::Reply) into [`Frame`]s.

pub mod anthropic;
pub mod openai_chat;

/// One SSE event: an optional `event:` line and one `data:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    /// An event with a name and a JSON payload.
    pub fn named(event: &str, data: &serde_json::Value) -> Self {
        SseEvent {
            event: Some(event.to_string()),
            data: data.to_string(),
        }
    }

    /// A `data:`-only event with a JSON payload.
    pub fn data(data: &serde_json::Value) -> Self {
        SseEvent {
            event: None,
            data: data.to_string(),
        }
    }

    /// A `data:`-only event with a literal payload (e.g. `[DONE]`).
    pub fn literal(data: &str) -> Self {
        SseEvent {
            event: None,
            data: data.to_string(),
        }
    }

    /// The event as it goes on the wire, blank line included.
    pub fn encode(&self) -> String {
        match &self.event {
            Some(e) => format!("event: {e}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// A whole SSE body.
pub fn sse(events: Vec<SseEvent>) -> String {
    events.iter().map(SseEvent::encode).collect()
}

/// What the connection writer does, in order. Each event is written (and flushed) as its own
/// HTTP chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// An event the client answers with a record on its output (a `message_update`, ...): with
    /// pacing on, the mock waits for that record before sending more.
    Event(SseEvent),
    /// An event the client only absorbs (usage, stop reason, signature).
    Quiet(SseEvent),
    Gate(String),
    Delay(u64),
    /// Close the socket without finishing the chunked body.
    Drop,
}

/// Per-request facts the renderers need.
#[derive(Debug, Clone)]
pub struct RenderContext {
    /// 1-based number of the request within the mock's lifetime.
    pub request_number: usize,
    /// The `model` of the request body.
    pub model: String,
}
