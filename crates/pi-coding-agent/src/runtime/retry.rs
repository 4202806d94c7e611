//! Automatic retry of transient provider errors (Pi's `_prepareRetry` and friends).
//!
//! A retried attempt stays in the session file but is hidden from later context by a
//! `context_edit` entry (replacement `null`) for it and its tool results, as 1.6.0 records it.

use super::{Core, lock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AssistantMessage;
use tokio_util::sync::CancellationToken;

impl Core {
    /// Retryable and not a context overflow (overflow goes to compaction).
    pub fn is_retryable(&self, message: &AssistantMessage) -> bool {
        let window = self
            .agent()
            .map(|a| a.with_state(|s| s.model.context_window));
        if pi_ai::errors::is_context_overflow(message, window) {
            return false;
        }
        pi_ai::errors::is_retryable(message)
    }

    /// Schedules a retry: `auto_retry_start`, the omission of the failed attempt, then the
    /// backoff sleep. False when retries are off, exhausted, or the sleep was cancelled.
    pub async fn prepare_retry(&self, message: &AssistantMessage) -> bool {
        let retry = lock(&self.res).settings.settings().retry;
        if !retry.enabled {
            return false;
        }
        let attempt = {
            let mut run = lock(&self.run);
            run.retry_attempt += 1;
            if run.retry_attempt as f64 > retry.max_retries {
                // Keep the completed count so post-run handling reports the final failure.
                run.retry_attempt -= 1;
                return false;
            }
            run.retry_attempt
        };
        let delay_ms = pi_ai::errors::retry_delay_ms(
            retry.base_delay_ms.max(0.0) as u64,
            retry.max_agent_delay_ms.max(0.0) as u64,
            attempt as u32,
        );
        // Registered before the client hears of the retry, so an `abort` or `abort_retry` sent
        // in reply to `auto_retry_start` always finds it.
        let cancel = CancellationToken::new();
        {
            let mut run = lock(&self.run);
            if run.abort_requested {
                cancel.cancel();
            }
            run.retry_cancel = Some(cancel.clone());
        }
        self.emit(SessionEvent::AutoRetryStart {
            attempt,
            max_attempts: retry.max_retries.max(0.0) as u64,
            delay_ms,
            error_message: message
                .error_message
                .clone()
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "Unknown error".to_string()),
        })
        .await;
        self.omit_failed_attempt().await;
        let slept = tokio::select! {
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(std::time::Duration::from_millis(delay_ms)) => true,
        };
        lock(&self.run).retry_cancel = None;
        if !slept {
            self.finish_cancelled_retry().await;
        }
        let waiters = std::mem::take(&mut lock(&self.run).abort_retry_waiters);
        for id in waiters {
            let response: pi_protocol::RpcResponse<serde_json::Value> =
                pi_protocol::RpcResponse::new(id, "abort_retry", pi_protocol::Outcome::Ok);
            self.write(&response).await;
        }
        slept
    }

    /// `auto_retry_end{success:false, finalError:"Retry cancelled"}` if a retry was pending.
    pub async fn finish_cancelled_retry(&self) {
        let attempt = std::mem::take(&mut lock(&self.run).retry_attempt);
        if attempt > 0 {
            self.emit(SessionEvent::AutoRetryEnd {
                success: false,
                attempt,
                final_error: Some("Retry cancelled".to_string()),
            })
            .await;
        }
    }

    /// Hides the last assistant message and its tool results from the model context.
    async fn omit_failed_attempt(&self) {
        let targets: Vec<String> = {
            let run = lock(&self.run);
            run.last_assistant_entry
                .iter()
                .chain(run.tool_result_entries.iter())
                .cloned()
                .collect()
        };
        for target in targets {
            let entry = {
                let mut session = lock(&self.session);
                session
                    .append_context_edit(&target, None)
                    .map(|id| session.entry(&id).cloned())
            };
            match entry {
                Ok(Some(entry)) => self.emit(SessionEvent::EntryAppended { entry }).await,
                Ok(None) => {}
                Err(e) => eprintln!("pi: could not write to the session file: {e}"),
            }
        }
        self.refresh_agent_context();
    }

    /// Replaces the agent's transcript with the session's context for the current leaf.
    pub fn refresh_agent_context(&self) {
        let messages = lock(&self.session).build_context().into_owned_messages();
        if let Some(agent) = self.agent() {
            agent.with_state(|s| s.messages = messages);
        }
    }
}
