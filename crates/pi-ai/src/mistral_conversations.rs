//! `mistral-conversations`: Mistral's native chat endpoint, `POST {baseUrl}/v1/chat/completions`,
//! in the wire shape of Mistral's SDK (`max_tokens`, `prompt_mode`, `reasoning_effort`,
//! `prompt_cache_key` appended after the body in that order; `prefix: false` on assistant
//! turns; nine-character alphanumeric tool-call ids). Thinking arrives as typed content chunks.

use crate::cost::{calculate_cost, level_map_entry};
use crate::http::{self, Body, ReadError, SendError};
use crate::openai_completions::short_hash;
use crate::output::Output;
use crate::request::{Headers, base_max_tokens, effective_reasoning};
use crate::sse::SseDecoder;
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::strict_schema::resolve_with_schema;
use crate::tool_args::{parse_tool_call_arguments, partial_arguments};
use crate::transcript::{render_system_update, resolve_transcript, system_text, transcript_tools};
use crate::transform::transform_messages;
use pi_js::json::to_js_string;
use pi_protocol::content::{
    AssistantBlock, StringOrBlocks, TextContent, ThinkingContent, ToolCall, UserBlock,
};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::{InputModality, Model};
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::tool::Tool;
use pi_protocol::usage::StopReason;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

/// The API id.
pub const API: &str = "mistral-conversations";

const ID_LEN: usize = 9;
/// Pi's cap on a quoted error body.
const MAX_ERROR_BODY_CHARS: usize = 4000;

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, mut out: Output) {
    let mid = model
        .compat
        .as_ref()
        .and_then(|c| c.supports_mid_convo_system_messages)
        .unwrap_or(false);
    let messages = resolve_transcript(&context.messages, mid);
    let Some(key) = options.api_key.clone().filter(|k| !k.is_empty()) else {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    };
    let cancel = options.cancel.clone();
    let body = match build_body(&model, &context, &options, &messages) {
        Ok(b) => b,
        Err(e) => return out.fail(cancel.is_cancelled(), e).await,
    };
    let mut req = http::Request {
        url: format!(
            "{}/v1/chat/completions",
            model.base_url.trim_end_matches('/')
        ),
        headers: headers(&model, &options, &key).0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    if let Some(hooks) = &options.hooks {
        req.headers = hooks.headers(std::mem::take(&mut req.headers)).await;
        if let Ok(p) = pi_js::parse::parse_js_json(&req.body) {
            req.body = to_js_string(&hooks.payload(p).await).unwrap_or_default();
        }
    }
    let idle_ms = options
        .idle_timeout
        .unwrap_or(http::DEFAULT_IDLE_TIMEOUT)
        .as_millis();
    let mut resp = match http::send(req, &cancel, options.idle_timeout).await {
        Ok(r) => r,
        Err(e) => {
            let text = match e {
                SendError::Status { status, body, .. } => status_error(status, &body),
                SendError::Aborted => "This operation was aborted".into(),
                SendError::HeadersTimeout => {
                    format!("Mistral response headers timed out after {idle_ms}ms")
                }
                SendError::Connect(_) => "fetch failed".into(),
                SendError::Client(t) => t,
            };
            return out.fail(cancel.is_cancelled(), text).await;
        }
    };
    if let Some(hooks) = &options.hooks {
        hooks.response(resp.status(), resp.headers()).await;
    }
    out.start().await;
    let mut st = State::default();
    let mut sse = SseDecoder::new();
    'read: loop {
        let (events, end) = match resp.chunk(&cancel).await {
            Ok(Some(bytes)) => (sse.push(&bytes), false),
            Ok(None) => (sse.finish(), true),
            Err(ReadError::Aborted) => {
                return out.fail(true, "This operation was aborted".into()).await;
            }
            // Pi quotes the fetch error's own message, without undici's cause.
            Err(ReadError::Terminated(_)) => {
                return out.fail(cancel.is_cancelled(), "terminated".into()).await;
            }
        };
        for ev in events {
            let data = pi_js::trim(&ev.data);
            if data.is_empty() {
                continue;
            }
            if data == "[DONE]" {
                break 'read;
            }
            let chunk = match pi_js::parse::parse_js_json(data) {
                Ok(v) if v.is_object() && v["choices"].is_array() => v,
                Ok(_) => {
                    return out
                        .fail(
                            cancel.is_cancelled(),
                            "Invalid Mistral streaming event".into(),
                        )
                        .await;
                }
                Err(e) => return out.fail(cancel.is_cancelled(), e).await,
            };
            st.chunk(&model, &chunk, &mut out).await;
            if out.gone() {
                return;
            }
        }
        if end {
            break;
        }
    }
    st.close_block(&mut out).await;
    st.end_tool_calls(&mut out).await;
    if cancel.is_cancelled() {
        return out.fail(true, "Request was aborted".into()).await;
    }
    match out.msg.stop_reason {
        StopReason::Pending => {
            out.fail(false, "Mistral stream ended without a finish reason".into())
                .await
        }
        StopReason::Error | StopReason::Aborted => {
            let text = out
                .msg
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into());
            out.fail(false, text).await
        }
        _ => out.done().await,
    }
}

fn headers(model: &Model, options: &StreamOptions, key: &str) -> Headers {
    let mut h = Headers::default();
    h.set(
        "user-agent",
        options
            .user_agent
            .clone()
            .unwrap_or_else(http::default_user_agent),
    );
    h.set("accept", "text/event-stream");
    h.set("authorization", format!("Bearer {key}"));
    h.set("content-type", "application/json");
    let mut explicit_affinity = false;
    for (k, v) in model
        .headers
        .iter()
        .flat_map(|m| m.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(options.headers.iter().map(|(k, v)| (k.clone(), v.clone())))
    {
        explicit_affinity |= k.eq_ignore_ascii_case("x-affinity");
        h.set(&k, v);
    }
    if let Some(sid) = caching_session(options)
        && !explicit_affinity
    {
        h.set("x-affinity", sid);
    }
    h
}

fn caching_session(options: &StreamOptions) -> Option<&str> {
    (options.cache_retention != Some(CacheRetention::None))
        .then_some(options.session_id.as_deref())
        .flatten()
        .filter(|s| !s.is_empty())
}

/// `Mistral API error (<status>): <body | status text>`.
fn status_error(status: u16, body: &str) -> String {
    let body = pi_js::trim(body);
    if body.is_empty() {
        let text = match Body::status_text(status) {
            "" => format!("Request failed with status {status}"),
            t => t.to_string(),
        };
        return format!("Mistral API error ({status}): {text}");
    }
    format!(
        "Mistral API error ({status}): {}",
        truncate(body, MAX_ERROR_BODY_CHARS)
    )
}

fn truncate(text: &str, max: usize) -> String {
    let len = pi_js::utf16_len(text);
    if len <= max {
        return text.to_string();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > max {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!("{}... [truncated {} chars]", &text[..end], len - units)
}

/// A nine-character alphanumeric id for `id` (attempt 0), or a hash-derived one.
fn derive_id(id: &str, attempt: u32) -> String {
    let normalized: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if attempt == 0 && normalized.len() == ID_LEN {
        return normalized;
    }
    let base = if normalized.is_empty() {
        id
    } else {
        &normalized
    };
    let seed = if attempt == 0 {
        base.to_string()
    } else {
        format!("{base}:{attempt}")
    };
    short_hash(&seed)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(ID_LEN)
        .collect()
}

/// Maps every foreign id to a distinct Mistral id for the whole request.
#[derive(Default)]
struct IdMap {
    ids: HashMap<String, String>,
    owners: HashMap<String, String>,
}

impl IdMap {
    fn get(&mut self, id: &str) -> String {
        if let Some(existing) = self.ids.get(id) {
            return existing.clone();
        }
        let mut attempt = 0;
        loop {
            let candidate = derive_id(id, attempt);
            if self.owners.get(&candidate).is_none_or(|o| o == id) {
                self.ids.insert(id.to_string(), candidate.clone());
                self.owners.insert(candidate.clone(), id.to_string());
                return candidate;
            }
            attempt += 1;
        }
    }
}

fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
    messages: &[Cow<'_, AgentMessage>],
) -> Result<Map<String, Value>, String> {
    let ids = RefCell::new(IdMap::default());
    let norm = |id: &str, _: &AssistantMessage| ids.borrow_mut().get(id);
    let transformed = transform_messages(messages, model, Some(&norm));
    let mut b = Map::new();
    b.insert("model".into(), model.id.clone().into());
    b.insert("stream".into(), true.into());
    b.insert(
        "messages".into(),
        Value::Array(chat_messages(
            &transformed,
            model.input.contains(&InputModality::Image),
        )),
    );
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        let strict = model
            .compat
            .as_ref()
            .and_then(|c| c.supports_strict_mode)
            .unwrap_or(false);
        b.insert(
            "tools".into(),
            Value::Array(function_tools(&tools, strict)?),
        );
    }
    if let Some(t) = options.temperature {
        b.insert("temperature".into(), json!(t));
    }
    b.insert(
        "max_tokens".into(),
        base_max_tokens(model, context, options).into(),
    );
    // Models with a thinking-level map take `reasoning_effort`; other reasoning models
    // `prompt_mode: "reasoning"`.
    let level = effective_reasoning(model, options);
    if model.reasoning && model.thinking_level_map.is_some() {
        let effort = match level {
            Some(l) => Some(
                level_map_entry(model, l)
                    .flatten()
                    .unwrap_or("high")
                    .to_string(),
            ),
            None => level_map_entry(model, ThinkingLevel::Off)
                .flatten()
                .map(String::from),
        };
        if let Some(e) = effort.filter(|e| !e.is_empty()) {
            b.insert("reasoning_effort".into(), e.into());
        }
    } else if model.reasoning && level.is_some() {
        b.insert("prompt_mode".into(), "reasoning".into());
    }
    if let Some(sid) = caching_session(options) {
        b.insert("prompt_cache_key".into(), sid.into());
    }
    Ok(b)
}

fn function_tools(tools: &[&Tool], supported: bool) -> Result<Vec<Value>, String> {
    tools
        .iter()
        .map(|t| {
            let (strict, parameters) = resolve_with_schema(t, supported, None)?;
            let strict = strict.unwrap_or(false);
            // Built as maps: `json!` would copy the schema once more.
            let mut f = Map::new();
            f.insert("name".into(), t.name.clone().into());
            f.insert("description".into(), t.description.clone().into());
            f.insert("parameters".into(), parameters);
            f.insert("strict".into(), strict.into());
            let mut o = Map::new();
            o.insert("type".into(), "function".into());
            o.insert("function".into(), Value::Object(f));
            Ok(Value::Object(o))
        })
        .collect()
}

fn image_chunk(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": format!("data:{mime};base64,{data}")})
}

fn chat_messages(messages: &[Cow<'_, AgentMessage>], images: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for (index, msg) in messages.iter().map(|m| &**m).enumerate() {
        match msg {
            AgentMessage::System(s) => {
                let text = if index == 0 {
                    system_text(s)
                } else {
                    render_system_update(s)
                };
                if !text.is_empty() {
                    out.push(json!({"role": "system", "content": text}));
                }
            }
            AgentMessage::User(u) => match &u.content {
                StringOrBlocks::Text(t) => out.push(json!({"role": "user", "content": t})),
                StringOrBlocks::Blocks(blocks) => {
                    let had_images = blocks.iter().any(|b| matches!(b, UserBlock::Image(_)));
                    let content: Vec<Value> = blocks
                        .iter()
                        .filter_map(|b| match b {
                            UserBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                            UserBlock::Image(i) if images => {
                                Some(image_chunk(&i.mime_type, &i.data))
                            }
                            UserBlock::Image(_) => None,
                        })
                        .collect();
                    if !content.is_empty() {
                        out.push(json!({"role": "user", "content": content}));
                    } else if had_images && !images {
                        out.push(json!({"role": "user", "content": "(image omitted: model does not support images)"}));
                    }
                }
            },
            AgentMessage::Assistant(a) => {
                let mut parts = Vec::new();
                let mut calls = Vec::new();
                for b in &a.content {
                    match b {
                        AssistantBlock::Text(t) if !pi_js::trim(&t.text).is_empty() => {
                            parts.push(json!({"type": "text", "text": t.text}));
                        }
                        AssistantBlock::Thinking(t) if !pi_js::trim(&t.thinking).is_empty() => {
                            parts.push(json!({"type": "thinking",
                                "thinking": [{"type": "text", "text": t.thinking}]}));
                        }
                        AssistantBlock::ToolCall(tc) => calls.push(json!({
                            "id": tc.id, "type": "function",
                            "function": {"name": tc.name,
                                "arguments": to_js_string(&tc.arguments).unwrap_or_default()},
                            "index": 0,
                        })),
                        _ => {}
                    }
                }
                if parts.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                m.insert("prefix".into(), false.into());
                if !parts.is_empty() {
                    m.insert("content".into(), Value::Array(parts));
                }
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
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
                let has_images = t.content.iter().any(|b| matches!(b, UserBlock::Image(_)));
                let mut content = vec![json!({"type": "text",
                    "text": tool_result_text(&text.join("\n"), has_images, images, t.is_error)})];
                if images {
                    for b in &t.content {
                        if let UserBlock::Image(i) = b {
                            content.push(image_chunk(&i.mime_type, &i.data));
                        }
                    }
                }
                out.push(
                    json!({"role": "tool", "name": t.tool_name, "content": content,
                    "tool_call_id": t.tool_call_id}),
                );
            }
            _ => {}
        }
    }
    out
}

fn tool_result_text(text: &str, has_images: bool, images: bool, error: bool) -> String {
    let trimmed = pi_js::trim(text);
    let prefix = if error { "[tool error] " } else { "" };
    if !trimmed.is_empty() {
        let suffix = if has_images && !images {
            "\n[tool image omitted: model does not support images]"
        } else {
            ""
        };
        return format!("{prefix}{trimmed}{suffix}");
    }
    let body = match (has_images, images) {
        (true, true) => "(see attached image)",
        (true, false) => "(image omitted: model does not support images)",
        _ => "(no tool output)",
    };
    format!("{prefix}{body}")
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Open {
    Text(usize),
    Thinking(usize),
}

#[derive(Default)]
struct State {
    current: Option<Open>,
    /// Tool calls by stream key (the call's index, else its id), in order of appearance.
    calls: Vec<(String, usize, String)>,
}

fn u(v: &Value) -> u64 {
    v.as_f64().filter(|f| *f > 0.0).map_or(0, |f| f as u64)
}

impl State {
    async fn close_block(&mut self, out: &mut Output) {
        let usage = out.usage();
        match self.current.take() {
            Some(Open::Text(index)) => {
                let content = match out.msg.content.get(index) {
                    Some(AssistantBlock::Text(t)) => t.text.clone(),
                    _ => String::new(),
                };
                out.emit(StreamEvent::TextEnd {
                    index,
                    content,
                    signature: None,
                    usage,
                })
                .await;
            }
            Some(Open::Thinking(index)) => {
                let content = match out.msg.content.get(index) {
                    Some(AssistantBlock::Thinking(t)) => t.thinking.clone(),
                    _ => String::new(),
                };
                out.emit(StreamEvent::ThinkingEnd {
                    index,
                    content,
                    signature: None,
                    usage,
                })
                .await;
            }
            None => {}
        }
    }

    async fn end_tool_calls(&mut self, out: &mut Output) {
        for (_, index, args) in std::mem::take(&mut self.calls) {
            let usage = out.usage();
            if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                let (a, err) = parse_tool_call_arguments(&args);
                tc.arguments = a;
                tc.arguments_error = err;
                let tool_call = tc.clone();
                out.emit(StreamEvent::ToolcallEnd {
                    index,
                    tool_call,
                    usage,
                })
                .await;
            }
        }
    }

    async fn text(&mut self, thinking: bool, delta: String, out: &mut Output) {
        if delta.is_empty() {
            return;
        }
        let open = match self.current {
            Some(Open::Thinking(i)) if thinking => Some(i),
            Some(Open::Text(i)) if !thinking => Some(i),
            _ => None,
        };
        let index = match open {
            Some(i) => i,
            None => {
                self.close_block(out).await;
                let index = out.msg.content.len();
                let usage = out.usage();
                if thinking {
                    out.msg
                        .content
                        .push(AssistantBlock::Thinking(ThinkingContent::new("")));
                    self.current = Some(Open::Thinking(index));
                    out.emit(StreamEvent::ThinkingStart { index, usage }).await;
                } else {
                    out.msg
                        .content
                        .push(AssistantBlock::Text(TextContent::new("")));
                    self.current = Some(Open::Text(index));
                    out.emit(StreamEvent::TextStart { index, usage }).await;
                }
                index
            }
        };
        match out.msg.content.get_mut(index) {
            Some(AssistantBlock::Thinking(t)) => t.thinking.push_str(&delta),
            Some(AssistantBlock::Text(t)) => t.text.push_str(&delta),
            _ => {}
        }
        if thinking {
            out.thinking_delta(index, delta).await;
        } else {
            out.text_delta(index, delta).await;
        }
    }

    async fn chunk(&mut self, model: &Model, chunk: &Value, out: &mut Output) {
        if out.msg.response_id.is_none()
            && let Some(id) = chunk["id"].as_str().filter(|s| !s.is_empty())
        {
            out.set_response_id(id.to_string());
        }
        let us = &chunk["usage"];
        if us.is_object() {
            let prompt = u(&us["prompt_tokens"]);
            let cached = [
                &us["promptTokensDetails"]["cachedTokens"],
                &us["prompt_tokens_details"]["cached_tokens"],
                &us["promptTokenDetails"]["cachedTokens"],
                &us["prompt_token_details"]["cached_tokens"],
                &us["numCachedTokens"],
                &us["num_cached_tokens"],
            ]
            .into_iter()
            .find(|v| !v.is_null())
            .map_or(0, u)
            .min(prompt);
            let usage = &mut out.msg.usage;
            usage.input = prompt - cached;
            usage.output = u(&us["completion_tokens"]);
            usage.cache_read = cached;
            usage.cache_write = 0;
            usage.total_tokens = match u(&us["total_tokens"]) {
                0 => usage.input + usage.output + usage.cache_read,
                t => t,
            };
            calculate_cost(model, &mut out.msg.usage);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return;
        };
        if let Some(reason) = choice["finish_reason"].as_str().filter(|r| !r.is_empty()) {
            out.set_raw_stop_reason(reason.to_string());
            let (stop, err) = match reason {
                "stop" => (StopReason::Stop, None),
                "length" | "model_length" => (StopReason::Length, None),
                "tool_calls" => (StopReason::ToolUse, None),
                // Mistral reports transient failures this way; "server error" makes it retryable.
                "error" => (
                    StopReason::Error,
                    Some("Provider stopped with: error (server error)".to_string()),
                ),
                other => (
                    StopReason::Error,
                    Some(format!("Provider stopped with: {other}")),
                ),
            };
            out.msg.stop_reason = stop;
            if let Some(e) = err {
                out.set_error_message(e);
            }
        }
        let delta = &choice["delta"];
        match &delta["content"] {
            Value::String(s) => self.text(false, s.clone(), out).await,
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => self.text(false, s.clone(), out).await,
                        _ if item["type"] == "thinking" => {
                            let text: String = item["thinking"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|p| p["text"].as_str())
                                .collect();
                            self.text(true, text, out).await;
                        }
                        _ if item["type"] == "text" => {
                            let text = item["text"].as_str().unwrap_or("").to_string();
                            self.text(false, text, out).await;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            self.close_block(out).await;
            let id = call["id"]
                .as_str()
                .filter(|i| !i.is_empty() && *i != "null")
                .map(String::from)
                .unwrap_or_else(|| {
                    derive_id(
                        &format!("toolcall:{}", call["index"].as_u64().unwrap_or(0)),
                        0,
                    )
                });
            let key = match call["index"].as_u64() {
                Some(i) => format!("#{i}"),
                None => id.clone(),
            };
            let usage = out.usage();
            let pos = match self.calls.iter().position(|(k, _, _)| *k == key) {
                Some(p) => p,
                None => {
                    let index = out.msg.content.len();
                    let name = call["function"]["name"].as_str().unwrap_or("").to_string();
                    out.msg.content.push(AssistantBlock::ToolCall(ToolCall::new(
                        id.clone(),
                        name.clone(),
                        Map::new(),
                    )));
                    self.calls.push((key, index, String::new()));
                    out.emit(StreamEvent::ToolcallStart {
                        index,
                        id,
                        name,
                        usage: usage.clone(),
                    })
                    .await;
                    self.calls.len() - 1
                }
            };
            let args = &call["function"]["arguments"];
            let delta = match args {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => to_js_string(other).unwrap_or_default(),
            };
            let (_, index, text) = &mut self.calls[pos];
            text.push_str(&delta);
            let index = *index;
            if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                tc.arguments = partial_arguments(text);
            }
            out.emit(StreamEvent::ToolcallDelta {
                index,
                delta,
                usage,
            })
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_ids_become_nine_alphanumerics() {
        assert_eq!(derive_id("call00001", 0), "call00001");
        assert_eq!(derive_id("call_0-0001", 0), "call00001");
        let long = derive_id("toolu_0123456789abcdef", 0);
        assert_eq!(long.len(), 9);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric()));
        let mut ids = IdMap::default();
        let a = ids.get("call_00001");
        let b = ids.get("call-00001");
        assert_ne!(a, b, "two ids that normalize alike stay distinct");
        assert_eq!(ids.get("call_00001"), a);
    }

    #[test]
    fn http_errors_quote_the_body_or_the_status_text() {
        assert_eq!(
            status_error(502, ""),
            "Mistral API error (502): Bad Gateway"
        );
        assert_eq!(
            status_error(400, " {\"a\":1} "),
            "Mistral API error (400): {\"a\":1}"
        );
    }
}
