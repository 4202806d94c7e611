//! The Chat Completions request body, key for key in Pi's order (`buildParams`).

use super::compat::Compat;
use super::messages::{Piece, convert_messages, convert_tools};
use super::tool_text::ToolTexts;
use crate::budget::{
    clamp_budget_to_answer_room, resolve_sampling_params, thinking_budget_for_level,
};
use crate::cost::{level_map_entry, mapped_level};
use crate::stream::{CacheRetention, StreamOptions};
use crate::strict_schema::resolve_strict;
use crate::transcript::{ToolSupport, resolve_transcript_tools};
use pi_js::json_str::{push_json_str, value_to_js_string};
use pi_protocol::compat::{
    CacheControlFormat, ChatTemplateKwargValue, ChatTemplateVarName, MaxTokensField,
    PromptCacheKeyMode, ThinkingFormat, ThinkingTokenBudgetField,
};
use pi_protocol::content::AssistantBlock;
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::record::OrderedMap;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// Checks strict requirements up front, as Pi throws while building the request.
pub fn check_tools(tools: &[&Tool], compat: &Compat) -> Result<(), String> {
    for t in tools {
        resolve_strict(t, compat.supports_strict_mode, None)?;
    }
    Ok(())
}

fn has_tool_history(messages: &[Cow<'_, AgentMessage>]) -> bool {
    messages.iter().any(|m| match &**m {
        AgentMessage::ToolResult(_) => true,
        AgentMessage::Assistant(a) => a
            .content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolCall(_))),
        _ => false,
    })
}

fn clamp_cache_key(key: &str) -> String {
    key.chars().take(64).collect()
}

/// Everything `buildParams` needs besides the transcript.
pub struct Params<'a> {
    pub model: &'a Model,
    pub compat: &'a Compat,
    pub options: &'a StreamOptions,
    pub max_tokens: u64,
    pub reasoning: Option<ThinkingLevel>,
    pub retention: CacheRetention,
}

fn chat_template_values(
    p: &Params<'_>,
    values: &OrderedMap<ChatTemplateKwargValue>,
    budget: Option<u64>,
) -> Option<Value> {
    let mut out = Map::new();
    for (k, v) in values.iter() {
        let resolved = match v {
            ChatTemplateKwargValue::Null => Some(Value::Null),
            ChatTemplateKwargValue::Bool(b) => Some((*b).into()),
            ChatTemplateKwargValue::Number(n) => serde_json::to_value(n).ok(),
            ChatTemplateKwargValue::String(s) => Some(s.clone().into()),
            ChatTemplateKwargValue::Var(var) => {
                if p.reasoning.is_none() && var.omit_when_off == Some(true) {
                    None
                } else {
                    match var.var {
                        ChatTemplateVarName::ThinkingEnabled => Some(p.reasoning.is_some().into()),
                        ChatTemplateVarName::ThinkingBudget => budget.map(Value::from),
                        ChatTemplateVarName::ThinkingEffort => {
                            let entry =
                                level_map_entry(p.model, p.reasoning.unwrap_or(ThinkingLevel::Off));
                            match entry {
                                None => p.reasoning.map(|l| l.as_str().into()),
                                Some(Some(s)) => Some(s.into()),
                                Some(None) => None,
                            }
                        }
                    }
                }
            }
        };
        if let Some(r) = resolved {
            out.insert(k.to_string(), r);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn add_cache_control(msg: &mut Value, cc: &Value) -> bool {
    let Some(content) = msg.get_mut("content") else {
        return false;
    };
    match content {
        Value::String(s) if !s.is_empty() => {
            *content = json!([{"type": "text", "text": s.clone(), "cache_control": cc}]);
            true
        }
        Value::Array(parts) => {
            for part in parts.iter_mut().rev() {
                if part.get("type").and_then(Value::as_str) == Some("text")
                    && let Some(o) = part.as_object_mut()
                {
                    o.insert("cache_control".into(), cc.clone());
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

fn apply_cache_control(messages: &mut [Piece], tools: Option<&mut Value>, cc: &Value) {
    // Built as trees throughout (no `ToolTexts`) when cache control is to be added.
    let mut messages: Vec<&mut Value> = messages.iter_mut().filter_map(Piece::tree_mut).collect();
    if let Some(m) = messages.iter_mut().find(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "developer")
        )
    }) {
        add_cache_control(m, cc);
    }
    if let Some(Value::Array(tools)) = tools
        && let Some(Value::Object(last)) = tools.last_mut()
    {
        last.insert("cache_control".into(), cc.clone());
    }
    for m in messages.into_iter().rev() {
        if matches!(
            m.get("role").and_then(Value::as_str),
            Some("user" | "assistant" | "tool")
        ) && add_cache_control(m, cc)
        {
            return;
        }
    }
}

/// A request body: its fields in order, `messages` (a null among them) written from pieces.
pub struct Body {
    pub fields: Map<String, Value>,
    pub messages: Vec<Piece>,
}

impl Body {
    /// `JSON.stringify` of the body, written into one buffer of its exact size (a request is
    /// mostly tool output: growing it by doubling copied it and touched fresh pages twice).
    pub fn to_text(&self) -> String {
        let mut parts: Vec<Cow<'_, str>> = Vec::with_capacity(self.fields.len() * 2 + 2);
        for (i, (key, value)) in self.fields.iter().enumerate() {
            let mut head = String::with_capacity(key.len() + 4);
            if i > 0 {
                head.push(',');
            }
            push_json_str(&mut head, key);
            head.push(':');
            parts.push(head.into());
            if key == "messages" {
                parts.push("[".into());
                for (j, m) in self.messages.iter().enumerate() {
                    if j > 0 {
                        parts.push(",".into());
                    }
                    parts.push(match m {
                        Piece::Text(t) => Cow::Borrowed(&**t),
                        Piece::Tree(v) => value_to_js_string(v).unwrap_or_default().into(),
                    });
                }
                parts.push("]".into());
            } else {
                parts.push(value_to_js_string(value).unwrap_or_default().into());
            }
        }
        let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum::<usize>() + 2);
        out.push('{');
        for p in &parts {
            out.push_str(p);
        }
        out.push('}');
        out
    }
}

/// The request body for a resolved transcript; `texts` keeps tool messages between requests.
pub fn build_body(
    p: &Params<'_>,
    messages: &[Cow<'_, AgentMessage>],
    texts: &mut ToolTexts<'_>,
) -> Body {
    let (model, compat, options) = (p.model, p.compat, p.options);
    let support =
        if compat.supports_mid_convo_system_messages && compat.supports_mid_convo_tool_additions {
            ToolSupport::Additions
        } else {
            ToolSupport::None
        };
    let (request_tools, _) = resolve_transcript_tools(messages, support);
    let cache_control = compat.cache_control_format == Some(CacheControlFormat::Anthropic)
        && p.retention != CacheRetention::None;
    let mut msgs = convert_messages(model, messages, compat, (!cache_control).then_some(texts));
    let mut b = Map::new();
    b.insert("model".into(), model.id.clone().into());
    b.insert("messages".into(), Value::Null);
    b.insert("stream".into(), true.into());
    let key_mode = compat
        .prompt_cache_key_mode
        .unwrap_or(PromptCacheKeyMode::Auto);
    let long = p.retention == CacheRetention::Long;
    let supports_key = key_mode == PromptCacheKeyMode::Enabled
        || (key_mode == PromptCacheKeyMode::Auto
            && (model.base_url.contains("api.openai.com")
                || (long && compat.supports_long_cache_retention)));
    if p.retention != CacheRetention::None
        && supports_key
        && let Some(sid) = &options.session_id
    {
        b.insert("prompt_cache_key".into(), clamp_cache_key(sid).into());
    }
    if long && compat.supports_long_cache_retention {
        b.insert("prompt_cache_retention".into(), "24h".into());
    }
    if compat.supports_usage_in_streaming {
        b.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        b.insert("store".into(), false.into());
    }
    if p.max_tokens > 0 {
        let field = match compat.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        b.insert(field.into(), p.max_tokens.into());
    }
    if let Some(t) = options.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if !request_tools.is_empty() {
        b.insert(
            "tools".into(),
            Value::Array(convert_tools(&request_tools, compat)),
        );
        if compat.zai_tool_stream {
            b.insert("tool_stream".into(), true.into());
        }
    } else if compat.requires_tools_with_tool_history && has_tool_history(messages) {
        b.insert("tools".into(), Value::Array(vec![]));
    }
    if cache_control {
        let cc = if long && compat.supports_long_cache_retention {
            json!({"type": "ephemeral", "ttl": "1h"})
        } else {
            json!({"type": "ephemeral"})
        };
        apply_cache_control(&mut msgs, b.get_mut("tools"), &cc);
    }
    if let Some(prio) = compat.vllm_priority {
        b.insert("priority".into(), json!(prio));
    }
    let budget_field = compat.thinking_token_budget_field.map(|f| match f {
        ThinkingTokenBudgetField::ThinkingBudget => "thinking_budget",
        ThinkingTokenBudgetField::ThinkingBudgetTokens => "thinking_budget_tokens",
        ThinkingTokenBudgetField::ThinkingTokenBudget => "thinking_token_budget",
    });
    let budget_field = budget_field.or(compat
        .supports_thinking_token_budget
        .then_some("thinking_token_budget"));
    let budget = match p.reasoning {
        Some(level) if model.reasoning => {
            let b = clamp_budget_to_answer_room(
                thinking_budget_for_level(level, &options.thinking_budgets),
                p.max_tokens,
            );
            (b > 0).then_some(b)
        }
        _ => None,
    };
    add_reasoning(p, &mut b, budget);
    if let (Some(field), Some(budget)) = (budget_field, budget) {
        b.insert(field.into(), budget.into());
    }
    if let Some(routing) = model
        .compat
        .as_ref()
        .and_then(|c| c.open_router_routing.as_ref())
        && let Ok(v) = serde_json::to_value(routing)
    {
        b.insert("provider".into(), v);
    }
    if let Some(r) = model
        .compat
        .as_ref()
        .and_then(|c| c.vercel_gateway_routing.as_ref())
        && (r.only.is_some() || r.order.is_some())
    {
        let mut g = Map::new();
        if let Some(o) = &r.only {
            g.insert("only".into(), json!(o));
        }
        if let Some(o) = &r.order {
            g.insert("order".into(), json!(o));
        }
        b.insert(
            "providerOptions".into(),
            json!({"gateway": Value::Object(g)}),
        );
    }
    if let Some(sp) = resolve_sampling_params(model, p.reasoning.unwrap_or(ThinkingLevel::Off)) {
        b.extend(sp);
    }
    Body {
        fields: b,
        messages: msgs,
    }
}

fn add_reasoning(p: &Params<'_>, b: &mut Map<String, Value>, budget: Option<u64>) {
    let (model, compat) = (p.model, p.compat);
    let effort = p.reasoning;
    let off = level_map_entry(model, ThinkingLevel::Off);
    if !model.reasoning {
        return;
    }
    match compat.thinking_format {
        ThinkingFormat::Zai => {
            b.insert(
                "thinking".into(),
                if effort.is_some() {
                    json!({"type": "enabled", "clear_thinking": false})
                } else {
                    json!({"type": "disabled"})
                },
            );
            if let Some(e) = effort
                && compat.supports_reasoning_effort
                && let Some(v) = match level_map_entry(model, e) {
                    None => Some(e.as_str().to_string()),
                    Some(s) => s.map(String::from),
                }
            {
                b.insert("reasoning_effort".into(), v.into());
            }
        }
        ThinkingFormat::Qwen => {
            b.insert("enable_thinking".into(), effort.is_some().into());
            if let Some(e) = effort
                && compat.supports_reasoning_effort
            {
                b.insert("reasoning_effort".into(), mapped_level(model, e).into());
            }
        }
        ThinkingFormat::QwenChatTemplate => {
            b.insert(
                "chat_template_kwargs".into(),
                json!({"enable_thinking": effort.is_some(), "preserve_thinking": true}),
            );
        }
        ThinkingFormat::ChatTemplate => {
            if let Some(v) = chat_template_values(p, &compat.chat_template_kwargs, budget) {
                b.insert("chat_template_kwargs".into(), v);
            }
        }
        ThinkingFormat::Baseten => {
            if let Some(v) = chat_template_values(p, &compat.chat_template_args, budget) {
                b.insert("chat_template_args".into(), v);
            }
            if compat.supports_reasoning_effort {
                let entry = level_map_entry(model, effort.unwrap_or(ThinkingLevel::Off));
                let v = match entry {
                    None => effort.map(|e| e.as_str().to_string()),
                    Some(s) => s.map(String::from),
                };
                if let Some(v) = v {
                    b.insert("reasoning_effort".into(), v.into());
                }
            }
        }
        ThinkingFormat::Deepseek => {
            if effort.is_some() {
                b.insert("thinking".into(), json!({"type": "enabled"}));
            } else if off != Some(None) {
                b.insert("thinking".into(), json!({"type": "disabled"}));
            }
            if let Some(e) = effort
                && compat.supports_reasoning_effort
            {
                b.insert("reasoning_effort".into(), mapped_level(model, e).into());
            }
        }
        ThinkingFormat::Openrouter => {
            if let Some(e) = effort {
                b.insert(
                    "reasoning".into(),
                    json!({"effort": mapped_level(model, e)}),
                );
            } else if off != Some(None) {
                b.insert(
                    "reasoning".into(),
                    json!({"effort": off.flatten().unwrap_or("none")}),
                );
            }
        }
        ThinkingFormat::AntLing => {
            if let Some(e) = effort
                && let Some(Some(v)) = level_map_entry(model, e)
            {
                b.insert("reasoning".into(), json!({"effort": v}));
            }
        }
        ThinkingFormat::Together => {
            b.insert("reasoning".into(), json!({"enabled": effort.is_some()}));
            if let Some(e) = effort
                && compat.supports_reasoning_effort
            {
                b.insert("reasoning_effort".into(), mapped_level(model, e).into());
            }
        }
        ThinkingFormat::StringThinking => {
            if let Some(e) = effort {
                b.insert("thinking".into(), mapped_level(model, e).into());
            } else if off != Some(None) {
                b.insert("thinking".into(), off.flatten().unwrap_or("none").into());
            }
        }
        ThinkingFormat::Openai => {
            if !compat.supports_reasoning_effort {
                return;
            }
            match effort {
                Some(e) => {
                    b.insert("reasoning_effort".into(), mapped_level(model, e).into());
                }
                None => {
                    if let Some(Some(v)) = off {
                        b.insert("reasoning_effort".into(), v.into());
                    }
                }
            }
        }
    }
}
