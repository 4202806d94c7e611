//! The response under construction: the [`AssistantMessage`] an adapter fills in, the events it
//! emits, and the final `Done`/`Error`.
//!
//! Pi's adapters assign optional keys (`responseId`, `rawStopReason`, `errorMessage`, ...) as the
//! stream goes, and JavaScript writes keys in assignment order; the setters here record that
//! order so the final message serializes exactly as Pi's does.

use crate::stream::{StreamEvent, StreamSender};
use pi_js::now_ms;
use pi_protocol::message::AssistantMessage;
use pi_protocol::model::Model;
use pi_protocol::record::KeyOrder;
use pi_protocol::usage::{StopReason, Usage};
use std::sync::Arc;
use std::time::Instant;

const BASE_KEYS: [&str; 8] = [
    "role",
    "content",
    "api",
    "provider",
    "model",
    "usage",
    "stopReason",
    "timestamp",
];

/// The message being built and the channel its events go to.
#[derive(Debug)]
pub struct Output {
    pub msg: AssistantMessage,
    tx: StreamSender,
    started: Instant,
    /// Optional keys in the order they were first assigned.
    keys: Vec<&'static str>,
    /// `providerThinkingLevel` set at construction sits before `usage`, as in Pi's literal.
    early_provider_level: bool,
    gone: bool,
}

impl Output {
    /// A `pending` message for `model`, timestamped now. `started` is when the request began.
    pub fn new(model: &Model, api: &str, tx: StreamSender, started: Instant) -> Output {
        Output {
            msg: AssistantMessage::new(
                api,
                &model.provider,
                &model.id,
                StopReason::Pending,
                now_ms(),
            ),
            tx,
            started,
            keys: Vec::new(),
            early_provider_level: false,
            gone: false,
        }
    }

    /// Sets `providerThinkingLevel` as part of the initial literal (before `usage`).
    pub fn with_provider_thinking_level(mut self, level: String) -> Output {
        self.msg.provider_thinking_level = Some(level);
        self.early_provider_level = true;
        self
    }

    fn touch(&mut self, key: &'static str) {
        if !self.keys.contains(&key) {
            self.keys.push(key);
        }
    }

    fn untouch(&mut self, key: &'static str) {
        self.keys.retain(|k| *k != key);
    }

    pub fn set_response_id(&mut self, id: String) {
        self.msg.response_id = Some(id);
        self.touch("responseId");
    }

    pub fn set_response_model(&mut self, model: String) {
        self.msg.response_model = Some(model);
        self.touch("responseModel");
    }

    pub fn set_provider_thinking_level(&mut self, level: String) {
        self.msg.provider_thinking_level = Some(level);
        if !self.early_provider_level {
            self.touch("providerThinkingLevel");
        }
    }

    pub fn set_raw_stop_reason(&mut self, raw: String) {
        self.msg.raw_stop_reason = Some(raw);
        self.touch("rawStopReason");
    }

    pub fn set_error_message(&mut self, text: String) {
        self.msg.error_message = Some(text);
        self.touch("errorMessage");
    }

    pub fn clear_error_message(&mut self) {
        self.msg.error_message = None;
        self.untouch("errorMessage");
    }

    /// A copy of the usage as it stands.
    pub fn usage(&self) -> Usage {
        (*self.msg.usage).clone()
    }

    /// Appends a diagnostic note (`appendAssistantMessageDiagnostic`).
    pub fn push_diagnostic(&mut self, d: pi_protocol::message::AssistantMessageDiagnostic) {
        self.msg.diagnostics.get_or_insert_with(Vec::new).push(d);
        self.touch("diagnostics");
    }

    /// Milliseconds since the request began.
    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// True once the consumer dropped its end; the adapter should stop.
    pub fn gone(&self) -> bool {
        self.gone
    }

    pub async fn emit(&mut self, ev: StreamEvent) {
        if !self.gone && !self.tx.send(ev).await {
            self.gone = true;
        }
    }

    /// Emits the text delta `delta` of the block at `index` (already appended to it).
    pub async fn text_delta(&mut self, index: usize, delta: String) {
        let usage = self.usage();
        self.emit(StreamEvent::TextDelta {
            index,
            delta,
            usage,
        })
        .await;
    }

    /// Emits the thinking delta `delta` of the block at `index` (already appended to it).
    pub async fn thinking_delta(&mut self, index: usize, delta: String) {
        let usage = self.usage();
        self.emit(StreamEvent::ThinkingDelta {
            index,
            delta,
            usage,
        })
        .await;
    }

    /// Emits `Start` with the message as it stands (no content yet).
    pub async fn start(&mut self) {
        let mut partial = self.msg.clone();
        partial.content.clear();
        self.emit(StreamEvent::Start { partial }).await;
    }

    fn finalize(&mut self) -> AssistantMessage {
        let mut order: Vec<String> = Vec::with_capacity(BASE_KEYS.len() + self.keys.len() + 2);
        for k in BASE_KEYS {
            if k == "usage"
                && self.early_provider_level
                && self.msg.provider_thinking_level.is_some()
            {
                order.push("providerThinkingLevel".into());
            }
            order.push(k.into());
        }
        order.extend(self.keys.iter().map(|k| k.to_string()));
        let mut msg = self.msg.clone();
        // Pi times the response with a monotonic clock from the stream's creation.
        msg.duration_ms = Some(self.started.elapsed().as_millis() as u64);
        order.push("durationMs".into());
        msg.rest.set_order(KeyOrder::Recorded(Arc::from(order)));
        msg
    }

    /// Ends before the request was made (missing key, bad tool declaration): Pi's setup-error
    /// message, with `errorMessage` before `timestamp` and no stream `Start`.
    pub async fn setup_fail(mut self, text: String) {
        let ev = setup_error_message(&self.msg, text, self.started);
        self.emit(ev).await;
    }

    /// Ends with `Done` (the stop reason must be `stop`, `length` or `toolUse`).
    pub async fn done(mut self) {
        let message = self.finalize();
        self.emit(StreamEvent::Done { message }).await;
    }

    /// Ends with `Error` carrying the message as it stands (stop reason and `errorMessage` set by
    /// the adapter, e.g. relayed from a backend's own error event).
    pub async fn end_as_is(mut self) {
        let message = self.finalize();
        self.emit(StreamEvent::Error { message }).await;
    }

    /// Ends with `Error`: `aborted` when `aborted`, else `error`, with `text` as `errorMessage`.
    pub async fn fail(mut self, aborted: bool, text: String) {
        self.msg.stop_reason = if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        };
        self.set_error_message(text);
        let message = self.finalize();
        self.emit(StreamEvent::Error { message }).await;
    }
}

/// [`crate::request::setup_error`] for a message already addressed (api, provider, model, timestamp).
pub fn setup_error_message(base: &AssistantMessage, text: String, started: Instant) -> StreamEvent {
    let mut msg = AssistantMessage::new(
        base.api.clone(),
        base.provider.clone(),
        base.model.clone(),
        StopReason::Error,
        base.timestamp,
    );
    msg.error_message = Some(text);
    msg.duration_ms = Some(started.elapsed().as_millis() as u64);
    let mut order: Vec<String> = AssistantMessage::FAILURE_ORDER
        .iter()
        .map(|s| s.to_string())
        .collect();
    order.push("durationMs".into());
    msg.rest.set_order(KeyOrder::Recorded(Arc::from(order)));
    StreamEvent::Error { message: msg }
}
