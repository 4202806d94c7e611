//! The `generateContent` request body as the `@google/genai` SDK puts it on the wire for Pi's
//! parameters (`convertMessages`, `convertTools` of Pi's `google-shared.js`; key order of the
//! SDK's converters).

use crate::cost::{clamp_thinking_level, level_map_entry};
use crate::strict_schema::resolve_with_schema;
use crate::transcript::{initial_system, system_text, transcript_tools};
use crate::transform::transform_messages;
use pi_protocol::content::{AssistantBlock, StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The major version of a `gemini-<n>` model id.
fn gemini_major(id: &str) -> Option<u32> {
    let id = id.to_lowercase();
    let rest = id
        .strip_prefix("gemini-live-")
        .or_else(|| id.strip_prefix("gemini-"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn requires_tool_call_id(id: &str) -> bool {
    id.starts_with("claude-")
        || id.starts_with("gpt-oss-")
        || gemini_major(id).is_some_and(|v| v >= 3)
}

/// Gemini 3+ validates required parameters, so strict schemas are sent.
pub fn supports_strict(id: &str) -> bool {
    gemini_major(id).is_some_and(|v| v >= 3)
}

/// Whether the model takes `thinkingLevel` rather than a token budget.
pub fn uses_thinking_level(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let gemini3 = id.match_indices("gemini-3").any(|(i, _)| {
        let mut rest = &id[i + 8..];
        if let Some(r) = rest.strip_prefix('.') {
            let digits = r.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            rest = &r[digits..];
        }
        rest.starts_with("-pro") || rest.starts_with("-flash")
    });
    let later = id.match_indices("gemini-").any(|(i, _)| {
        let t: String = id[i + 7..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        t.parse::<u32>().is_ok_and(|v| v >= 4)
    });
    gemini3
        || later
        || id == "gemini-flash-latest"
        || id == "gemini-flash-lite-latest"
        || id.contains("gemma-4")
        || id.contains("gemma4")
}

/// A Pi level mapped to Google's `MINIMAL`..`HIGH`, or Pi's error for an unsupported mapping.
pub fn google_level(model: &Model, level: ThinkingLevel) -> Result<&'static str, String> {
    let mapped = level_map_entry(model, level);
    let resolved = match mapped {
        Some(Some(m)) => m.to_lowercase(),
        _ => level.as_str().to_string(),
    };
    Ok(match resolved.as_str() {
        "minimal" => "MINIMAL",
        "low" => "LOW",
        "medium" => "MEDIUM",
        "high" => "HIGH",
        _ => {
            let shown = match mapped {
                Some(Some(m)) => m.to_string(),
                Some(None) => "null".into(),
                None => "undefined".into(),
            };
            return Err(format!(
                "Unsupported Google thinking level mapping for {}/{}: {} -> {shown}",
                model.provider,
                model.id,
                level.as_str()
            ));
        }
    })
}

/// The `thinkingConfig` for thinking turned off.
pub fn disabled_thinking(model: &Model) -> Result<Value, String> {
    if !uses_thinking_level(model) {
        return Ok(json!({"thinkingBudget": 0}));
    }
    let fallback = clamp_thinking_level(model, ThinkingLevel::Off);
    if fallback == ThinkingLevel::Off {
        return Ok(json!({"thinkingBudget": 0}));
    }
    Ok(json!({"thinkingLevel": google_level(model, fallback)?}))
}

/// Per-model default thinking budgets.
pub fn budget(model: &Model, level: &str, custom: &crate::budget::ThinkingBudgets) -> i64 {
    let custom = match level {
        "MINIMAL" => custom.minimal,
        "LOW" => custom.low,
        "MEDIUM" => custom.medium,
        _ => custom.high,
    };
    if let Some(c) = custom {
        return c as i64;
    }
    let table: [i64; 4] = if model.id.contains("2.5-pro") {
        [128, 2048, 8192, 32768]
    } else if model.id.contains("2.5-flash-lite") {
        [512, 2048, 8192, 24576]
    } else if model.id.contains("2.5-flash") {
        [128, 2048, 8192, 24576]
    } else {
        return -1;
    };
    match level {
        "MINIMAL" => table[0],
        "LOW" => table[1],
        "MEDIUM" => table[2],
        _ => table[3],
    }
}

const SUBSCHEMA_KEYS: [&str; 16] = [
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const NAME_MAP_KEYS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// String and number `const`s become one-value `enum`s (Gemini ignores `const`).
fn const_as_enum(schema: &Value, name_map: bool) -> Value {
    match schema {
        Value::Array(a) => Value::Array(a.iter().map(|v| const_as_enum(v, false)).collect()),
        Value::Object(o) => {
            let mut r: Map<String, Value> = o
                .iter()
                .map(|(k, v)| {
                    let v = if name_map || SUBSCHEMA_KEYS.contains(&k.as_str()) {
                        const_as_enum(v, false)
                    } else if NAME_MAP_KEYS.contains(&k.as_str()) {
                        const_as_enum(v, true)
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect();
            if !name_map
                && !r.contains_key("enum")
                && let Some(c) = r
                    .get("const")
                    .filter(|c| c.is_string() || c.is_number())
                    .cloned()
            {
                r.remove("const");
                r.insert("enum".into(), json!([c]));
            }
            Value::Object(r)
        }
        v => v.clone(),
    }
}

pub fn convert_tools(tools: &[&Tool], strict: bool) -> Result<(Value, bool), String> {
    let mut any_strict = false;
    let decls: Vec<Value> = tools
        .iter()
        .map(|t| {
            let (s, parameters) = resolve_with_schema(t, strict, None)?;
            any_strict |= s == Some(true);
            // Built as a map: `json!` would copy the schema once more.
            let mut d = Map::new();
            d.insert("name".into(), t.name.clone().into());
            d.insert("description".into(), t.description.clone().into());
            d.insert(
                "parametersJsonSchema".into(),
                const_as_enum(&parameters, false),
            );
            Ok(Value::Object(d))
        })
        .collect::<Result<_, String>>()?;
    Ok((json!([{"functionDeclarations": decls}]), any_strict))
}

fn valid_signature(sig: Option<&str>) -> Option<&str> {
    sig.filter(|s| {
        !s.is_empty()
            && s.len() % 4 == 0
            && s.trim_end_matches('=').len() + 2 >= s.len()
            && s.trim_end_matches('=')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
    })
}

fn text_part(text: &str, thought: bool, sig: Option<&str>) -> Value {
    let mut p = Map::new();
    p.insert("text".into(), text.into());
    if thought {
        p.insert("thought".into(), true.into());
    }
    if let Some(s) = sig {
        p.insert("thoughtSignature".into(), s.into());
    }
    Value::Object(p)
}

fn inline(mime: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": mime, "data": data}})
}

pub fn convert_messages(model: &Model, messages: &[Cow<'_, AgentMessage>]) -> Vec<Value> {
    let conversation = if initial_system(messages).is_some() {
        &messages[1..]
    } else {
        messages
    };
    let with_id = requires_tool_call_id(&model.id);
    let norm = |id: &str, _: &AssistantMessage| {
        if !with_id {
            return id.to_string();
        }
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
    };
    let transformed = transform_messages(conversation, model, Some(&norm));
    let multimodal_results = gemini_major(&model.id).is_none_or(|v| v >= 3);
    let vision = model.input.contains(&InputModality::Image);
    let mut contents: Vec<Value> = Vec::new();
    for msg in transformed.iter().map(|m| &**m) {
        match msg {
            AgentMessage::User(u) => {
                let parts: Vec<Value> = match &u.content {
                    StringOrBlocks::Text(t) => vec![json!({"text": t})],
                    StringOrBlocks::Blocks(b) => b
                        .iter()
                        .map(|x| match x {
                            UserBlock::Text(t) => json!({"text": t.text}),
                            UserBlock::Image(i) => inline(&i.mime_type, &i.data),
                        })
                        .collect(),
                };
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
            AgentMessage::Assistant(a) => {
                let same = a.provider == model.provider && a.model == model.id;
                let mut parts = Vec::new();
                for b in &a.content {
                    match b {
                        AssistantBlock::Text(t) => {
                            let sig = valid_signature(t.text_signature.as_deref().filter(|_| same));
                            if pi_js::trim(&t.text).is_empty() && sig.is_none() {
                                continue;
                            }
                            parts.push(text_part(&t.text, false, sig));
                        }
                        AssistantBlock::Thinking(t) => {
                            if same {
                                let sig = valid_signature(t.thinking_signature.as_deref());
                                if pi_js::trim(&t.thinking).is_empty() && sig.is_none() {
                                    continue;
                                }
                                parts.push(text_part(&t.thinking, true, sig));
                            } else if !pi_js::trim(&t.thinking).is_empty() {
                                parts.push(text_part(&t.thinking, false, None));
                            }
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let mut call = Map::new();
                            call.insert("args".into(), Value::Object(tc.arguments.clone()));
                            if with_id {
                                call.insert("id".into(), tc.id.clone().into());
                            }
                            call.insert("name".into(), tc.name.clone().into());
                            let mut part = Map::new();
                            part.insert("functionCall".into(), Value::Object(call));
                            if let Some(s) =
                                valid_signature(tc.thought_signature.as_deref().filter(|_| same))
                            {
                                part.insert("thoughtSignature".into(), s.into());
                            }
                            parts.push(Value::Object(part));
                        }
                    }
                }
                if !parts.is_empty() {
                    contents.push(json!({"parts": parts, "role": "model"}));
                }
            }
            AgentMessage::ToolResult(t) => {
                let text: Vec<&str> = t
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        UserBlock::Text(x) => Some(x.text.as_str()),
                        _ => None,
                    })
                    .collect();
                let text = text.join("\n");
                let images: Vec<Value> = t
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        UserBlock::Image(i) if vision => Some(inline(&i.mime_type, &i.data)),
                        _ => None,
                    })
                    .collect();
                let value = if !pi_js::trim(&text).is_empty() {
                    text
                } else if !images.is_empty() {
                    "(see attached image)".into()
                } else {
                    String::new()
                };
                let mut fr = Map::new();
                fr.insert("name".into(), t.tool_name.clone().into());
                fr.insert(
                    "response".into(),
                    if t.is_error {
                        json!({"error": value})
                    } else {
                        json!({"output": value})
                    },
                );
                if !images.is_empty() && multimodal_results {
                    fr.insert("parts".into(), Value::Array(images.clone()));
                }
                if with_id {
                    fr.insert("id".into(), t.tool_call_id.clone().into());
                }
                let part = json!({"functionResponse": Value::Object(fr)});
                let merge = contents.last_mut().filter(|c| {
                    c["role"] == "user"
                        && c["parts"]
                            .as_array()
                            .is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
                });
                match merge.and_then(|c| c["parts"].as_array_mut()) {
                    Some(parts) => parts.push(part),
                    None => contents.push(json!({"parts": [part], "role": "user"})),
                }
                if !images.is_empty() && !multimodal_results {
                    let mut parts = vec![json!({"text": "Tool result image:"})];
                    parts.extend(images);
                    contents.push(json!({"parts": parts, "role": "user"}));
                }
            }
            _ => {}
        }
    }
    contents
}

/// The request body; `thinking` is the finished `thinkingConfig`, if any.
pub fn build_body(
    model: &Model,
    messages: &[Cow<'_, AgentMessage>],
    max_tokens: u64,
    temperature: Option<f64>,
    thinking: Option<Value>,
) -> Result<Map<String, Value>, String> {
    let mut b = Map::new();
    b.insert(
        "contents".into(),
        Value::Array(convert_messages(model, messages)),
    );
    let system = initial_system(messages)
        .map(system_text)
        .unwrap_or_default();
    if !system.is_empty() {
        b.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}], "role": "user"}),
        );
    }
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        let (decls, any_strict) = convert_tools(&tools, supports_strict(&model.id))?;
        b.insert("tools".into(), decls);
        if any_strict {
            b.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": {"mode": "VALIDATED"}}),
            );
        }
    }
    let mut generation = Map::new();
    if let Some(t) = temperature {
        generation.insert("temperature".into(), json!(t));
    }
    generation.insert("maxOutputTokens".into(), max_tokens.into());
    if let Some(t) = thinking {
        generation.insert("thinkingConfig".into(), t);
    }
    b.insert("generationConfig".into(), Value::Object(generation));
    Ok(b)
}

/// The Vertex SDK passes Pi's function calls through (`name, args, id`) and writes function
/// responses as `id, name, parts, response`; the Gemini SDK orders them differently.
pub fn vertex_key_order(body: &mut Map<String, Value>) {
    let reorder = |v: &mut Value, keys: &[&str]| {
        if let Some(m) = v.as_object_mut() {
            let mut out = Map::new();
            for k in keys {
                if let Some(x) = m.remove(*k) {
                    out.insert((*k).to_string(), x);
                }
            }
            out.extend(std::mem::take(m));
            *m = out;
        }
    };
    for content in body
        .get_mut("contents")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for part in content
            .get_mut("parts")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get_mut("functionCall") {
                reorder(call, &["name", "args", "id"]);
            }
            if let Some(resp) = part.get_mut("functionResponse") {
                reorder(resp, &["id", "name", "parts", "response"]);
            }
        }
    }
}
