//! What the model sees of the coding agent's own message kinds (Pi's `convertToLlm`).
//!
//! `bashExecution` output becomes a user message in the format Pi documents for the RPC `bash`
//! command; custom messages become user messages; compaction and branch summaries become user
//! messages wrapped in our own framing text.

use pi_protocol::SharedMessage;
use pi_protocol::content::{StringOrBlocks, TextContent, UserBlock, UserContent};
use pi_protocol::message::{AgentMessage, BashExecutionMessage, UserMessage};

// Prompt text, so ours (the conformance normalizer treats Pi's and ours alike).
const COMPACTION_SUMMARY_OPEN: &str =
    "Earlier parts of this conversation were condensed into the summary below.\n\n<summary>\n";
const COMPACTION_SUMMARY_CLOSE: &str = "\n</summary>";
const BRANCH_SUMMARY_OPEN: &str =
    "The conversation returned here from another branch, summarized below.\n\n<summary>\n";
const BRANCH_SUMMARY_CLOSE: &str = "</summary>";

/// The text a `bash` command's result contributes to the next request.
pub fn bash_execution_text(m: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", m.command);
    if m.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", m.output));
    }
    if m.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if m.truncated
        && let Some(path) = &m.full_output_path
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

fn user_text(text: String, timestamp: u64) -> AgentMessage {
    AgentMessage::User(UserMessage::new(
        StringOrBlocks::Blocks(vec![UserBlock::Text(TextContent::new(text))]),
        timestamp,
    ))
}

/// Maps the transcript to the four roles a provider understands, dropping what it must not see.
pub fn convert_to_llm(messages: &[SharedMessage]) -> Vec<SharedMessage> {
    messages
        .iter()
        .filter_map(|m| match &**m {
            // Shared with the transcript, not copied.
            AgentMessage::System(_)
            | AgentMessage::User(_)
            | AgentMessage::Assistant(_)
            | AgentMessage::ToolResult(_) => Some(m.clone()),
            other => converted(other).map(SharedMessage::new),
        })
        .collect()
}

/// What one message becomes for the model, if anything.
pub fn converted(m: &AgentMessage) -> Option<AgentMessage> {
    match m {
        AgentMessage::System(_)
        | AgentMessage::User(_)
        | AgentMessage::Assistant(_)
        | AgentMessage::ToolResult(_) => Some(m.clone()),
        AgentMessage::BashExecution(b) if b.exclude_from_context == Some(true) => None,
        AgentMessage::BashExecution(b) => Some(user_text(bash_execution_text(b), b.timestamp)),
        AgentMessage::Custom(c) => {
            let content: UserContent = match &c.content {
                StringOrBlocks::Text(s) => {
                    StringOrBlocks::Blocks(vec![UserBlock::Text(TextContent::new(s.clone()))])
                }
                blocks => blocks.clone(),
            };
            Some(AgentMessage::User(UserMessage::new(content, c.timestamp)))
        }
        AgentMessage::BranchSummary(b) => Some(user_text(
            format!("{BRANCH_SUMMARY_OPEN}{}{BRANCH_SUMMARY_CLOSE}", b.summary),
            b.timestamp,
        )),
        AgentMessage::CompactionSummary(c) => Some(user_text(
            format!(
                "{COMPACTION_SUMMARY_OPEN}{}{COMPACTION_SUMMARY_CLOSE}",
                c.summary
            ),
            c.timestamp,
        )),
        AgentMessage::Other(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(output: &str, exit: Option<i64>, cancelled: bool) -> BashExecutionMessage {
        BashExecutionMessage {
            command: "cmd".into(),
            output: output.into(),
            exit_code: exit,
            cancelled,
            truncated: false,
            full_output_path: None,
            timestamp: 1,
            exclude_from_context: None,
            rest: Default::default(),
        }
    }

    #[test]
    fn bash_text_matches_the_documented_format() {
        assert_eq!(
            bash_execution_text(&bash("", Some(3), false)),
            "Ran `cmd`\n(no output)\n\nCommand exited with code 3"
        );
        assert_eq!(
            bash_execution_text(&bash("hello\n", Some(0), false)),
            "Ran `cmd`\n```\nhello\n\n```"
        );
        assert_eq!(
            bash_execution_text(&bash("x", None, true)),
            "Ran `cmd`\n```\nx\n```\n\n(command cancelled)"
        );
        let mut t = bash("tail", Some(0), false);
        t.truncated = true;
        t.full_output_path = Some("/tmp/pi-bash-0.log".into());
        assert_eq!(
            bash_execution_text(&t),
            "Ran `cmd`\n```\ntail\n```\n\n[Output truncated. Full output: /tmp/pi-bash-0.log]"
        );
    }

    #[test]
    fn excluded_bash_output_is_dropped() {
        let mut b = bash("secret", Some(0), false);
        b.exclude_from_context = Some(true);
        assert!(convert_to_llm(&[SharedMessage::new(AgentMessage::BashExecution(b))]).is_empty());
    }
}
