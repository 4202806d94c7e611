//! Pi's `transformMessages`, applied by every adapter before encoding: drop failed assistant
//! turns, drop foreign thinking, normalize foreign tool-call ids, answer orphaned tool calls,
//! and replace images a model cannot see.

use pi_protocol::content::{AssistantBlock, StringOrBlocks, TextContent, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::record::Rest;
use pi_protocol::usage::StopReason;
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

/// Normalizes a foreign tool-call id for the target API (`id`, the message it came from).
pub type IdNormalizer<'a> = &'a dyn Fn(&str, &AssistantMessage) -> String;

/// Transforms a resolved transcript for `model` (see the module docs).
pub fn transform_messages<M: std::borrow::Borrow<AgentMessage>>(
    messages: &[M],
    model: &Model,
    normalize_id: Option<IdNormalizer<'_>>,
) -> Vec<AgentMessage> {
    let vision = model.input.contains(&InputModality::Image);
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut transformed = Vec::with_capacity(messages.len());
    for msg in messages.iter().map(std::borrow::Borrow::borrow) {
        let out = match msg {
            AgentMessage::User(u) if !vision => {
                let mut u = u.clone();
                if let StringOrBlocks::Blocks(b) = &u.content {
                    u.content = StringOrBlocks::Blocks(replace_images(b, USER_IMAGE_PLACEHOLDER));
                }
                AgentMessage::User(u)
            }
            AgentMessage::ToolResult(t) => {
                let mut t = t.clone();
                if !vision {
                    t.content = replace_images(&t.content, TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = id_map.get(&t.tool_call_id) {
                    t.tool_call_id = id.clone();
                }
                AgentMessage::ToolResult(t)
            }
            AgentMessage::Assistant(a) => {
                let same = is_same_model(a, model);
                let mut a2 = a.clone();
                a2.content = a
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        AssistantBlock::Thinking(t) => {
                            if !same {
                                return None;
                            }
                            if t.redacted == Some(true)
                                || t.thinking_signature
                                    .as_deref()
                                    .is_some_and(|s| !s.is_empty())
                            {
                                return Some(block.clone());
                            }
                            (!pi_js::trim(&t.thinking).is_empty()).then(|| block.clone())
                        }
                        AssistantBlock::Text(t) => Some(if same {
                            block.clone()
                        } else {
                            AssistantBlock::Text(TextContent::new(t.text.clone()))
                        }),
                        AssistantBlock::ToolCall(tc) => {
                            let mut tc = tc.clone();
                            if !same {
                                tc.thought_signature = None;
                                if let Some(norm) = normalize_id {
                                    let id = norm(&tc.id, a);
                                    if id != tc.id {
                                        id_map.insert(tc.id.clone(), id.clone());
                                        tc.id = id;
                                    }
                                }
                            }
                            Some(AssistantBlock::ToolCall(tc))
                        }
                    })
                    .collect();
                AgentMessage::Assistant(a2)
            }
            other => other.clone(),
        };
        transformed.push(out);
    }

    // Second pass: answer tool calls that got no result, skip failed turns.
    let mut result = Vec::with_capacity(transformed.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut held: Vec<AgentMessage> = Vec::new();
    let close = |result: &mut Vec<AgentMessage>,
                 pending: &mut Vec<(String, String)>,
                 answered: &mut HashSet<String>,
                 held: &mut Vec<AgentMessage>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                result.push(AgentMessage::ToolResult(synthetic_result(id, name)));
            }
        }
        answered.clear();
        result.append(held);
    };
    for msg in transformed {
        match &msg {
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
    ToolResultMessage {
        tool_call_id: id,
        tool_name: name,
        content: vec![UserBlock::Text(TextContent::new("No result provided"))],
        details: None,
        usage: None,
        nested_calls: None,
        is_error: true,
        duration_ms: None,
        timestamp: pi_js::now_ms(),
        rest: Rest::default(),
    }
}
