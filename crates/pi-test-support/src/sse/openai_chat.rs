//! OpenAI Chat Completions (`POST /v1/chat/completions`) streaming chunks and error bodies.

use serde_json::{Value, json};

use super::{Frame, RenderContext, SseEvent};
use crate::mock::script::{LENGTH, Reply, STOP, Step, TOOL_USE, UsageSpec};

/// Fixed `created` so that bodies are reproducible.
const CREATED: u64 = 1_700_000_000;

/// A `chat.completion.chunk` with one choice carrying `delta`.
pub fn ev_chunk(id: &str, model: &str, delta: Value, finish_reason: Option<&str>) -> SseEvent {
    SseEvent::data(&json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    }))
}

pub fn ev_text_delta(id: &str, model: &str, text: &str) -> SseEvent {
    ev_chunk(id, model, json!({"content": text}), None)
}

/// A reasoning delta in the named field (`reasoning_content`, `reasoning`, `reasoning_text`).
pub fn ev_reasoning_delta(id: &str, model: &str, field: &str, text: &str) -> SseEvent {
    let mut delta = serde_json::Map::new();
    delta.insert(field.to_string(), Value::String(text.to_string()));
    ev_chunk(id, model, Value::Object(delta), None)
}

/// The first chunk of a tool call: id, name and empty arguments.
pub fn ev_tool_call_start(
    id: &str,
    model: &str,
    index: usize,
    call_id: &str,
    name: &str,
) -> SseEvent {
    ev_chunk(
        id,
        model,
        json!({"tool_calls": [{"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": ""}}]}),
        None,
    )
}

pub fn ev_tool_call_args(id: &str, model: &str, index: usize, args: &str) -> SseEvent {
    ev_chunk(
        id,
        model,
        json!({"tool_calls": [{"index": index, "function": {"arguments": args}}]}),
        None,
    )
}

pub fn ev_finish(id: &str, model: &str, finish_reason: &str) -> SseEvent {
    ev_chunk(id, model, json!({}), Some(finish_reason))
}

/// The usage-only chunk sent last when `stream_options.include_usage` is set.
pub fn ev_usage(id: &str, model: &str, usage: &UsageSpec) -> SseEvent {
    let prompt = usage.input() + usage.cache_read() + usage.cache_write();
    let mut prompt_details = json!({"cached_tokens": usage.cache_read()});
    if usage.cache_write() > 0 {
        prompt_details["cache_write_tokens"] = json!(usage.cache_write());
    }
    SseEvent::data(&json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output(),
            "total_tokens": prompt + usage.output(),
            "prompt_tokens_details": prompt_details,
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning()}
        }
    }))
}

pub fn ev_done() -> SseEvent {
    SseEvent::literal("[DONE]")
}

/// A mid-stream error object as OpenAI-compatible servers send it.
pub fn ev_error(error: &Value) -> SseEvent {
    let payload = if error.is_null() {
        error_body(500)
    } else {
        error.clone()
    };
    SseEvent::data(&payload)
}

/// The JSON body OpenAI answers an HTTP error with.
pub fn error_body(status: u16) -> Value {
    let (message, kind, code) = match status {
        400 => ("Invalid request", "invalid_request_error", Value::Null),
        401 => (
            "Incorrect API key provided",
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
        404 => ("Not found", "invalid_request_error", Value::Null),
        429 => (
            "Rate limit reached for requests",
            "requests",
            json!("rate_limit_exceeded"),
        ),
        503 => (
            "The engine is currently overloaded, please try again later",
            "server_error",
            Value::Null,
        ),
        _ => (
            "The server had an error while processing your request.",
            "server_error",
            Value::Null,
        ),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn wire_stop(neutral: &str) -> &str {
    match neutral {
        STOP => "stop",
        LENGTH => "length",
        TOOL_USE => "tool_calls",
        other => other,
    }
}

/// Renders a scripted reply as a Chat Completions chunk sequence.
pub fn render(reply: &Reply, ctx: &RenderContext) -> Vec<Frame> {
    let usage = reply.usage.unwrap_or_default();
    let id = reply
        .id
        .clone()
        .unwrap_or_else(|| format!("chatcmpl-mock-{}", ctx.request_number));
    let model = reply.model.clone().unwrap_or_else(|| ctx.model.clone());
    let mut frames = Vec::new();
    let mut first = true;
    let mut tool_index = 0usize;
    // The first chunk carries the role, as OpenAI does.
    let mut push = |frames: &mut Vec<Frame>, mut delta: Value| {
        if first {
            if let Value::Object(map) = &mut delta {
                let mut with_role = serde_json::Map::new();
                with_role.insert("role".into(), json!("assistant"));
                with_role.extend(std::mem::take(map));
                *map = with_role;
            }
            first = false;
        }
        frames.push(Frame::Event(ev_chunk(&id, &model, delta, None)));
    };
    for step in reply.steps() {
        match step {
            Step::Text(chunks) => {
                for piece in chunks.pieces() {
                    push(&mut frames, json!({"content": piece}));
                }
            }
            Step::Thinking(t) => {
                let field = t.field.as_deref().unwrap_or("reasoning_content");
                for piece in t.text.pieces() {
                    let mut delta = serde_json::Map::new();
                    delta.insert(field.to_string(), Value::String(piece));
                    push(&mut frames, Value::Object(delta));
                }
            }
            Step::ToolCall(call) => {
                push(
                    &mut frames,
                    json!({"tool_calls": [{"index": tool_index, "id": call.id, "type": "function",
                        "function": {"name": call.name, "arguments": ""}}]}),
                );
                for piece in call.arg_pieces() {
                    push(
                        &mut frames,
                        json!({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}),
                    );
                }
                tool_index += 1;
            }
            Step::EndBlock(_) => {}
            Step::Gate(g) => frames.push(Frame::Gate(g)),
            Step::DelayMs(ms) => frames.push(Frame::Delay(ms)),
            Step::Error(e) => {
                frames.push(Frame::Event(ev_error(&e)));
                return frames;
            }
            Step::Drop(_) => {
                frames.push(Frame::Drop);
                return frames;
            }
        }
    }
    frames.push(Frame::Quiet(ev_finish(
        &id,
        &model,
        wire_stop(&reply.stop_reason()),
    )));
    frames.push(Frame::Quiet(ev_usage(&id, &model, &usage)));
    frames.push(Frame::Event(ev_done()));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::script::{text, tool_call};

    #[test]
    fn text_then_tool_call_ends_with_finish_usage_and_done() {
        let reply = Reply::stream(vec![
            text("Hi"),
            tool_call("call_1", "read", json!({"path": "a"})),
        ]);
        let ctx = RenderContext {
            request_number: 3,
            model: "mock-gpt".into(),
        };
        let data: Vec<String> = render(&reply, &ctx)
            .into_iter()
            .filter_map(|f| match f {
                Frame::Event(e) | Frame::Quiet(e) => Some(e.data),
                _ => None,
            })
            .collect();
        assert_eq!(data.len(), 7);
        assert!(data[0].contains(r#""delta":{"role":"assistant","content":"Hi"}"#));
        assert!(data[1].contains(r#""id":"call_1","type":"function""#));
        assert!(data[4].contains(r#""finish_reason":"tool_calls""#));
        assert!(data[5].contains(r#""prompt_tokens":10"#));
        assert_eq!(data[6], "[DONE]");
        assert!(data[0].contains(r#""id":"chatcmpl-mock-3""#));
    }
}
