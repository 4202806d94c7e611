//! How the runtime follows the agent loop: queue bookkeeping when a queued message is delivered,
//! persistence of every finished message, the wire record, and retry bookkeeping.
//!
//! Unlike Pi, which writes the event and persists afterwards, a message reaches the session
//! file before its `message_end` reaches the client: a client never sees a message that a crash
//! could lose.

use super::{Core, lock};
use pi_agent::{AgentEvent, AgentListener, BoxFuture};
use pi_protocol::SharedMessage;
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AgentMessage;
use pi_protocol::usage::StopReason;
use pi_session::user_text;

impl AgentListener for Core {
    fn on_event<'a>(&'a self, event: &'a AgentEvent) -> BoxFuture<'a> {
        Box::pin(self.handle_event(event))
    }
}

impl Core {
    async fn handle_event(&self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart => {
                // An abort that arrived while the run was starting stops it here.
                if lock(&self.run).abort_requested
                    && let Some(agent) = self.agent()
                {
                    agent.abort();
                }
            }
            AgentEvent::MessageStart {
                message: AgentMessage::User(user),
            } => {
                let text = user_text(&user.content);
                let removed = {
                    let mut run = lock(&self.run);
                    // A new user message gets its own overflow compact-and-retry.
                    run.overflow_recovery_attempted = false;
                    if let Some(i) = run.steering.iter().position(|t| *t == text) {
                        run.steering.remove(i);
                        true
                    } else if let Some(i) = run.follow_up.iter().position(|t| *t == text) {
                        run.follow_up.remove(i);
                        true
                    } else {
                        false
                    }
                };
                if removed {
                    self.emit_queue_update().await;
                }
            }
            AgentEvent::MessageEnd { message } => self.persist_message(message),
            _ => {}
        }
        let will_retry = match event {
            AgentEvent::AgentEnd { messages } => self.will_retry_after(messages),
            _ => false,
        };
        // Extensions' handlers run before the client hears of the event (as in Pi).
        self.ext_agent_event(event).await;
        self.emit_agent(event, will_retry).await;
        if matches!(event, AgentEvent::TurnEnd { .. }) {
            self.flush_held_custom().await;
        }
        if let AgentEvent::MessageEnd { message } = event
            && let AgentMessage::Assistant(a) = &**message
        {
            let finished_retry = {
                let mut run = lock(&self.run);
                run.last_assistant = Some(a.clone());
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Length) {
                    run.overflow_recovery_attempted = false;
                }
                if a.stop_reason != StopReason::Error && run.retry_attempt > 0 {
                    Some(std::mem::take(&mut run.retry_attempt))
                } else {
                    None
                }
            };
            if let Some(attempt) = finished_retry {
                self.emit(SessionEvent::AutoRetryEnd {
                    success: true,
                    attempt,
                    final_error: None,
                })
                .await;
            }
        }
    }

    fn persist_message(&self, message: &SharedMessage) {
        let result = {
            let mut session = lock(&self.session);
            match &**message {
                AgentMessage::System(_)
                | AgentMessage::User(_)
                | AgentMessage::Assistant(_)
                | AgentMessage::ToolResult(_) => {
                    session.append_shared_message(message.clone()).map(Some)
                }
                AgentMessage::Custom(c) => session
                    .append_custom_message_entry(
                        &c.custom_type,
                        c.content.clone(),
                        c.display,
                        c.details.clone(),
                    )
                    .map(Some),
                // bashExecution and summaries are persisted where they are created.
                _ => Ok(None),
            }
        };
        match result {
            Ok(Some(id)) => {
                let mut run = lock(&self.run);
                match &**message {
                    AgentMessage::Assistant(_) => {
                        run.last_assistant_entry = Some(id);
                        run.tool_result_entries.clear();
                    }
                    AgentMessage::ToolResult(_) => run.tool_result_entries.push(id),
                    _ => {}
                }
            }
            Ok(None) => {}
            Err(e) => eprintln!("pi: could not write to the session file: {e}"),
        }
    }

    /// Pi's `_willRetryAfterAgentEnd`.
    fn will_retry_after(&self, messages: &[AgentMessage]) -> bool {
        let (abort, attempt) = {
            let run = lock(&self.run);
            (run.abort_requested, run.retry_attempt)
        };
        if abort {
            return false;
        }
        let retry = lock(&self.res).settings.settings().retry;
        if !retry.enabled || attempt as f64 >= retry.max_retries {
            return false;
        }
        messages
            .iter()
            .rev()
            .find_map(|m| match m {
                AgentMessage::Assistant(a) => Some(self.is_retryable(a)),
                _ => None,
            })
            .unwrap_or(false)
    }
}
