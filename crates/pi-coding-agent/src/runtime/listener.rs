//! How the runtime follows the agent loop: queue bookkeeping when a queued message is delivered,
//! persistence of every finished message, the wire record, and retry bookkeeping.
//!
//! Unlike Pi, which writes the event and persists afterwards, a message reaches the session
//! file before its `message_end` reaches the client: a client never sees a message that a crash
//! could lose.
//!
//! A message the file refused (a full disk) ends the run, as Pi's throwing `appendMessage` does:
//! the client gets Pi's failure message (`stopReason: "error"`, the Node-worded write error)
//! after the refused message's `message_end`, then the run's aborted end and `agent_end` (Pi
//! never sends those: see DEVIATIONS.md). Nothing later in the run is written or shown as saved.

use super::{Core, lock};
use pi_agent::{AgentEvent, AgentListener, BoxFuture};
use pi_protocol::SharedMessage;
use pi_protocol::content::{AssistantBlock, TextContent};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::record::KeyOrder;
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
                lock(&self.run).persist_failed = false;
                // An abort that arrived while the run was starting stops it here.
                if lock(&self.run).abort_requested
                    && let Some(agent) = self.agent()
                {
                    agent.abort();
                }
            }
            AgentEvent::MessageStart { message } => {
                if let AgentMessage::User(user) = &**message {
                    self.user_message_started(user).await;
                }
            }
            _ => {}
        }
        let refused = match event {
            AgentEvent::MessageEnd { message } => self.persist_message(message),
            _ => None,
        };
        let will_retry = match event {
            AgentEvent::AgentEnd { messages } => self.will_retry_after(messages),
            _ => false,
        };
        // Extensions' handlers run before the client hears of the event (as in Pi).
        self.ext_agent_event(event).await;
        self.emit_agent(event, will_retry).await;
        if let Some(text) = refused {
            self.fail_run_on_refused_write(text).await;
        }
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

    /// A user message is being delivered: the queued copy of its text leaves the queue.
    async fn user_message_started(&self, user: &UserMessage) {
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

    /// Writes a finished message to the session file; the error text when the file refused it.
    fn persist_message(&self, message: &SharedMessage) -> Option<String> {
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
            Err(e) => {
                eprintln!("pi: could not write to the session file: {e}");
                return Some(node_write_error(&e));
            }
        }
        None
    }

    /// The first refused write of a run: Pi's failure message on the wire, and the run aborted
    /// (a run that cannot be saved should not go on spending tokens and running tools).
    async fn fail_run_on_refused_write(&self, text: String) {
        if std::mem::replace(&mut lock(&self.run).persist_failed, true) {
            return;
        }
        let Some(agent) = self.agent() else { return };
        let model = agent.with_state(|s| s.model.clone());
        let mut failure = AssistantMessage::new(
            &model.api,
            &model.provider,
            &model.id,
            StopReason::Error,
            pi_js::time::now_ms(),
        );
        failure.content = vec![AssistantBlock::Text(TextContent::new(""))];
        failure.error_message = Some(text);
        failure
            .rest
            .set_order(KeyOrder::Recorded(std::sync::Arc::from(
                AssistantMessage::FAILURE_ORDER
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>(),
            )));
        let failure = SharedMessage::new(AgentMessage::Assistant(failure));
        self.emit_agent(
            &AgentEvent::MessageStart {
                message: failure.clone(),
            },
            false,
        )
        .await;
        self.emit_agent(&AgentEvent::MessageEnd { message: failure }, false)
            .await;
        agent.abort();
    }

    /// Pi's `_willRetryAfterAgentEnd`.
    fn will_retry_after(&self, messages: &[SharedMessage]) -> bool {
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
            .find_map(|m| match &**m {
                AgentMessage::Assistant(a) => Some(self.is_retryable(a)),
                _ => None,
            })
            .unwrap_or(false)
    }
}

/// A session write error as Node words `appendFileSync`'s (`ENOSPC: no space left on device,
/// write`), which is what Pi's failure message carries.
fn node_write_error(e: &pi_session::SessionError) -> String {
    match e {
        pi_session::SessionError::Io { source, .. } => {
            pi_tools::fs_error::without_path(source, "write")
        }
        other => other.to_string(),
    }
}
