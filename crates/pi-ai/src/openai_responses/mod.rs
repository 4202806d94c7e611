//! `openai-responses`: `POST {baseUrl}/responses`, SSE of Responses API events.
//!
//! Output items become blocks in the order they are added; reasoning items are kept whole (as
//! JSON in `thinkingSignature`) for replay, text items keep their id in `textSignature`.

pub(crate) mod request;

use crate::cost::calculate_cost;
use crate::http::{self, ReadError};
use crate::openai_completions::{SseData, openai_sse_data};
use crate::output::Output;
use crate::provider_error::{Sdk, read_error_text, send_error_text};
use crate::request::{
    base_headers, base_max_tokens, effective_reasoning, set_unless_requested, start_stream,
};
use crate::sse::SseDecoder;
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::{parse_tool_call_arguments, partial_arguments};
use crate::transcript::resolve_transcript;
use pi_js::json::to_js_string;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::model::Model;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The API id.
pub const API: &str = "openai-responses";

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let mid = model
        .compat
        .as_ref()
        .and_then(|c| c.supports_mid_convo_system_messages)
        .unwrap_or(false);
    let messages = resolve_transcript(&context.messages, mid);
    let headers_only = base_headers(&model, &options, &[]);
    let key = match options.api_key.clone().filter(|k| !k.is_empty()) {
        Some(k) => k,
        None if headers_only.has("authorization") || headers_only.has("cf-aig-authorization") => {
            "unused".into()
        }
        None => {
            return out
                .setup_fail(format!("No API key for provider: {}", model.provider))
                .await;
        }
    };
    if let Err(e) = request::check_tools(&model, &messages) {
        return out.fail(options.cancel.is_cancelled(), e).await;
    }
    let retention = CacheRetention::resolve(options.cache_retention);
    let params = request::Params {
        model: &model,
        options: &options,
        max_tokens: base_max_tokens(&model, &context, &options),
        reasoning: effective_reasoning(&model, &options),
        retention,
    };
    let body = request::build_body(&params, &messages);
    let mut extra = vec![("Authorization", format!("Bearer {key}"))];
    if let Some(sid) = options
        .session_id
        .as_ref()
        .filter(|_| retention != CacheRetention::None)
    {
        let openrouter = model.provider == "openrouter" || model.base_url.contains("openrouter.ai");
        let format = model
            .compat
            .as_ref()
            .and_then(|c| c.session_affinity_format);
        use pi_protocol::compat::SessionAffinityFormat as F;
        match format.unwrap_or(if openrouter { F::Openrouter } else { F::Openai }) {
            F::Openrouter => extra.push(("x-session-id", sid.clone())),
            f => {
                if f == F::Openai {
                    extra.push(("session-id", sid.clone()));
                }
                extra.push(("x-client-request-id", sid.clone()));
            }
        }
    }
    let copilot = if model.provider == "github-copilot" {
        crate::copilot::dynamic_headers(&context.messages)
    } else {
        Vec::new()
    };
    let mut headers = base_headers(&model, &options, &copilot);
    set_unless_requested(&mut headers, &options, extra);
    headers.set("Accept", "application/json");
    headers.set("Content-Type", "application/json");
    let req = http::Request {
        url: format!("{}/responses", model.base_url.trim_end_matches('/')),
        headers: headers.0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    let prefix = format!(
        "{} API error",
        if model.provider == "openai" {
            "OpenAI"
        } else {
            &model.provider
        }
    );
    let error_text = |e: &http::SendError| {
        let (aborted, text) = send_error_text(Sdk::OpenAi, e, Some(&prefix));
        (aborted, with_hint(text))
    };
    let Some((out, resp)) = start_stream(
        out,
        req,
        &options,
        crate::provider_retry::RetryPolicy::Sdk(crate::provider_error::openai_sdk_message),
        error_text,
    )
    .await
    else {
        return;
    };
    relay(Flavor::OpenAi, &model, out, resp, &options).await;
}

/// Which adapter of the Responses family is streaming: they share the event handling and
/// differ in error wording, service-tier pricing and how the stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    OpenAi,
    Azure,
    Codex,
}

impl Flavor {
    fn hint(self, text: String) -> String {
        match self {
            Flavor::OpenAi => with_hint(text),
            _ => text,
        }
    }
}

/// Reads a Responses event stream into `out` and ends it.
pub(crate) async fn relay(
    flavor: Flavor,
    model: &Model,
    mut out: Output,
    mut resp: http::Body,
    options: &crate::stream::StreamOptions,
) {
    let cancel = &options.cancel;
    let mut st = State {
        flavor,
        ..State::default()
    };
    let mut sse = SseDecoder::new();
    let hooks = options.hooks.clone().filter(|h| h.wants_stream_events());
    'read: loop {
        let (events, end) = match resp.chunk(cancel).await {
            Ok(Some(bytes)) => (sse.push(&bytes), false),
            Err(ReadError::Aborted) if flavor == Flavor::Codex => {
                st.flush_partial(&mut out);
                return out.fail(true, "Request was aborted".into()).await;
            }
            // The SDK ends the stream quietly on abort; the missing terminal event reports it.
            Ok(None) | Err(ReadError::Aborted) => (sse.finish(), true),
            Err(e) => {
                st.flush_partial(&mut out);
                return out.fail(cancel.is_cancelled(), read_error_text(&e)).await;
            }
        };
        for ev in events {
            let data = if flavor == Flavor::Codex {
                match codex_event(&ev) {
                    Ok(Some(d)) => d,
                    Ok(None) => continue,
                    Err(t) => {
                        st.flush_partial(&mut out);
                        return out.fail(cancel.is_cancelled(), t).await;
                    }
                }
            } else {
                match openai_sse_data(&ev) {
                    SseData::Done => break 'read,
                    SseData::Fail(t) => {
                        st.flush_partial(&mut out);
                        return out.fail(cancel.is_cancelled(), flavor.hint(t)).await;
                    }
                    SseData::Event(d) => d,
                }
            };
            // Every event, before it is processed (`onProviderStreamEvent`).
            if let Some(h) = &hooks {
                h.stream_event(model, &data).await;
            }
            if let Err(t) = st.event(model, &data, &mut out).await {
                st.flush_partial(&mut out);
                return out.fail(cancel.is_cancelled(), flavor.hint(t)).await;
            }
            if out.gone() {
                return;
            }
            // Codex's stream is over at its first terminal event.
            if flavor == Flavor::Codex && st.terminal {
                break 'read;
            }
        }
        if end {
            break;
        }
    }
    let ended = match flavor {
        Flavor::OpenAi => "OpenAI Responses stream ended without a stop reason",
        Flavor::Azure => "Azure OpenAI Responses stream ended without a stop reason",
        Flavor::Codex => "Codex stream ended without a stop reason",
    };
    let text = if !st.terminal {
        Some("OpenAI Responses stream ended before a terminal response event".to_string())
    } else if out.msg.stop_reason == StopReason::ToolUse && !st.unfinished.is_empty() {
        let i = st.unfinished[0];
        match out.msg.content.get(i) {
            Some(AssistantBlock::ToolCall(tc)) => Some(format!(
                "OpenAI Responses stream completed with an unfinished tool call: {} ({})",
                tc.name, tc.id
            )),
            _ => None,
        }
    } else if cancel.is_cancelled() {
        Some("Request was aborted".to_string())
    } else if out.msg.stop_reason == StopReason::Pending {
        Some(ended.to_string())
    } else if matches!(out.msg.stop_reason, StopReason::Error | StopReason::Aborted) {
        Some(
            out.msg
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into()),
        )
    } else {
        None
    };
    match text {
        Some(t) => {
            st.flush_partial(&mut out);
            out.fail(cancel.is_cancelled(), flavor.hint(t)).await
        }
        None => out.done().await,
    }
}

/// One Codex SSE event as a Responses event: errors become failures in Codex's words, the
/// terminal events (`response.done` too) become `response.completed` with a known status.
fn codex_event(ev: &crate::sse::SseEvent) -> Result<Option<Value>, String> {
    let data = pi_js::trim(&ev.data);
    if data.is_empty() || data == "[DONE]" {
        return Ok(None);
    }
    let mut v =
        pi_js::parse::parse_js_json(data).map_err(|e| format!("Invalid Codex SSE JSON: {e}"))?;
    let Some(kind) = v["type"].as_str().map(String::from) else {
        return Ok(None);
    };
    match kind.as_str() {
        "error" => {
            let pick = |k: &str| {
                v[k].as_str()
                    .or_else(|| v["error"][k].as_str())
                    .map(String::from)
            };
            let text = pick("message")
                .filter(|m| !m.is_empty())
                .or_else(|| pick("code").filter(|c| !c.is_empty()))
                .unwrap_or_else(|| to_js_string(&v).unwrap_or_default());
            Err(format!("Codex error: {text}"))
        }
        "response.failed" => Err(v["response"]["error"]["message"]
            .as_str()
            .filter(|m| !m.is_empty())
            .unwrap_or("Codex response failed")
            .to_string()),
        "response.done" | "response.completed" | "response.incomplete" => {
            v["type"] = "response.completed".into();
            if let Some(r) = v.get_mut("response").and_then(Value::as_object_mut) {
                let known = r.get("status").and_then(Value::as_str).is_some_and(|s| {
                    [
                        "completed",
                        "incomplete",
                        "failed",
                        "cancelled",
                        "queued",
                        "in_progress",
                    ]
                    .contains(&s)
                });
                if !known {
                    r.remove("status");
                }
            }
            Ok(Some(v))
        }
        _ => Ok(Some(v)),
    }
}

fn with_hint(text: String) -> String {
    if text.contains("subscription_sharing_usage_limit_exceeded") {
        format!("{text}\nCheck your ChatGPT usage: https://chatgpt.com/settings/usage")
    } else if text.contains("subscription_sharing_workplace_individual_usage_limit_exceeded") {
        format!(
            "{text}\nYou've reached your ChatGPT workspace's usage limit. Ask your workspace admin to increase it at admin.openai.com → Workspace → Usage limits."
        )
    } else {
        text
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Thinking,
    Text,
    Tool,
}

#[derive(Debug)]
struct Slot {
    kind: Kind,
    index: usize,
    args: String,
}

#[derive(Debug)]
struct State {
    flavor: Flavor,
    slots: HashMap<i64, Slot>,
    /// Content indices of tool calls whose `output_item.done` has not arrived.
    unfinished: Vec<usize>,
    /// Reasoning item id → content index (for signatures backfilled at completion).
    reasoning: HashMap<String, usize>,
    terminal: bool,
}

impl Default for State {
    fn default() -> State {
        State {
            flavor: Flavor::OpenAi,
            slots: HashMap::new(),
            unfinished: Vec::new(),
            reasoning: HashMap::new(),
            terminal: false,
        }
    }
}

fn u(v: &Value) -> u64 {
    v.as_f64().filter(|f| *f > 0.0).map_or(0, |f| f as u64)
}

impl State {
    fn flush_partial(&self, out: &mut Output) {
        for s in self.slots.values() {
            if s.kind == Kind::Tool
                && !s.args.is_empty()
                && let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(s.index)
            {
                tc.arguments = partial_arguments(&s.args);
            }
        }
    }

    async fn create(&mut self, oi: i64, item: &Value, out: &mut Output) -> bool {
        let index = out.msg.content.len();
        let usage = out.usage();
        match item["type"].as_str().unwrap_or("") {
            "reasoning" => {
                out.msg
                    .content
                    .push(AssistantBlock::Thinking(ThinkingContent::new("")));
                self.slots.insert(
                    oi,
                    Slot {
                        kind: Kind::Thinking,
                        index,
                        args: String::new(),
                    },
                );
                out.emit(StreamEvent::ThinkingStart { index, usage }).await;
            }
            "message" => {
                if item["phase"] == "final_answer" {
                    out.msg.stop_reason = StopReason::Stop;
                }
                out.msg
                    .content
                    .push(AssistantBlock::Text(TextContent::new("")));
                self.slots.insert(
                    oi,
                    Slot {
                        kind: Kind::Text,
                        index,
                        args: String::new(),
                    },
                );
                out.emit(StreamEvent::TextStart { index, usage }).await;
            }
            "function_call" => {
                let id = format!("{}|{}", str_of(&item["call_id"]), str_of(&item["id"]));
                let name = item["name"].as_str().unwrap_or("").to_string();
                let args = item["arguments"].as_str().unwrap_or("").to_string();
                let mut tc = ToolCall::new(id.clone(), name.clone(), partial_arguments(&args));
                tc.namespace = item["namespace"].as_str().map(String::from);
                out.msg.content.push(AssistantBlock::ToolCall(tc));
                self.unfinished.push(index);
                self.slots.insert(
                    oi,
                    Slot {
                        kind: Kind::Tool,
                        index,
                        args,
                    },
                );
                out.emit(StreamEvent::ToolcallStart {
                    index,
                    id,
                    name,
                    usage,
                })
                .await;
            }
            _ => return false,
        }
        true
    }

    async fn event(&mut self, model: &Model, ev: &Value, out: &mut Output) -> Result<(), String> {
        let oi = ev["output_index"].as_i64().unwrap_or(-1);
        let slot = |st: &State, kind: Kind| {
            st.slots
                .get(&oi)
                .filter(|s| s.kind == kind)
                .map(|s| s.index)
        };
        let usage = out.usage();
        match ev["type"].as_str().unwrap_or("") {
            "response.created" => {
                if let Some(id) = ev["response"]["id"].as_str() {
                    out.set_response_id(id.to_string());
                }
            }
            "response.output_item.added" => {
                self.create(oi, &ev["item"], out).await;
            }
            "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
            | "response.reasoning_summary_part.done" => {
                let Some(index) = slot(self, Kind::Thinking) else {
                    return Ok(());
                };
                let delta = if ev["type"] == "response.reasoning_summary_part.done" {
                    "\n\n".to_string()
                } else {
                    str_of(&ev["delta"])
                };
                if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get_mut(index) {
                    t.thinking.push_str(&delta);
                }
                out.thinking_delta(index, delta).await;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let Some(index) = slot(self, Kind::Text) else {
                    return Ok(());
                };
                let delta = str_of(&ev["delta"]);
                if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
                    t.text.push_str(&delta);
                }
                out.text_delta(index, delta).await;
            }
            "response.function_call_arguments.delta" => {
                let Some(s) = self.slots.get_mut(&oi).filter(|s| s.kind == Kind::Tool) else {
                    return Ok(());
                };
                let delta = str_of(&ev["delta"]);
                s.args.push_str(&delta);
                let index = s.index;
                out.emit(StreamEvent::ToolcallDelta {
                    index,
                    delta,
                    usage,
                })
                .await;
            }
            "response.function_call_arguments.done" => {
                let Some(s) = self.slots.get_mut(&oi).filter(|s| s.kind == Kind::Tool) else {
                    return Ok(());
                };
                if let Some(delta) = replace_args(&mut s.args, &str_of(&ev["arguments"])) {
                    let index = s.index;
                    out.emit(StreamEvent::ToolcallDelta {
                        index,
                        delta,
                        usage,
                    })
                    .await;
                }
            }
            "response.output_item.done" => self.item_done(oi, &ev["item"], out).await,
            "response.completed" | "response.incomplete" => {
                self.finalize(model, &ev["response"], out)
            }
            "error" => {
                return Err(format!(
                    "Error Code {}: {}",
                    js_text(ev.get("code")),
                    js_text(ev.get("message"))
                ));
            }
            "response.failed" => {
                self.terminal = true;
                let r = &ev["response"];
                if let Some(s) = r["status"].as_str() {
                    out.set_raw_stop_reason(s.to_string());
                }
                let e = &r["error"];
                return Err(if e.is_object() {
                    format!(
                        "{}: {}",
                        e["code"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .unwrap_or("unknown"),
                        e["message"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .unwrap_or("no message")
                    )
                } else if let Some(reason) = r["incomplete_details"]["reason"].as_str() {
                    format!("incomplete: {reason}")
                } else {
                    "Unknown error (no error details in response)".into()
                });
            }
            _ => {}
        }
        Ok(())
    }

    async fn item_done(&mut self, oi: i64, item: &Value, out: &mut Output) {
        if item["type"] == "message" && item["phase"] == "final_answer" {
            out.msg.stop_reason = StopReason::Stop;
        }
        if !self.slots.contains_key(&oi) && !self.create(oi, item, out).await {
            return;
        }
        let Some(slot) = self.slots.get(&oi) else {
            return;
        };
        let (kind, index) = (slot.kind, slot.index);
        let usage = out.usage();
        match (item["type"].as_str().unwrap_or(""), kind) {
            ("reasoning", Kind::Thinking) => {
                let join = |key: &str| {
                    item[key]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .map(|s| str_of(&s["text"]))
                                .collect::<Vec<_>>()
                                .join("\n\n")
                        })
                        .unwrap_or_default()
                };
                let (summary, content) = (join("summary"), join("content"));
                if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get_mut(index) {
                    if !summary.is_empty() {
                        t.thinking = summary;
                    } else if !content.is_empty() {
                        t.thinking = content;
                    }
                    t.thinking_signature = to_js_string(item).ok();
                    let content = t.thinking.clone();
                    if let Some(id) = item["id"].as_str() {
                        self.reasoning.insert(id.to_string(), index);
                    }
                    out.emit(StreamEvent::ThinkingEnd {
                        index,
                        content,
                        signature: None,
                        usage,
                    })
                    .await;
                }
            }
            ("message", Kind::Text) => {
                let text: String = item["content"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .map(|p| {
                                if p["type"] == "output_text" {
                                    str_of(&p["text"])
                                } else {
                                    str_of(&p["refusal"])
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut sig = json!({"v": 1, "id": item["id"]});
                if let Some(p) = item["phase"].as_str() {
                    sig["phase"] = p.into();
                }
                if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
                    t.text = text.clone();
                    t.text_signature = to_js_string(&sig).ok();
                }
                out.emit(StreamEvent::TextEnd {
                    index,
                    content: text,
                    signature: None,
                    usage,
                })
                .await;
            }
            ("function_call", Kind::Tool) => {
                let mut args = self
                    .slots
                    .get(&oi)
                    .map(|s| s.args.clone())
                    .unwrap_or_default();
                if let Some(a) = item["arguments"].as_str().filter(|a| !a.is_empty()) {
                    replace_args(&mut args, a);
                }
                let (a, err) = parse_tool_call_arguments(&args);
                if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                    tc.arguments = a;
                    tc.arguments_error = err;
                    if let Some(ns) = item["namespace"].as_str() {
                        tc.namespace = Some(ns.to_string());
                    }
                    let tool_call = tc.clone();
                    self.unfinished.retain(|i| *i != index);
                    out.emit(StreamEvent::ToolcallEnd {
                        index,
                        tool_call,
                        usage,
                    })
                    .await;
                }
            }
            _ => return,
        }
        self.slots.remove(&oi);
    }

    fn finalize(&mut self, model: &Model, r: &Value, out: &mut Output) {
        self.terminal = true;
        for item in r["output"].as_array().into_iter().flatten() {
            let (Some(id), Some(enc)) = (item["id"].as_str(), item["encrypted_content"].as_str())
            else {
                continue;
            };
            if item["type"] != "reasoning" || enc.is_empty() {
                continue;
            }
            if let Some(AssistantBlock::Thinking(t)) = self
                .reasoning
                .get(id)
                .and_then(|i| out.msg.content.get_mut(*i))
                && let Some(sig) = &t.thinking_signature
                && let Ok(mut stored) = pi_js::parse::parse_js_json(sig)
                && stored
                    .get("encrypted_content")
                    .is_none_or(|e| !pi_js::truthy(e))
            {
                stored["encrypted_content"] = enc.into();
                t.thinking_signature = to_js_string(&stored).ok();
            }
        }
        if let Some(id) = r["id"].as_str() {
            out.set_response_id(id.to_string());
        }
        if r["usage"].is_object() {
            let us = &r["usage"];
            let cached = u(&us["input_tokens_details"]["cached_tokens"]);
            let write = u(&us["input_tokens_details"]["cache_write_tokens"]);
            *out.msg.usage = Usage {
                input: u(&us["input_tokens"]).saturating_sub(cached + write),
                output: u(&us["output_tokens"]),
                cache_read: cached,
                cache_write: write,
                reasoning: Some(u(&us["output_tokens_details"]["reasoning_tokens"])),
                total_tokens: u(&us["total_tokens"]),
                ..Usage::zero()
            };
        }
        calculate_cost(model, &mut out.msg.usage);
        let tier = match (self.flavor, r["service_tier"].as_str()) {
            (Flavor::Azure, _) => 1.0,
            (_, Some("flex")) => 0.5,
            (Flavor::Codex, Some("fast")) => 1.0,
            (_, Some("priority" | "fast")) if model.id == "gpt-5.5" => 2.5,
            (_, Some("priority" | "fast")) => 2.0,
            _ => 1.0,
        };
        if tier != 1.0 {
            let c = &mut out.msg.usage.cost;
            c.input *= tier;
            c.output *= tier;
            c.cache_read *= tier;
            c.cache_write *= tier;
            c.total = c.input + c.output + c.cache_read + c.cache_write;
        }
        let status = r["status"].as_str();
        let reason = r["incomplete_details"]["reason"].as_str();
        match (status, reason) {
            (Some(s), Some(rs)) => out.set_raw_stop_reason(format!("{s}.{rs}")),
            (Some(s), None) => out.set_raw_stop_reason(s.to_string()),
            _ => {}
        }
        let (stop, err) = match status {
            None | Some("completed" | "in_progress" | "queued") => (StopReason::Stop, None),
            Some("incomplete") if reason == Some("max_output_tokens") => (StopReason::Length, None),
            Some("incomplete") => (
                StopReason::Error,
                Some(reason.map_or(
                    "Response incomplete without a provider reason".to_string(),
                    |r| format!("Response incomplete: {r}"),
                )),
            ),
            Some("failed" | "cancelled") => (StopReason::Error, None),
            Some(other) => (
                StopReason::Error,
                Some(format!("Unhandled stop reason: {other}")),
            ),
        };
        out.msg.stop_reason = stop;
        match err {
            Some(e) => out.set_error_message(e),
            None => out.clear_error_message(),
        }
        if stop == StopReason::Stop
            && out
                .msg
                .content
                .iter()
                .any(|b| matches!(b, AssistantBlock::ToolCall(_)))
        {
            out.msg.stop_reason = StopReason::ToolUse;
        }
    }
}

/// The provider's complete argument text: the missing piece when it continues what streamed,
/// otherwise a restart (no delta).
fn replace_args(args: &mut String, text: &str) -> Option<String> {
    if let Some(rest) = text.strip_prefix(args.as_str()) {
        let rest = rest.to_string();
        args.push_str(&rest);
        return (!rest.is_empty()).then_some(rest);
    }
    *args = text.to_string();
    None
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

/// `${value}` of a JavaScript template literal for JSON values.
fn js_text(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => "null".into(),
        Some(other) => to_js_string(other).unwrap_or_default(),
    }
}
