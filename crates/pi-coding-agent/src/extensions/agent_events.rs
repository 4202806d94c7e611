//! The agent loop's events as extensions receive them: each handled event runs its handlers
//! before the client's record of it (Pi awaits them inside the loop). `message_end` goes
//! through the agent's hook instead, since its handlers may replace the message.

use crate::runtime::{Core, lock};
use pi_agent::AgentEvent;
use serde_json::{Value, json};

impl Core {
    pub(crate) async fn ext_agent_event(&self, event: &AgentEvent) {
        if !self.ext.loaded() {
            return;
        }
        let name = event.type_name();
        self.track_partial(event);
        if matches!(event, AgentEvent::MessageEnd { .. }) || !self.ext.handles(name) {
            self.count_turns(event);
            return;
        }
        let mut payload = match serde_json::to_value(event.wire(false, None)) {
            Ok(Value::Object(map)) => map,
            _ => return,
        };
        payload.remove("type");
        match event {
            AgentEvent::TurnStart => {
                payload.insert("turnIndex".into(), json!(lock(&self.run).turn_index));
                payload.insert("timestamp".into(), json!(pi_js::now_ms()));
            }
            AgentEvent::TurnEnd { message, .. } => {
                let outcome = turn_outcome(message);
                let run = lock(&self.run);
                payload.insert("turnIndex".into(), json!(run.turn_index));
                payload.insert("messageEntryId".into(), json!(run.last_assistant_entry));
                payload.insert("toolResultEntryIds".into(), json!(run.tool_result_entries));
                drop(run);
                payload.insert("outcome".into(), json!(outcome));
                payload.insert("entries".into(), json!([]));
                payload.insert("continue".into(), json!(false));
                payload.insert("context".into(), self.boundary_context());
            }
            AgentEvent::AgentEnd { .. } => {
                payload.remove("willRetry");
            }
            AgentEvent::MessageUpdate { event } => {
                payload.remove("usage");
                if let Some(partial) = self.partial_message(event) {
                    payload.insert("message".into(), partial);
                }
            }
            _ => {}
        }
        self.count_turns(event);
        let result = self.ext_emit(name, Value::Object(payload)).await;
        if matches!(event, AgentEvent::TurnEnd { .. })
            && let Some(drafts) = result
                .as_ref()
                .and_then(|r| r.get("entries"))
                .and_then(Value::as_array)
        {
            self.apply_boundary_drafts(drafts, "turn_end").await;
        }
    }

    /// `turnIndex` of `turn_start`/`turn_end`: 0-based within a low-level run.
    fn count_turns(&self, event: &AgentEvent) {
        let mut run = lock(&self.run);
        match event {
            AgentEvent::AgentStart => run.turn_index = 0,
            AgentEvent::TurnEnd { message, .. } => {
                run.turn_index += 1;
                run.last_outcome = Some(turn_outcome(message));
            }
            _ => {}
        }
    }

    /// Starts or ends the rebuilt partial message (only while `message_update` is handled).
    fn track_partial(&self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } if self.ext.handles("message_update") => {
                if let pi_protocol::message::AgentMessage::Assistant(a) = &**message {
                    *lock(&self.ext_partial) =
                        Some(crate::extensions::PartialAssistant::new(a.clone()));
                }
            }
            AgentEvent::MessageEnd { .. } => *lock(&self.ext_partial) = None,
            _ => {}
        }
    }

    /// The assistant message as streamed so far, for `message_update` handlers.
    fn partial_message(&self, event: &pi_ai::StreamEvent) -> Option<Value> {
        let mut partial = lock(&self.ext_partial);
        let message = partial.as_mut()?;
        message.apply(event);
        serde_json::to_value(&message.message).ok()
    }
}

/// How a turn ended, in the words of `turn_end`/`agent_before_settle`'s `outcome`.
fn turn_outcome(message: &pi_protocol::message::AgentMessage) -> &'static str {
    match message {
        pi_protocol::message::AgentMessage::Assistant(a) => match a.stop_reason {
            pi_protocol::usage::StopReason::Aborted => "aborted",
            pi_protocol::usage::StopReason::Error => "error",
            _ => "completed",
        },
        _ => "completed",
    }
}
