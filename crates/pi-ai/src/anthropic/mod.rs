//! `anthropic-messages`: `POST {baseUrl}/v1/messages?beta=true`, Anthropic's SSE events.
//!
//! Blocks start at `content_block_start` and end at `content_block_stop`; usage arrives with
//! `message_start` (input side) and `message_delta` (output side).

mod request;

use crate::budget::{adjust_max_tokens_for_thinking, clamp_max_tokens_to_context};
use crate::cost::{calculate_cost, level_map_entry};
use crate::http::{self, ReadError};
use crate::output::Output;
use crate::provider_error::{Sdk, read_error_text, send_error_text};
use crate::request::{Headers, base_headers, base_max_tokens, start_stream};
use crate::sse::{SseDecoder, SseEvent};
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::{parse_json_with_repair, parse_tool_call_arguments, partial_arguments};
use crate::transcript::{resolve_transcript, transcript_tools};
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::model::Model;
use pi_protocol::record::KeyOrder;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::StopReason;
use request::Thinking;
use serde_json::Value;
use std::collections::HashMap;

/// The API id.
pub const API: &str = "anthropic-messages";

fn effort_for(model: &Model, level: ThinkingLevel) -> String {
    if let Some(Some(m)) = level_map_entry(model, level) {
        return m.to_string();
    }
    match level {
        ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        _ => "high",
    }
    .to_string()
}

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let compat = request::compat(&model);
    let messages = resolve_transcript(&context.messages, compat.mid_convo_system_messages);
    let headers_only = base_headers(&model, &options, &[]);
    let key = options.api_key.clone().filter(|k| !k.is_empty());
    let header_auth = ["authorization", "x-api-key", "cf-aig-authorization"]
        .iter()
        .any(|h| headers_only.has(h));
    if key.is_none() && !header_auth {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    }
    let base = base_max_tokens(&model, &context, &options);
    let reasoning = options.reasoning.filter(|l| *l != ThinkingLevel::Off);
    let (max_tokens, thinking) = match reasoning {
        None => (base, Thinking::Off),
        Some(level)
            if model
                .compat
                .as_ref()
                .and_then(|c| c.force_adaptive_thinking)
                == Some(true) =>
        {
            (base, Thinking::Adaptive(effort_for(&model, level)))
        }
        Some(level) => {
            let (adjusted, budget) = adjust_max_tokens_for_thinking(
                Some(base),
                model.max_tokens,
                level,
                &options.thinking_budgets,
            );
            let max = clamp_max_tokens_to_context(&model, &context.messages, adjusted);
            let budget = budget.min(max.saturating_sub(1024));
            (
                max,
                Thinking::Budget(if budget == 0 { 1024 } else { budget }),
            )
        }
    };
    let copilot = model.provider == "github-copilot";
    let oauth = !copilot && key.as_deref().is_some_and(request::is_oauth_token);
    let params = request::Params {
        model: &model,
        compat: &compat,
        retention: CacheRetention::resolve(options.cache_retention),
        max_tokens,
        temperature: options.temperature,
        thinking,
        oauth,
    };
    let body = match request::build_body(&params, &messages) {
        Ok(b) => b,
        Err(e) => return out.fail(options.cancel.is_cancelled(), e).await,
    };
    let tools = transcript_tools(&messages);
    let mut headers = Headers::default();
    match &key {
        // Subscription and Copilot tokens are bearer tokens.
        Some(k) if oauth || copilot => headers.set("authorization", format!("Bearer {k}")),
        Some(k) => headers.set("x-api-key", k.clone()),
        None => {}
    }
    headers.set("anthropic-version", "2023-06-01");
    let mut defaults = vec![
        ("accept", "application/json".to_string()),
        (
            "anthropic-dangerous-direct-browser-access",
            "true".to_string(),
        ),
    ];
    if oauth {
        // Claude Code's identity instead of ours.
        defaults.push((
            "user-agent",
            format!("claude-cli/{}", request::CLAUDE_CODE_VERSION),
        ));
        defaults.push(("x-app", "cli".to_string()));
    }
    if copilot {
        defaults.extend(crate::copilot::dynamic_headers(&messages));
    }
    for (k, v) in base_headers(&model, &options, &defaults).0 {
        headers.set(&k, v);
    }
    let configured = headers.get("anthropic-beta").map(str::to_string);
    let betas: Vec<String> = match configured {
        Some(list) => {
            let mut seen: Vec<String> = Vec::new();
            for f in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                if !seen.iter().any(|s| s == f) {
                    seen.push(f.to_string());
                }
            }
            seen
        }
        None => request::betas(&model, &params, !tools.is_empty())
            .into_iter()
            .map(String::from)
            .collect(),
    };
    headers
        .0
        .retain(|(k, _)| !k.eq_ignore_ascii_case("anthropic-beta"));
    if !betas.is_empty() {
        headers.set("anthropic-beta", betas.join(","));
    }
    headers.set("content-type", "application/json");
    let req = http::Request {
        url: format!(
            "{}/v1/messages?beta=true",
            model.base_url.trim_end_matches('/')
        ),
        headers: headers.0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    let cancel = options.cancel.clone();
    let error_text = |e: &http::SendError| send_error_text(Sdk::Anthropic, e, None);
    let Some((mut out, mut resp)) = start_stream(
        out,
        req,
        &options,
        crate::provider_retry::RetryPolicy::Sdk(crate::provider_error::anthropic_sdk_message),
        error_text,
    )
    .await
    else {
        return;
    };
    let mut st = State {
        oauth_tools: oauth.then(|| tools.iter().map(|&t| t.clone()).collect()),
        ..State::default()
    };
    let mut sse = SseDecoder::new();
    let hooks = options.hooks.clone().filter(|h| h.wants_stream_events());
    loop {
        let (events, end) = match resp.chunk(&cancel).await {
            Ok(Some(bytes)) => (sse.push(&bytes), false),
            Ok(None) => (sse.finish(), true),
            Err(e @ ReadError::Aborted) | Err(e @ ReadError::Terminated(_)) => {
                st.flush_partial(&mut out);
                return out.fail(cancel.is_cancelled(), read_error_text(&e)).await;
            }
        };
        for ev in events {
            if let Err(text) = st.event(&model, ev, &mut out, hooks.as_deref()).await {
                st.flush_partial(&mut out);
                return out.fail(cancel.is_cancelled(), text).await;
            }
            if out.gone() {
                return;
            }
        }
        if end {
            break;
        }
    }
    let text = if st.saw_start && !st.saw_stop {
        Some("Anthropic stream ended before message_stop".to_string())
    } else if cancel.is_cancelled() {
        Some("Request was aborted".to_string())
    } else if out.msg.stop_reason == StopReason::Pending {
        Some("Anthropic stream ended without a stop reason".to_string())
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
            out.fail(cancel.is_cancelled(), t).await
        }
        None => out.done().await,
    }
}

#[derive(Debug, Default)]
struct State {
    /// Anthropic block index → (content index, argument text for tool calls).
    open: HashMap<i64, (usize, Option<String>)>,
    /// The declared tools, when tool names come back in Claude Code's casing.
    oauth_tools: Option<Vec<pi_protocol::tool::Tool>>,
    saw_start: bool,
    saw_stop: bool,
}

const USAGE_WITH_REASONING_LAST: [&str; 8] = [
    "input",
    "output",
    "cacheRead",
    "cacheWrite",
    "totalTokens",
    "cost",
    "cacheWrite1h",
    "reasoning",
];

const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

fn n(v: &Value) -> Option<u64> {
    v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)
}

impl State {
    fn flush_partial(&self, out: &mut Output) {
        for (idx, text) in self.open.values() {
            if let (Some(text), Some(AssistantBlock::ToolCall(tc))) = (
                text.as_ref().filter(|t| !t.is_empty()),
                out.msg.content.get_mut(*idx),
            ) {
                tc.arguments = partial_arguments(text);
            }
        }
    }

    async fn event(
        &mut self,
        model: &Model,
        sse: SseEvent,
        out: &mut Output,
        hooks: Option<&dyn crate::ProviderHooks>,
    ) -> Result<(), String> {
        let name = sse.event.clone().unwrap_or_default();
        if name == "error" {
            return Err(sse.data);
        }
        if !MESSAGE_EVENTS.contains(&name.as_str()) {
            return Ok(());
        }
        let ev = parse_json_with_repair(&sse.data).map_err(|e| {
            format!(
                "Could not parse Anthropic SSE event {name}: {e}; data={}; raw={}",
                sse.data,
                sse.raw.join("\\n")
            )
        })?;
        // Every parsed message event, before it is processed (`onProviderStreamEvent`).
        if let Some(h) = hooks {
            h.stream_event(model, &ev).await;
        }
        match ev.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                self.saw_start = true;
                let m = &ev["message"];
                if let Some(id) = m.get("id").and_then(Value::as_str) {
                    out.set_response_id(id.to_string());
                }
                if let Some(rm) = m.get("model").and_then(Value::as_str)
                    && rm != model.id
                {
                    out.set_response_model(rm.to_string());
                }
                let u = &m["usage"];
                let usage = &mut out.msg.usage;
                usage.input = n(&u["input_tokens"]).unwrap_or(0);
                usage.output = n(&u["output_tokens"]).unwrap_or(0);
                usage.cache_read = n(&u["cache_read_input_tokens"]).unwrap_or(0);
                usage.cache_write = n(&u["cache_creation_input_tokens"]).unwrap_or(0);
                usage.cache_write_1h =
                    Some(n(&u["cache_creation"]["ephemeral_1h_input_tokens"]).unwrap_or(0));
                usage.total_tokens =
                    usage.input + usage.output + usage.cache_read + usage.cache_write;
                calculate_cost(model, usage);
            }
            "message_stop" => self.saw_stop = true,
            "content_block_start" => self.block_start(&ev, out).await?,
            "content_block_delta" => self.block_delta(&ev, out).await,
            "content_block_stop" => self.block_stop(&ev, out).await,
            "message_delta" => {
                if let Some(reason) = ev["delta"]
                    .get("stop_reason")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    out.set_raw_stop_reason(reason.to_string());
                    let (stop, err) = map_stop_reason(reason, &ev["delta"]["stop_details"])?;
                    out.msg.stop_reason = stop;
                    if let Some(e) = err {
                        out.set_error_message(e);
                    }
                }
                let u = &ev["usage"];
                let usage = &mut out.msg.usage;
                if u.is_object() {
                    if let Some(v) = n(&u["input_tokens"]) {
                        usage.input = v;
                    }
                    if let Some(v) = n(&u["output_tokens"]) {
                        usage.output = v;
                    }
                    if let Some(v) = n(&u["cache_read_input_tokens"]) {
                        usage.cache_read = v;
                    }
                    if let Some(v) = n(&u["cache_creation_input_tokens"]) {
                        usage.cache_write = v;
                    }
                    if let Some(v) = n(&u["cache_creation"]["ephemeral_1h_input_tokens"]) {
                        usage.cache_write_1h = Some(v);
                    }
                    if let Some(v) = n(&u["output_tokens_details"]["thinking_tokens"]) {
                        // Assigned after `cacheWrite1h`, so JavaScript writes it last.
                        usage.reasoning = Some(v);
                        usage
                            .rest
                            .set_order(KeyOrder::Fixed(&USAGE_WITH_REASONING_LAST));
                    }
                }
                usage.total_tokens =
                    usage.input + usage.output + usage.cache_read + usage.cache_write;
                calculate_cost(model, usage);
            }
            _ => {}
        }
        Ok(())
    }

    async fn block_start(&mut self, ev: &Value, out: &mut Output) -> Result<(), String> {
        let b = &ev["content_block"];
        let index = out.msg.content.len();
        let key = ev["index"].as_i64().unwrap_or(-1);
        let usage = out.usage();
        match b["type"].as_str().unwrap_or("") {
            "fallback" if !out.msg.content.is_empty() => {
                return Err("Anthropic performed an unsupported mid-output model fallback".into());
            }
            "fallback" => {}
            "text" => {
                out.msg.content.push(AssistantBlock::Text(TextContent::new(
                    b["text"].as_str().unwrap_or(""),
                )));
                self.open.insert(key, (index, None));
                out.emit(StreamEvent::TextStart { index, usage }).await;
            }
            "thinking" => {
                let mut t = ThinkingContent::new(b["thinking"].as_str().unwrap_or(""));
                t.thinking_signature = Some(b["signature"].as_str().unwrap_or("").to_string());
                out.msg.content.push(AssistantBlock::Thinking(t));
                self.open.insert(key, (index, None));
                out.emit(StreamEvent::ThinkingStart { index, usage }).await;
            }
            "redacted_thinking" => {
                let mut t = ThinkingContent::new("[Reasoning redacted]");
                t.thinking_signature = b["data"].as_str().map(String::from);
                t.redacted = Some(true);
                out.msg.content.push(AssistantBlock::Thinking(t));
                self.open.insert(key, (index, None));
                out.emit(StreamEvent::ThinkingStart { index, usage }).await;
            }
            "tool_use" => {
                let id = b["id"].as_str().unwrap_or("").to_string();
                let name = b["name"].as_str().unwrap_or("").to_string();
                let name = match &self.oauth_tools {
                    Some(tools) => request::from_claude_code_name(&name, tools),
                    None => name,
                };
                let args = b
                    .get("input")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                out.msg.content.push(AssistantBlock::ToolCall(ToolCall::new(
                    id.clone(),
                    name.clone(),
                    args,
                )));
                self.open.insert(key, (index, Some(String::new())));
                out.emit(StreamEvent::ToolcallStart {
                    index,
                    id,
                    name,
                    usage,
                })
                .await;
            }
            _ => {}
        }
        Ok(())
    }

    async fn block_delta(&mut self, ev: &Value, out: &mut Output) {
        let Some((index, args)) = self.open.get_mut(&ev["index"].as_i64().unwrap_or(-1)) else {
            return;
        };
        let index = *index;
        let d = &ev["delta"];
        let usage = out.usage();
        let block = out.msg.content.get_mut(index);
        match (d["type"].as_str().unwrap_or(""), block) {
            ("text_delta", Some(AssistantBlock::Text(t))) => {
                let delta = d["text"].as_str().unwrap_or("").to_string();
                t.text.push_str(&delta);
                out.text_delta(index, delta).await;
            }
            ("thinking_delta", Some(AssistantBlock::Thinking(t))) => {
                let delta = d["thinking"].as_str().unwrap_or("").to_string();
                t.thinking.push_str(&delta);
                out.thinking_delta(index, delta).await;
            }
            ("input_json_delta", Some(AssistantBlock::ToolCall(_))) => {
                let delta = d["partial_json"].as_str().unwrap_or("").to_string();
                if let Some(text) = args {
                    text.push_str(&delta);
                    out.emit(StreamEvent::ToolcallDelta {
                        index,
                        delta,
                        usage,
                    })
                    .await;
                }
            }
            ("signature_delta", Some(AssistantBlock::Thinking(t))) => {
                t.thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(d["signature"].as_str().unwrap_or(""));
            }
            _ => {}
        }
    }

    async fn block_stop(&mut self, ev: &Value, out: &mut Output) {
        let Some((index, args)) = self.open.remove(&ev["index"].as_i64().unwrap_or(-1)) else {
            return;
        };
        let usage = out.usage();
        let ev = match out.msg.content.get_mut(index) {
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
            Some(AssistantBlock::ToolCall(tc)) => {
                let (a, err) = parse_tool_call_arguments(args.as_deref().unwrap_or(""));
                tc.arguments = a;
                tc.arguments_error = err;
                StreamEvent::ToolcallEnd {
                    index,
                    tool_call: tc.clone(),
                    usage,
                }
            }
            None => return,
        };
        out.emit(ev).await;
    }
}

fn map_stop_reason(reason: &str, details: &Value) -> Result<(StopReason, Option<String>), String> {
    Ok(match reason {
        "end_turn" | "pause_turn" | "stop_sequence" => (StopReason::Stop, None),
        "max_tokens" => (StopReason::Length, None),
        "tool_use" => (StopReason::ToolUse, None),
        "refusal" => (
            StopReason::Error,
            Some(
                details["explanation"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("The model refused to complete the request")
                    .to_string(),
            ),
        ),
        "sensitive" => (
            StopReason::Error,
            Some("Provider stopped with: sensitive".into()),
        ),
        other => return Err(format!("Unhandled stop reason: {other}")),
    })
}
