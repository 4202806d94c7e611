//! The scripted `faux` API (Pi's `fauxProvider`): answers each request with the next queued
//! response for the model's provider, streamed in small pieces, with usage estimated from the
//! text (4 characters a token). Used by tests and demos; no network.

use crate::output::Output;
use crate::stream::{LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::partial_arguments;
use crate::transcript::system_text;
use pi_js::json::to_js_string;
use pi_js::now_ms;
use pi_protocol::content::{
    AssistantBlock, StringOrBlocks, TextContent, ThinkingContent, ToolCall, UserBlock,
};
use pi_protocol::message::{AgentMessage, AssistantMessage};
use pi_protocol::model::Model;
use pi_protocol::record::KeyOrder;
use pi_protocol::usage::{StopReason, Usage};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// The API id.
pub const API: &str = "faux";

/// One scripted response.
#[derive(Debug, Clone, PartialEq)]
pub struct FauxResponse {
    pub content: Vec<AssistantBlock>,
    /// `stop`, `length`, `toolUse`, or `error`/`aborted` to script a failure.
    pub stop_reason: StopReason,
    pub error_message: Option<String>,
    pub response_id: Option<String>,
    /// Pause before each piece (simulates a slow model; lets tests cancel mid-stream).
    pub delay: Duration,
}

impl FauxResponse {
    /// A text answer.
    pub fn text(text: &str) -> FauxResponse {
        FauxResponse::blocks(
            vec![AssistantBlock::Text(TextContent::new(text))],
            StopReason::Stop,
        )
    }

    pub fn blocks(content: Vec<AssistantBlock>, stop_reason: StopReason) -> FauxResponse {
        FauxResponse {
            content,
            stop_reason,
            error_message: None,
            response_id: None,
            delay: Duration::ZERO,
        }
    }

    /// Thinking, then text.
    pub fn thinking_then_text(thinking: &str, text: &str) -> FauxResponse {
        FauxResponse::blocks(
            vec![
                AssistantBlock::Thinking(ThinkingContent::new(thinking)),
                AssistantBlock::Text(TextContent::new(text)),
            ],
            StopReason::Stop,
        )
    }

    /// One tool call (`toolUse`).
    pub fn tool_call(id: &str, name: &str, arguments: Map<String, Value>) -> FauxResponse {
        FauxResponse::blocks(
            vec![AssistantBlock::ToolCall(ToolCall::new(id, name, arguments))],
            StopReason::ToolUse,
        )
    }

    /// A failed response with `errorMessage`.
    pub fn error(message: &str) -> FauxResponse {
        FauxResponse {
            error_message: Some(message.into()),
            ..FauxResponse::blocks(vec![], StopReason::Error)
        }
    }

    pub fn with_delay(mut self, delay: Duration) -> FauxResponse {
        self.delay = delay;
        self
    }
}

type Queues = Mutex<HashMap<String, VecDeque<FauxResponse>>>;

fn queues() -> &'static Queues {
    static Q: std::sync::OnceLock<Queues> = std::sync::OnceLock::new();
    Q.get_or_init(Queues::default)
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, VecDeque<FauxResponse>>> {
    queues()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Replaces the queue of `provider`.
pub fn set_responses(provider: &str, responses: Vec<FauxResponse>) {
    lock().insert(provider.to_string(), responses.into());
}

/// Appends to the queue of `provider`.
pub fn push_responses(provider: &str, responses: Vec<FauxResponse>) {
    lock()
        .entry(provider.to_string())
        .or_default()
        .extend(responses);
}

/// How many responses `provider` still has queued.
pub fn pending(provider: &str) -> usize {
    lock().get(provider).map_or(0, VecDeque::len)
}

/// Characters per streamed piece (Pi streams 3–5 "tokens" of 4 characters at random; fixed here
/// so runs are reproducible).
const PIECE_CHARS: usize = 16;

fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars
        .chunks(PIECE_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

fn estimate(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn user_text(content: &[UserBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => t.text.clone(),
            UserBlock::Image(i) => format!("[image:{}:{}]", i.mime_type, pi_js::utf16_len(&i.data)),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assistant_text(content: &[AssistantBlock]) -> String {
    content
        .iter()
        .map(|b| match b {
            AssistantBlock::Text(t) => t.text.clone(),
            AssistantBlock::Thinking(t) => t.thinking.clone(),
            AssistantBlock::ToolCall(tc) => format!(
                "{}:{}",
                tc.name,
                to_js_string(&tc.arguments).unwrap_or_default()
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn message_text(m: &AgentMessage) -> Option<String> {
    Some(match m {
        AgentMessage::System(s) => {
            let mut parts = vec![system_text(s)];
            for t in s.tools_removed.iter().flatten() {
                parts.push(format!("tool-:{}", to_js_string(t).unwrap_or_default()));
            }
            for t in s.tools_added.iter().flatten() {
                parts.push(format!("tool+:{}", to_js_string(t).unwrap_or_default()));
            }
            parts.retain(|p| !p.is_empty());
            format!("system:{}", parts.join("\n"))
        }
        AgentMessage::User(u) => format!(
            "user:{}",
            match &u.content {
                StringOrBlocks::Text(t) => t.clone(),
                StringOrBlocks::Blocks(b) => user_text(b),
            }
        ),
        AgentMessage::Assistant(a) => format!("assistant:{}", assistant_text(&a.content)),
        AgentMessage::ToolResult(t) => {
            let mut parts = vec![t.tool_name.clone()];
            parts.extend(t.content.iter().map(|b| user_text(std::slice::from_ref(b))));
            format!("toolResult:{}", parts.join("\n"))
        }
        _ => return None,
    })
}

/// Usage estimated from the prompt and the answer (no cost: faux models are free).
fn usage_for(context: &LlmContext, content: &[AssistantBlock]) -> Usage {
    let prompt: Vec<String> = context
        .messages
        .iter()
        .filter_map(|m| message_text(m))
        .collect();
    let prompt_len = prompt.iter().map(|p| pi_js::utf16_len(p)).sum::<usize>()
        + prompt.len().saturating_sub(1) * 2;
    let input = estimate(prompt_len);
    let output = estimate(pi_js::utf16_len(&assistant_text(content)));
    Usage {
        input,
        output,
        total_tokens: input + output,
        ..Usage::zero()
    }
}

/// Key order of Pi's faux messages (`errorMessage`/`responseId` before `timestamp`).
const FAUX_ORDER: &[&str] = &[
    "role",
    "content",
    "api",
    "provider",
    "model",
    "usage",
    "stopReason",
    "errorMessage",
    "responseId",
    "timestamp",
    "durationMs",
];

fn finish(mut msg: AssistantMessage, started: std::time::Instant) -> AssistantMessage {
    msg.duration_ms = Some(started.elapsed().as_millis() as u64);
    msg.rest.set_order(KeyOrder::Fixed(FAUX_ORDER));
    msg
}

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, mut out: Output) {
    let started = std::time::Instant::now();
    let script = lock()
        .get_mut(&model.provider)
        .and_then(VecDeque::pop_front);
    let base = AssistantMessage::new(
        &model.api,
        &model.provider,
        &model.id,
        StopReason::Pending,
        now_ms(),
    );
    let Some(script) = script else {
        let mut msg = base;
        msg.stop_reason = StopReason::Error;
        msg.error_message = Some("No more faux responses queued".into());
        *msg.usage = usage_for(&context, &[]);
        return out
            .emit(StreamEvent::Error {
                message: finish(msg, started),
            })
            .await;
    };
    let usage = usage_for(&context, &script.content);
    let mut partial = base.clone();
    *partial.usage = usage.clone();
    partial.response_id = script.response_id.clone();
    let cancel = options.cancel.clone();
    let aborted = |partial: &AssistantMessage| {
        let mut m = partial.clone();
        m.stop_reason = StopReason::Aborted;
        m.error_message = Some("Request was aborted".into());
        m.timestamp = now_ms();
        StreamEvent::Error {
            message: finish(m, started),
        }
    };
    if cancel.is_cancelled() {
        return out.emit(aborted(&partial)).await;
    }
    out.emit(StreamEvent::Start {
        partial: partial.clone(),
    })
    .await;
    for (index, block) in script.content.iter().enumerate() {
        let (text, start) = match block {
            AssistantBlock::Text(t) => {
                partial
                    .content
                    .push(AssistantBlock::Text(TextContent::new("")));
                (
                    t.text.clone(),
                    StreamEvent::TextStart {
                        index,
                        usage: usage.clone(),
                    },
                )
            }
            AssistantBlock::Thinking(t) => {
                partial
                    .content
                    .push(AssistantBlock::Thinking(ThinkingContent::new("")));
                (
                    t.thinking.clone(),
                    StreamEvent::ThinkingStart {
                        index,
                        usage: usage.clone(),
                    },
                )
            }
            AssistantBlock::ToolCall(tc) => {
                partial.content.push(AssistantBlock::ToolCall(ToolCall::new(
                    tc.id.clone(),
                    tc.name.clone(),
                    Map::new(),
                )));
                let args = to_js_string(&tc.arguments).unwrap_or_default();
                (
                    args,
                    StreamEvent::ToolcallStart {
                        index,
                        id: tc.id.clone(),
                        name: tc.name.clone(),
                        usage: usage.clone(),
                    },
                )
            }
        };
        out.emit(start).await;
        let mut so_far = String::new();
        for piece in pieces(&text) {
            if !script.delay.is_zero() {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = tokio::time::sleep(script.delay) => {}
                }
            }
            if cancel.is_cancelled() {
                return out.emit(aborted(&partial)).await;
            }
            so_far.push_str(&piece);
            let ev = match partial.content.get_mut(index) {
                Some(AssistantBlock::Text(t)) => {
                    t.text.push_str(&piece);
                    StreamEvent::TextDelta {
                        index,
                        delta: piece,
                        usage: usage.clone(),
                    }
                }
                Some(AssistantBlock::Thinking(t)) => {
                    t.thinking.push_str(&piece);
                    StreamEvent::ThinkingDelta {
                        index,
                        delta: piece,
                        usage: usage.clone(),
                    }
                }
                Some(AssistantBlock::ToolCall(tc)) => {
                    tc.arguments = partial_arguments(&so_far);
                    StreamEvent::ToolcallDelta {
                        index,
                        delta: piece,
                        usage: usage.clone(),
                    }
                }
                None => continue,
            };
            out.emit(ev).await;
            if out.gone() {
                return;
            }
        }
        if let Some(slot) = partial.content.get_mut(index) {
            *slot = block.clone();
        }
        let end = match block {
            AssistantBlock::Text(t) => StreamEvent::TextEnd {
                index,
                content: t.text.clone(),
                signature: None,
                usage: usage.clone(),
            },
            AssistantBlock::Thinking(t) => StreamEvent::ThinkingEnd {
                index,
                content: t.thinking.clone(),
                signature: None,
                usage: usage.clone(),
            },
            AssistantBlock::ToolCall(tc) => StreamEvent::ToolcallEnd {
                index,
                tool_call: tc.clone(),
                usage: usage.clone(),
            },
        };
        out.emit(end).await;
    }
    let mut msg = partial;
    msg.content = script.content;
    msg.stop_reason = script.stop_reason;
    msg.error_message = script.error_message;
    let msg = finish(msg, started);
    let ev = match msg.stop_reason {
        StopReason::Error | StopReason::Aborted => StreamEvent::Error { message: msg },
        _ => StreamEvent::Done { message: msg },
    };
    out.emit(ev).await;
}
