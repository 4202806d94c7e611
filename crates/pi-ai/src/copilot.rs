//! GitHub Copilot's per-request headers: who started the request (`X-Initiator`: the user, or
//! the agent continuing after its own turn), the intent, and whether images are attached.

use pi_protocol::content::{StringOrBlocks, UserBlock};
use pi_protocol::message::AgentMessage;

/// `X-Initiator`, `Openai-Intent` and, with images, `Copilot-Vision-Request`.
pub fn dynamic_headers<M: std::borrow::Borrow<AgentMessage>>(
    messages: &[M],
) -> Vec<(&'static str, String)> {
    let initiator = match messages.last().map(|m| m.borrow()) {
        Some(AgentMessage::User(_)) | None => "user",
        Some(_) => "agent",
    };
    let mut h = vec![
        ("X-Initiator", initiator.to_string()),
        ("Openai-Intent", "conversation-edits".to_string()),
    ];
    let images = messages.iter().any(|m| match m.borrow() {
        AgentMessage::User(u) => match &u.content {
            StringOrBlocks::Blocks(b) => b.iter().any(|x| matches!(x, UserBlock::Image(_))),
            StringOrBlocks::Text(_) => false,
        },
        AgentMessage::ToolResult(t) => t.content.iter().any(|x| matches!(x, UserBlock::Image(_))),
        _ => false,
    });
    if images {
        h.push(("Copilot-Vision-Request", "true".to_string()));
    }
    h
}
