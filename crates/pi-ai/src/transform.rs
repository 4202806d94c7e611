//! Pi's `transformMessages`, applied by every adapter before encoding: drop failed assistant
//! turns, drop foreign thinking, normalize foreign tool-call ids, answer orphaned tool calls,
//! and replace images a model cannot see.

use pi_protocol::content::{
    AssistantBlock, StringOrBlocks, TextContent, ThinkingContent, UserBlock,
};
use pi_protocol::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::usage::StopReason;
use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, HashSet};

const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";
const ERROR_TOOL_IMAGE_PLACEHOLDER: &str = "(image attached after the tool results)";

/// Images replaced by one placeholder text per run of images.
pub fn replace_images(content: &[UserBlock], placeholder: &str) -> Vec<UserBlock> {
    let mut out = Vec::with_capacity(content.len());
    let mut previous_was_placeholder = false;
    for block in content {
        match block {
            UserBlock::Image(_) => {
                if !previous_was_placeholder {
                    out.push(UserBlock::Text(TextContent::new(placeholder)));
                }
                previous_was_placeholder = true;
            }
            UserBlock::Text(t) => {
                previous_was_placeholder = t.text == placeholder;
                out.push(block.clone());
            }
        }
    }
    out
}

/// For APIs that reject images in error tool results: the content to send (images replaced), the
/// caption and the images to send after all results of the turn. `None` when nothing moves.
pub fn split_error_tool_result_images(
    msg: &ToolResultMessage,
) -> Option<(Vec<UserBlock>, String, Vec<UserBlock>)> {
    if !msg.is_error {
        return None;
    }
    let images: Vec<UserBlock> = msg
        .content
        .iter()
        .filter(|b| matches!(b, UserBlock::Image(_)))
        .cloned()
        .collect();
    if images.is_empty() {
        return None;
    }
    Some((
        replace_images(&msg.content, ERROR_TOOL_IMAGE_PLACEHOLDER),
        format!(
            "Images from the error result of tool call {} ({}):",
            msg.tool_call_id, msg.tool_name
        ),
        images,
    ))
}

fn is_same_model(msg: &AssistantMessage, model: &Model) -> bool {
    msg.provider == model.provider && msg.api == model.api && msg.model == model.id
}

/// Whether the model that wrote a thinking block gets it back: redacted or signed, or with
/// visible text.
fn keeps_thinking(t: &ThinkingContent) -> bool {
    t.redacted == Some(true)
        || t.thinking_signature
            .as_deref()
            .is_some_and(|s| !s.is_empty())
        || !pi_js::trim(&t.thinking).is_empty()
}

/// Normalizes a foreign tool-call id for the target API (`id`, the message it came from).
pub type IdNormalizer<'a> = &'a dyn Fn(&str, &AssistantMessage) -> String;

/// Transforms a resolved transcript for `model` (see the module docs). A message the
/// transform leaves as it was is borrowed, not copied: a request is built from the whole
/// history, and most of it (tool output above all) passes unchanged.
pub fn transform_messages<'a, M: Borrow<AgentMessage>>(
    messages: &'a [M],
    model: &Model,
    normalize_id: Option<IdNormalizer<'_>>,
) -> Vec<Cow<'a, AgentMessage>> {
    let vision = model.input.contains(&InputModality::Image);
    let has_image = |blocks: &[UserBlock]| blocks.iter().any(|b| matches!(b, UserBlock::Image(_)));
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut transformed = Vec::with_capacity(messages.len());
    for msg in messages.iter().map(Borrow::borrow) {
        let out = match msg {
            AgentMessage::User(u)
                if !vision && matches!(&u.content, StringOrBlocks::Blocks(b) if has_image(b)) =>
            {
                let mut u = u.clone();
                if let StringOrBlocks::Blocks(b) = &u.content {
                    u.content = StringOrBlocks::Blocks(replace_images(b, USER_IMAGE_PLACEHOLDER));
                }
                Cow::Owned(AgentMessage::User(u))
            }
            AgentMessage::ToolResult(t)
                if (!vision && has_image(&t.content)) || id_map.contains_key(&t.tool_call_id) =>
            {
                let mut t = t.clone();
                if !vision {
                    t.content = replace_images(&t.content, TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = id_map.get(&t.tool_call_id) {
                    t.tool_call_id = id.clone();
                }
                Cow::Owned(AgentMessage::ToolResult(t))
            }
            AgentMessage::Assistant(a) if is_same_model(a, model) => {
                if a.content.iter().all(|b| match b {
                    AssistantBlock::Thinking(t) => keeps_thinking(t),
                    _ => true,
                }) {
                    Cow::Borrowed(msg)
                } else {
                    let mut a2 = a.clone();
                    a2.content.retain(
                        |b| !matches!(b, AssistantBlock::Thinking(t) if !keeps_thinking(t)),
                    );
                    Cow::Owned(AgentMessage::Assistant(a2))
                }
            }
            AgentMessage::Assistant(a) => {
                let mut a2 = a.clone();
                a2.content = a
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        AssistantBlock::Thinking(_) => None,
                        AssistantBlock::Text(t) => {
                            Some(AssistantBlock::Text(TextContent::new(t.text.clone())))
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let mut tc = tc.clone();
                            tc.thought_signature = None;
                            if let Some(norm) = normalize_id {
                                let id = norm(&tc.id, a);
                                if id != tc.id {
                                    id_map.insert(tc.id.clone(), id.clone());
                                    tc.id = id;
                                }
                            }
                            Some(AssistantBlock::ToolCall(tc))
                        }
                    })
                    .collect();
                Cow::Owned(AgentMessage::Assistant(a2))
            }
            other => Cow::Borrowed(other),
        };
        transformed.push(out);
    }

    // Second pass: answer tool calls that got no result, skip failed turns.
    let mut result = Vec::with_capacity(transformed.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut held: Vec<Cow<'a, AgentMessage>> = Vec::new();
    let close = |result: &mut Vec<Cow<'a, AgentMessage>>,
                 pending: &mut Vec<(String, String)>,
                 answered: &mut HashSet<String>,
                 held: &mut Vec<Cow<'a, AgentMessage>>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                result.push(Cow::Owned(AgentMessage::ToolResult(synthetic_result(
                    id, name,
                ))));
            }
        }
        answered.clear();
        result.append(held);
    };
    for msg in transformed {
        match &*msg {
            AgentMessage::Assistant(a) => {
                close(&mut result, &mut pending, &mut answered, &mut held);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let calls: Vec<(String, String)> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        AssistantBlock::ToolCall(tc) => Some((tc.id.clone(), tc.name.clone())),
                        _ => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    pending = calls;
                    answered.clear();
                }
                result.push(msg);
            }
            AgentMessage::ToolResult(t) => {
                answered.insert(t.tool_call_id.clone());
                result.push(msg);
            }
            AgentMessage::System(_) if !pending.is_empty() => held.push(msg),
            AgentMessage::User(_) => {
                close(&mut result, &mut pending, &mut answered, &mut held);
                result.push(msg);
            }
            _ => result.push(msg),
        }
    }
    close(&mut result, &mut pending, &mut answered, &mut held);
    result
}

fn synthetic_result(id: String, name: String) -> ToolResultMessage {
    ToolResultMessage::text(id, name, "No result provided", true, pi_js::now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn model(vision: bool) -> Model {
        let mut m = Model::placeholder();
        (m.id, m.api, m.provider) = ("m".into(), "openai-completions".into(), "p".into());
        m.input = if vision {
            vec![InputModality::Text, InputModality::Image]
        } else {
            vec![InputModality::Text]
        };
        m
    }

    fn msg(v: Value) -> AgentMessage {
        serde_json::from_value(v).unwrap()
    }

    fn assistant(model: &str, content: Value) -> AgentMessage {
        msg(
            json!({"role": "assistant", "content": content, "api": "openai-completions",
            "provider": "p", "model": model, "usage": pi_protocol::usage::Usage::zero(),
            "stopReason": "toolUse", "timestamp": 1}),
        )
    }

    fn result(id: &str, content: Value) -> AgentMessage {
        msg(
            json!({"role": "toolResult", "toolCallId": id, "toolName": "read",
            "content": content, "isError": false, "timestamp": 2}),
        )
    }

    fn call(id: &str) -> Value {
        json!({"type": "toolCall", "id": id, "name": "read", "arguments": {}})
    }

    fn borrowed(out: &[Cow<'_, AgentMessage>]) -> Vec<bool> {
        out.iter().map(|m| matches!(m, Cow::Borrowed(_))).collect()
    }

    #[test]
    fn what_passes_unchanged_is_borrowed() {
        let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
        let history = vec![
            msg(
                json!({"role": "user", "content": [{"type": "text", "text": "hi"}, image],
                "timestamp": 0}),
            ),
            assistant(
                "m",
                json!([{"type": "thinking", "thinking": "plan"}, call("c1")]),
            ),
            result("c1", json!([{"type": "text", "text": "out"}, image])),
        ];
        let out = transform_messages(&history, &model(true), None);
        assert_eq!(borrowed(&out), [true, true, true]);
        assert_eq!(
            out.iter().map(|m| (**m).clone()).collect::<Vec<_>>(),
            history
        );

        // A model without vision gets placeholders: those two messages are copies.
        let out = transform_messages(&history, &model(false), None);
        assert_eq!(borrowed(&out), [false, true, false]);
        let AgentMessage::ToolResult(t) = &*out[2] else {
            panic!("not a tool result")
        };
        assert_eq!(t.content.len(), 2);
        assert!(matches!(&t.content[1], UserBlock::Text(x) if x.text == TOOL_IMAGE_PLACEHOLDER));
    }

    #[test]
    fn changed_messages_are_copies_and_unanswered_calls_get_results() {
        let history = vec![
            // The same model's empty thinking is dropped.
            assistant(
                "m",
                json!([{"type": "thinking", "thinking": "  "}, {"type": "text", "text": "a"}]),
            ),
            // Another model's call gets a normalized id, and its result follows it.
            assistant("other", json!([call("long|id"), call("c3")])),
            result("long|id", json!([{"type": "text", "text": "out"}])),
            msg(json!({"role": "user", "content": "next", "timestamp": 3})),
        ];
        let norm = |id: &str, _: &AssistantMessage| id.replace('|', "_");
        let out = transform_messages(&history, &model(true), Some(&norm));
        assert_eq!(borrowed(&out), [false, false, false, false, true]);
        let AgentMessage::Assistant(a) = &*out[0] else {
            panic!("not an assistant message")
        };
        assert!(matches!(&a.content[..], [AssistantBlock::Text(t)] if t.text == "a"));
        let ids: Vec<&str> = out[1..4]
            .iter()
            .map(|m| match &**m {
                AgentMessage::ToolResult(t) => t.tool_call_id.as_str(),
                AgentMessage::Assistant(a) => match &a.content[0] {
                    AssistantBlock::ToolCall(c) => c.id.as_str(),
                    _ => "",
                },
                _ => "",
            })
            .collect();
        assert_eq!(ids, ["long_id", "long_id", "c3"]);
        assert!(matches!(&*out[3], AgentMessage::ToolResult(t) if t.is_error));
    }
}
