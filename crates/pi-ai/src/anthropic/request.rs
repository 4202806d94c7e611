//! The Messages API request body (Pi's `buildParams`/`convertMessages` for anthropic-messages).

use crate::stream::CacheRetention;
use crate::strict_schema::resolve_with_schema;
use crate::transcript::{initial_system, render_system_update, system_text, transcript_tools};
use crate::transform::{split_error_tool_result_images, transform_messages};
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The compat keys this API reads, with their defaults.
pub struct Compat {
    pub eager_tool_input_streaming: bool,
    pub long_cache_retention: bool,
    pub cache_control_on_tools: bool,
    pub temperature: bool,
    pub allow_empty_signature: bool,
    pub strict_tools: bool,
    pub mid_convo_system_messages: bool,
}

pub fn compat(model: &Model) -> Compat {
    let c = model.compat.as_ref();
    Compat {
        eager_tool_input_streaming: c
            .and_then(|c| c.supports_eager_tool_input_streaming)
            .unwrap_or(true),
        long_cache_retention: c
            .and_then(|c| c.supports_long_cache_retention)
            .unwrap_or(true),
        cache_control_on_tools: c
            .and_then(|c| c.supports_cache_control_on_tools)
            .unwrap_or(true),
        temperature: c.and_then(|c| c.supports_temperature).unwrap_or(true),
        allow_empty_signature: c.and_then(|c| c.allow_empty_signature).unwrap_or(false),
        strict_tools: c.and_then(|c| c.supports_strict_tools).unwrap_or(false),
        mid_convo_system_messages: c
            .and_then(|c| c.supports_mid_convo_system_messages)
            .unwrap_or(false),
    }
}

/// How thinking is requested.
pub enum Thinking {
    /// Thinking not requested (`thinkingEnabled: false`).
    Off,
    Budget(u64),
    Adaptive(String),
}

pub struct Params<'a> {
    pub model: &'a Model,
    pub compat: &'a Compat,
    pub retention: CacheRetention,
    pub max_tokens: u64,
    pub temperature: Option<f64>,
    pub thinking: Thinking,
    /// A Claude subscription token (`sk-ant-oat...`): the request presents itself as Claude
    /// Code (identity system block, Claude Code's tool names).
    pub oauth: bool,
}

/// Claude Code's version the subscription requests name.
pub const CLAUDE_CODE_VERSION: &str = "2.1.322";
const CLAUDE_CODE_TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// A tool's name in Claude Code's casing when Claude Code has a tool of that name.
pub fn to_claude_code_name(name: &str) -> String {
    CLAUDE_CODE_TOOLS
        .iter()
        .find(|t| t.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |t| t.to_string())
}

/// The declared tool a Claude Code name stands for (case-insensitive), else the name.
pub fn from_claude_code_name(name: &str, tools: &[Tool]) -> String {
    tools
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |t| t.name.clone())
}

/// A Claude subscription (OAuth) access token.
pub fn is_oauth_token(key: &str) -> bool {
    key.contains("sk-ant-oat")
}

fn cache_control(p: &Params<'_>) -> Option<Value> {
    match p.retention {
        CacheRetention::None => None,
        CacheRetention::Long if p.compat.long_cache_retention => {
            Some(json!({"type": "ephemeral", "ttl": "1h"}))
        }
        _ => Some(json!({"type": "ephemeral"})),
    }
}

/// Anthropic ids: `[^a-zA-Z0-9_-]` → `_`, at most 64 characters.
pub fn normalize_tool_call_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

fn image(mime: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
}

fn tool_result_content(content: &[UserBlock]) -> Value {
    if !content.iter().any(|b| matches!(b, UserBlock::Image(_))) {
        return crate::transcript::blocks_text(content).into();
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => json!({"type": "text", "text": t.text}),
            UserBlock::Image(i) => image(&i.mime_type, &i.data),
        })
        .collect();
    if !content.iter().any(|b| matches!(b, UserBlock::Text(_))) {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

/// Tool declarations; the last one carries the cache marker.
pub fn convert_tools(
    tools: &[&Tool],
    p: &Params<'_>,
    cc: Option<&Value>,
) -> Result<Vec<Value>, String> {
    let n = tools.len();
    tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (strict, schema) =
                resolve_with_schema(t, p.compat.strict_tools, Some(strict_unsupported))?;
            let mut input = Map::new();
            input.insert("type".into(), "object".into());
            input.insert(
                "properties".into(),
                schema.get("properties").cloned().unwrap_or(json!({})),
            );
            input.insert(
                "required".into(),
                schema.get("required").cloned().unwrap_or(json!([])),
            );
            for k in ["additionalProperties", "$defs", "definitions"] {
                if let Some(v) = schema.get(k) {
                    input.insert(k.into(), v.clone());
                }
            }
            let input = if strict == Some(true) {
                let mut full = schema.as_object().cloned().unwrap_or_default();
                full.extend(input);
                full
            } else {
                input
            };
            let mut d = Map::new();
            let name = if p.oauth {
                to_claude_code_name(&t.name)
            } else {
                t.name.clone()
            };
            d.insert("name".into(), name.into());
            d.insert("description".into(), t.description.clone().into());
            if p.compat.eager_tool_input_streaming {
                d.insert("eager_input_streaming".into(), true.into());
            }
            if strict == Some(true) {
                d.insert("strict".into(), true.into());
            }
            d.insert("input_schema".into(), Value::Object(input));
            if let Some(cc) = cc.filter(|_| i + 1 == n) {
                d.insert("cache_control".into(), cc.clone());
            }
            Ok(Value::Object(d))
        })
        .collect()
}

/// Keywords Anthropic's strict tool use rejects.
fn strict_unsupported(key: &str, value: &Value) -> bool {
    const KEYS: [&str; 11] = [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "maxItems",
        "uniqueItems",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
    ];
    const FORMATS: [&str; 10] = [
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    if KEYS.contains(&key) {
        return true;
    }
    match key {
        "minItems" => value != &json!(0) && value != &json!(1),
        "format" => !value.as_str().is_some_and(|f| FORMATS.contains(&f)),
        _ => false,
    }
}

fn assistant_blocks(a: &AssistantMessage, p: &Params<'_>) -> Vec<Value> {
    let mut blocks = Vec::new();
    for b in &a.content {
        match b {
            AssistantBlock::Text(t) => {
                if !pi_js::trim(&t.text).is_empty() {
                    blocks.push(json!({"type": "text", "text": t.text}));
                }
            }
            AssistantBlock::Thinking(t) => {
                if t.redacted == Some(true) {
                    blocks.push(json!({"type": "redacted_thinking", "data": t.thinking_signature}));
                    continue;
                }
                let sig = t
                    .thinking_signature
                    .as_deref()
                    .filter(|s| !pi_js::trim(s).is_empty());
                if pi_js::trim(&t.thinking).is_empty() && sig.is_none() {
                    continue;
                }
                blocks.push(match sig {
                    Some(s) => json!({"type": "thinking", "thinking": t.thinking, "signature": s}),
                    None if p.compat.allow_empty_signature => {
                        json!({"type": "thinking", "thinking": t.thinking, "signature": ""})
                    }
                    None => json!({"type": "text", "text": t.thinking}),
                });
            }
            AssistantBlock::ToolCall(tc) => {
                let name = if p.oauth {
                    to_claude_code_name(&tc.name)
                } else {
                    tc.name.clone()
                };
                blocks.push(
                    json!({"type": "tool_use", "id": tc.id, "name": name, "input": tc.arguments}),
                );
            }
        }
    }
    blocks
}

/// Converts the conversation (the transcript after its leading system message).
fn convert_messages(
    msgs: &[Cow<'_, AgentMessage>],
    p: &Params<'_>,
    cc: Option<&Value>,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut pending_system: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < msgs.len() {
        match &*msgs[i] {
            AgentMessage::System(s) => {
                let text = render_system_update(s);
                if !text.is_empty() {
                    pending_system.push(
                        json!({"role": "system", "content": [{"type": "text", "text": text}]}),
                    );
                }
            }
            AgentMessage::User(u) => {
                match &u.content {
                    StringOrBlocks::Text(t) => {
                        if !pi_js::trim(t).is_empty() {
                            out.push(json!({"role": "user", "content": t}));
                        }
                    }
                    StringOrBlocks::Blocks(b) => {
                        let blocks: Vec<Value> = b
                        .iter()
                        .filter(|x| !matches!(x, UserBlock::Text(t) if pi_js::trim(&t.text).is_empty()))
                        .map(|x| match x {
                            UserBlock::Text(t) => json!({"type": "text", "text": t.text}),
                            UserBlock::Image(img) => image(&img.mime_type, &img.data),
                        })
                        .collect();
                        if !blocks.is_empty() {
                            out.push(json!({"role": "user", "content": blocks}));
                        }
                    }
                }
            }
            AgentMessage::Assistant(a) => {
                let blocks = assistant_blocks(a, p);
                if !blocks.is_empty() {
                    out.append(&mut pending_system);
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            AgentMessage::ToolResult(_) => {
                let mut results = Vec::new();
                let mut images = Vec::new();
                while let Some(AgentMessage::ToolResult(t)) = msgs.get(i).map(|m| &**m) {
                    let split = split_error_tool_result_images(t);
                    let content = split.as_ref().map_or(&t.content, |s| &s.0);
                    results.push(json!({"type": "tool_result", "tool_use_id": t.tool_call_id,
                        "content": tool_result_content(content), "is_error": t.is_error}));
                    if let Some((_, caption, imgs)) = split {
                        images.push(json!({"type": "text", "text": caption}));
                        for img in imgs {
                            if let UserBlock::Image(img) = img {
                                images.push(image(&img.mime_type, &img.data));
                            }
                        }
                    }
                    i += 1;
                }
                results.extend(images);
                out.push(json!({"role": "user", "content": results}));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.append(&mut pending_system);
    if let (Some(cc), Some(last)) = (cc, out.last_mut())
        && matches!(last["role"].as_str(), Some("user" | "system"))
    {
        match &mut last["content"] {
            Value::Array(blocks) => {
                if let Some(Value::Object(b)) = blocks.last_mut()
                    && matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("text" | "image" | "tool_result" | "tool_addition" | "tool_removal")
                    )
                {
                    b.insert("cache_control".into(), cc.clone());
                }
            }
            Value::String(s) => {
                let text = std::mem::take(s);
                last["content"] = json!([{"type": "text", "text": text, "cache_control": cc}]);
            }
            _ => {}
        }
    }
    out
}

/// The request body for a resolved transcript.
pub fn build_body(
    p: &Params<'_>,
    messages: &[Cow<'_, AgentMessage>],
) -> Result<Map<String, Value>, String> {
    let cc = cache_control(p);
    let initial = initial_system(messages);
    let system = initial.map(system_text).unwrap_or_default();
    let transformed = transform_messages(
        messages,
        p.model,
        Some(&|id: &str, _: &AssistantMessage| normalize_tool_call_id(id)),
    );
    let conversation = if initial.is_some() {
        &transformed[1..]
    } else {
        &transformed[..]
    };
    let mut b = Map::new();
    b.insert("model".into(), p.model.id.clone().into());
    b.insert(
        "messages".into(),
        Value::Array(convert_messages(conversation, p, cc.as_ref())),
    );
    b.insert("max_tokens".into(), p.max_tokens.into());
    b.insert("stream".into(), true.into());
    let text_block = |text: String| {
        let mut block = Map::new();
        block.insert("type".into(), "text".into());
        block.insert("text".into(), text.into());
        if let Some(cc) = &cc {
            block.insert("cache_control".into(), cc.clone());
        }
        Value::Object(block)
    };
    let mut system_blocks = Vec::new();
    if p.oauth {
        // A subscription request must carry Claude Code's identity first.
        system_blocks.push(text_block(
            "You are Claude Code, Anthropic's official CLI for Claude.".into(),
        ));
    }
    if !system.is_empty() {
        system_blocks.push(text_block(system));
    }
    if !system_blocks.is_empty() {
        b.insert("system".into(), Value::Array(system_blocks));
    }
    if let Some(t) = p.temperature
        && matches!(p.thinking, Thinking::Off)
        && p.compat.temperature
    {
        b.insert("temperature".into(), json!(t));
    }
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        let tool_cc = cc.as_ref().filter(|_| p.compat.cache_control_on_tools);
        b.insert(
            "tools".into(),
            Value::Array(convert_tools(&tools, p, tool_cc)?),
        );
    }
    let off_null = crate::budget::off_is_null(p.model);
    match &p.thinking {
        Thinking::Off if p.model.reasoning && !off_null => {
            b.insert("thinking".into(), json!({"type": "disabled"}));
        }
        Thinking::Off => {}
        Thinking::Budget(n) if p.model.reasoning => {
            b.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": n, "display": "summarized"}),
            );
        }
        Thinking::Adaptive(effort) if p.model.reasoning => {
            b.insert(
                "thinking".into(),
                json!({"type": "adaptive", "display": "summarized"}),
            );
            b.insert("output_config".into(), json!({"effort": effort}));
        }
        _ => {}
    }
    if let Some(f) = p
        .model
        .compat
        .as_ref()
        .and_then(|c| c.allowed_fallback_models.as_ref())
        .filter(|f| !f.is_empty())
    {
        b.insert(
            "fallbacks".into(),
            Value::Array(f.iter().map(|m| json!({"model": m.model})).collect()),
        );
    }
    Ok(b)
}

/// The `anthropic-beta` features, unless a configured header replaces them.
pub fn betas(model: &Model, p: &Params<'_>, has_tools: bool) -> Vec<&'static str> {
    let mut f = Vec::new();
    if p.oauth {
        f.extend(["claude-code-20250219", "oauth-2025-04-20"]);
    }
    if has_tools && !p.compat.eager_tool_input_streaming {
        f.push("fine-grained-tool-streaming-2025-05-14");
    }
    let adaptive = model
        .compat
        .as_ref()
        .and_then(|c| c.force_adaptive_thinking)
        == Some(true);
    if model.reasoning && !matches!(p.thinking, Thinking::Off) && !adaptive {
        f.push("interleaved-thinking-2025-05-14");
    }
    if model
        .compat
        .as_ref()
        .and_then(|c| c.allowed_fallback_models.as_ref())
        .is_some_and(|v| !v.is_empty())
    {
        f.push("server-side-fallback-2026-07-01");
    }
    f
}
