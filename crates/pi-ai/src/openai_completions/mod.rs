//! `openai-completions`: `POST {baseUrl}/chat/completions`, SSE of `chat.completion.chunk`s.
//!
//! Blocks open lazily (one text and one thinking block per response, tool calls by stream
//! index) and, as in Pi, every `*_end` is emitted after the stream finished, in content order.
//! An abort ends the stream like its end (the OpenAI SDK swallows it), so the blocks are
//! finished before the `aborted` error.

mod compat;
mod fast;
mod messages;
mod request;
mod tool_text;

pub use messages::short_hash;

use crate::cost::calculate_cost;
use crate::http::{self, ReadError};
use crate::output::Output;
use crate::provider_error::{Sdk, read_error_text, send_error_text};
use crate::request::{
    base_headers, base_max_tokens, effective_reasoning, set_unless_requested, start_stream,
};
use crate::sse::SseDecoder;
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::{parse_tool_call_arguments, partial_arguments};
use crate::transcript::{declared_tools, resolve_transcript};
use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::compat::SessionAffinityFormat;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::Value;

/// The API id.
pub const API: &str = "openai-completions";

/// Runs one request to the end, emitting into `out`.
pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let compat = compat::compat(&model);
    let messages = resolve_transcript(&context.messages, compat.supports_mid_convo_system_messages);
    let Some(api_key) = api_key(&model, &options) else {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    };
    if let Err(e) = request::check_tools(&declared_tools(&messages), &compat) {
        return out.fail(options.cancel.is_cancelled(), e).await;
    }
    let retention = CacheRetention::resolve(options.cache_retention);
    let params = request::Params {
        model: &model,
        compat: &compat,
        options: &options,
        max_tokens: if options.raw {
            options.max_tokens.unwrap_or(0)
        } else {
            base_max_tokens(&model, &context, &options)
        },
        reasoning: if options.raw {
            options.reasoning.filter(|l| *l != ThinkingLevel::Off)
        } else {
            effective_reasoning(&model, &options)
        },
        retention,
    };
    // Written here, as the body holds this thread's texts (`tool_text`) and must not wait.
    let body = request::build_body(
        &params,
        &messages,
        &mut tool_text::ToolTexts::new(&context.messages),
    )
    .to_text();
    let mut extra = vec![("Authorization", format!("Bearer {api_key}"))];
    let session = options
        .session_id
        .as_ref()
        .filter(|_| retention != CacheRetention::None);
    if let Some(sid) = session.filter(|_| compat.send_session_affinity_headers) {
        if compat.session_affinity_format == SessionAffinityFormat::Openrouter {
            extra.push(("x-session-id", sid.clone()));
        } else {
            if compat.session_affinity_format == SessionAffinityFormat::Openai {
                extra.push(("session_id", sid.clone()));
            }
            extra.push(("x-client-request-id", sid.clone()));
            extra.push(("x-session-affinity", sid.clone()));
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
        url: format!("{}/chat/completions", model.base_url.trim_end_matches('/')),
        headers: headers.0,
        body,
    };
    let cancel = options.cancel.clone();
    let error_text = |e: &http::SendError| send_error_text(Sdk::OpenAi, e, None);
    let Some((mut out, mut resp)) = start_stream(
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
    let mut st = State::default();
    let mut sse = SseDecoder::new();
    let mut done = false;
    let hooks = options.hooks.clone().filter(|h| h.wants_stream_events());
    loop {
        let (events, end) = match resp.chunk(&cancel).await {
            Ok(Some(bytes)) => (sse.push(&bytes), false),
            Ok(None) | Err(ReadError::Aborted) => (sse.finish(), true),
            Err(e) => {
                st.flush_partial(&mut out);
                return out.fail(cancel.is_cancelled(), read_error_text(&e)).await;
            }
        };
        for ev in events {
            // Every chunk the SDK would yield, before it is processed (`onProviderStreamEvent`).
            if let Some(h) = &hooks
                && let SseData::Event(chunk) = openai_sse_data(&ev)
            {
                h.stream_event(&model, &chunk).await;
            }
            if let Some(chunk) = fast::parse(ev.event.as_deref(), &ev.data) {
                st.fast_chunk(&model, &chunk, &mut out).await;
                if out.gone() {
                    return;
                }
                continue;
            }
            match openai_sse_data(&ev) {
                SseData::Done => {
                    done = true;
                    break;
                }
                SseData::Fail(text) => {
                    st.flush_partial(&mut out);
                    return out.fail(cancel.is_cancelled(), text).await;
                }
                SseData::Event(chunk) => st.chunk(&model, &chunk, &mut out).await,
            }
            if out.gone() {
                return;
            }
        }
        if end || done {
            break;
        }
    }
    finish(
        compat.supports_finish_reason,
        st,
        out,
        cancel.is_cancelled(),
    )
    .await;
}

fn api_key(model: &Model, options: &StreamOptions) -> Option<String> {
    if let Some(k) = options.api_key.clone().filter(|k| !k.is_empty()) {
        return Some(k);
    }
    let headers = base_headers(model, options, &[]);
    (headers.has("authorization") || headers.has("cf-aig-authorization"))
        .then(|| "unused".to_string())
}

/// One SSE event as the OpenAI SDK's stream reads it.
pub(crate) enum SseData {
    /// `[DONE]`: the stream is over, the rest of the body is not read.
    Done,
    /// The stream fails with this text.
    Fail(String),
    Event(Value),
}

/// Parses an event like the OpenAI SDK: `[DONE]` ends, bad JSON fails with the SDK's text, an
/// `error` event or an `error` key fails with the error's message.
pub(crate) fn openai_sse_data(ev: &crate::sse::SseEvent) -> SseData {
    if ev.data == "[DONE]" {
        return SseData::Done;
    }
    let Ok(data) = parse_js_json(&ev.data) else {
        return SseData::Fail("Error reading response: malformed server-sent event JSON.".into());
    };
    if ev.event.as_deref() == Some("error") {
        let err = data.get("error").filter(|e| !e.is_null()).unwrap_or(&data);
        return SseData::Fail(in_stream_error(err));
    }
    if let Some(err) = data.get("error").filter(|e| pi_js::truthy(e)) {
        return SseData::Fail(in_stream_error(err));
    }
    SseData::Event(data)
}

/// The message of an `{"error": ...}` chunk (the SDK's `APIError` without status), with
/// OpenRouter's `metadata.raw` appended.
fn in_stream_error(err: &Value) -> String {
    let mut msg = match err.get("message") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(m) if !m.is_null() && m != &Value::Bool(false) => to_js_string(m).unwrap_or_default(),
        _ => to_js_string(err).unwrap_or_default(),
    };
    if let Some(raw) = err
        .get("metadata")
        .and_then(|m| m.get("raw"))
        .filter(|r| !r.is_null())
    {
        let raw = match raw {
            Value::String(s) => s.clone(),
            v => to_js_string(v).unwrap_or_default(),
        };
        if !msg.contains(&raw) {
            msg.push('\n');
            msg.push_str(&raw);
        }
    }
    msg
}

/// One `delta.tool_calls` entry, as read by either path: what is not a string (or, for
/// `index`, an integer) is absent.
#[derive(Debug, PartialEq)]
struct ToolCallPiece<'a> {
    stream_index: Option<i64>,
    id: Option<&'a str>,
    name: Option<&'a str>,
    arguments: Option<&'a str>,
}

impl<'a> ToolCallPiece<'a> {
    fn from_value(call: &'a Value) -> Self {
        let function = call.get("function");
        let field = |key| function.and_then(|f| f.get(key)).and_then(Value::as_str);
        ToolCallPiece {
            stream_index: call.get("index").and_then(Value::as_i64),
            id: call.get("id").and_then(Value::as_str),
            name: field("name"),
            arguments: field("arguments"),
        }
    }

    fn from_view(call: &'a fast::ToolCall<'_>) -> Self {
        let function = call.function.as_ref();
        ToolCallPiece {
            stream_index: call.stream_index(),
            id: call.id.as_deref(),
            name: function.and_then(|f| f.name.as_deref()),
            arguments: function.and_then(|f| f.arguments.as_deref()),
        }
    }
}

#[derive(Debug)]
struct ToolState {
    index: usize,
    stream_index: Option<i64>,
    text: String,
}

#[derive(Debug, Default)]
struct State {
    text: Option<usize>,
    thinking: Option<usize>,
    tools: Vec<ToolState>,
    has_finish: bool,
}

fn num(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_f64)
        .filter(|f| *f > 0.0)
        .map_or(0, |f| f as u64)
}

/// Pi's `parseChunkUsage`.
fn parse_usage(raw: &Value, model: &Model) -> Usage {
    let prompt = num(raw.get("prompt_tokens"));
    let details = raw.get("prompt_tokens_details");
    let cache_read = details
        .and_then(|d| d.get("cached_tokens"))
        .filter(|v| !v.is_null())
        .or_else(|| raw.get("prompt_cache_hit_tokens").filter(|v| !v.is_null()))
        .or_else(|| raw.get("cached_tokens").filter(|v| !v.is_null()));
    let cache_read = num(cache_read);
    let cache_write = num(details.and_then(|d| d.get("cache_write_tokens")));
    let input = prompt.saturating_sub(cache_read + cache_write);
    let output = num(raw.get("completion_tokens"));
    let reasoning = match num(raw
        .get("completion_tokens_details")
        .and_then(|d| d.get("reasoning_tokens")))
    {
        0 => num(raw.get("reasoning_tokens")),
        r => r,
    };
    let mut u = Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning),
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::zero()
    };
    calculate_cost(model, &mut u);
    u
}

impl State {
    async fn chunk(&mut self, model: &Model, chunk: &Value, out: &mut Output) {
        if out.msg.response_id.is_none()
            && let Some(id) = chunk
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            out.set_response_id(id.to_string());
        }
        if let Some(m) = chunk.get("model").and_then(Value::as_str)
            && !m.is_empty()
            && m != model.id
            && out.msg.response_model.is_none()
        {
            out.set_response_model(m.to_string());
        }
        let usage = chunk.get("usage").filter(|u| pi_js::truthy(u));
        if let Some(u) = usage {
            *out.msg.usage = parse_usage(u, model);
        }
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        if usage.is_none()
            && let Some(u) = choice.get("usage").filter(|u| pi_js::truthy(u))
        {
            *out.msg.usage = parse_usage(u, model);
        }
        if let Some(reason) = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.finish_reason(reason, out);
        }
        let Some(delta) = choice.get("delta").filter(|d| d.is_object()) else {
            return;
        };
        let reasoning = ["reasoning_content", "reasoning", "reasoning_text"]
            .into_iter()
            .find_map(|f| {
                let text = delta.get(f).and_then(Value::as_str)?;
                (!text.is_empty()).then_some((f, text))
            });
        if let Some((field, text)) = reasoning {
            self.thinking_delta(model, field, text, out).await;
        }
        if let Some(text) = delta
            .get("content")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            self.text_delta(text, out).await;
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.tool_call(ToolCallPiece::from_value(call), out).await;
            }
        }
    }

    /// [`Self::chunk`] for a chunk the typed view read (no usage, no error).
    async fn fast_chunk(&mut self, model: &Model, chunk: &fast::Chunk<'_>, out: &mut Output) {
        if out.msg.response_id.is_none()
            && let Some(id) = chunk.id.as_deref().filter(|s| !s.is_empty())
        {
            out.set_response_id(id.to_string());
        }
        if let Some(m) = chunk.model.as_deref()
            && !m.is_empty()
            && m != model.id
            && out.msg.response_model.is_none()
        {
            out.set_response_model(m.to_string());
        }
        let Some(choice) = chunk.choices.as_ref().and_then(|c| c.first()) else {
            return;
        };
        if let Some(reason) = choice.finish_reason.as_deref().filter(|s| !s.is_empty()) {
            self.finish_reason(reason, out);
        }
        let Some(delta) = &choice.delta else {
            return;
        };
        if let Some((field, text)) = delta.reasoning_field() {
            self.thinking_delta(model, field, text, out).await;
        }
        if let Some(text) = delta.content.as_deref().filter(|s| !s.is_empty()) {
            self.text_delta(text, out).await;
        }
        for call in delta.tool_calls.iter().flatten() {
            self.tool_call(ToolCallPiece::from_view(call), out).await;
        }
    }

    fn finish_reason(&mut self, reason: &str, out: &mut Output) {
        out.set_raw_stop_reason(reason.to_string());
        let (stop, err) = map_stop_reason(reason);
        out.msg.stop_reason = stop;
        if let Some(e) = err {
            out.set_error_message(e);
        }
        self.has_finish = true;
    }

    /// A non-empty reasoning delta read from `field`.
    async fn thinking_delta(&mut self, model: &Model, field: &str, text: &str, out: &mut Output) {
        let sig = if model.provider == "opencode-go" && field == "reasoning" {
            "reasoning_content"
        } else {
            field
        };
        let index = self.ensure_thinking(sig, out).await;
        if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get_mut(index) {
            t.thinking.push_str(text);
        }
        out.thinking_delta(index, text.to_string()).await;
    }

    /// A non-empty text delta.
    async fn text_delta(&mut self, text: &str, out: &mut Output) {
        let index = self.ensure_text(out).await;
        if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
            t.text.push_str(text);
        }
        out.text_delta(index, text.to_string()).await;
    }

    async fn ensure_text(&mut self, out: &mut Output) -> usize {
        if let Some(i) = self.text {
            return i;
        }
        let index = out.msg.content.len();
        out.msg
            .content
            .push(AssistantBlock::Text(TextContent::new("")));
        self.text = Some(index);
        let usage = out.usage();
        out.emit(StreamEvent::TextStart { index, usage }).await;
        index
    }

    async fn ensure_thinking(&mut self, sig: &str, out: &mut Output) -> usize {
        if let Some(i) = self.thinking {
            return i;
        }
        let index = out.msg.content.len();
        let mut t = ThinkingContent::new("");
        t.thinking_signature = Some(sig.to_string());
        out.msg.content.push(AssistantBlock::Thinking(t));
        self.thinking = Some(index);
        let usage = out.usage();
        out.emit(StreamEvent::ThinkingStart { index, usage }).await;
        index
    }

    async fn tool_call(&mut self, piece: ToolCallPiece<'_>, out: &mut Output) {
        let ToolCallPiece {
            stream_index,
            id,
            name,
            arguments,
        } = piece;
        let id = id.filter(|s| !s.is_empty());
        let mut found =
            stream_index.and_then(|si| self.tools.iter().position(|t| t.stream_index == Some(si)));
        if found.is_none()
            && let Some(id) = id
        {
            found = self.tools.iter().position(|t| {
                matches!(out.msg.content.get(t.index), Some(AssistantBlock::ToolCall(tc)) if tc.id == id)
            });
        }
        let slot = match found {
            Some(s) => s,
            None => {
                let index = out.msg.content.len();
                let tc = ToolCall::new(id.unwrap_or(""), name.unwrap_or(""), Default::default());
                out.msg.content.push(AssistantBlock::ToolCall(tc));
                self.tools.push(ToolState {
                    index,
                    stream_index,
                    text: String::new(),
                });
                let usage = out.usage();
                out.emit(StreamEvent::ToolcallStart {
                    index,
                    id: id.unwrap_or("").to_string(),
                    name: name.unwrap_or("").to_string(),
                    usage,
                })
                .await;
                self.tools.len() - 1
            }
        };
        let state = &mut self.tools[slot];
        if state.stream_index.is_none() {
            state.stream_index = stream_index;
        }
        if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(state.index) {
            if tc.id.is_empty()
                && let Some(id) = id
            {
                tc.id = id.to_string();
            }
            if tc.name.is_empty()
                && let Some(n) = name.filter(|n| !n.is_empty())
            {
                tc.name = n.to_string();
            }
        }
        let delta = arguments.unwrap_or("").to_string();
        state.text.push_str(&delta);
        let index = state.index;
        let usage = out.usage();
        out.emit(StreamEvent::ToolcallDelta {
            index,
            delta,
            usage,
        })
        .await;
    }

    /// A failed stream keeps the partial arguments of unfinished tool calls.
    fn flush_partial(&self, out: &mut Output) {
        for t in &self.tools {
            if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(t.index) {
                tc.arguments = partial_arguments(&t.text);
            }
        }
    }
}

fn map_stop_reason(reason: &str) -> (StopReason, Option<String>) {
    match reason {
        "stop" | "end" => (StopReason::Stop, None),
        "length" => (StopReason::Length, None),
        "function_call" | "tool_calls" => (StopReason::ToolUse, None),
        other => (
            StopReason::Error,
            Some(format!("Provider finish_reason: {other}")),
        ),
    }
}

async fn finish(supports_finish_reason: bool, st: State, mut out: Output, aborted: bool) {
    for i in 0..out.msg.content.len() {
        let usage = out.usage();
        let ev = match &mut out.msg.content[i] {
            AssistantBlock::Text(t) => StreamEvent::TextEnd {
                index: i,
                content: t.text.clone(),
                signature: None,
                usage,
            },
            AssistantBlock::Thinking(t) => StreamEvent::ThinkingEnd {
                index: i,
                content: t.thinking.clone(),
                signature: None,
                usage,
            },
            AssistantBlock::ToolCall(tc) => {
                let text = st
                    .tools
                    .iter()
                    .find(|t| t.index == i)
                    .map_or("", |t| t.text.as_str());
                let (args, err) = parse_tool_call_arguments(text);
                tc.arguments = args;
                tc.arguments_error = err;
                StreamEvent::ToolcallEnd {
                    index: i,
                    tool_call: tc.clone(),
                    usage,
                }
            }
        };
        out.emit(ev).await;
    }
    if aborted {
        return out.fail(true, "Request was aborted".into()).await;
    }
    if !st.has_finish && !supports_finish_reason {
        let tool = out
            .msg
            .content
            .iter()
            .any(|b| matches!(b, AssistantBlock::ToolCall(_)));
        out.msg.stop_reason = if tool {
            StopReason::ToolUse
        } else {
            StopReason::Stop
        };
    }
    if out.msg.stop_reason == StopReason::Error {
        let text = out
            .msg
            .error_message
            .clone()
            .unwrap_or_else(|| "Provider returned an error stop reason".into());
        return out.fail(false, text).await;
    }
    if (supports_finish_reason && !st.has_finish) || out.msg.stop_reason == StopReason::Pending {
        return out
            .fail(false, "Stream ended without finish_reason".into())
            .await;
    }
    out.done().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool-call piece the typed view takes reads as the general path reads it; the
    /// others go to the general path.
    #[test]
    fn tool_call_pieces_read_alike_on_both_paths() {
        let chunk = |calls: &str| {
            format!(r#"{{"id":"c","choices":[{{"index":0,"delta":{{"tool_calls":{calls}}}}}]}}"#)
        };
        let taken = [
            r#"[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]"#,
            r#"[{"index":0,"function":{"arguments":"{\"path\": \"a\u00e9\"}"}}]"#,
            r#"[{"index":12,"function":{"arguments":"x"}},{"index":-3,"id":""}]"#,
            r#"[{"id":"only"},{"index":null,"id":null,"function":null},{"function":{}}]"#,
            r#"[{"index":0,"function":{"name":null,"arguments":null}}]"#,
            r#"[]"#,
            r#"null"#,
        ];
        for calls in taken {
            let data = chunk(calls);
            let view = fast::parse(None, &data).unwrap_or_else(|| panic!("{data}"));
            let general = pi_js::parse::parse_js_json(&data).unwrap();
            let general_calls = general["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let fast_pieces: Vec<_> = view.choices.as_ref().unwrap()[0]
                .delta
                .as_ref()
                .unwrap()
                .tool_calls
                .iter()
                .flatten()
                .map(ToolCallPiece::from_view)
                .collect();
            let general_pieces: Vec<_> = general_calls
                .iter()
                .map(ToolCallPiece::from_value)
                .collect();
            assert_eq!(fast_pieces, general_pieces, "{data}");
        }
        let general = [
            r#"[{"index":1.0}]"#,
            r#"[{"index":1e0}]"#,
            r#"[{"index":-0}]"#,
            r#"[{"index":0.5}]"#,
            r#"[{"index":"0"}]"#,
            r#"[{"index":1234567890123456}]"#,
            r#"[{"index":0,"index":1}]"#,
            r#"[{"id":5}]"#,
            r#"[{"function":"read"}]"#,
            r#"[{"function":{"arguments":{"path":"a"}}}]"#,
            r#"[{"id":"\ud800"}]"#,
            r#"["call"]"#,
            r#"{"index":0}"#,
        ];
        for calls in general {
            let data = chunk(calls);
            assert!(fast::parse(None, &data).is_none(), "{data}");
        }
    }

    #[test]
    fn finish_reasons_map_like_pi() {
        assert_eq!(map_stop_reason("tool_calls"), (StopReason::ToolUse, None));
        assert_eq!(
            map_stop_reason("content_filter"),
            (
                StopReason::Error,
                Some("Provider finish_reason: content_filter".into())
            )
        );
    }
}
