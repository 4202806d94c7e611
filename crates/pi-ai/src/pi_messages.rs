//! `pi-messages`: Pi's own message protocol. One `POST {baseUrl}/messages` of
//! `{model, context, options}`; the answer is SSE of Pi's assistant-message events (content
//! indices, deltas, the finished tool call) ending in a `done` or `error` event that carries the
//! usage and stop reason. The backend (the Radius gateway, or any models.json provider with
//! `"api": "pi-messages"`) has already done the provider work, so this adapter only relays.

use crate::http::{self, Body, ReadError, SendError};
use crate::output::Output;
use crate::request::base_headers;
use crate::sse::SseDecoder;
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::partial_arguments;
use pi_js::json::to_js_string;
use pi_js::now_ms;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::message::{AssistantMessage, AssistantMessageDiagnostic, DiagnosticErrorInfo};
use pi_protocol::model::Model;
use pi_protocol::record::KeyOrder;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The API id.
pub const API: &str = "pi-messages";

/// Pi's cap on a response body quoted in a diagnostic.
const MAX_DIAGNOSTIC_CHARS: usize = 8192;

/// Why the request ended without a terminal event from the backend.
struct Failure {
    text: String,
    diagnostic: Option<AssistantMessageDiagnostic>,
}

impl From<String> for Failure {
    fn from(text: String) -> Failure {
        Failure {
            text,
            diagnostic: None,
        }
    }
}

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, mut out: Output) {
    let cancel = options.cancel.clone();
    match relay(&model, &context, &options, &mut out).await {
        Ok(End::Done) => out.done().await,
        Ok(End::Error) => out.end_as_is().await,
        Ok(End::Gone) => {}
        Err(f) => {
            let aborted = cancel.is_cancelled();
            fail_fresh(out, aborted, f).await;
        }
    }
}

/// How a relayed stream ended.
enum End {
    Done,
    Error,
    Gone,
}

/// Streams the response until the backend's terminal event (or the consumer left).
async fn relay(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
    out: &mut Output,
) -> Result<End, Failure> {
    let Some(key) = options.api_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(format!("No API key provided for provider \"{}\"", model.provider).into());
    };
    let url = format!("{}/messages", model.base_url.trim_end_matches('/'));
    let body =
        pi_js::json_str::value_to_js_string(&payload(model, context, options)).unwrap_or_default();
    let mut headers = base_headers(model, &Default::default(), &[]);
    headers
        .0
        .retain(|(n, _)| n.eq_ignore_ascii_case("user-agent"));
    if let Some(ua) = &options.user_agent {
        headers.set("User-Agent", ua.clone());
    }
    for (k, v) in model.headers.iter().flat_map(|m| m.iter()) {
        headers.set(k, v.clone());
    }
    headers.set("authorization", format!("Bearer {key}"));
    headers.set("accept", "text/event-stream");
    headers.set("content-type", "application/json");
    for (k, v) in &options.headers {
        headers.set(k, v.clone());
    }
    let mut req = http::Request {
        url: url.clone(),
        headers: headers.0,
        body,
    };
    if let Some(hooks) = &options.hooks {
        req.headers = hooks.headers(std::mem::take(&mut req.headers)).await;
        if let Ok(p) = pi_js::parse::parse_js_json(&req.body) {
            req.body = to_js_string(&hooks.payload(p).await).unwrap_or_default();
        }
    }
    let mut resp = match http::send(req, &options.cancel, options.idle_timeout).await {
        Ok(r) => r,
        Err(SendError::Status { status, body, .. }) => {
            return Err(response_failure(model, &url, status, &body));
        }
        Err(SendError::Aborted) => return Err("This operation was aborted".to_string().into()),
        Err(SendError::Connect(_) | SendError::HeadersTimeout) => {
            return Err("fetch failed".to_string().into());
        }
        Err(SendError::Client(t)) => return Err(t.into()),
    };
    if let Some(hooks) = &options.hooks {
        hooks.response(resp.status(), resp.headers()).await;
    }
    let mut conv = Converter::default();
    let mut sse = SseDecoder::new();
    loop {
        let (events, end) = match resp.chunk(&options.cancel).await {
            Ok(Some(bytes)) => (sse.push(&bytes), false),
            Ok(None) => (sse.finish(), true),
            Err(ReadError::Aborted) => return Err("This operation was aborted".to_string().into()),
            // Pi quotes the fetch error's own message, without undici's cause.
            Err(ReadError::Terminated(_)) => return Err("terminated".to_string().into()),
        };
        for ev in events {
            let data = pi_js::trim(&ev.data);
            if data.is_empty() || data == "[DONE]" {
                continue;
            }
            let value = pi_js::parse::parse_js_json(data).map_err(Failure::from)?;
            if let Some(end) = conv.event(&value, out).await? {
                return Ok(end);
            }
            if out.gone() {
                return Ok(End::Gone);
            }
        }
        if end {
            break;
        }
    }
    Err(format!("{} stream ended without a terminal event", model.provider).into())
}

/// `{model, context, options}`; options hold only what was set (undefined keys vanish).
fn payload(model: &Model, context: &LlmContext, options: &StreamOptions) -> Value {
    let mut o = Map::new();
    if let Some(t) = options.temperature {
        o.insert("temperature".into(), json!(t));
    }
    if let Some(m) = options.max_tokens {
        o.insert("maxTokens".into(), m.into());
    }
    if let Some(r) = options.reasoning {
        o.insert("reasoning".into(), json!(r));
    }
    // Backend defaults apply when unset; only the legacy environment opt-in is passed on.
    let retention = match options.cache_retention {
        Some(r) => Some(r),
        None => CacheRetention::resolve(None)
            .eq(&CacheRetention::Long)
            .then_some(CacheRetention::Long),
    };
    if let Some(r) = retention {
        let name = match r {
            CacheRetention::None => "none",
            CacheRetention::Short => "short",
            CacheRetention::Long => "long",
        };
        o.insert("cacheRetention".into(), name.into());
    }
    if let Some(s) = &options.session_id {
        o.insert("sessionId".into(), s.clone().into());
    }
    let messages: Vec<Value> = context
        .messages
        .iter()
        .filter_map(|m| serde_json::to_value(&**m).ok())
        .collect();
    json!({"model": model.id, "context": {"messages": messages}, "options": o})
}

/// `<status> <statusText>: <error.message | body>[ (<code>)]` with Pi's diagnostic.
fn response_failure(model: &Model, url: &str, status: u16, body: &str) -> Failure {
    let parsed = pi_js::parse::parse_js_json(body)
        .ok()
        .filter(|v| v.get("error").is_some_and(Value::is_object));
    let error = parsed.as_ref().map(|v| &v["error"]);
    let message = error.and_then(|e| e["message"].as_str());
    let code = error.and_then(|e| e["code"].as_str());
    let status_text = Body::status_text(status);
    let text = format!(
        "{status} {status_text}: {}{}",
        message.unwrap_or(body),
        code.map(|c| format!(" ({c})")).unwrap_or_default()
    );
    let mut details = Map::new();
    details.insert("version".into(), 1.into());
    details.insert("provider".into(), model.provider.clone().into());
    details.insert("model".into(), model.id.clone().into());
    details.insert("url".into(), url.into());
    details.insert("status".into(), status.into());
    details.insert("statusText".into(), status_text.into());
    match error {
        Some(e) => {
            details.insert("error".into(), e.clone());
        }
        None => {
            details.insert("body".into(), truncate_diagnostic(body).into());
        }
    }
    details.insert("timestampMs".into(), now_ms().into());
    let mut info = DiagnosticErrorInfo {
        name: Some("PiMessagesResponseError".into()),
        message: text.clone(),
        // The first line of a JavaScript stack; there are no frames worth reporting.
        stack: Some(format!("PiMessagesResponseError: {text}")),
        code: None,
        rest: Default::default(),
    };
    if let Some(c) = code {
        info.code = serde_json::from_value(json!(c)).ok();
    }
    Failure {
        text,
        diagnostic: Some(AssistantMessageDiagnostic {
            kind: "pi_messages_response_failure".into(),
            timestamp: now_ms(),
            error: Some(info),
            details: Some(details),
            rest: Default::default(),
        }),
    }
}

fn truncate_diagnostic(body: &str) -> String {
    if pi_js::utf16_len(body) <= MAX_DIAGNOSTIC_CHARS {
        return body.to_string();
    }
    let mut units = 0;
    let mut end = 0;
    for (i, c) in body.char_indices() {
        if units + c.len_utf16() > MAX_DIAGNOSTIC_CHARS {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!("{}…", &body[..end])
}

/// Pi's failure for this API: a fresh message without content (what streamed is dropped).
async fn fail_fresh(mut out: Output, aborted: bool, f: Failure) {
    let mut msg = AssistantMessage::new(
        out.msg.api.clone(),
        out.msg.provider.clone(),
        out.msg.model.clone(),
        if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        now_ms(),
    );
    msg.error_message = Some(f.text);
    let mut order: Vec<String> = AssistantMessage::FAILURE_ORDER
        .iter()
        .map(|s| s.to_string())
        .collect();
    if !aborted && let Some(d) = f.diagnostic {
        msg.diagnostics = Some(vec![d]);
        order.push("diagnostics".into());
    }
    msg.duration_ms = Some(out.elapsed_ms());
    order.push("durationMs".into());
    msg.rest.set_order(KeyOrder::Recorded(Arc::from(order)));
    out.emit(StreamEvent::Error { message: msg }).await;
}

/// Rebuilds the message from the backend's events (Pi's `createEventConverter`).
#[derive(Default)]
struct Converter {
    /// Argument text of tool calls still streaming, by content index.
    args: HashMap<usize, String>,
}

impl Converter {
    /// Applies one event; `Some` once the stream is over.
    async fn event(&mut self, ev: &Value, out: &mut Output) -> Result<Option<End>, Failure> {
        let kind = ev["type"].as_str().unwrap_or("");
        let len = out.msg.content.len();
        let mut index = 0usize;
        if let Some(obj) = ev.as_object()
            && let Some(raw) = obj.get("contentIndex")
        {
            let limit = if kind.ends_with("_start") {
                len as i64
            } else {
                len as i64 - 1
            };
            match raw.as_f64() {
                Some(f) if f.fract() == 0.0 && f >= 0.0 && (f as i64) <= limit => {
                    index = f as usize;
                }
                _ => {
                    return Err(format!(
                        "Invalid contentIndex {} in pi-messages {kind} event",
                        to_js_string(raw).unwrap_or_default()
                    )
                    .into());
                }
            }
        }
        let usage = out.usage();
        match kind {
            "done" | "error" => {
                self.finish(ev, kind == "error", out);
                return Ok(Some(if kind == "error" {
                    End::Error
                } else {
                    End::Done
                }));
            }
            "start" => out.start().await,
            "text_start" => {
                put(out, index, AssistantBlock::Text(TextContent::new("")));
                out.emit(StreamEvent::TextStart { index, usage }).await;
            }
            "text_delta" => {
                let delta = str_of(&ev["delta"]);
                if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
                    t.text.push_str(&delta);
                }
                out.text_delta(index, delta).await;
            }
            "text_end" => {
                let content = str_of(&ev["content"]);
                if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
                    t.text = content.clone();
                    t.text_signature = ev["contentSignature"].as_str().map(String::from);
                }
                out.emit(StreamEvent::TextEnd {
                    index,
                    content,
                    signature: ev["contentSignature"].as_str().map(String::from),
                    usage,
                })
                .await;
            }
            "thinking_start" => {
                put(
                    out,
                    index,
                    AssistantBlock::Thinking(ThinkingContent::new("")),
                );
                out.emit(StreamEvent::ThinkingStart { index, usage }).await;
            }
            "thinking_delta" => {
                let delta = str_of(&ev["delta"]);
                if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get_mut(index) {
                    t.thinking.push_str(&delta);
                }
                out.thinking_delta(index, delta).await;
            }
            "thinking_end" => {
                let content = str_of(&ev["content"]);
                if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get_mut(index) {
                    t.thinking = content.clone();
                    t.thinking_signature = ev["contentSignature"].as_str().map(String::from);
                    t.redacted = ev["redacted"].as_bool();
                }
                out.emit(StreamEvent::ThinkingEnd {
                    index,
                    content,
                    signature: ev["contentSignature"].as_str().map(String::from),
                    usage,
                })
                .await;
            }
            "toolcall_start" => {
                let id = str_of(&ev["id"]);
                let name = str_of(&ev["toolName"]);
                put(
                    out,
                    index,
                    AssistantBlock::ToolCall(ToolCall::new(id.clone(), name.clone(), Map::new())),
                );
                self.args.insert(index, String::new());
                out.emit(StreamEvent::ToolcallStart {
                    index,
                    id,
                    name,
                    usage,
                })
                .await;
            }
            "toolcall_delta" => {
                let delta = str_of(&ev["delta"]);
                if let Some(text) = self.args.get_mut(&index) {
                    text.push_str(&delta);
                    if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                        tc.arguments = partial_arguments(text);
                    }
                }
                out.emit(StreamEvent::ToolcallDelta {
                    index,
                    delta,
                    usage,
                })
                .await;
            }
            "toolcall_end" => {
                self.args.remove(&index);
                if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                    // `Object.assign(block, event.toolCall)`: the backend's fields win.
                    let mut merged = serde_json::to_value(&*tc).unwrap_or_default();
                    if let (Some(m), Some(src)) =
                        (merged.as_object_mut(), ev["toolCall"].as_object())
                    {
                        for (k, v) in src {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    if let Ok(next) = serde_json::from_value::<ToolCall>(merged) {
                        *tc = next;
                    }
                    let tool_call = tc.clone();
                    out.emit(StreamEvent::ToolcallEnd {
                        index,
                        tool_call,
                        usage,
                    })
                    .await;
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// The terminal event's fields, assigned in Pi's order.
    fn finish(&mut self, ev: &Value, error: bool, out: &mut Output) {
        if let Ok(reason) = serde_json::from_value::<StopReason>(ev["reason"].clone()) {
            out.msg.stop_reason = reason;
        }
        if let Ok(u) = serde_json::from_value::<Usage>(ev["usage"].clone()) {
            *out.msg.usage = u;
        }
        if error {
            out.set_error_message(str_of(&ev["errorMessage"]));
        }
        match ev["responseId"].as_str() {
            Some(id) => out.set_response_id(id.to_string()),
            None => out.msg.response_id = None,
        }
        if let Some(m) = ev["responseModel"].as_str() {
            out.set_response_model(m.to_string());
        }
        if let Some(l) = ev["providerThinkingLevel"].as_str() {
            out.set_provider_thinking_level(l.to_string());
        }
        if let Some(rw) = ev["rewrite"].as_object() {
            out.push_diagnostic(AssistantMessageDiagnostic {
                kind: "pi_messages_rewrite".into(),
                timestamp: now_ms(),
                error: None,
                details: Some(rw.clone()),
                rest: Default::default(),
            });
        }
    }
}

/// `partial.content[index] = block` (index is at most the length, checked before).
fn put(out: &mut Output, index: usize, block: AssistantBlock) {
    if index == out.msg.content.len() {
        out.msg.content.push(block);
    } else {
        out.msg.content[index] = block;
    }
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}
