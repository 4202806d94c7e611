//! Anthropic Messages (`POST /v1/messages`) streaming events and error bodies.

use serde_json::{Value, json};

use super::{Frame, RenderContext, SseEvent};
use crate::mock::script::{LENGTH, Reply, STOP, Step, TOOL_USE, UsageSpec};

pub fn ev_message_start(id: &str, model: &str, usage: &UsageSpec) -> SseEvent {
    SseEvent::named(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input(),
                    "cache_creation_input_tokens": usage.cache_write(),
                    "cache_read_input_tokens": usage.cache_read(),
                    "output_tokens": 0
                }
            }
        }),
    )
}

pub fn ev_content_block_start(index: usize, block: Value) -> SseEvent {
    SseEvent::named(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn ev_delta(index: usize, delta: Value) -> SseEvent {
    SseEvent::named(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

pub fn ev_text_delta(index: usize, text: &str) -> SseEvent {
    ev_delta(index, json!({"type": "text_delta", "text": text}))
}

pub fn ev_thinking_delta(index: usize, thinking: &str) -> SseEvent {
    ev_delta(
        index,
        json!({"type": "thinking_delta", "thinking": thinking}),
    )
}

pub fn ev_signature_delta(index: usize, signature: &str) -> SseEvent {
    ev_delta(
        index,
        json!({"type": "signature_delta", "signature": signature}),
    )
}

pub fn ev_input_json_delta(index: usize, partial: &str) -> SseEvent {
    ev_delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial}),
    )
}

pub fn ev_content_block_stop(index: usize) -> SseEvent {
    SseEvent::named(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

pub fn ev_message_delta(stop_reason: &str, usage: &UsageSpec) -> SseEvent {
    SseEvent::named(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": usage.output()}
        }),
    )
}

pub fn ev_message_stop() -> SseEvent {
    SseEvent::named("message_stop", &json!({"type": "message_stop"}))
}

/// The in-stream `event: error` Anthropic sends when it fails after the response started.
pub fn ev_error(error: &Value) -> SseEvent {
    let payload = if error.is_null() {
        error_body(529)
    } else {
        error.clone()
    };
    SseEvent::named("error", &payload)
}

/// The JSON body Anthropic answers an HTTP error with.
pub fn error_body(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "Invalid request"),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => ("permission_error", "Your API key does not have permission"),
        404 => ("not_found_error", "Not found"),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed size",
        ),
        429 => (
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn wire_stop(neutral: &str) -> &str {
    match neutral {
        STOP => "end_turn",
        LENGTH => "max_tokens",
        TOOL_USE => "tool_use",
        other => other,
    }
}

#[derive(PartialEq)]
enum Open {
    None,
    Text,
    Thinking(Option<String>),
    Tool,
}

/// Renders a scripted reply as Anthropic's event sequence.
pub fn render(reply: &Reply, ctx: &RenderContext) -> Vec<Frame> {
    let usage = reply.usage.unwrap_or_default();
    let id = reply
        .id
        .clone()
        .unwrap_or_else(|| format!("msg_mock_{}", ctx.request_number));
    let model = reply.model.clone().unwrap_or_else(|| ctx.model.clone());
    let mut frames = vec![Frame::Quiet(ev_message_start(&id, &model, &usage))];
    let mut open = Open::None;
    let mut index = 0usize;
    let close = |frames: &mut Vec<Frame>, open: &mut Open, index: &mut usize| {
        if *open == Open::None {
            return;
        }
        if let Open::Thinking(Some(sig)) = &*open {
            frames.push(Frame::Quiet(ev_signature_delta(*index, sig)));
        }
        frames.push(Frame::Event(ev_content_block_stop(*index)));
        *open = Open::None;
        *index += 1;
    };
    for step in reply.steps() {
        match step {
            Step::Text(chunks) => {
                if open != Open::Text {
                    close(&mut frames, &mut open, &mut index);
                    frames.push(Frame::Event(ev_content_block_start(
                        index,
                        json!({"type": "text", "text": ""}),
                    )));
                    open = Open::Text;
                }
                for piece in chunks.pieces() {
                    frames.push(Frame::Event(ev_text_delta(index, &piece)));
                }
            }
            Step::Thinking(t) => {
                if !matches!(open, Open::Thinking(_)) {
                    close(&mut frames, &mut open, &mut index);
                    frames.push(Frame::Event(ev_content_block_start(
                        index,
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                    )));
                    open = Open::Thinking(None);
                }
                for piece in t.text.pieces() {
                    frames.push(Frame::Event(ev_thinking_delta(index, &piece)));
                }
                if let Some(sig) = t.signature {
                    open = Open::Thinking(Some(sig));
                }
            }
            Step::ToolCall(call) => {
                close(&mut frames, &mut open, &mut index);
                frames.push(Frame::Event(ev_content_block_start(
                    index,
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
                )));
                open = Open::Tool;
                for piece in call.arg_pieces() {
                    frames.push(Frame::Event(ev_input_json_delta(index, &piece)));
                }
            }
            Step::EndBlock(_) => close(&mut frames, &mut open, &mut index),
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
    close(&mut frames, &mut open, &mut index);
    frames.push(Frame::Quiet(ev_message_delta(
        wire_stop(&reply.stop_reason()),
        &usage,
    )));
    frames.push(Frame::Event(ev_message_stop()));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::script::{text, thinking, tool_call};
    use crate::sse::sse;

    fn events(frames: &[Frame]) -> Vec<SseEvent> {
        frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) | Frame::Quiet(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn thinking_text_and_tool_call_become_three_blocks() {
        let reply = Reply::stream(vec![
            thinking("hmm", "sig-1"),
            text("Hi"),
            tool_call("toolu_1", "read", json!({"path": "a"})),
        ]);
        let ctx = RenderContext {
            request_number: 1,
            model: "mock-claude".into(),
        };
        let body = sse(events(&render(&reply, &ctx)));
        let names: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect();
        assert_eq!(
            names,
            vec![
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert!(body.contains(r#""signature":"sig-1""#));
        assert!(body.contains(r#""stop_reason":"tool_use""#));
        assert!(body.contains(r#""id":"msg_mock_1""#));
    }
}
