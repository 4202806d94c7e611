//! The Responses API request body (Pi's `buildParams` and `convertResponsesMessages`, for
//! transports without mid-conversation tool changes).

use crate::budget::resolve_sampling_params;
use crate::cost::{level_map_entry, mapped_level};
use crate::openai_completions::short_hash;
use crate::stream::{CacheRetention, StreamOptions};
use crate::strict_schema::{resolve_strict, resolve_with_schema};
use crate::transcript::{render_system_update, system_text, transcript_tools};
use crate::transform::transform_messages;
use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

const MIN_OUTPUT_TOKENS: u64 = 16;
/// Providers whose tool-call ids keep their `call|item` form (`OPENAI_TOOL_CALL_PROVIDERS`).
pub const TOOL_CALL_PROVIDERS: &[&str] = &["openai", "openai-codex", "opencode"];

pub struct Params<'a> {
    pub model: &'a Model,
    pub options: &'a StreamOptions,
    pub max_tokens: u64,
    pub reasoning: Option<ThinkingLevel>,
    pub retention: CacheRetention,
}

pub(crate) fn supports_strict(model: &Model) -> bool {
    model
        .compat
        .as_ref()
        .and_then(|c| c.supports_strict_mode)
        .unwrap_or(false)
}

fn id_part(part: &str) -> String {
    let s: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    s.trim_end_matches('_').to_string()
}

fn normalize_tool_call_id(
    model: &Model,
    providers: &[&str],
    id: &str,
    source: &AssistantMessage,
) -> String {
    if !providers.contains(&model.provider.as_str()) || !id.contains('|') {
        return id_part(id);
    }
    let mut parts = id.split('|');
    let call = id_part(parts.next().unwrap_or(""));
    let item = parts.next().unwrap_or("");
    let foreign = source.provider != model.provider || source.api != model.api;
    let mut item = if foreign {
        format!("fc_{}", short_hash(item))
            .chars()
            .take(64)
            .collect()
    } else {
        id_part(item)
    };
    if !item.starts_with("fc_") {
        item = id_part(&format!("fc_{item}"));
    }
    format!("{call}|{item}")
}

pub fn convert_tools(tools: &[&Tool], strict_supported: bool) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let (strict, parameters) = resolve_with_schema(t, strict_supported, None)
                .unwrap_or_else(|_| (None, Value::clone(&t.parameters)));
            let strict = strict.unwrap_or(false);
            let mut m = Map::new();
            m.insert("type".into(), "function".into());
            m.insert("name".into(), t.name.clone().into());
            m.insert("description".into(), t.description.clone().into());
            m.insert("parameters".into(), parameters);
            if strict_supported {
                m.insert("strict".into(), strict.into());
            }
            Value::Object(m)
        })
        .collect()
}

fn text_signature(sig: Option<&str>) -> (Option<String>, Option<String>) {
    let Some(sig) = sig.filter(|s| !s.is_empty()) else {
        return (None, None);
    };
    if sig.starts_with('{')
        && let Ok(v) = parse_js_json(sig)
        && v.get("v") == Some(&json!(1))
        && let Some(id) = v.get("id").and_then(Value::as_str)
    {
        let phase = v
            .get("phase")
            .and_then(Value::as_str)
            .filter(|p| *p == "commentary" || *p == "final_answer");
        return (Some(id.to_string()), phase.map(String::from));
    }
    (Some(sig.to_string()), None)
}

fn tool_output(model: &Model, content: &[UserBlock]) -> Value {
    let text = crate::transcript::blocks_text(content);
    let images: Vec<_> = content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let has_text = !pi_js::trim(&text).is_empty();
    if images.is_empty() || !model.input.contains(&InputModality::Image) {
        return if has_text {
            text.into()
        } else if !images.is_empty() {
            "(see attached image)".into()
        } else {
            "(no tool output)".into()
        };
    }
    let mut out = Vec::new();
    if has_text {
        out.push(json!({"type": "input_text", "text": text}));
    }
    for i in images {
        out.push(json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{};base64,{}", i.mime_type, i.data)}));
    }
    Value::Array(out)
}

pub fn convert_messages(
    model: &Model,
    providers: &[&str],
    messages: &[Cow<'_, AgentMessage>],
) -> Vec<Value> {
    let norm = |id: &str, src: &AssistantMessage| normalize_tool_call_id(model, providers, id, src);
    let transformed = transform_messages(messages, model, Some(&norm));
    let developer = model.reasoning
        && model
            .compat
            .as_ref()
            .and_then(|c| c.supports_developer_role)
            != Some(false);
    let role = if developer { "developer" } else { "system" };
    let mut out = Vec::new();
    let mut msg_index = 0usize;
    for (source_index, msg) in transformed.iter().map(|m| &**m).enumerate() {
        let leading = source_index == 0 && matches!(msg, AgentMessage::System(_));
        match msg {
            AgentMessage::System(s) => {
                let text = if leading {
                    system_text(s)
                } else {
                    render_system_update(s)
                };
                if !text.is_empty() {
                    out.push(json!({"role": role, "content": text}));
                }
            }
            AgentMessage::User(u) => match &u.content {
                StringOrBlocks::Text(t) => out
                    .push(json!({"role": "user", "content": [{"type": "input_text", "text": t}]})),
                StringOrBlocks::Blocks(b) => {
                    let content: Vec<Value> = b
                        .iter()
                        .map(|x| match x {
                            UserBlock::Text(t) => json!({"type": "input_text", "text": t.text}),
                            UserBlock::Image(i) => json!({"type": "input_image", "detail": "auto",
                                "image_url": format!("data:{};base64,{}", i.mime_type, i.data)}),
                        })
                        .collect();
                    if content.is_empty() {
                        continue;
                    }
                    out.push(json!({"role": "user", "content": content}));
                }
            },
            AgentMessage::Assistant(a) => {
                let same_api = a.provider == model.provider && a.api == model.api;
                let different_model = same_api && a.model != model.id;
                let mut items = Vec::new();
                let mut text_index = 0;
                for b in &a.content {
                    match b {
                        AssistantBlock::Thinking(t) => {
                            if let Some(sig) =
                                t.thinking_signature.as_deref().filter(|s| !s.is_empty())
                                && let Ok(item) = parse_js_json(sig)
                            {
                                items.push(item);
                            }
                        }
                        AssistantBlock::Text(t) => {
                            let (id, phase) = text_signature(t.text_signature.as_deref());
                            let fallback = if text_index == 0 {
                                format!("msg_pi_{msg_index}")
                            } else {
                                format!("msg_pi_{msg_index}_{text_index}")
                            };
                            text_index += 1;
                            let id = match id {
                                None => fallback,
                                Some(id) if id.chars().count() > 64 => {
                                    format!("msg_{}", short_hash(&id))
                                }
                                Some(id) => id,
                            };
                            let mut m = Map::new();
                            m.insert("type".into(), "message".into());
                            m.insert("role".into(), "assistant".into());
                            m.insert(
                                "content".into(),
                                json!([{"type": "output_text", "text": t.text, "annotations": []}]),
                            );
                            m.insert("status".into(), "completed".into());
                            m.insert("id".into(), id.into());
                            if let Some(p) = phase {
                                m.insert("phase".into(), p.into());
                            }
                            items.push(Value::Object(m));
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let mut parts = tc.id.split('|');
                            let call = parts.next().unwrap_or("").to_string();
                            let item = parts
                                .next()
                                .filter(|i| !different_model && i.starts_with("fc_"));
                            let mut m = Map::new();
                            m.insert("type".into(), "function_call".into());
                            if let Some(i) = item {
                                m.insert("id".into(), i.into());
                            }
                            m.insert("call_id".into(), call.into());
                            m.insert("name".into(), tc.name.clone().into());
                            m.insert(
                                "arguments".into(),
                                to_js_string(&tc.arguments).unwrap_or_default().into(),
                            );
                            if a.model == model.id
                                && same_api
                                && let Some(ns) = &tc.namespace
                            {
                                m.insert("namespace".into(), ns.clone().into());
                            }
                            items.push(Value::Object(m));
                        }
                    }
                }
                if items.is_empty() {
                    // Pi's `continue` skips the index bump too.
                    continue;
                }
                out.extend(items);
            }
            AgentMessage::ToolResult(t) => {
                let call = t.tool_call_id.split('|').next().unwrap_or("").to_string();
                out.push(json!({"type": "function_call_output", "call_id": call, "output": tool_output(model, &t.content)}));
            }
            _ => {}
        }
        if !leading {
            msg_index += 1;
        }
    }
    out
}

pub fn build_body(p: &Params<'_>, messages: &[Cow<'_, AgentMessage>]) -> Map<String, Value> {
    let model = p.model;
    let c = model.compat.as_ref();
    let mut b = Map::new();
    b.insert("model".into(), model.id.clone().into());
    b.insert(
        "input".into(),
        Value::Array(convert_messages(model, TOOL_CALL_PROVIDERS, messages)),
    );
    b.insert("stream".into(), true.into());
    let key_disabled = c.and_then(|c| c.prompt_cache_key_mode)
        == Some(pi_protocol::compat::PromptCacheKeyMode::Disabled);
    if p.retention != CacheRetention::None
        && !key_disabled
        && let Some(sid) = &p.options.session_id
    {
        b.insert(
            "prompt_cache_key".into(),
            sid.chars().take(64).collect::<String>().into(),
        );
    }
    let long_ok = c
        .and_then(|c| c.supports_long_cache_retention)
        .unwrap_or(true);
    let explicit = c
        .and_then(|c| c.supports_explicit_prompt_cache_mode)
        .unwrap_or(false);
    if p.retention == CacheRetention::Long && long_ok && !explicit {
        b.insert("prompt_cache_retention".into(), "24h".into());
    }
    if explicit {
        match p.retention {
            CacheRetention::None => {
                b.insert("prompt_cache_options".into(), json!({"mode": "explicit"}));
            }
            CacheRetention::Long if long_ok => {
                b.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
            }
            _ => {}
        }
    }
    b.insert("store".into(), false.into());
    if p.max_tokens > 0 && c.and_then(|c| c.supports_max_output_tokens).unwrap_or(true) {
        b.insert(
            "max_output_tokens".into(),
            p.max_tokens.max(MIN_OUTPUT_TOKENS).into(),
        );
    }
    if let Some(t) = p.options.temperature {
        b.insert("temperature".into(), json!(t));
    }
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        b.insert(
            "tools".into(),
            Value::Array(convert_tools(&tools, supports_strict(model))),
        );
    }
    if model.reasoning {
        if let Some(level) = p.reasoning {
            b.insert(
                "reasoning".into(),
                json!({"effort": mapped_level(model, level), "summary": "auto"}),
            );
            b.insert("include".into(), json!(["reasoning.encrypted_content"]));
        } else if model.provider != "github-copilot" {
            match level_map_entry(model, ThinkingLevel::Off) {
                Some(None) => {}
                Some(Some(v)) => {
                    b.insert("reasoning".into(), json!({"effort": v}));
                }
                None => {
                    b.insert("reasoning".into(), json!({"effort": "none"}));
                }
            }
        }
        if model.provider == "xai" {
            b.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    if let Some(sp) = resolve_sampling_params(model, p.reasoning.unwrap_or(ThinkingLevel::Off)) {
        b.extend(sp);
    }
    b
}

/// Tools whose strict requirement cannot be met fail the request before it is sent.
pub fn check_tools(model: &Model, messages: &[Cow<'_, AgentMessage>]) -> Result<(), String> {
    for t in crate::transcript::declared_tools(messages) {
        resolve_strict(t, supports_strict(model), None)?;
    }
    Ok(())
}
