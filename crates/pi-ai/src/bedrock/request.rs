//! The Converse request body, in the key order of the AWS SDK's serializer (`messages`,
//! `system`, `inferenceConfig`, `toolConfig`, `additionalModelRequestFields`; `format` before
//! `source` in images; `name`, `inputSchema`, `description`, `strict` in tool specs).

use crate::stream::CacheRetention;
use crate::strict_schema::{prefers_strict, resolve_strict, resolve_with_schema};
use crate::transcript::{initial_system, system_text, transcript_tools};
use crate::transform::{split_error_tool_result_images, transform_messages};
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

const EMPTY_TEXT: &str = "<empty>";
const BLOCK_BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

/// Lowercased id and name, each also with `[\s_.:]+` runs as `-` (Pi's match candidates).
fn candidates(model: &Model) -> Vec<String> {
    let mut out = Vec::new();
    for v in [
        Some(model.id.as_str()),
        Some(model.name.as_str()).filter(|n| !n.is_empty()),
    ]
    .into_iter()
    .flatten()
    {
        let lower = v.to_lowercase();
        let mut dashed = String::new();
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || c == '_' || c == '.' || c == ':' {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

fn any(model: &Model, needles: &[&str]) -> bool {
    candidates(model)
        .iter()
        .any(|c| needles.iter().any(|n| c.contains(n)))
}

/// An Anthropic Claude model (by id, or by name for application inference profiles).
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

pub fn supports_adaptive_thinking(model: &Model) -> bool {
    any(
        model,
        &[
            "opus-4-6",
            "opus-4-7",
            "opus-4-8",
            "opus-5",
            "sonnet-4-6",
            "sonnet-5",
            "haiku-5",
            "fable-5",
        ],
    )
}

const NEWER_CLAUDE: &[&str] = &[
    "opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5",
];

fn supports_prompt_caching(model: &Model, force: bool) -> bool {
    let c = candidates(model);
    if !c.iter().any(|s| s.contains("claude")) {
        return force;
    }
    c.iter().any(|s| {
        [
            "fable-5",
            "opus-5",
            "sonnet-5",
            "haiku-5",
            "-4-",
            "claude-3-7-sonnet",
            "claude-3-5-haiku",
        ]
        .iter()
        .any(|n| s.contains(n))
    })
}

/// What shapes the body besides the transcript.
pub struct Params<'a> {
    pub model: &'a Model,
    pub retention: CacheRetention,
    /// `AWS_BEDROCK_FORCE_CACHE=1`: cache points for models whose name does not say Claude.
    pub force_cache: bool,
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    /// The requested level (not clamped to the model), `None` for off.
    pub reasoning: Option<ThinkingLevel>,
    /// Thinking budgets per level after Pi's max-token adjustment.
    pub budgets: crate::budget::ThinkingBudgets,
    pub gov_cloud: bool,
}

fn cache_point(p: &Params<'_>) -> Value {
    if p.retention == CacheRetention::Long {
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    } else {
        json!({"cachePoint": {"type": "default"}})
    }
}

fn caching(p: &Params<'_>) -> bool {
    p.retention != CacheRetention::None && supports_prompt_caching(p.model, p.force_cache)
}

fn text_block(text: &str) -> Option<Value> {
    (!pi_js::trim(text).is_empty()).then(|| json!({"text": text}))
}

fn image_block(mime: &str, data: &str) -> Result<Value, String> {
    let format = match mime {
        "image/jpeg" | "image/jpg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => return Err(format!("Unknown image type: {other}")),
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}

fn normalize_tool_call_id(id: &str) -> String {
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

/// Document values may not have empty keys.
fn sanitize_document(v: &Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.iter().map(sanitize_document).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.clone(), sanitize_document(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn tool_result_content(content: &[UserBlock]) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for b in content {
        match b {
            UserBlock::Image(i) => out.push(image_block(&i.mime_type, &i.data)?),
            UserBlock::Text(t) => out.extend(text_block(&t.text)),
        }
    }
    if out.is_empty() {
        out.push(json!({"text": EMPTY_TEXT}));
    }
    Ok(out)
}

fn convert_messages(
    p: &Params<'_>,
    messages: &[Cow<'_, AgentMessage>],
) -> Result<Vec<Value>, String> {
    let model = p.model;
    let rest = match initial_system(messages) {
        Some(_) => &messages[1..],
        None => messages,
    };
    let norm = |id: &str, _: &AssistantMessage| normalize_tool_call_id(id);
    let transformed = transform_messages(rest, model, Some(&norm));
    let claude = is_claude(model);
    let mut out: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < transformed.len() {
        match &*transformed[i] {
            AgentMessage::User(u) => {
                let mut content = Vec::new();
                match &u.content {
                    StringOrBlocks::Text(t) => {
                        content.push(text_block(t).unwrap_or_else(|| json!({"text": EMPTY_TEXT})))
                    }
                    StringOrBlocks::Blocks(blocks) => {
                        for b in blocks {
                            match b {
                                UserBlock::Text(t) => content.extend(text_block(&t.text)),
                                UserBlock::Image(im) => {
                                    content.push(image_block(&im.mime_type, &im.data)?)
                                }
                            }
                        }
                        if content.is_empty() {
                            content.push(json!({"text": EMPTY_TEXT}));
                        }
                    }
                }
                out.push(json!({"role": "user", "content": content}));
            }
            AgentMessage::Assistant(a) => {
                let mut blocks = Vec::new();
                for b in &a.content {
                    match b {
                        AssistantBlock::Text(t) => blocks.extend(text_block(&t.text)),
                        AssistantBlock::ToolCall(tc) => blocks.push(json!({"toolUse": {
                            "toolUseId": tc.id, "name": tc.name,
                            "input": sanitize_document(&Value::Object(tc.arguments.clone())),
                        }})),
                        AssistantBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                // The stored payload is replayed as it came (base64 bytes).
                                if let Some(sig) = t.thinking_signature.as_deref().filter(|s| {
                                    !s.is_empty()
                                        && base64::Engine::decode(
                                            &base64::engine::general_purpose::STANDARD,
                                            s,
                                        )
                                        .is_ok_and(|b| !b.is_empty())
                                }) {
                                    blocks.push(
                                        json!({"reasoningContent": {"redactedContent": sig}}),
                                    );
                                }
                                continue;
                            }
                            if pi_js::trim(&t.thinking).is_empty() {
                                continue;
                            }
                            if claude {
                                match t.thinking_signature.as_deref() {
                                    Some(s) if !pi_js::trim(s).is_empty() => blocks
                                        .push(json!({"reasoningContent": {"reasoningText": {
                                            "text": t.thinking, "signature": s}}})),
                                    _ => blocks.push(json!({"text": t.thinking})),
                                }
                            } else {
                                blocks.push(json!({"reasoningContent": {"reasoningText": {
                                    "text": t.thinking}}}));
                            }
                        }
                    }
                }
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            AgentMessage::ToolResult(_) => {
                let mut results = Vec::new();
                let mut images = Vec::new();
                while let Some(AgentMessage::ToolResult(t)) = transformed.get(i).map(|m| &**m) {
                    let split = if claude {
                        split_error_tool_result_images(t)
                    } else {
                        None
                    };
                    let content = match &split {
                        Some((c, _, _)) => tool_result_content(c)?,
                        None => tool_result_content(&t.content)?,
                    };
                    results.push(json!({"toolResult": {
                        "toolUseId": t.tool_call_id, "content": content,
                        "status": if t.is_error { "error" } else { "success" },
                    }}));
                    if let Some((_, caption, imgs)) = split {
                        images.push(json!({"text": caption}));
                        for im in imgs {
                            if let UserBlock::Image(im) = im {
                                images.push(image_block(&im.mime_type, &im.data)?);
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
    if caching(p)
        && let Some(last) = out.last_mut()
        && last["role"] == "user"
        && let Some(c) = last["content"].as_array_mut()
    {
        c.push(cache_point(p));
    }
    Ok(out)
}

fn tool_config(tools: &[Tool], strict_supported: bool) -> Result<Value, String> {
    let specs = tools
        .iter()
        .map(|t| {
            let (strict, parameters) = resolve_with_schema(t, strict_supported, None)?;
            let mut spec = Map::new();
            spec.insert("name".into(), t.name.clone().into());
            let mut schema = Map::new();
            schema.insert("json".into(), parameters);
            spec.insert("inputSchema".into(), Value::Object(schema));
            spec.insert("description".into(), t.description.clone().into());
            if strict == Some(true) {
                spec.insert("strict".into(), true.into());
            }
            Ok(json!({"toolSpec": Value::Object(spec)}))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(json!({"tools": specs}))
}

/// Whether a strict-preferring tool made the request strict (Bedrock may reject such tool
/// sets as too large; Pi retries once without them).
pub fn has_preferred_strict(tools: &[&Tool], strict_supported: bool) -> bool {
    tools.iter().any(|t| {
        prefers_strict(t) && resolve_strict(t, strict_supported, None).ok().flatten() == Some(true)
    })
}

fn effort(model: &Model, level: ThinkingLevel) -> String {
    if level == ThinkingLevel::Xhigh && any(model, NEWER_CLAUDE) {
        return "xhigh".into();
    }
    if let Some(Some(m)) = crate::cost::level_map_entry(model, level) {
        return m.to_string();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .into()
}

fn additional_fields(p: &Params<'_>) -> Option<Value> {
    let model = p.model;
    let level = p.reasoning.filter(|_| model.reasoning)?;
    if is_claude(model) {
        let display = (!p.gov_cloud).then_some("summarized");
        let binding = !p.gov_cloud && any(model, NEWER_CLAUDE);
        let mut thinking = Map::new();
        let mut out = Map::new();
        if supports_adaptive_thinking(model) {
            thinking.insert("type".into(), "adaptive".into());
            if let Some(d) = display {
                thinking.insert("display".into(), d.into());
            }
            if binding {
                thinking.insert(
                    "block_binding".into(),
                    json!({"prefix_mismatch_behavior": "drop_block"}),
                );
            }
            out.insert("thinking".into(), Value::Object(thinking));
            out.insert(
                "output_config".into(),
                json!({"effort": effort(model, level)}),
            );
            if binding {
                out.insert("anthropic_beta".into(), json!([BLOCK_BINDING_BETA]));
            }
        } else {
            let budget_level = match level {
                ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
                l => l,
            };
            let custom = match budget_level {
                ThinkingLevel::Minimal => p.budgets.minimal,
                ThinkingLevel::Low => p.budgets.low,
                ThinkingLevel::Medium => p.budgets.medium,
                _ => p.budgets.high,
            };
            let default = match level {
                ThinkingLevel::Minimal => 1024,
                ThinkingLevel::Low => 2048,
                ThinkingLevel::Medium => 8192,
                _ => 16384,
            };
            thinking.insert("type".into(), "enabled".into());
            thinking.insert("budget_tokens".into(), custom.unwrap_or(default).into());
            if let Some(d) = display {
                thinking.insert("display".into(), d.into());
            }
            out.insert("thinking".into(), Value::Object(thinking));
            out.insert(
                "anthropic_beta".into(),
                json!(["interleaved-thinking-2025-05-14"]),
            );
        }
        return Some(Value::Object(out));
    }
    let name = |l: ThinkingLevel, oss: bool| match l {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh if !oss => "xhigh",
        ThinkingLevel::Max if !oss => "max",
        _ => "high",
    };
    if any(model, &["gpt-oss"]) {
        return Some(json!({"reasoning_effort": name(level, true)}));
    }
    if any(model, &["gpt-"]) {
        let e = match crate::cost::level_map_entry(model, level) {
            Some(Some(m)) => m.to_string(),
            _ => name(level, false).to_string(),
        };
        return Some(json!({"reasoning": {"effort": e}}));
    }
    None
}

/// The request body (without `modelId`, which goes in the path).
pub fn build_body(
    p: &Params<'_>,
    messages: &[Cow<'_, AgentMessage>],
    strict_supported: bool,
    disable_preferred_strict: bool,
) -> Result<Map<String, Value>, String> {
    let mut b = Map::new();
    b.insert(
        "messages".into(),
        Value::Array(convert_messages(p, messages)?),
    );
    let system = initial_system(messages)
        .map(system_text)
        .unwrap_or_default();
    if !system.is_empty() {
        let mut blocks = vec![json!({"text": system})];
        if caching(p) {
            blocks.push(cache_point(p));
        }
        b.insert("system".into(), Value::Array(blocks));
    }
    let mut inference = Map::new();
    if let Some(m) = p.max_tokens {
        inference.insert("maxTokens".into(), m.into());
    }
    if let Some(t) = p.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    b.insert("inferenceConfig".into(), Value::Object(inference));
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        let tools: Vec<Tool> = tools
            .into_iter()
            .map(|t| {
                let mut t = t.clone();
                if disable_preferred_strict && prefers_strict(&t) {
                    t.constrained_sampling = None;
                }
                t
            })
            .collect();
        b.insert("toolConfig".into(), tool_config(&tools, strict_supported)?);
    }
    if let Some(extra) = additional_fields(p) {
        b.insert("additionalModelRequestFields".into(), extra);
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, name: &str) -> Model {
        let mut m = Model::placeholder();
        m.id = id.into();
        m.name = name.into();
        m.reasoning = true;
        m
    }

    #[test]
    fn claude_families_by_id_or_name() {
        assert!(is_claude(&model(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            ""
        )));
        assert!(is_claude(&model(
            "arn:aws:bedrock:us-east-1:1:application-inference-profile/x",
            "My Claude"
        )));
        assert!(!is_claude(&model(
            "openai.gpt-oss-120b-1:0",
            "gpt-oss-120b"
        )));
        assert!(supports_adaptive_thinking(&model(
            "anthropic.claude-opus-4-6-v1",
            ""
        )));
        assert!(supports_adaptive_thinking(&model("x", "Claude Sonnet 4.6")));
        assert!(!supports_adaptive_thinking(&model(
            "anthropic.claude-sonnet-4-5",
            ""
        )));
    }

    #[test]
    fn adaptive_claude_gets_effort_and_block_binding() {
        let m = model("anthropic.claude-opus-4-7", "Claude Opus 4.7");
        let p = Params {
            model: &m,
            retention: CacheRetention::Short,
            force_cache: false,
            max_tokens: None,
            temperature: None,
            reasoning: Some(ThinkingLevel::Xhigh),
            budgets: Default::default(),
            gov_cloud: false,
        };
        assert_eq!(
            additional_fields(&p),
            Some(
                json!({"thinking": {"type": "adaptive", "display": "summarized",
                "block_binding": {"prefix_mismatch_behavior": "drop_block"}},
                "output_config": {"effort": "xhigh"},
                "anthropic_beta": ["thinking-binding-controls-2026-08-01"]})
            )
        );
    }
}
