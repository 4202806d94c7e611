//! Read-only commands: `get_state`, `get_messages`, `get_session_stats`,
//! `get_last_assistant_text`, `get_available_thinking_levels`.

use super::{Runtime, lock};
use pi_protocol::SharedMessage;
use pi_protocol::content::AssistantBlock;
use pi_protocol::message::AgentMessage;
use pi_protocol::results::RpcSessionState;
use pi_protocol::usage::StopReason;

impl Runtime {
    pub fn state(&self) -> RpcSessionState {
        let (model, thinking_level, message_count) = self
            .agent
            .with_state(|s| (s.model.clone(), s.thinking_level, s.messages.len()));
        let settings = self.core.settings();
        let session = lock(&self.core.session);
        let run = lock(&self.core.run);
        RpcSessionState {
            model: Some(model),
            thinking_level,
            is_streaming: self.core.is_streaming(),
            is_compacting: run.compacting || run.auto_compacting,
            steering_mode: settings.steering_mode,
            follow_up_mode: settings.follow_up_mode,
            session_file: session
                .session_file()
                .map(|p| p.to_string_lossy().into_owned()),
            session_id: session.session_id().to_string(),
            session_name: session.session_name().filter(|n| !n.is_empty()),
            auto_compaction_enabled: settings.compaction_enabled(),
            message_count: message_count as u64,
            pending_message_count: (run.steering.len() + run.follow_up.len()) as u64,
        }
    }

    /// The transcript (shared, not copied: `get_messages` serializes it from here).
    pub fn messages(&self) -> Vec<SharedMessage> {
        self.agent.messages()
    }

    /// Pi's `getLastAssistantText`: skips failed or aborted messages without text; `None` when
    /// there is nothing (Pi then answers `{}`).
    pub fn last_assistant_text(&self) -> Option<String> {
        self.agent.with_state(|s| {
            for m in s.messages.iter().rev() {
                let AgentMessage::Assistant(a) = &**m else {
                    continue;
                };
                let text: String = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                if a.stop_reason != StopReason::Stop && pi_js::trim(&text).is_empty() {
                    continue;
                }
                let trimmed = pi_js::trim(&text);
                return (!trimmed.is_empty()).then(|| trimmed.to_string());
            }
            None
        })
    }
}
