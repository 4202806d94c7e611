//! The transcript as chat turns for the model's chat template.
//!
//! Tool use follows the Hermes/Qwen convention that many small instruct models were tuned on:
//! tools declared in the system prompt inside `<tools>`, a call written as
//! `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, and results given back in a
//! user turn inside `<tool_response>`. Past calls are re-rendered in exactly the form the
//! grammar lets the model write them, so a conversation reads consistently to the model.

use pi_ai::LlmContext;
use pi_ai::transcript::{current_system_message, system_text, transcript_tools};
use pi_ai::transform::transform_messages;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::tool::Tool;
use serde_json::json;

pub use crate::turn::{CALL_CLOSE, CALL_OPEN, Role, Turn, py_json, render_call};

/// What a request asks of the model: the turns, and the tools it may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub turns: Vec<Turn>,
    pub tools: Vec<Tool>,
    /// Assistant turns with tool calls since the last user message.
    pub tool_rounds: usize,
}

/// The request's prompt: one leading system turn (every system message replayed, plus the tool
/// protocol when tools are declared), the example exchanges of [`crate::shots`] when tools are
/// declared and `examples` is set, then the conversation. Failed assistant turns are dropped
/// and unanswered tool calls answered, as every adapter does.
pub fn render(model: &Model, context: &LlmContext, examples: bool) -> Prompt {
    let tools: Vec<Tool> = transcript_tools(&context.messages)
        .into_iter()
        .cloned()
        .collect();
    let messages = transform_messages(&context.messages, model, None);
    let mut turns = Vec::new();
    let mut system = current_system_message(&messages)
        .map(|s| system_text(&s))
        .unwrap_or_default();
    if !tools.is_empty() {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&tool_instructions(&tools));
    }
    if !system.is_empty() {
        turns.push(Turn::new(Role::System, system));
    }
    if examples {
        turns.extend(crate::shots::example_turns(&tools));
    }
    for msg in messages.iter().map(|m| &**m) {
        match msg {
            AgentMessage::User(u) => {
                let text = match &u.content {
                    StringOrBlocks::Text(t) => t.clone(),
                    StringOrBlocks::Blocks(b) => user_blocks_text(b),
                };
                turns.push(Turn::new(Role::User, text));
            }
            AgentMessage::Assistant(a) => {
                let parts: Vec<String> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::Text(t) => Some(t.text.clone()),
                        // Our models do not think; foreign thinking was never meant for them.
                        AssistantBlock::Thinking(_) => None,
                        AssistantBlock::ToolCall(tc) => Some(render_call(&tc.name, &tc.arguments)),
                    })
                    .filter(|p| !p.is_empty())
                    .collect();
                turns.push(Turn::new(Role::Assistant, parts.join("\n")));
            }
            AgentMessage::ToolResult(t) => {
                let response = format!(
                    "<tool_response>\n{}\n</tool_response>",
                    user_blocks_text(&t.content)
                );
                // Results of one batch of calls share a user turn, as the convention has it.
                match turns.last_mut() {
                    Some(last)
                        if last.role == Role::User
                            && last.content.ends_with("</tool_response>") =>
                    {
                        last.content.push('\n');
                        last.content.push_str(&response);
                    }
                    _ => turns.push(Turn::new(Role::User, response)),
                }
            }
            _ => {}
        }
    }
    let tool_rounds = messages
        .iter()
        .map(|m| &**m)
        .rev()
        .take_while(|m| !matches!(m, AgentMessage::User(_)))
        .filter(|m| {
            matches!(m, AgentMessage::Assistant(a)
                if a.content.iter().any(|b| matches!(b, AssistantBlock::ToolCall(_))))
        })
        .count();
    Prompt {
        turns,
        tools,
        tool_rounds,
    }
}

fn user_blocks_text(blocks: &[UserBlock]) -> String {
    blocks
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => t.text.as_str(),
            UserBlock::Image(_) => "(image omitted: model does not support images)",
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The system prompt's tool section: the declarations and how to call one.
pub fn tool_instructions(tools: &[Tool]) -> String {
    let declarations: Vec<String> = tools
        .iter()
        .map(|t| {
            py_json(&json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}))
        })
        .collect();
    let example = tools.first().map_or("ls", |t| t.name.as_str());
    format!(
        "# Tools\n\nYou may call one of these tools to help with the user's request:\n<tools>\n{}\n</tools>\n\n\
         When the request needs a tool, reply with nothing but the call:\n{CALL_OPEN}\n{{\"name\": \"{example}\", \"arguments\": {{...}}}}\n{CALL_CLOSE}\n\
         When it does not, reply in plain text.",
        declarations.join("\n")
    )
}

/// ChatML, for models whose chat template llama.cpp does not know (or that have none).
pub fn render_chatml(turns: &[Turn]) -> String {
    let mut out = String::new();
    for t in turns {
        out.push_str("<|im_start|>");
        out.push_str(t.role.as_str());
        out.push('\n');
        out.push_str(&t.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_protocol::content::{TextContent, ToolCall};
    use pi_protocol::message::{AssistantMessage, SystemMessage, ToolResultMessage, UserMessage};
    use pi_protocol::usage::StopReason;
    use serde_json::Map;

    fn model() -> Model {
        crate::catalog::local_model("m", "M", "/m.gguf")
    }

    fn tool(name: &str) -> Tool {
        serde_json::from_value(
            json!({"name": name, "description": format!("{name} things"),
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}),
        )
        .unwrap()
    }

    fn system(text: &str, tools: Vec<Tool>) -> AgentMessage {
        let mut s: SystemMessage =
            serde_json::from_value(json!({"role": "system", "content": text, "timestamp": 1}))
                .unwrap();
        s.tools_added = Some(tools);
        AgentMessage::System(s)
    }

    fn user(text: &str) -> AgentMessage {
        AgentMessage::User(UserMessage::new(StringOrBlocks::Text(text.into()), 1))
    }

    fn assistant(content: Vec<AssistantBlock>, stop: StopReason) -> AgentMessage {
        let mut a = AssistantMessage::new("llama-cpp", "local", "m", stop, 1);
        a.content = content;
        AgentMessage::Assistant(a)
    }

    fn result(id: &str, text: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultMessage::text(id, "ls", text, false, 1))
    }

    #[test]
    fn a_plain_conversation_is_system_then_turns_without_tool_text() {
        let ctx = LlmContext::from_messages(vec![
            system("Be brief.", vec![]),
            user("hi"),
            assistant(
                vec![AssistantBlock::Text(TextContent::new("hello"))],
                StopReason::Stop,
            ),
            user("bye"),
        ]);
        let p = render(&model(), &ctx, false);
        assert_eq!(
            p.turns,
            vec![
                Turn::new(Role::System, "Be brief."),
                Turn::new(Role::User, "hi"),
                Turn::new(Role::Assistant, "hello"),
                Turn::new(Role::User, "bye"),
            ]
        );
        assert!(p.tools.is_empty());
    }

    #[test]
    fn tool_calls_and_results_use_the_hermes_tags_and_failed_turns_are_dropped() {
        let mut args = Map::new();
        args.insert("path".into(), json!("."));
        let ctx = LlmContext::from_messages(vec![
            system("Sys.", vec![tool("ls"), tool("read")]),
            user("list"),
            assistant(
                vec![AssistantBlock::Text(TextContent::new("oops"))],
                StopReason::Error,
            ),
            assistant(
                vec![
                    AssistantBlock::ToolCall(ToolCall::new("c1", "ls", args.clone())),
                    AssistantBlock::ToolCall(ToolCall::new("c2", "ls", args)),
                ],
                StopReason::ToolUse,
            ),
            result("c1", "a.txt"),
            result("c2", "b.txt"),
        ]);
        let p = render(&model(), &ctx, false);
        assert_eq!((p.tools.len(), p.tool_rounds), (2, 1));
        let with_examples = render(&model(), &ctx, true);
        let examples = crate::shots::example_turns(&p.tools);
        let n = examples.len();
        assert_eq!(with_examples.turns[1..=n], examples[..]);
        assert_eq!(with_examples.turns[n + 1..], p.turns[1..]);
        let system = &p.turns[0].content;
        assert!(system.starts_with("Sys.\n\n# Tools\n"), "{system}");
        assert!(system.contains(r#"{"type": "function", "function": {"name": "ls", "description": "ls things", "parameters": {"type": "object", "#));
        assert!(system.ends_with("<tool_call>\n{\"name\": \"ls\", \"arguments\": {...}}\n</tool_call>\nWhen it does not, reply in plain text."));
        let call =
            "<tool_call>\n{\"name\": \"ls\", \"arguments\": {\"path\": \".\"}}\n</tool_call>";
        assert_eq!(
            p.turns[1..],
            [
                Turn::new(Role::User, "list"),
                Turn::new(Role::Assistant, format!("{call}\n{call}")),
                Turn::new(
                    Role::User,
                    "<tool_response>\na.txt\n</tool_response>\n<tool_response>\nb.txt\n</tool_response>"
                ),
            ]
        );
    }

    #[test]
    fn chatml_ends_with_an_open_assistant_turn() {
        let turns = [Turn::new(Role::System, "S"), Turn::new(Role::User, "U")];
        assert_eq!(
            render_chatml(&turns),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
