//! The conversation as plain text for the summarizer (Pi's `serializeConversation`). Sent as
//! text inside one user message, so the model reads it as a document instead of continuing it.
//! Thinking is left out; long tool results are cut.

use crate::messages::converted;
use pi_js::json::to_js_string;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::AgentMessage;

/// Longest tool result kept, in UTF-16 units.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

fn user_blocks_text(blocks: &[UserBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            UserBlock::Image(_) => None,
        })
        .collect()
}

/// The first `max` UTF-16 units of `text`, without splitting a surrogate pair.
fn slice_head(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (at, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &text[..at];
        }
    }
    text
}

fn truncate_for_summary(text: &str) -> String {
    let len = pi_js::utf16_len(text);
    if len <= TOOL_RESULT_MAX_CHARS {
        return text.to_string();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        slice_head(text, TOOL_RESULT_MAX_CHARS),
        len - TOOL_RESULT_MAX_CHARS
    )
}

fn tool_call_text(name: &str, args: &serde_json::Map<String, serde_json::Value>) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|(k, v)| format!("{k}={}", to_js_string(v).unwrap_or_default()))
        .collect();
    format!("{name}({})", args.join(", "))
}

/// Converts the agent messages to what the model would see, then renders them as
/// `[User]: …`, `[Assistant]: …`, `[Assistant tool calls]: …` and `[Tool result]: …` parts
/// separated by blank lines.
pub fn serialize_conversation(messages: &[AgentMessage]) -> String {
    let mut parts = Vec::new();
    for message in messages.iter().filter_map(converted) {
        match &message {
            AgentMessage::User(u) => {
                let text = match &u.content {
                    StringOrBlocks::Text(s) => s.clone(),
                    StringOrBlocks::Blocks(blocks) => user_blocks_text(blocks),
                };
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            AgentMessage::Assistant(a) => {
                let texts: Vec<&str> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<String> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::ToolCall(c) => Some(tool_call_text(&c.name, &c.arguments)),
                        _ => None,
                    })
                    .collect();
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            AgentMessage::ToolResult(t) => {
                let text = user_blocks_text(&t.content);
                if !text.is_empty() {
                    parts.push(format!("[Tool result]: {}", truncate_for_summary(&text)));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::{TextContent, ThinkingContent, ToolCall};
    use pi_protocol::message::{AssistantMessage, ToolResultMessage, UserMessage};
    use pi_protocol::usage::StopReason;
    use serde_json::json;

    fn tool_result(text: &str) -> AgentMessage {
        AgentMessage::ToolResult(
            serde_json::from_value::<ToolResultMessage>(json!({
                "role": "toolResult", "toolCallId": "c1", "toolName": "read",
                "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3
            }))
            .unwrap(),
        )
    }

    #[test]
    fn renders_each_role_as_pi_documents_it() {
        let user = AgentMessage::User(UserMessage::new(
            StringOrBlocks::Blocks(vec![UserBlock::Text(TextContent::new("read f please"))]),
            1,
        ));
        let mut call = AssistantMessage::new("api", "p", "m", StopReason::ToolUse, 2);
        let args = json!({"path": "f.txt", "limit": 3})
            .as_object()
            .cloned()
            .unwrap();
        call.content = vec![
            AssistantBlock::Thinking(ThinkingContent::new("hidden")),
            AssistantBlock::ToolCall(ToolCall::new("c1", "read", args)),
        ];
        let mut answer = AssistantMessage::new("api", "p", "m", StopReason::Stop, 4);
        answer.content = vec![
            AssistantBlock::Text(TextContent::new("I read")),
            AssistantBlock::Text(TextContent::new("the file")),
        ];
        let text = serialize_conversation(&[
            user,
            AgentMessage::Assistant(call),
            tool_result("content of f\n"),
            AgentMessage::Assistant(answer),
        ]);
        assert_eq!(
            text,
            "[User]: read f please\n\n[Assistant tool calls]: read(path=\"f.txt\", limit=3)\n\n[Tool result]: content of f\n\n\n[Assistant]: I read\nthe file"
        );
    }

    #[test]
    fn long_tool_results_are_cut_at_2000_units() {
        let long = "x".repeat(2005);
        let text = serialize_conversation(&[tool_result(&long)]);
        assert_eq!(
            text,
            format!(
                "[Tool result]: {}\n\n[... 5 more characters truncated]",
                "x".repeat(2000)
            )
        );
        // A surrogate pair straddling the limit is left out whole.
        let astral = format!("{}😀", "y".repeat(1999));
        assert_eq!(slice_head(&astral, 2000), "y".repeat(1999));
    }
}
