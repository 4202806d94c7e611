//! Writing records to the client.

use super::Core;
use pi_agent::AgentEvent;
use pi_js::json::{to_js_line, to_js_string};
use pi_protocol::event::SessionEvent;
use pi_protocol::message_json_memo::{clear_json_memo, with_json_memo};
use pi_protocol::usage::Usage;
use serde::Serialize;
use serde_json::value::RawValue;

impl Core {
    /// Writes one record, waiting while the client is slow to read.
    pub async fn write<T: Serialize + ?Sized>(&self, record: &T) {
        self.send_line(to_js_line(record), false).await;
    }

    /// `update`: a streamed update that may leave together with the rest of its burst (see
    /// `Output::send_update`).
    async fn send_line(&self, line: serde_json::Result<String>, update: bool) {
        match line {
            Ok(line) if update => {
                self.out.send_update(line).await;
            }
            Ok(line) => {
                self.out.send(line).await;
            }
            Err(e) => eprintln!("pi: could not serialize a record: {e}"),
        }
    }

    pub async fn emit(&self, event: SessionEvent) {
        self.write(&event).await;
    }

    pub async fn emit_agent(&self, event: &AgentEvent, will_retry: bool) {
        let line = match event.update_usage() {
            Some(usage) => self.update_line(event, will_retry, usage),
            // A long message is written once for all the records that carry it (see the memo).
            None => with_json_memo(|| to_js_line(&event.wire(will_retry, None))),
        };
        if matches!(event, AgentEvent::AgentEnd { .. }) {
            clear_json_memo();
        }
        let update = matches!(
            event,
            AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. }
        );
        self.send_line(line, update).await;
    }

    /// The record of a `message_update`, its usage taken from the cache while unchanged.
    fn update_line(
        &self,
        event: &AgentEvent,
        will_retry: bool,
        usage: &Usage,
    ) -> serde_json::Result<String> {
        let mut cache = super::lock(&self.usage_json);
        let raw = match &*cache {
            Some((cached, raw)) if cached == usage => raw,
            _ => {
                let raw = RawValue::from_string(to_js_string(usage)?)?;
                &cache.insert((usage.clone(), raw)).1
            }
        };
        to_js_line(&event.wire(will_retry, Some(raw)))
    }

    /// `queue_update` with the complete current queues.
    pub async fn emit_queue_update(&self) {
        let (steering, follow_up) = {
            let run = super::lock(&self.run);
            (run.steering.clone(), run.follow_up.clone())
        };
        self.emit(SessionEvent::QueueUpdate {
            steering,
            follow_up,
        })
        .await;
    }
}
