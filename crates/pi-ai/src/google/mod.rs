//! `google-generative-ai`: `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`.
//!
//! Text and thought parts extend the current block or start a new one; a function call closes
//! the current block and is streamed whole (start, one delta, end).

pub(crate) mod request;

use crate::cost::{calculate_cost, clamp_thinking_level};
use crate::http::{self, ReadError};
use crate::output::Output;
use crate::provider_error::{Sdk, read_error_text, send_error_text};
use crate::request::{Headers, base_headers, base_max_tokens, start_stream};
use crate::stream::{LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::parse_json_with_repair;
use crate::transcript::collapse_system_messages;
use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The API id.
pub const API: &str = "google-generative-ai";

/// Counter for generated tool-call ids, as Pi's module-level one.
static TOOL_CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

fn thinking_config(model: &Model, options: &StreamOptions) -> Result<Option<Value>, String> {
    let level = options
        .reasoning
        .filter(|l| *l != ThinkingLevel::Off)
        .map(|l| clamp_thinking_level(model, l))
        .filter(|l| *l != ThinkingLevel::Off);
    if !model.reasoning {
        return Ok(None);
    }
    let Some(level) = level else {
        return request::disabled_thinking(model).map(Some);
    };
    let g = request::google_level(model, level)?;
    Ok(Some(if request::uses_thinking_level(model) {
        json!({"includeThoughts": true, "thinkingLevel": g})
    } else {
        json!({"includeThoughts": true, "thinkingBudget": request::budget(model, g, &options.thinking_budgets)})
    }))
}

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let Some(key) = options.api_key.clone().filter(|k| !k.is_empty()) else {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    };
    let target = Target {
        url: format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            model.base_url.trim_end_matches('/'),
            model.id
        ),
        auth: vec![("x-goog-api-key".into(), key)],
        vertex: false,
    };
    run_target(model, context, options, out, target).await;
}

/// Where a Gemini-format request goes and how it authenticates.
pub(crate) struct Target {
    pub url: String,
    /// Credential headers, set after the model's and the request's.
    pub auth: Vec<(String, String)>,
    /// Vertex AI: the SDK keeps Pi's key order in function calls and responses, and the
    /// end-of-stream wording names Vertex.
    pub vertex: bool,
}

/// Streams a `streamGenerateContent` request to `target`.
pub(crate) async fn run_target(
    model: Model,
    context: LlmContext,
    options: StreamOptions,
    out: Output,
    target: Target,
) {
    let thinking = match thinking_config(&model, &options) {
        Ok(t) => t,
        Err(e) => return out.setup_fail(e).await,
    };
    let messages = collapse_system_messages(&context.messages);
    let max_tokens = base_max_tokens(&model, &context, &options);
    let mut body =
        match request::build_body(&model, &messages, max_tokens, options.temperature, thinking) {
            Ok(b) => b,
            Err(e) => return out.fail(options.cancel.is_cancelled(), e).await,
        };
    if target.vertex {
        request::vertex_key_order(&mut body);
    }
    let mut headers = Headers::default();
    for (k, v) in base_headers(&model, &options, &[]).0 {
        headers.set(&k, v);
    }
    headers.set("content-type", "application/json");
    for (k, v) in target.auth {
        headers.set(&k, v);
    }
    let req = http::Request {
        url: target.url,
        headers: headers.0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    let cancel = options.cancel.clone();
    let error_text = |e: &http::SendError| send_error_text(Sdk::Google, e, None);
    let Some((mut out, mut resp)) = start_stream(
        out,
        req,
        &options,
        crate::provider_retry::RetryPolicy::Google,
        error_text,
    )
    .await
    else {
        return;
    };
    let mut st = State::default();
    let mut buf: Vec<u8> = Vec::new();
    let hooks = options.hooks.clone().filter(|h| h.wants_stream_events());
    loop {
        match resp.chunk(&cancel).await {
            Ok(Some(bytes)) => buf.extend_from_slice(&bytes),
            Ok(None) => {
                if !pi_js::trim(&String::from_utf8_lossy(&buf)).is_empty() {
                    return out
                        .fail(
                            cancel.is_cancelled(),
                            "Incomplete JSON segment at the end".into(),
                        )
                        .await;
                }
                break;
            }
            Err(e @ (ReadError::Aborted | ReadError::Terminated(_))) => {
                return out.fail(cancel.is_cancelled(), read_error_text(&e)).await;
            }
        }
        while let Some((at, len)) = next_delimiter(&buf) {
            let event = pi_js::trim(&String::from_utf8_lossy(&buf[..at])).to_string();
            buf.drain(..at + len);
            let Some(data) = event.strip_prefix("data:") else {
                continue;
            };
            let data = pi_js::trim(data);
            if let Some(err) = stream_error(data) {
                return out.fail(cancel.is_cancelled(), err).await;
            }
            let chunk = match parse_js_json(data) {
                Ok(v) => v,
                // The SDK parses a chunk after its own try block: the bare SyntaxError.
                Err(e) => return out.fail(cancel.is_cancelled(), e.to_string()).await,
            };
            // Every chunk, before it is processed (`onProviderStreamEvent`).
            if let Some(h) = &hooks {
                h.stream_event(&model, &chunk).await;
            }
            if let Err(e) = st.chunk(&model, &chunk, &mut out).await {
                return out.fail(cancel.is_cancelled(), e).await;
            }
            if out.gone() {
                return;
            }
        }
    }
    st.close_block(&mut out).await;
    let text = if cancel.is_cancelled() {
        Some("Request was aborted".to_string())
    } else if out.msg.stop_reason == StopReason::Pending {
        Some(if target.vertex {
            "Google Vertex stream ended without a finish reason".to_string()
        } else {
            "Google stream ended without a finish reason".to_string()
        })
    } else if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
        Some(match &out.msg.raw_stop_reason {
            Some(r) => format!("Provider stopped with: {r}"),
            None => "An unknown error occurred".into(),
        })
    } else {
        None
    };
    match text {
        Some(t) => out.fail(cancel.is_cancelled(), t).await,
        None => out.done().await,
    }
}

/// The SDK splits events at `\n\n`, `\r\r` or `\r\n\r\n`, whichever comes first.
fn next_delimiter(buf: &[u8]) -> Option<(usize, usize)> {
    [&b"\n\n"[..], b"\r\r", b"\r\n\r\n"]
        .iter()
        .filter_map(|d| {
            buf.windows(d.len())
                .position(|w| w == *d)
                .map(|i| (i, d.len()))
        })
        .min_by_key(|(i, _)| *i)
}

/// An `{"error": {...}}` chunk with an HTTP-like code fails the stream (the SDK's text).
fn stream_error(data: &str) -> Option<String> {
    let v = parse_json_with_repair(data).ok()?;
    let err = v.get("error").filter(|e| e.is_object())?;
    let code = err.get("code").and_then(Value::as_f64)?;
    if !(400.0..600.0).contains(&code) {
        return None;
    }
    let status = match err.get("status") {
        Some(Value::String(s)) => s.clone(),
        None => "undefined".into(),
        Some(v) => to_js_string(v).unwrap_or_default(),
    };
    Some(format!(
        "got status: {status}. {}",
        to_js_string(&v).unwrap_or_default()
    ))
}

#[derive(Debug, Default)]
struct State {
    /// The open text or thinking block.
    current: Option<usize>,
}

fn map_finish(reason: &str) -> Result<StopReason, String> {
    Ok(match reason {
        "STOP" => StopReason::Stop,
        "MAX_TOKENS" | "CONTINUATION" => StopReason::Length,
        "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "SAFETY"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION"
        | "IMAGE_OTHER"
        | "RECITATION"
        | "FINISH_REASON_UNSPECIFIED"
        | "OTHER"
        | "LANGUAGE"
        | "MALFORMED_FUNCTION_CALL"
        | "UNEXPECTED_TOOL_CALL"
        | "TOO_MANY_TOOL_CALLS"
        | "NO_IMAGE" => StopReason::Error,
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}

fn n(v: &Value) -> u64 {
    v.as_f64().filter(|f| *f > 0.0).map_or(0, |f| f as u64)
}

impl State {
    async fn close_block(&mut self, out: &mut Output) {
        let Some(index) = self.current.take() else {
            return;
        };
        let usage = out.usage();
        let ev = match out.msg.content.get(index) {
            Some(AssistantBlock::Text(t)) => StreamEvent::TextEnd {
                index,
                content: t.text.clone(),
                signature: None,
                usage,
            },
            Some(AssistantBlock::Thinking(t)) => StreamEvent::ThinkingEnd {
                index,
                content: t.thinking.clone(),
                signature: None,
                usage,
            },
            _ => return,
        };
        out.emit(ev).await;
    }

    async fn chunk(
        &mut self,
        model: &Model,
        chunk: &Value,
        out: &mut Output,
    ) -> Result<(), String> {
        if out.msg.response_id.is_none()
            && let Some(id) = chunk["responseId"].as_str().filter(|s| !s.is_empty())
        {
            out.set_response_id(id.to_string());
        }
        let cand = &chunk["candidates"][0];
        for part in cand["content"]["parts"].as_array().into_iter().flatten() {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                let thinking = part["thought"] == true;
                let kind_matches = self
                    .current
                    .and_then(|i| out.msg.content.get(i))
                    .is_some_and(|b| {
                        matches!(
                            (b, thinking),
                            (AssistantBlock::Thinking(_), true) | (AssistantBlock::Text(_), false)
                        )
                    });
                if !kind_matches {
                    self.close_block(out).await;
                    let index = out.msg.content.len();
                    let usage = out.usage();
                    if thinking {
                        out.msg
                            .content
                            .push(AssistantBlock::Thinking(ThinkingContent::new("")));
                        out.emit(StreamEvent::ThinkingStart { index, usage }).await;
                    } else {
                        out.msg
                            .content
                            .push(AssistantBlock::Text(TextContent::new("")));
                        out.emit(StreamEvent::TextStart { index, usage }).await;
                    }
                    self.current = Some(index);
                }
                let Some(index) = self.current else { continue };
                let sig = part["thoughtSignature"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(String::from);
                match out.msg.content.get_mut(index) {
                    Some(AssistantBlock::Thinking(t)) => {
                        t.thinking.push_str(text);
                        if sig.is_some() {
                            t.thinking_signature = sig;
                        }
                        out.thinking_delta(index, text.to_string()).await;
                    }
                    Some(AssistantBlock::Text(t)) => {
                        t.text.push_str(text);
                        if sig.is_some() {
                            t.text_signature = sig;
                        }
                        out.text_delta(index, text.to_string()).await;
                    }
                    _ => {}
                }
            }
            if let Some(call) = part.get("functionCall").filter(|c| c.is_object()) {
                self.close_block(out).await;
                let name = call["name"].as_str().unwrap_or("").to_string();
                let provided = call["id"].as_str().filter(|s| !s.is_empty());
                let duplicate = provided.is_some_and(|p| {
                    out.msg
                        .content
                        .iter()
                        .any(|b| matches!(b, AssistantBlock::ToolCall(tc) if tc.id == p))
                });
                let id = match provided {
                    Some(p) if !duplicate => p.to_string(),
                    _ => format!(
                        "{name}_{}_{}",
                        pi_js::now_ms(),
                        TOOL_CALL_COUNTER.fetch_add(1, Ordering::Relaxed) + 1
                    ),
                };
                let args = call["args"].as_object().cloned().unwrap_or_default();
                let mut tc = ToolCall::new(id.clone(), name.clone(), args);
                tc.thought_signature = part["thoughtSignature"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(String::from);
                let index = out.msg.content.len();
                let delta = to_js_string(&tc.arguments).unwrap_or_default();
                out.msg.content.push(AssistantBlock::ToolCall(tc.clone()));
                let usage = out.usage();
                out.emit(StreamEvent::ToolcallStart {
                    index,
                    id,
                    name,
                    usage: usage.clone(),
                })
                .await;
                out.emit(StreamEvent::ToolcallDelta {
                    index,
                    delta,
                    usage: usage.clone(),
                })
                .await;
                out.emit(StreamEvent::ToolcallEnd {
                    index,
                    tool_call: tc,
                    usage,
                })
                .await;
            }
        }
        if let Some(reason) = cand["finishReason"].as_str() {
            out.set_raw_stop_reason(reason.to_string());
            out.msg.stop_reason = map_finish(reason)?;
            if out.msg.stop_reason == StopReason::Stop
                && out
                    .msg
                    .content
                    .iter()
                    .any(|b| matches!(b, AssistantBlock::ToolCall(_)))
            {
                out.msg.stop_reason = StopReason::ToolUse;
            }
        }
        let um = &chunk["usageMetadata"];
        if um.is_object() {
            let cached = n(&um["cachedContentTokenCount"]);
            let thoughts = n(&um["thoughtsTokenCount"]);
            let mut usage = Usage {
                input: n(&um["promptTokenCount"]).saturating_sub(cached),
                output: n(&um["candidatesTokenCount"]) + thoughts,
                cache_read: cached,
                cache_write: 0,
                reasoning: Some(thoughts),
                total_tokens: n(&um["totalTokenCount"]),
                ..Usage::zero()
            };
            calculate_cost(model, &mut usage);
            *out.msg.usage = usage;
        }
        Ok(())
    }
}
