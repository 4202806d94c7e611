//! Classifier models: typed questions (`choice`, `score`, `bool`) about JSON state, answered with
//! probabilities. Pi 1.6.0 speaks three wire APIs for them: TypeSafe's System One
//! (`typesafe-system-one`, also served by OpenRouter, Vercel AI Gateway, OpenCode and GitHub
//! Copilot), System One on Cloudflare Workers AI's REST endpoint
//! (`cloudflare-workers-ai-system-one`), OpenAI's Decisions API (`openai-decisions`), and chat
//! models on llama.cpp's `llama-server` read out through label-token probabilities
//! (`llama-cpp-classify`).
//!
//! Models and contexts are JSON as scripts see them; results are Pi's `ClassifierResult` objects,
//! key order included, since they reach codemode scripts as they are. Calls never fail: problems
//! become `stopReason: "error"` results with Pi's texts.

mod decisions;
mod llama;
mod system_one;

use crate::http::{self, SendError};
use crate::provider_retry::{self, Next, RetryPolicy};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// What one call sends besides the model and the context.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    pub api_key: Option<String>,
    /// Request headers after the model's, in order; `None` removes a header.
    pub headers: Vec<(String, Option<String>)>,
    /// Provider settings of the credential (Cloudflare's account id fills the base URL).
    pub env: Vec<(String, String)>,
    /// `None`: the API's default (2 for classifiers, none for images).
    pub max_retries: Option<u32>,
    /// Softmax temperature of label readouts (`llama-cpp-classify`); `None` is 1.
    pub temperature: Option<f64>,
    pub cancel: CancellationToken,
}

/// A failure on the way to an answer, as Pi's error objects carry it.
#[derive(Debug, Clone)]
pub(crate) enum CallError {
    /// A non-2xx answer: `<label> returned <status>` with the body.
    Status {
        label: &'static str,
        status: u16,
        body: String,
    },
    Aborted,
    /// Any other error, already worded.
    Message(String),
}

impl CallError {
    /// `formatProviderError(normalizeProviderError(error), "<label> error")`.
    pub(crate) fn text(&self, prefix: &str) -> String {
        match self {
            CallError::Aborted => "Request aborted".into(),
            CallError::Message(m) => m.clone(),
            CallError::Status {
                label,
                status,
                body,
            } => {
                let body = pi_js::trim(body);
                let message = format!("{label} returned {status}");
                if body.is_empty() || message.contains(body) {
                    format!("{prefix} ({status}): {message}")
                } else {
                    let body = crate::provider_error::truncate(body);
                    format!("{prefix} ({status}): {body}")
                }
            }
        }
    }
}

/// `{ input_tokens, output_tokens }` as Pi's usage, priced from the catalog entry. A missing or
/// malformed object gives no usage rather than failing the call.
pub(crate) fn parse_usage(value: Option<&Value>, model: &Map<String, Value>) -> Option<Value> {
    let usage = value?.as_object()?;
    if !usage.contains_key("input_tokens") && !usage.contains_key("output_tokens") {
        return None;
    }
    let count = |k: &str| {
        usage
            .get(k)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite() && *n > 0.0)
            .unwrap_or(0.0)
    };
    Some(usage_value(
        count("input_tokens"),
        count("output_tokens"),
        0.0,
        0.0,
        model,
    ))
}

/// Pi's `Usage` with `calculateCost` applied (tiers by input tokens).
pub(crate) fn usage_value(
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    model: &Map<String, Value>,
) -> Value {
    let cost = model.get("cost").cloned().unwrap_or(Value::Null);
    let mut rates = cost.clone();
    let mut matched = -1.0;
    let total_input = input + cache_read + cache_write;
    for tier in cost["tiers"].as_array().into_iter().flatten() {
        let above = tier["inputTokensAbove"].as_f64().unwrap_or(f64::INFINITY);
        if total_input > above && above > matched {
            rates = tier.clone();
            matched = above;
        }
    }
    let rate = |k: &str| rates[k].as_f64().unwrap_or(0.0) / 1_000_000.0;
    let (ci, co, cr, cw) = (
        rate("input") * input,
        rate("output") * output,
        rate("cacheRead") * cache_read,
        rate("cacheWrite") * cache_write,
    );
    json!({
        "input": num(input), "output": num(output), "cacheRead": num(cache_read), "cacheWrite": num(cache_write),
        "totalTokens": num(input + output + cache_read + cache_write),
        "cost": {"input": ci, "output": co, "cacheRead": cr, "cacheWrite": cw, "total": ci + co + cr + cw, "totalFromProvider": false}
    })
}

/// A count as JSON: integral values as integers, as JavaScript prints them.
pub(crate) fn num(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

pub(crate) fn required_number(
    label: &str,
    value: Option<&Value>,
    field: &str,
) -> Result<Value, CallError> {
    match value {
        Some(Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => {
            Ok(Value::Number(n.clone()))
        }
        _ => Err(CallError::Message(format!(
            "{label} returned an invalid {field}"
        ))),
    }
}

pub(crate) fn str_of<'a>(model: &'a Map<String, Value>, key: &str) -> &'a str {
    model.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `new URL(path, baseUrl without trailing slashes + "/")`.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

/// Merges header layers in order, later names replacing earlier ones case-insensitively;
/// `None` removes.
pub(crate) fn merge_headers(layers: &[Vec<(String, Option<String>)>]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for layer in layers {
        for (k, v) in layer {
            out.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            if let Some(v) = v {
                out.push((k.clone(), v.clone()));
            }
        }
    }
    out
}

pub(crate) fn model_headers(model: &Map<String, Value>) -> Vec<(String, Option<String>)> {
    model
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| Some((k.clone(), Some(v.as_str()?.to_string()))))
                .collect()
        })
        .unwrap_or_default()
}

/// `postClassifierRequest`: one JSON POST with bearer auth, retried like the SDKs retry
/// (statuses 408/409/429/5xx and a server-named delay; connection failures are not retried),
/// except `no_retry` statuses. Returns the parsed body.
pub(crate) async fn post_json(
    label: &'static str,
    url: &str,
    model: &Map<String, Value>,
    body: &Value,
    options: &CallOptions,
    no_retry: &[u16],
) -> Result<Value, CallError> {
    let Some(api_key) = options.api_key.clone().filter(|k| !k.is_empty()) else {
        return Err(CallError::Message(format!(
            "No API key for provider: {}",
            str_of(model, "provider")
        )));
    };
    let headers = merge_headers(&[
        vec![("User-Agent".into(), Some(http::default_user_agent()))],
        vec![
            ("authorization".into(), Some(format!("Bearer {api_key}"))),
            ("content-type".into(), Some("application/json".into())),
        ],
        model_headers(model),
        options.headers.clone(),
    ]);
    send_json(label, url, headers, body, options, no_retry).await
}

/// One JSON POST with `headers`, retried as [`post_json`] describes; returns the parsed body.
pub(crate) async fn send_json(
    label: &'static str,
    url: &str,
    headers: Vec<(String, String)>,
    body: &Value,
    options: &CallOptions,
    no_retry: &[u16],
) -> Result<Value, CallError> {
    let body = body.to_string();
    let max_retries = options.max_retries.unwrap_or(2);
    let mut attempt = 0;
    loop {
        let request = http::Request {
            url: url.to_string(),
            headers: headers.clone(),
            body: body.clone(),
        };
        let err = match http::send(request, &options.cancel, None).await {
            Ok(mut response) => {
                let bytes = match response.body(&options.cancel).await {
                    Ok(bytes) => bytes,
                    Err(http::ReadError::Aborted) => return Err(CallError::Aborted),
                    Err(http::ReadError::Terminated(t)) => return Err(CallError::Message(t)),
                };
                let text = String::from_utf8_lossy(&bytes);
                return pi_js::parse::parse_js_json(&text).map_err(CallError::Message);
            }
            Err(e) => e,
        };
        match &err {
            SendError::Aborted => return Err(CallError::Aborted),
            SendError::Connect(detail) => {
                return Err(CallError::Message(format!("fetch failed: {detail}")));
            }
            SendError::Client(t) => return Err(CallError::Message(t.clone())),
            SendError::HeadersTimeout => {
                return Err(CallError::Message(
                    "fetch failed: Headers Timeout Error (UND_ERR_HEADERS_TIMEOUT)".into(),
                ));
            }
            SendError::Status { status, .. } if no_retry.contains(status) => {}
            SendError::Status { .. } => {
                let policy = RetryPolicy::Sdk(match label {
                    "OpenAI Decisions" => |s, _| format!("OpenAI Decisions returned {s}"),
                    "Cloudflare Workers AI" => |s, _| format!("Cloudflare Workers AI returned {s}"),
                    "llama.cpp" => |s, _| format!("llama.cpp returned {s}"),
                    _ => |s, _| format!("System One API returned {s}"),
                });
                match provider_retry::next(policy, &err, attempt, max_retries, None, "") {
                    Next::RetryAfter(d) => {
                        attempt += 1;
                        tokio::select! {
                            _ = options.cancel.cancelled() => return Err(CallError::Aborted),
                            _ = tokio::time::sleep(d) => continue,
                        }
                    }
                    Next::Fail(text) => return Err(CallError::Message(text)),
                    Next::GiveUp => {}
                }
            }
        }
        let SendError::Status { status, body, .. } = err else {
            return Err(CallError::Message(String::new()));
        };
        return Err(CallError::Status {
            label,
            status,
            body,
        });
    }
}

/// The result shell Pi's APIs start from: `{api, provider, model, answers: {}, stopReason,
/// timestamp}`.
fn result_shell(model: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("api".into(), json!(str_of(model, "api")));
    out.insert("provider".into(), json!(str_of(model, "provider")));
    out.insert("model".into(), json!(str_of(model, "id")));
    out.insert("answers".into(), json!({}));
    out.insert("stopReason".into(), json!("stop"));
    out.insert("timestamp".into(), json!(pi_js::now_ms()));
    out
}

/// `classifierErrorResult`: a call that failed before reaching the API (unknown provider, no
/// credentials, a model that takes no images).
pub fn error_result(model: &Map<String, Value>, message: &str, aborted: bool) -> Value {
    json!({
        "api": str_of(model, "api"),
        "provider": str_of(model, "provider"),
        "model": str_of(model, "id"),
        "answers": {},
        "stopReason": if aborted { "aborted" } else { "error" },
        "errorMessage": message,
        "timestamp": pi_js::now_ms(),
    })
}

/// Whether pi-ai has a classifier implementation for `api`.
pub fn supports(api: &str) -> bool {
    matches!(
        api,
        "typesafe-system-one"
            | "cloudflare-workers-ai-system-one"
            | "openai-decisions"
            | "llama-cpp-classify"
    )
}

/// Classifies `context` (`{state, images?, questions}`, already checked by the caller) with
/// `model` (a catalog entry whose `baseUrl` is final). `provider` picks the provider's wrapping:
/// GitHub Copilot serves System One under `/v1`, Cloudflare fills its account id.
pub async fn classify(model: &Map<String, Value>, context: &Value, options: &CallOptions) -> Value {
    let mut model = model.clone();
    let base = str_of(&model, "baseUrl").to_string();
    let base = match str_of(&model, "provider") {
        "github-copilot" => format!("{}/v1", base.trim_end_matches('/')),
        "cloudflare-workers-ai" => {
            let mut url = base;
            for (k, v) in &options.env {
                if k == "CLOUDFLARE_ACCOUNT_ID" || k == "CLOUDFLARE_GATEWAY_ID" {
                    url = url.replace(&format!("{{{k}}}"), v);
                }
            }
            url
        }
        _ => base,
    };
    model.insert("baseUrl".into(), Value::String(base));
    let mut out = result_shell(&model);
    let outcome = match str_of(&model, "api") {
        "openai-decisions" => decisions::classify(&model, context, options, &mut out).await,
        "llama-cpp-classify" => llama::classify(&model, context, options, &mut out).await,
        api => system_one::classify(api, &model, context, options, &mut out).await,
    };
    if let Err((prefix, e)) = outcome {
        out.insert("answers".into(), json!({}));
        let aborted = options.cancel.is_cancelled();
        out.insert(
            "stopReason".into(),
            json!(if aborted { "aborted" } else { "error" }),
        );
        out.insert("errorMessage".into(), json!(e.text(prefix)));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests;
