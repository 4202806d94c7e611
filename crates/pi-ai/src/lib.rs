//! Talking to LLMs: one module per wire API, all streaming into the same [`StreamEvent`]s.

pub mod stream;

pub use stream::{AssistantStream, LlmContext, StreamEvent, StreamOptions, StreamSender};
