//! What every adapter does before it talks to the network: the request headers (identity, then
//! model headers, then request headers, later names replacing earlier ones case-insensitively),
//! the context-clamped output cap, and the message for a request that fails before it starts.

use crate::budget::clamp_max_tokens_to_context;
use crate::cost::clamp_thinking_level;
use crate::http::{self, default_user_agent};
use crate::output::Output;
use crate::provider_retry::{self, Next, RetryPolicy};
use crate::stream::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::message::AssistantMessage;
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::StopReason;
use std::time::Instant;

/// Headers as an ordered list; [`Headers::set`] replaces a name case-insensitively.
#[derive(Debug, Clone, Default)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.0.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.0.push((name.to_string(), value.into()));
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True when `name` is set to a non-blank value.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| !pi_js::trim(v).is_empty())
    }
}

/// `User-Agent`, then the model's headers, then `extra` (adapter defaults), then the request's.
pub fn base_headers(model: &Model, options: &StreamOptions, extra: &[(&str, String)]) -> Headers {
    let mut h = Headers::default();
    h.set(
        "User-Agent",
        options
            .user_agent
            .clone()
            .unwrap_or_else(default_user_agent),
    );
    for (k, v) in extra {
        h.set(k, v.clone());
    }
    for (k, v) in model.headers.iter().flat_map(|m| m.iter()) {
        h.set(k, v.clone());
    }
    for (k, v) in &options.headers {
        h.set(k, v.clone());
    }
    h
}

/// `maxTokens` (default the model's) clamped to the context window.
pub fn base_max_tokens(model: &Model, context: &LlmContext, options: &StreamOptions) -> u64 {
    clamp_max_tokens_to_context(
        model,
        &context.messages,
        options.max_tokens.unwrap_or(model.max_tokens),
    )
}

/// The requested level clamped to the model's, `None` for off.
pub fn effective_reasoning(model: &Model, options: &StreamOptions) -> Option<ThinkingLevel> {
    let level = clamp_thinking_level(model, options.reasoning?);
    (level != ThinkingLevel::Off).then_some(level)
}

/// The message Pi produces when a request fails before it is sent (a missing key, an unknown
/// API): no content, zero usage, `errorMessage` before `timestamp`.
pub fn setup_error(model: &Model, text: String, started: Instant, timestamp: u64) -> StreamEvent {
    let msg = AssistantMessage::new(
        &model.api,
        &model.provider,
        &model.id,
        StopReason::Error,
        timestamp,
    );
    crate::output::setup_error_message(&msg, text, started)
}

/// Sets adapter headers (session affinity and the like) the request's own headers do not name.
pub fn set_unless_requested(
    headers: &mut Headers,
    options: &StreamOptions,
    extra: Vec<(&str, String)>,
) {
    for (k, v) in extra {
        if options.headers.keys().all(|h| !h.eq_ignore_ascii_case(k)) {
            headers.set(k, v);
        }
    }
}

/// Sends the request and starts the message stream, retrying a failed attempt as `policy`
/// says when `options.max_retries` allows. When sending fails for good, the message ends as an
/// error (aborted if cancelled) with the text `error_text` gives, and `None` comes back.
pub async fn start_stream(
    mut out: Output,
    mut req: http::Request,
    options: &StreamOptions,
    policy: RetryPolicy,
    error_text: impl Fn(&http::SendError) -> (bool, String),
) -> Option<(Output, http::Body)> {
    if let Some(hooks) = &options.hooks {
        req.headers = hooks.headers(std::mem::take(&mut req.headers)).await;
        if let Ok(payload) = pi_js::parse::parse_js_json(&req.body) {
            let payload = hooks.payload(payload).await;
            if let Ok(body) = pi_js::json_str::value_to_js_string(&payload) {
                req.body = body;
            }
        }
    }
    let max_retries = options.max_retries.unwrap_or(0);
    let mut attempt = 0;
    loop {
        // The body is the whole transcript: it is copied only while a retry may still need it,
        // and the last attempt (`provider_retry::next` gives up from `max_retries` on) takes it.
        let this_attempt = if attempt < max_retries {
            req.clone()
        } else {
            std::mem::take(&mut req)
        };
        let e = match http::send(this_attempt, &options.cancel, options.idle_timeout).await {
            Ok(resp) => {
                if let Some(hooks) = &options.hooks {
                    hooks.response(resp.status(), resp.headers()).await;
                }
                out.start().await;
                return Some((out, resp));
            }
            Err(e) => e,
        };
        let (aborted, text) = error_text(&e);
        let give_up = |text: String| (aborted || options.cancel.is_cancelled(), text);
        let (aborted, text) = match provider_retry::next(
            policy,
            &e,
            attempt,
            max_retries,
            options.max_retry_delay,
            &text,
        ) {
            Next::GiveUp => give_up(text),
            Next::Fail(other) => give_up(other),
            Next::RetryAfter(delay) => {
                tokio::select! {
                    _ = options.cancel.cancelled() => error_text(&http::SendError::Aborted),
                    _ = tokio::time::sleep(delay) => {
                        attempt += 1;
                        continue;
                    }
                }
            }
        };
        out.fail(aborted || options.cancel.is_cancelled(), text)
            .await;
        return None;
    }
}
