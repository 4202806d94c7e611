//! Transcript → Chat Completions `messages` (Pi's `convertMessages` for openai-completions).

use super::compat::Compat;
use super::tool_text::ToolTexts;
use crate::strict_schema::resolve_with_schema;
use crate::transcript::{
    ToolSupport, blocks_text, render_system_update, resolve_transcript_tools, system_text,
};
use crate::transform::transform_messages;
use pi_js::json::to_js_string;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::rc::Rc;

const REASONING_FIELDS: [&str; 3] = ["reasoning", "reasoning_content", "reasoning_text"];

fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn image_url(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

/// Tool declarations; `strict` only when the server supports it.
pub fn convert_tools(tools: &[&Tool], compat: &Compat) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let (strict, parameters) = resolve_with_schema(t, compat.supports_strict_mode, None)
                .unwrap_or_else(|_| (None, Value::clone(&t.parameters)));
            let mut f = Map::new();
            f.insert("name".into(), t.name.clone().into());
            f.insert("description".into(), t.description.clone().into());
            f.insert("parameters".into(), parameters);
            if compat.supports_strict_mode {
                f.insert("strict".into(), strict.unwrap_or(false).into());
            }
            // Built as maps: `json!` would copy the schema once more.
            obj(vec![
                ("type", "function".into()),
                ("function", Value::Object(f)),
            ])
        })
        .collect()
}

/// Pi's `shortHash` (two 32-bit multiplicative hashes over UTF-16 units, base 36).
pub fn short_hash(s: &str) -> String {
    let mut h1: u32 = 0xdeadbeef;
    let mut h2: u32 = 0x41c6ce57;
    for ch in s.encode_utf16() {
        let ch = u32::from(ch);
        h1 = (h1 ^ ch).wrapping_mul(2654435761);
        h2 = (h2 ^ ch).wrapping_mul(1597334677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2246822507) ^ (h2 ^ (h2 >> 13)).wrapping_mul(3266489909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2246822507) ^ (h1 ^ (h1 >> 13)).wrapping_mul(3266489909);
    format!("{}{}", radix36(h2), radix36(h1))
}

fn radix36(mut n: u32) -> String {
    if n == 0 {
        return "0".into();
    }
    let mut d = Vec::new();
    while n > 0 {
        let r = (n % 36) as u8;
        d.push(if r < 10 { b'0' + r } else { b'a' + r - 10 });
        n /= 36;
    }
    d.reverse();
    String::from_utf8(d).unwrap_or_default()
}

fn sanitize_id(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Chat Completions ids: `call|item` ids from the Responses API are folded into 40 characters.
fn normalize_tool_call_id(model: &Model, id: &str) -> String {
    if let Some((call, item)) = id.split_once('|') {
        let call = sanitize_id(call);
        let item = sanitize_id(item);
        let combined = if item.is_empty() {
            call.clone()
        } else {
            format!("{call}_{item}")
        };
        if combined.chars().count() <= 40 {
            return combined;
        }
        let hash: String = short_hash(id).chars().take(8).collect();
        let keep = 1usize.max(40 - hash.len() - 1);
        let prefix: String = call.chars().take(keep).collect();
        return format!("{prefix}_{hash}");
    }
    if model.provider == "openai" && id.chars().count() > 40 {
        return id.chars().take(40).collect();
    }
    id.to_string()
}

/// One entry of the request's `messages`: a tree, or JSON text already written.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Tree(Value),
    Text(Rc<str>),
}

impl Piece {
    /// The tree; `None` for text, which is only made when nothing edits the messages after.
    pub fn tree_mut(&mut self) -> Option<&mut Value> {
        match self {
            Piece::Tree(v) => Some(v),
            Piece::Text(_) => None,
        }
    }
}

/// Converts a resolved transcript. Tool results are written as text through `texts` (kept
/// from the last request when it shares them), or built as trees when `texts` is `None`
/// (something edits the messages afterwards).
pub fn convert_messages(
    model: &Model,
    messages: &[Cow<'_, AgentMessage>],
    compat: &Compat,
    mut texts: Option<&mut ToolTexts<'_>>,
) -> Vec<Piece> {
    let norm = |id: &str, _: &AssistantMessage| normalize_tool_call_id(model, id);
    let transformed = transform_messages(messages, model, Some(&norm));
    let support =
        if compat.supports_mid_convo_system_messages && compat.supports_mid_convo_tool_additions {
            ToolSupport::Additions
        } else {
            ToolSupport::None
        };
    let (_, folded) = resolve_transcript_tools(messages, support);
    let instruction_role = if model.reasoning && compat.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    let vision = model.input.contains(&InputModality::Image);
    let mut out: Vec<Piece> = Vec::new();
    let push = |out: &mut Vec<Piece>, v: Value| out.push(Piece::Tree(v));
    let mut last_role: Option<&str> = None;
    let mut system_index = 0;
    let mut i = 0;
    while i < transformed.len() {
        let msg = &*transformed[i];
        if compat.requires_assistant_after_tool_result
            && last_role == Some("toolResult")
            && matches!(msg, AgentMessage::User(_))
        {
            push(
                &mut out,
                json!({"role": "assistant", "content": "I have processed the tool results."}),
            );
        }
        match msg {
            AgentMessage::System(s) => {
                let anchors = system_index >= folded;
                system_index += 1;
                let added: Vec<&Tool> = if anchors {
                    s.tools_added.iter().flatten().collect()
                } else {
                    vec![]
                };
                if !added.is_empty() {
                    push(
                        &mut out,
                        obj(vec![
                            ("role", "system".into()),
                            ("tools", Value::Array(convert_tools(&added, compat))),
                        ]),
                    );
                }
                let text = if i == 0 {
                    system_text(s)
                } else {
                    render_system_update(s)
                };
                if !text.is_empty() {
                    push(
                        &mut out,
                        obj(vec![
                            ("role", instruction_role.into()),
                            ("content", text.into()),
                        ]),
                    );
                }
                last_role = Some("system");
            }
            AgentMessage::User(u) => {
                match &u.content {
                    StringOrBlocks::Text(t) => push(
                        &mut out,
                        obj(vec![("role", "user".into()), ("content", t.clone().into())]),
                    ),
                    StringOrBlocks::Blocks(blocks) => {
                        let content: Vec<Value> = blocks
                            .iter()
                            .filter(|b| !matches!(b, UserBlock::Text(t) if t.text.is_empty()))
                            .map(|b| match b {
                                UserBlock::Text(t) => json!({"type": "text", "text": t.text}),
                                UserBlock::Image(img) => image_url(&img.mime_type, &img.data),
                            })
                            .collect();
                        if content.is_empty() {
                            i += 1;
                            continue;
                        }
                        push(
                            &mut out,
                            obj(vec![
                                ("role", "user".into()),
                                ("content", Value::Array(content)),
                            ]),
                        );
                    }
                }
                last_role = Some("user");
            }
            AgentMessage::Assistant(a) => {
                if let Some(m) = assistant_message(model, a, compat) {
                    push(&mut out, m);
                }
                last_role = Some("assistant");
            }
            AgentMessage::ToolResult(_) => {
                let mut images = Vec::new();
                let mut j = i;
                while let Some(message) = transformed.get(j).map(|m| &**m) {
                    let AgentMessage::ToolResult(t) = message else {
                        break;
                    };
                    let has_images = t.content.iter().any(|b| matches!(b, UserBlock::Image(_)));
                    let name = (compat.requires_tool_result_name && !t.tool_name.is_empty())
                        .then_some(t.tool_name.as_str());
                    let content = || tool_content(t, has_images);
                    match texts.as_deref_mut() {
                        Some(texts) => {
                            out.push(texts.message(message, &t.tool_call_id, name, content));
                        }
                        None => {
                            let mut m = vec![
                                ("role", Value::from("tool")),
                                ("content", content().into()),
                                ("tool_call_id", t.tool_call_id.clone().into()),
                            ];
                            if let Some(name) = name {
                                m.push(("name", name.into()));
                            }
                            push(&mut out, obj(m));
                        }
                    }
                    if has_images && vision {
                        for b in &t.content {
                            if let UserBlock::Image(img) = b {
                                images.push(image_url(&img.mime_type, &img.data));
                            }
                        }
                    }
                    j += 1;
                }
                i = j;
                if images.is_empty() {
                    last_role = Some("toolResult");
                } else {
                    if compat.requires_assistant_after_tool_result {
                        push(
                            &mut out,
                            json!({"role": "assistant", "content": "I have processed the tool results."}),
                        );
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    push(
                        &mut out,
                        obj(vec![
                            ("role", "user".into()),
                            ("content", Value::Array(content)),
                        ]),
                    );
                    last_role = Some("user");
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// A tool message's content: its text blocks joined, or a placeholder.
fn tool_content(t: &ToolResultMessage, has_images: bool) -> String {
    let text = blocks_text(&t.content);
    if !pi_js::trim(&text).is_empty() {
        text
    } else if has_images {
        "(see attached image)".into()
    } else {
        "(no tool output)".into()
    }
}

fn assistant_message(model: &Model, a: &AssistantMessage, compat: &Compat) -> Option<Value> {
    let mut m = Map::new();
    m.insert("role".into(), "assistant".into());
    let null_content = !(compat.requires_assistant_after_tool_result
        || compat.requires_non_null_assistant_content);
    m.insert(
        "content".into(),
        if null_content { Value::Null } else { "".into() },
    );
    let texts: Vec<&str> = a
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Text(t) if !pi_js::trim(&t.text).is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.concat();
    let thinking: Vec<_> = a
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::Thinking(t) if !pi_js::trim(&t.thinking).is_empty() => Some(t),
            _ => None,
        })
        .collect();
    let calls: Vec<_> = a
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantBlock::ToolCall(tc) => Some(tc),
            _ => None,
        })
        .collect();
    if !thinking.is_empty() {
        if compat.requires_thinking_as_text {
            let joined = thinking
                .iter()
                .map(|t| t.thinking.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            let mut parts = vec![json!({"type": "text", "text": joined})];
            parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
            m.insert("content".into(), Value::Array(parts));
        } else {
            if !text.is_empty() {
                m.insert("content".into(), text.clone().into());
            }
            let mut sig = thinking[0].thinking_signature.clone().unwrap_or_default();
            if model.provider == "opencode-go" && sig == "reasoning" {
                sig = "reasoning_content".into();
            }
            if REASONING_FIELDS.contains(&sig.as_str()) {
                let joined = thinking
                    .iter()
                    .map(|t| t.thinking.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                m.insert(sig, joined.into());
            }
        }
    } else if !text.is_empty() {
        m.insert("content".into(), text.into());
    }
    if !calls.is_empty() {
        let tcs: Vec<Value> = calls
            .iter()
            .map(|tc| {
                json!({"id": tc.id, "type": "function", "function": {
                    "name": tc.name, "arguments": to_js_string(&tc.arguments).unwrap_or_default()}})
            })
            .collect();
        m.insert("tool_calls".into(), Value::Array(tcs));
    }
    if compat.requires_reasoning_content_on_assistant_messages
        && model.reasoning
        && !m.contains_key("reasoning_content")
    {
        m.insert("reasoning_content".into(), "".into());
    }
    let has_content = match m.get("content") {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        _ => false,
    };
    (has_content || m.contains_key("tool_calls")).then_some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_matches_pi() {
        // Values computed with Pi's shortHash under Node 22.
        assert_eq!(short_hash(""), "k4n83c7h0j2b");
        assert_eq!(short_hash("call_1|fc_1"), "krjojfuocgbu");
        assert_eq!(short_hash("héllo😀"), "1olj6nu1frhbfw");
    }
}
