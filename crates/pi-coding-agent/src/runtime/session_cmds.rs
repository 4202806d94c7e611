//! Session commands that read or annotate the current session file.

use super::{Core, Runtime, lock};
use pi_protocol::SharedMessage;
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AgentMessage;
use pi_protocol::results::{ForkMessage, SessionStats};

impl Runtime {
    /// `set_session_name`: trimmed, newlines become spaces; empty is an error.
    pub async fn set_session_name(&self, name: &str) -> Result<(), String> {
        let name = pi_js::trim(name);
        if name.is_empty() {
            return Err("Session name cannot be empty".into());
        }
        let current = {
            let mut session = lock(&self.core.session);
            session
                .append_session_info(name)
                .map_err(|e| e.to_string())?;
            session.session_name()
        };
        self.core
            .emit(SessionEvent::SessionInfoChanged {
                name: current.clone(),
            })
            .await;
        self.core
            .ext_emit(
                "session_info_changed",
                serde_json::json!({ "name": current }),
            )
            .await;
        Ok(())
    }

    /// The session, locked (large responses are written from it directly).
    pub fn session(&self) -> std::sync::MutexGuard<'_, pi_session::SessionStore> {
        lock(&self.core.session)
    }

    /// The session file's header line (JSON mode writes it first).
    pub fn session_header(&self) -> serde_json::Map<String, serde_json::Value> {
        lock(&self.core.session).header().clone()
    }

    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        lock(&self.core.session).fork_messages()
    }

    pub fn session_stats(&self) -> SessionStats {
        let mut stats = lock(&self.core.session).stats();
        stats.context_usage = self.context_usage();
        stats
    }
}

impl Core {
    /// RPC `bash` results held while a run was active go into the session once it settles.
    pub fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut lock(&self.run).pending_bash);
        for message in pending {
            let message = SharedMessage::new(AgentMessage::BashExecution(message));
            let appended = lock(&self.session).append_shared_message(message.clone());
            if let Err(e) = appended {
                eprintln!("pi: could not write to the session file: {e}");
            }
            if let Some(agent) = self.agent() {
                agent.with_state(|s| s.messages.push(message));
            }
        }
    }
}
