//! Session commands that read or annotate the current session file.

use super::{Core, Runtime, lock};
use pi_protocol::event::SessionEvent;
use pi_protocol::message::AgentMessage;

impl Runtime {
    /// `set_session_name`: trimmed, newlines become spaces; empty is an error.
    pub async fn set_session_name(&self, name: &str) -> Result<(), String> {
        let name = name.trim();
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
            .emit(SessionEvent::SessionInfoChanged { name: current })
            .await;
        Ok(())
    }

    /// `get_entries` data as a JSON string (entries can be large: no intermediate tree).
    pub fn entries_json(&self, since: Option<&str>) -> Result<String, String> {
        let session = lock(&self.core.session);
        let entries = session.entries_since(since).map_err(|e| e.to_string())?;
        let mut out = String::from("{\"entries\":[");
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&pi_protocol::json::to_js_string(e).map_err(|e| e.to_string())?);
        }
        out.push_str("],\"leafId\":");
        out.push_str(&leaf_json(session.leaf_id()));
        out.push('}');
        Ok(out)
    }

    /// `get_tree` data as a JSON string.
    pub fn tree_json(&self) -> Result<String, String> {
        let session = lock(&self.core.session);
        let mut out = String::from("{\"tree\":");
        session
            .tree()
            .write_json(&mut out)
            .map_err(|e| e.to_string())?;
        out.push_str(",\"leafId\":");
        out.push_str(&leaf_json(session.leaf_id()));
        out.push('}');
        Ok(out)
    }

    /// The session file's header line (JSON mode writes it first).
    pub fn session_header(&self) -> serde_json::Map<String, serde_json::Value> {
        lock(&self.core.session).header().clone()
    }

    pub fn fork_messages(&self) -> Vec<pi_session::ForkMessage> {
        lock(&self.core.session).fork_messages()
    }

    pub fn session_stats(&self) -> pi_session::SessionStats {
        let mut stats = lock(&self.core.session).stats();
        stats.context_usage = self.context_usage();
        stats
    }
}

fn leaf_json(leaf: Option<&str>) -> String {
    match leaf {
        Some(id) => pi_protocol::json::to_js_string(id).unwrap_or_else(|_| "null".into()),
        None => "null".into(),
    }
}

impl Core {
    /// RPC `bash` results held while a run was active go into the session once it settles.
    pub fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut lock(&self.run).pending_bash);
        for message in pending {
            let message = AgentMessage::BashExecution(message);
            if let Err(e) = lock(&self.session).append_message(message.clone()) {
                eprintln!("pi: could not write to the session file: {e}");
            }
            if let Some(agent) = self.agent() {
                agent.with_state(|s| s.messages.push(message));
            }
        }
    }
}
