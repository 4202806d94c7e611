//! `openai-codex-responses`: the ChatGPT subscription's Codex backend,
//! `POST {base}/codex/responses` with the ChatGPT access token, its account id (read from the
//! token's claims) in `chatgpt-account-id`, `originator: pi` and the session id as cache key.
//! The system prompt travels as a leading developer item, not as `instructions`.
//!
//! Pi prefers a WebSocket to the backend and falls back to this SSE request when the socket
//! fails; we always use SSE (Pi's `transport: "sse"`), which the backend serves the same, and
//! send the JSON body uncompressed (Pi's own fallback when zstd is unavailable).

use crate::azure_openai_responses::{check_tools, strict_supported};
use crate::cost::{level_map_entry, mapped_level};
use crate::http::{self, Body, SendError};
use crate::openai_responses::request::{TOOL_CALL_PROVIDERS, convert_messages, convert_tools};
use crate::openai_responses::{Flavor, relay};
use crate::output::Output;
use crate::provider_error::{Sdk, send_error_text};
use crate::request::{Headers, base_max_tokens, effective_reasoning, start_stream};
use crate::stream::{CacheRetention, LlmContext, StreamOptions};
use crate::transcript::{resolve_transcript, transcript_tools};
use base64::Engine as _;
use pi_js::parse::parse_js_json;
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The API id.
pub const API: &str = "openai-codex-responses";

const DEFAULT_BASE_URL: &str = "https://chatgpt.com/backend-api";
const JWT_CLAIM: &str = "https://api.openai.com/auth";
const MIN_OUTPUT_TOKENS: u64 = 16;

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, out: Output) {
    let mid = model
        .compat
        .as_ref()
        .and_then(|c| c.supports_mid_convo_system_messages)
        .unwrap_or(false);
    let messages = resolve_transcript(&context.messages, mid);
    let Some(token) = options.api_key.clone().filter(|k| !k.is_empty()) else {
        return out
            .setup_fail(format!("No API key for provider: {}", model.provider))
            .await;
    };
    let cancelled = options.cancel.is_cancelled();
    let Some(account) = account_id(&token) else {
        return out
            .fail(cancelled, "Failed to extract accountId from token".into())
            .await;
    };
    if let Err(e) = check_tools(strict_supported(&model), &messages) {
        return out.fail(cancelled, e).await;
    }
    let session = (options.cache_retention != Some(CacheRetention::None))
        .then(|| options.session_id.clone())
        .flatten()
        .map(|s| s.chars().take(64).collect::<String>());
    let body = build_body(&model, &context, &options, &messages, session.as_deref());
    let req = http::Request {
        url: codex_url(&model.base_url),
        headers: headers(&model, &options, &token, &account, session.as_deref()).0,
        body: pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default(),
    };
    let Some((out, resp)) = start_stream(
        out,
        req,
        &options,
        crate::provider_retry::RetryPolicy::Codex,
        error_text,
    )
    .await
    else {
        return;
    };
    relay(Flavor::Codex, &model, out, resp, &options).await;
}

/// The ChatGPT account id in the access token's claims.
pub fn account_id(token: &str) -> Option<String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return None;
    }
    let payload = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .ok()?;
    let claims = parse_js_json(&String::from_utf8_lossy(&payload)).ok()?;
    claims[JWT_CLAIM]["chatgpt_account_id"]
        .as_str()
        .filter(|a| !a.is_empty())
        .map(String::from)
}

/// `{base}/codex/responses`, unless the base already names it.
fn codex_url(base: &str) -> String {
    let raw = if pi_js::trim(base).is_empty() {
        DEFAULT_BASE_URL
    } else {
        base
    };
    let n = raw.trim_end_matches('/');
    if n.ends_with("/codex/responses") {
        n.to_string()
    } else if n.ends_with("/codex") {
        format!("{n}/responses")
    } else {
        format!("{n}/codex/responses")
    }
}

/// Defaults first so the model's and the request's headers can replace them; the credential
/// and protocol headers last.
fn headers(
    model: &Model,
    options: &StreamOptions,
    token: &str,
    account: &str,
    session: Option<&str>,
) -> Headers {
    let mut h = Headers::default();
    h.set("originator", "pi");
    h.set(
        "User-Agent",
        options
            .user_agent
            .clone()
            .unwrap_or_else(http::default_user_agent),
    );
    for (k, v) in model.headers.iter().flat_map(|m| m.iter()) {
        h.set(k, v.clone());
    }
    for (k, v) in &options.headers {
        h.set(k, v.clone());
    }
    h.set("Authorization", format!("Bearer {token}"));
    h.set("chatgpt-account-id", account);
    h.set("OpenAI-Beta", "responses=experimental");
    h.set("accept", "text/event-stream");
    h.set("content-type", "application/json");
    if let Some(s) = session {
        h.set("session-id", s);
        h.set("x-client-request-id", s);
    }
    h
}

fn build_body(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
    messages: &[Cow<'_, AgentMessage>],
    session: Option<&str>,
) -> Map<String, Value> {
    let c = model.compat.as_ref();
    let mut b = Map::new();
    b.insert("model".into(), model.id.clone().into());
    b.insert("store".into(), false.into());
    b.insert("stream".into(), true.into());
    b.insert(
        "input".into(),
        Value::Array(convert_messages(model, TOOL_CALL_PROVIDERS, messages)),
    );
    b.insert("text".into(), json!({"verbosity": "low"}));
    b.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(s) = session {
        b.insert("prompt_cache_key".into(), s.into());
    }
    b.insert("tool_choice".into(), "auto".into());
    b.insert("parallel_tool_calls".into(), true.into());
    let max_tokens = base_max_tokens(model, context, options);
    if max_tokens > 0 && c.and_then(|c| c.supports_max_output_tokens).unwrap_or(true) {
        b.insert(
            "max_output_tokens".into(),
            max_tokens.max(MIN_OUTPUT_TOKENS).into(),
        );
    }
    if let Some(t) = options.temperature {
        b.insert("temperature".into(), json!(t));
    }
    let tools = transcript_tools(messages);
    if !tools.is_empty() {
        b.insert(
            "tools".into(),
            Value::Array(convert_tools(&tools, strict_supported(model))),
        );
    }
    // Off is sent as effort `none` for reasoning models (unless the model maps it to nothing).
    let effort = match effective_reasoning(model, options) {
        Some(level) => Some(mapped_level(model, level)),
        None if model.reasoning => match level_map_entry(model, ThinkingLevel::Off) {
            None => Some("none".to_string()),
            Some(v) => v.map(String::from),
        },
        None => None,
    };
    if let Some(effort) = effort {
        b.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    }
    b
}

/// Codex words failures itself: the backend's `error.message`, a friendly text for usage
/// limits, the status text for an empty body.
fn error_text(e: &SendError) -> (bool, String) {
    match e {
        SendError::Aborted => (true, "Request was aborted".into()),
        SendError::Status { status, body, .. } => (false, status_error(*status, body)),
        other => send_error_text(Sdk::Google, other, None),
    }
}

fn status_error(status: u16, raw: &str) -> String {
    let mut message = if raw.is_empty() {
        match Body::status_text(status) {
            "" => "Request failed".to_string(),
            t => t.to_string(),
        }
    } else {
        raw.to_string()
    };
    let mut friendly = None;
    if let Ok(parsed) = parse_js_json(raw)
        && let Some(err) = parsed.get("error").filter(|e| pi_js::truthy(e))
    {
        let code = [&err["code"], &err["type"]]
            .into_iter()
            .find(|v| pi_js::truthy(v))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let limited = [
            "usage_limit_reached",
            "usage_not_included",
            "rate_limit_exceeded",
        ]
        .iter()
        .any(|c| code.contains(c));
        if limited || status == 429 {
            let plan = err["plan_type"]
                .as_str()
                .filter(|p| !p.is_empty())
                .map(|p| format!(" ({} plan)", p.to_lowercase()))
                .unwrap_or_default();
            let when = err["resets_at"]
                .as_f64()
                .filter(|r| *r != 0.0)
                .map(|r| {
                    let mins = ((r * 1000.0 - pi_js::now_ms() as f64) / 60000.0).round();
                    format!(" Try again in ~{} min.", mins.max(0.0))
                })
                .unwrap_or_default();
            friendly = Some(
                pi_js::trim(&format!(
                    "You have hit your ChatGPT usage limit{plan}.{when}"
                ))
                .to_string(),
            );
        }
        if let Some(m) = err["message"].as_str().filter(|m| !m.is_empty()) {
            message = m.to_string();
        } else if let Some(f) = &friendly {
            message = f.clone();
        }
    }
    friendly.unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_id_comes_from_the_token_claims() {
        let b64 = |v: &str| base64::engine::general_purpose::STANDARD_NO_PAD.encode(v);
        let token = format!(
            "{}.{}.sig",
            b64("{}"),
            b64(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acct-9"}}"#)
        );
        assert_eq!(account_id(&token).as_deref(), Some("acct-9"));
        assert_eq!(account_id("not-a-jwt"), None);
        assert_eq!(account_id(&format!("a.{}.c", b64("{}"))), None);
    }

    #[test]
    fn codex_url_appends_the_responses_path_once() {
        assert_eq!(
            codex_url("https://chatgpt.com/backend-api/"),
            "https://chatgpt.com/backend-api/codex/responses"
        );
        assert_eq!(codex_url("http://h/codex"), "http://h/codex/responses");
        assert_eq!(
            codex_url("http://h/codex/responses"),
            "http://h/codex/responses"
        );
        assert_eq!(
            codex_url(""),
            "https://chatgpt.com/backend-api/codex/responses"
        );
    }

    #[test]
    fn usage_limits_get_the_friendly_text() {
        assert_eq!(
            status_error(
                429,
                r#"{"error":{"code":"usage_limit_reached","message":"limit","plan_type":"PLUS"}}"#
            ),
            "You have hit your ChatGPT usage limit (plus plan)."
        );
        assert_eq!(status_error(502, ""), "Bad Gateway");
        assert_eq!(
            status_error(500, r#"{"message":"plain"}"#),
            r#"{"message":"plain"}"#
        );
    }
}
