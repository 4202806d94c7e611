//! `bedrock-converse-stream`: Amazon Bedrock's Converse API,
//! `POST {endpoint}/model/{modelId}/converse-stream`, signed with SigV4 (or a Bedrock API key
//! as a bearer token); the answer is an AWS event stream of `messageStart`,
//! `contentBlockStart/Delta/Stop`, `messageStop` and `metadata` events, or exceptions.
//! Throttling and server errors are tried three times, as the AWS SDK does.

pub mod credentials;
pub mod eventstream;
mod remote_credentials;
pub mod request;
pub mod sigv4;

use crate::budget::{ThinkingBudgets, adjust_max_tokens_for_thinking, clamp_max_tokens_to_context};
use crate::cost::calculate_cost;
use crate::http::{self, ReadError, SendError};
use crate::output::Output;
use crate::request::base_max_tokens;
use crate::stream::{CacheRetention, LlmContext, StreamEvent, StreamOptions};
use crate::tool_args::{parse_tool_call_arguments, partial_arguments};
use crate::transcript::{collapse_system_messages, transcript_tools};
use base64::Engine as _;
use credentials::Auth;
use pi_js::parse::parse_js_json;
use pi_protocol::content::{AssistantBlock, TextContent, ThinkingContent, ToolCall};
use pi_protocol::message::AssistantMessageDiagnostic;
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use pi_protocol::usage::StopReason;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::time::Duration;

/// The API id.
pub const API: &str = "bedrock-converse-stream";

const REDACTED: &str = "[Reasoning redacted]";
const ATTEMPTS: u32 = 3;
const DATA_RETENTION_DOCS: &str =
    "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html";

/// A failure in Pi's words plus what its diagnostic records.
struct Failure {
    text: String,
    status: Option<u16>,
    code: Option<String>,
    request_id: Option<String>,
    /// The exception's own message (without Pi's prefix).
    message: Option<String>,
}

impl Failure {
    fn plain(text: impl Into<String>) -> Failure {
        Failure {
            text: text.into(),
            status: None,
            code: None,
            request_id: None,
            message: None,
        }
    }

    /// A Bedrock exception: Pi's readable prefix for the known ones, the name for others.
    fn exception(name: &str, message: &str) -> Failure {
        let prefix = match name {
            "InternalServerException" => "Internal server error",
            "ModelStreamErrorException" => "Model stream error",
            "ValidationException" => "Validation error",
            "ThrottlingException" => "Throttling error",
            "ServiceUnavailableException" => "Service unavailable",
            other => other,
        };
        Failure {
            text: format!("{prefix}: {message}{}", retention_hint(message)),
            status: None,
            code: name.ends_with("Exception").then(|| name.to_string()),
            request_id: None,
            message: Some(message.to_string()),
        }
    }
}

fn retention_hint(text: &str) -> String {
    if text.to_lowercase().contains("data retention mode") {
        format!(" See {DATA_RETENTION_DOCS} for supported data retention modes.")
    } else {
        String::new()
    }
}

pub async fn run(model: Model, context: LlmContext, options: StreamOptions, mut out: Output) {
    let mut st = State::default();
    let result = stream(&model, &context, &options, &mut out, &mut st).await;
    if out.gone() {
        return;
    }
    st.flush_redacted(&mut out);
    match result {
        Ok(()) => out.done().await,
        Err(f) => {
            let aborted = options.cancel.is_cancelled();
            out.set_error_message(f.text.clone());
            let request_id = f.request_id.or(st.request_id.clone());
            if !aborted && (f.status.is_some() || f.code.is_some() || request_id.is_some()) {
                let mut details = Map::new();
                if let Some(s) = f.status {
                    details.insert("status".into(), s.into());
                }
                if let Some(c) = f.code {
                    details.insert("errorCode".into(), c.into());
                }
                if let Some(r) = request_id {
                    details.insert("requestId".into(), r.into());
                }
                out.push_diagnostic(AssistantMessageDiagnostic {
                    kind: "bedrock_response_failure".into(),
                    timestamp: pi_js::now_ms(),
                    error: None,
                    details: Some(details),
                    rest: Default::default(),
                });
            }
            out.fail(aborted, f.text).await
        }
    }
}

/// The max tokens and thinking budgets Pi's `streamSimple` derives for Bedrock.
fn limits(model: &Model, context: &LlmContext, options: &StreamOptions) -> (u64, ThinkingBudgets) {
    let base = base_max_tokens(model, context, options);
    let mut budgets = options.thinking_budgets;
    let Some(level) = options.reasoning.filter(|l| *l != ThinkingLevel::Off) else {
        return (base, budgets);
    };
    if !request::is_claude(model) || request::supports_adaptive_thinking(model) {
        return (base, budgets);
    }
    let (adjusted, budget) = adjust_max_tokens_for_thinking(
        Some(base),
        model.max_tokens,
        level,
        &options.thinking_budgets,
    );
    let max = clamp_max_tokens_to_context(model, &context.messages, adjusted);
    let budget = Some(budget.min(max.saturating_sub(1024)));
    match level {
        ThinkingLevel::Minimal => budgets.minimal = budget,
        ThinkingLevel::Low => budgets.low = budget,
        ThinkingLevel::Medium => budgets.medium = budget,
        _ => budgets.high = budget,
    }
    (max, budgets)
}

async fn stream(
    model: &Model,
    context: &LlmContext,
    options: &StreamOptions,
    out: &mut Output,
    st: &mut State,
) -> Result<(), Failure> {
    let messages = collapse_system_messages(&context.messages);
    let auth = credentials::resolve(options)
        .await
        .map_err(Failure::plain)?;
    let (endpoint, region) = credentials::endpoint_and_region(&model.id, &model.base_url, options);
    let (max_tokens, budgets) = limits(model, context, options);
    let gov_cloud = credentials::configured_region(options)
        .is_some_and(|r| r.to_lowercase().starts_with("us-gov-"))
        || model.id.to_lowercase().starts_with("us-gov.")
        || model.id.to_lowercase().starts_with("arn:aws-us-gov:");
    let params = request::Params {
        model,
        retention: CacheRetention::resolve(options.cache_retention),
        force_cache: options.env_value("AWS_BEDROCK_FORCE_CACHE").as_deref() == Some("1"),
        max_tokens: Some(max_tokens),
        temperature: options.temperature,
        reasoning: options.reasoning.filter(|l| *l != ThinkingLevel::Off),
        budgets,
        gov_cloud,
    };
    let strict = model
        .compat
        .as_ref()
        .and_then(|c| c.supports_strict_mode)
        .unwrap_or(false);
    let path = format!(
        "/model/{}/converse-stream",
        sigv4::uri_encode(&model.id, false)
    );
    let session = options.session_id.as_deref();
    let mut disable_preferred = crate::strict_tool_limits::has_exceeded(session);
    let preferred = request::has_preferred_strict(&transcript_tools(&messages), strict);
    let mut resp = loop {
        let body = request::build_body(&params, &messages, strict, disable_preferred)
            .map_err(Failure::plain)?;
        let mut body =
            pi_js::json_str::value_to_js_string(&Value::Object(body)).unwrap_or_default();
        if let Some(hooks) = &options.hooks
            && let Ok(p) = parse_js_json(&body)
        {
            body = pi_js::json::to_js_string(&hooks.payload(p).await).unwrap_or_default();
        }
        let failure = match send(model, options, &auth, &endpoint, &region, &path, body).await {
            Ok(resp) => break resp,
            Err(f) => f,
        };
        // Bedrock checks tool schemas before streaming, so the retry repeats no output: once,
        // with the strict-preferring tools sent non-strict.
        let limit = failure.code.as_deref() == Some("ValidationException")
            && failure
                .message
                .as_deref()
                .is_some_and(crate::strict_tool_limits::is_limit_error);
        if options.cancel.is_cancelled() || disable_preferred || !preferred || !limit {
            return Err(failure);
        }
        disable_preferred = true;
        crate::strict_tool_limits::mark_exceeded(session);
        let mut details = Map::new();
        details.insert("reason".into(), "strict_tool_limits_exceeded".into());
        out.push_diagnostic(AssistantMessageDiagnostic {
            kind: "bedrock_strict_tools_fallback".into(),
            timestamp: pi_js::now_ms(),
            error: Some(pi_protocol::message::DiagnosticErrorInfo {
                name: None,
                message: failure.message.unwrap_or_default(),
                stack: None,
                code: None,
                rest: Default::default(),
            }),
            details: Some(details),
            rest: Default::default(),
        });
    };
    st.request_id = resp
        .headers()
        .into_iter()
        .find(|(k, _)| k == "x-amzn-requestid")
        .map(|(_, v)| pi_js::trim(&v).to_string())
        .filter(|v| !v.is_empty() && v.len() <= 200);
    if let Some(hooks) = &options.hooks {
        hooks.response(resp.status(), resp.headers()).await;
    }
    let mut frames = eventstream::Decoder::default();
    loop {
        let chunk = match resp.chunk(&options.cancel).await {
            Ok(Some(c)) => c,
            Ok(None) => break,
            // The AWS SDK's socket handling reports a cut, a stall and an abort alike.
            Err(ReadError::Aborted | ReadError::Terminated(_)) => {
                return Err(Failure::plain("aborted"));
            }
        };
        for msg in frames.push(&chunk).map_err(Failure::plain)? {
            st.message(model, &msg, out).await?;
            if out.gone() {
                return Ok(());
            }
        }
    }
    if options.cancel.is_cancelled() {
        return Err(Failure::plain("Request was aborted"));
    }
    match out.msg.stop_reason {
        StopReason::Pending => Err(Failure::plain("Bedrock stream ended without a stop reason")),
        StopReason::Error | StopReason::Aborted => Err(Failure::plain(
            out.msg
                .error_message
                .clone()
                .unwrap_or_else(|| "An unknown error occurred".into()),
        )),
        _ => Ok(()),
    }
}

/// Signs and sends the request, trying throttling and server errors up to three times.
async fn send(
    model: &Model,
    options: &StreamOptions,
    auth: &Auth,
    endpoint: &str,
    region: &str,
    path: &str,
    body: String,
) -> Result<http::Body, Failure> {
    let host = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, r)| r)
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    let base_path = endpoint
        .split_once("://")
        .map_or("", |(_, r)| r)
        .split_once('/')
        .map_or(String::new(), |(_, p)| {
            format!("/{}", p.trim_end_matches('/'))
        });
    let full_path = format!("{base_path}{path}");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut headers: Vec<(String, String)> =
            vec![("content-type".into(), "application/json".into())];
        // Caller headers are signed too; the signing and credential headers stay ours.
        for (k, v) in model
            .headers
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(options.headers.iter().map(|(k, v)| (k.clone(), v.clone())))
        {
            let lower = k.to_ascii_lowercase();
            if lower.starts_with("x-amz-") || lower == "authorization" || lower == "host" {
                continue;
            }
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&k));
            headers.push((lower, v));
        }
        headers.push((
            "user-agent".into(),
            options
                .user_agent
                .clone()
                .unwrap_or_else(http::default_user_agent),
        ));
        match auth {
            Auth::Bearer(token) => {
                headers.push(("authorization".into(), format!("Bearer {token}")))
            }
            Auth::SigV4(creds) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                let date = sigv4::amz_date(now);
                headers.push(("x-amz-date".into(), date.clone()));
                headers.push((
                    "x-amz-content-sha256".into(),
                    sigv4::sha256_hex(body.as_bytes()),
                ));
                if let Some(t) = &creds.session_token {
                    headers.push(("x-amz-security-token".into(), t.clone()));
                }
                let mut signed = headers.clone();
                signed.push(("host".into(), host.clone()));
                signed.push(("content-length".into(), body.len().to_string()));
                let value = sigv4::authorization(
                    &sigv4::Signable {
                        method: "POST",
                        path: &full_path,
                        query: "",
                        headers: &signed,
                        body: body.as_bytes(),
                    },
                    creds,
                    region,
                    "bedrock",
                    &date,
                );
                headers.push(("authorization".into(), value));
            }
        }
        let mut req = http::Request {
            url: format!("{endpoint}{path}"),
            headers,
            body: body.clone(),
        };
        if let Some(hooks) = &options.hooks {
            req.headers = hooks.headers(std::mem::take(&mut req.headers)).await;
        }
        let err = match http::send(req, &options.cancel, options.idle_timeout).await {
            Ok(resp) => return Ok(resp),
            Err(e) => e,
        };
        let retry = match &err {
            SendError::Status {
                status, headers, ..
            } => {
                matches!(status, 429 | 500 | 502 | 503 | 504)
                    || error_type(headers, "").is_some_and(|t| t.contains("Throttl"))
            }
            SendError::Connect(_) => true,
            _ => false,
        };
        if !retry || attempt >= ATTEMPTS || options.cancel.is_cancelled() {
            return Err(send_failure(err));
        }
        let delay = Duration::from_millis(100 << (attempt - 1));
        tokio::select! {
            _ = options.cancel.cancelled() => return Err(Failure::plain("Request aborted")),
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// The modeled error name: `x-amzn-errortype` up to `:`, else the body's `__type`/`code`.
fn error_type(headers: &[(String, String)], body: &str) -> Option<String> {
    let from_header = headers
        .iter()
        .find(|(k, _)| k == "x-amzn-errortype")
        .map(|(_, v)| v.split(':').next().unwrap_or("").to_string());
    let from_body = || {
        let v = parse_js_json(body).ok()?;
        let t = v["__type"].as_str().or_else(|| v["code"].as_str())?;
        Some(
            t.rsplit('#')
                .next()
                .unwrap_or(t)
                .split(':')
                .next()?
                .to_string(),
        )
    };
    from_header.or_else(from_body).filter(|t| !t.is_empty())
}

fn send_failure(err: SendError) -> Failure {
    match err {
        SendError::Status {
            status,
            body,
            headers,
            ..
        } => {
            let request_id = headers
                .iter()
                .find(|(k, _)| k == "x-amzn-requestid")
                .map(|(_, v)| v.clone());
            let parsed = match parse_js_json(&body) {
                Ok(v) => Some(v),
                Err(e) if !pi_js::trim(&body).is_empty() => {
                    // The SDK could not read the error body at all.
                    let mut f = Failure::plain(format!(
                        "{e}\n  Deserialization error: to see the raw response, inspect the hidden field {{error}}.$response on this object."
                    ));
                    f.status = Some(status);
                    return f;
                }
                Err(_) => None,
            };
            // The SDK names an unmodeled error `Unknown` and its message `UnknownError`; Pi
            // quotes the body instead when the SDK copied an `error` object from it onto the
            // exception (the raw body itself is a consumed stream by then).
            let message = parsed
                .as_ref()
                .and_then(|v| {
                    v["message"]
                        .as_str()
                        .or_else(|| v["Message"].as_str())
                        .map(String::from)
                })
                .unwrap_or_else(|| "UnknownError".into());
            let name = error_type(&headers, &body).unwrap_or_else(|| "Unknown".into());
            let inner = parsed
                .as_ref()
                .and_then(|v| v.get("error"))
                .filter(|e| e.as_object().is_some_and(|o| !o.is_empty()))
                .and_then(|e| pi_js::json::to_js_string(e).ok())
                .map(|t| crate::provider_error::truncate(pi_js::trim(&t)));
            let core = match inner {
                Some(b) if !message.contains(&b) => format!("{status}: {b}"),
                _ => message,
            };
            let mut f = Failure::exception(&name, &core);
            f.status = Some(status);
            f.request_id = request_id;
            f
        }
        SendError::Aborted => Failure::plain("Request aborted"),
        SendError::HeadersTimeout => Failure::plain("aborted"),
        SendError::Connect(detail) | SendError::Client(detail) => Failure::plain(detail),
    }
}

#[derive(Debug)]
struct Open {
    index: usize,
    args: Option<String>,
    redacted: Option<Vec<u8>>,
}

#[derive(Debug, Default)]
struct State {
    open: HashMap<i64, Open>,
    request_id: Option<String>,
}

impl State {
    /// Encrypted reasoning still buffered becomes its block's signature (base64).
    fn flush_redacted(&mut self, out: &mut Output) {
        for (_, open) in self.open.drain() {
            finish_redacted(open, out);
        }
    }

    async fn message(
        &mut self,
        model: &Model,
        msg: &eventstream::Message,
        out: &mut Output,
    ) -> Result<(), Failure> {
        let payload = parse_js_json(&String::from_utf8_lossy(&msg.payload)).unwrap_or(Value::Null);
        match msg.header(":message-type") {
            Some("exception") => {
                let kind = msg.header(":exception-type").unwrap_or("UnknownError");
                let name = capitalize(kind);
                let message = payload["message"]
                    .as_str()
                    .or_else(|| payload["Message"].as_str())
                    .unwrap_or("");
                return Err(Failure::exception(&name, message));
            }
            Some("error") => {
                let code = msg.header(":error-code").unwrap_or("UnknownError");
                let message = msg.header(":error-message").unwrap_or("");
                return Err(Failure::exception(code, message));
            }
            _ => {}
        }
        let usage = out.usage();
        match msg.header(":event-type").unwrap_or("") {
            "messageStart" => {
                if payload["role"] != "assistant" {
                    return Err(Failure::plain(
                        "Unexpected assistant message start but got user message start instead",
                    ));
                }
                out.start().await;
            }
            "contentBlockStart" => {
                let tool = &payload["start"]["toolUse"];
                if tool.is_object() {
                    let index = out.msg.content.len();
                    let id = tool["toolUseId"].as_str().unwrap_or("").to_string();
                    let name = tool["name"].as_str().unwrap_or("").to_string();
                    out.msg.content.push(AssistantBlock::ToolCall(ToolCall::new(
                        id.clone(),
                        name.clone(),
                        Map::new(),
                    )));
                    self.open.insert(
                        block_index(&payload),
                        Open {
                            index,
                            args: Some(String::new()),
                            redacted: None,
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
            }
            "contentBlockDelta" => self.delta(&payload, out).await,
            "contentBlockStop" => {
                if let Some(open) = self.open.remove(&block_index(&payload)) {
                    self.stop(open, out).await;
                }
            }
            "messageStop" => {
                let raw = payload["stopReason"].as_str().unwrap_or("").to_string();
                let (stop, err) = match raw.as_str() {
                    "end_turn" | "stop_sequence" => (StopReason::Stop, None),
                    "max_tokens" | "model_context_window_exceeded" => (StopReason::Length, None),
                    "tool_use" => (StopReason::ToolUse, None),
                    "" => (StopReason::Error, None),
                    other => (
                        StopReason::Error,
                        Some(format!("Provider stopped with: {other}")),
                    ),
                };
                out.set_raw_stop_reason(raw);
                out.msg.stop_reason = stop;
                if let Some(e) = err {
                    out.set_error_message(e);
                }
            }
            "metadata" => {
                let u = &payload["usage"];
                if u.is_object() {
                    let n = |v: &Value| v.as_f64().filter(|f| *f > 0.0).map_or(0, |f| f as u64);
                    let usage = &mut out.msg.usage;
                    usage.input = n(&u["inputTokens"]);
                    usage.output = n(&u["outputTokens"]);
                    usage.cache_read = n(&u["cacheReadInputTokens"]);
                    usage.cache_write = n(&u["cacheWriteInputTokens"]);
                    usage.cache_write_1h = u["cacheDetails"].as_array().map(|d| {
                        d.iter()
                            .filter(|x| x["ttl"] == "1h")
                            .map(|x| n(&x["inputTokens"]))
                            .sum()
                    });
                    usage.total_tokens = match n(&u["totalTokens"]) {
                        0 => usage.input + usage.output,
                        t => t,
                    };
                    calculate_cost(model, &mut out.msg.usage);
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn delta(&mut self, payload: &Value, out: &mut Output) {
        let key = block_index(payload);
        let delta = &payload["delta"];
        let usage = out.usage();
        if let Some(text) = delta["text"].as_str() {
            let index = match self.open.get(&key) {
                Some(o) => o.index,
                None => {
                    let index = out.msg.content.len();
                    out.msg
                        .content
                        .push(AssistantBlock::Text(TextContent::new("")));
                    self.open.insert(
                        key,
                        Open {
                            index,
                            args: None,
                            redacted: None,
                        },
                    );
                    out.emit(StreamEvent::TextStart {
                        index,
                        usage: usage.clone(),
                    })
                    .await;
                    index
                }
            };
            if let Some(AssistantBlock::Text(t)) = out.msg.content.get_mut(index) {
                t.text.push_str(text);
                out.text_delta(index, text.to_string()).await;
            }
        } else if delta["toolUse"].is_object() {
            let Some(open) = self.open.get_mut(&key) else {
                return;
            };
            let Some(args) = open.args.as_mut() else {
                return;
            };
            let piece = delta["toolUse"]["input"].as_str().unwrap_or("").to_string();
            args.push_str(&piece);
            let index = open.index;
            if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get_mut(index) {
                tc.arguments = partial_arguments(args);
                out.emit(StreamEvent::ToolcallDelta {
                    index,
                    delta: piece,
                    usage,
                })
                .await;
            }
        } else if delta["reasoningContent"].is_object() {
            let rc = &delta["reasoningContent"];
            let index = match self.open.get(&key) {
                Some(o) => o.index,
                None => {
                    let index = out.msg.content.len();
                    let mut block = ThinkingContent::new("");
                    block.thinking_signature = Some(String::new());
                    out.msg.content.push(AssistantBlock::Thinking(block));
                    self.open.insert(
                        key,
                        Open {
                            index,
                            args: None,
                            redacted: None,
                        },
                    );
                    out.emit(StreamEvent::ThinkingStart {
                        index,
                        usage: usage.clone(),
                    })
                    .await;
                    index
                }
            };
            let Some(AssistantBlock::Thinking(block)) = out.msg.content.get_mut(index) else {
                return;
            };
            if let Some(text) = rc["text"].as_str().filter(|t| !t.is_empty()) {
                block.thinking.push_str(text);
                out.thinking_delta(index, text.to_string()).await;
            }
            let Some(AssistantBlock::Thinking(block)) = out.msg.content.get_mut(index) else {
                return;
            };
            if let Some(sig) = rc["signature"].as_str().filter(|s| !s.is_empty())
                && block.redacted != Some(true)
            {
                block
                    .thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(sig);
            }
            let redacted = rc["redactedContent"]
                .as_str()
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .filter(|b| !b.is_empty());
            if let Some(bytes) = redacted {
                if block.redacted != Some(true) {
                    block.redacted = Some(true);
                    block.thinking_signature = Some(String::new());
                    block.thinking.push_str(REDACTED);
                    out.thinking_delta(index, REDACTED.to_string()).await;
                }
                if let Some(open) = self.open.get_mut(&key) {
                    open.redacted.get_or_insert_with(Vec::new).extend(bytes);
                }
            }
        }
    }

    async fn stop(&mut self, open: Open, out: &mut Output) {
        let index = open.index;
        let usage = out.usage();
        match out.msg.content.get(index) {
            Some(AssistantBlock::Text(t)) => {
                let content = t.text.clone();
                out.emit(StreamEvent::TextEnd {
                    index,
                    content,
                    signature: None,
                    usage,
                })
                .await;
            }
            Some(AssistantBlock::Thinking(_)) => {
                finish_redacted(open, out);
                if let Some(AssistantBlock::Thinking(t)) = out.msg.content.get(index) {
                    let content = t.thinking.clone();
                    out.emit(StreamEvent::ThinkingEnd {
                        index,
                        content,
                        signature: None,
                        usage,
                    })
                    .await;
                }
            }
            Some(AssistantBlock::ToolCall(_)) => {
                if let (Some(args), Some(AssistantBlock::ToolCall(tc))) =
                    (open.args.as_deref(), out.msg.content.get_mut(index))
                {
                    let (a, err) = parse_tool_call_arguments(args);
                    tc.arguments = a;
                    tc.arguments_error = err;
                }
                if let Some(AssistantBlock::ToolCall(tc)) = out.msg.content.get(index) {
                    let tool_call = tc.clone();
                    out.emit(StreamEvent::ToolcallEnd {
                        index,
                        tool_call,
                        usage,
                    })
                    .await;
                }
            }
            None => {}
        }
    }
}

fn finish_redacted(open: Open, out: &mut Output) {
    if let (Some(bytes), Some(AssistantBlock::Thinking(t))) =
        (open.redacted, out.msg.content.get_mut(open.index))
    {
        t.thinking_signature = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
}

fn block_index(payload: &Value) -> i64 {
    payload["contentBlockIndex"].as_i64().unwrap_or(-1)
}

/// `modelStreamErrorException` → `ModelStreamErrorException` (the SDK's error names).
fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
