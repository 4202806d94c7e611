//! Image models. Pi 1.6.0 has one wire API for them, `openrouter-images`: OpenRouter's chat
//! completions endpoint without streaming, asked for `modalities` that include `image`; generated
//! images come back as data URLs in `choices[0].message.images`.
//!
//! Models and contexts are JSON as scripts see them; results are Pi's `ImagesResult` objects, key
//! order included. Calls never fail: problems become `stopReason: "error"` results.

use crate::classify::{CallOptions, merge_headers, model_headers, str_of, usage_value};
use crate::http::{self, SendError};
use crate::provider_error::{self, Sdk};
use crate::provider_retry::{self, Next, RetryPolicy};
use serde_json::{Map, Value, json};

/// Whether pi-ai has an image implementation for `api`.
pub fn supports(api: &str) -> bool {
    api == "openrouter-images"
}

/// `imageErrorResult`: a call that failed before reaching the API.
pub fn error_result(model: &Map<String, Value>, message: &str, aborted: bool) -> Value {
    json!({
        "api": str_of(model, "api"),
        "provider": str_of(model, "provider"),
        "model": str_of(model, "id"),
        "output": [],
        "stopReason": if aborted { "aborted" } else { "error" },
        "errorMessage": message,
        "timestamp": pi_js::now_ms(),
    })
}

/// The chat completions request for `context.input` (text and image blocks).
pub fn request_body(model: &Map<String, Value>, context: &Value) -> Value {
    let content: Vec<Value> = context["input"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| {
            if item["type"] == "text" {
                json!({"type": "text", "text": item["text"]})
            } else {
                json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", item["mimeType"].as_str().unwrap_or(""), item["data"].as_str().unwrap_or(""))}})
            }
        })
        .collect();
    let text_out = model
        .get("output")
        .and_then(Value::as_array)
        .is_some_and(|o| o.iter().any(|m| m == "text"));
    let modalities = if text_out {
        json!(["image", "text"])
    } else {
        json!(["image"])
    };
    json!({
        "model": str_of(model, "id"),
        "messages": [{"role": "user", "content": content}],
        "stream": false,
        "modalities": modalities,
    })
}

fn parse_usage(raw: &Value, model: &Map<String, Value>) -> Value {
    let n = |v: &Value| v.as_f64().filter(|n| n.is_finite()).unwrap_or(0.0);
    let prompt = n(&raw["prompt_tokens"]);
    let cached = n(&raw["prompt_tokens_details"]["cached_tokens"]);
    let cache_write = n(&raw["prompt_tokens_details"]["cache_write_tokens"]);
    let cache_read = if cache_write > 0.0 {
        (cached - cache_write).max(0.0)
    } else {
        cached
    };
    let input = (prompt - cache_read - cache_write).max(0.0);
    usage_value(
        input,
        n(&raw["completion_tokens"]),
        cache_read,
        cache_write,
        model,
    )
}

/// Fills `out` from a chat completion: text content, then the data-URL images.
fn read_response(response: &Value, model: &Map<String, Value>, out: &mut Map<String, Value>) {
    if let Some(id) = response.get("id").filter(|v| !v.is_null()) {
        out.insert("responseId".into(), id.clone());
    }
    if let Some(usage) = response.get("usage").filter(|u| pi_js::truthy(u)) {
        out.insert("usage".into(), parse_usage(usage, model));
    }
    let mut blocks = Vec::new();
    let message = &response["choices"][0]["message"];
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for image in message["images"].as_array().into_iter().flatten() {
        let url = image["image_url"]
            .as_str()
            .or_else(|| image["image_url"]["url"].as_str());
        let Some(rest) = url.and_then(|u| u.strip_prefix("data:")) else {
            continue;
        };
        let Some((mime, data)) = rest.split_once(";base64,") else {
            continue;
        };
        if mime.is_empty() || mime.contains(';') || data.is_empty() {
            continue;
        }
        blocks.push(json!({"type": "image", "mimeType": mime, "data": data}));
    }
    out.insert("output".into(), Value::Array(blocks));
}

async fn post(
    url: &str,
    headers: Vec<(String, String)>,
    body: String,
    options: &CallOptions,
) -> Result<Value, (bool, String)> {
    let max_retries = options.max_retries.unwrap_or(0);
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
                    Err(http::ReadError::Aborted) => return Err((true, "Request aborted".into())),
                    Err(e) => return Err((false, provider_error::read_error_text(&e))),
                };
                return pi_js::parse::parse_js_json(&String::from_utf8_lossy(&bytes))
                    .map_err(|e| (false, e));
            }
            Err(e) => e,
        };
        if matches!(err, SendError::Aborted) {
            return Err((true, "Request aborted".into()));
        }
        match provider_retry::next(
            RetryPolicy::Sdk(provider_error::openai_sdk_message),
            &err,
            attempt,
            max_retries,
            None,
            "",
        ) {
            Next::RetryAfter(d) => {
                attempt += 1;
                tokio::select! {
                    _ = options.cancel.cancelled() => return Err((true, "Request aborted".into())),
                    _ = tokio::time::sleep(d) => continue,
                }
            }
            Next::Fail(text) => return Err((false, text)),
            Next::GiveUp => return Err(provider_error::send_error_text(Sdk::OpenAi, &err, None)),
        }
    }
}

/// Generates images from `context.input` (checked by the caller) with `model`, a catalog entry
/// whose `baseUrl` is final.
pub async fn generate_images(
    model: &Map<String, Value>,
    context: &Value,
    options: &CallOptions,
) -> Value {
    let mut out = Map::new();
    out.insert("api".into(), json!(str_of(model, "api")));
    out.insert("provider".into(), json!(str_of(model, "provider")));
    out.insert("model".into(), json!(str_of(model, "id")));
    out.insert("output".into(), json!([]));
    out.insert("stopReason".into(), json!("stop"));
    out.insert("timestamp".into(), json!(pi_js::now_ms()));
    let outcome = async {
        if !supports(str_of(model, "api")) {
            return Err((
                false,
                format!(
                    "No API provider registered for api: {}",
                    str_of(model, "api")
                ),
            ));
        }
        let Some(key) = options.api_key.clone().filter(|k| !k.is_empty()) else {
            return Err((
                false,
                format!("No API key for provider: {}", str_of(model, "provider")),
            ));
        };
        let headers = merge_headers(&[
            vec![
                ("User-Agent".into(), Some(http::default_user_agent())),
                ("authorization".into(), Some(format!("Bearer {key}"))),
                ("content-type".into(), Some("application/json".into())),
            ],
            model_headers(model),
            options.headers.clone(),
        ]);
        let url = format!(
            "{}/chat/completions",
            str_of(model, "baseUrl").trim_end_matches('/')
        );
        post(
            &url,
            headers,
            request_body(model, context).to_string(),
            options,
        )
        .await
    }
    .await;
    match outcome {
        Ok(response) => read_response(&response, model, &mut out),
        Err((aborted, message)) => {
            let aborted = aborted || options.cancel.is_cancelled();
            out.insert(
                "stopReason".into(),
                json!(if aborted { "aborted" } else { "error" }),
            );
            out.insert("errorMessage".into(), json!(message));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn painter() -> Map<String, Value> {
        match json!({"type": "image", "id": "google/gemini-2.5-flash-image", "name": "n", "api": "openrouter-images", "provider": "openrouter", "baseUrl": "http://x/api/v1", "input": ["text", "image"], "output": ["image", "text"], "cost": {"input": 0.3, "output": 30, "cacheRead": 0, "cacheWrite": 0}})
        {
            Value::Object(o) => o,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_request_asks_for_images_and_text() {
        let body = request_body(
            &painter(),
            &json!({"input": [{"type": "text", "text": "a fox"}, {"type": "image", "data": "QUJD", "mimeType": "image/png"}]}),
        );
        assert_eq!(
            body,
            json!({"model": "google/gemini-2.5-flash-image", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "a fox"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
            ]}], "stream": false, "modalities": ["image", "text"]})
        );
    }

    #[test]
    fn the_response_gives_text_then_images_and_priced_usage() {
        let mut out = Map::new();
        read_response(
            &json!({"id": "gen-1", "usage": {"prompt_tokens": 10, "completion_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 4}},
            "choices": [{"message": {"content": "Here", "images": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                {"type": "image_url", "image_url": "https://remote/skipped.png"}
            ]}}]}),
            &painter(),
            &mut out,
        );
        assert_eq!(out["responseId"], "gen-1");
        assert_eq!(
            out["output"],
            json!([{"type": "text", "text": "Here"}, {"type": "image", "mimeType": "image/png", "data": "iVBO"}])
        );
        assert_eq!(out["usage"]["input"], 6);
        assert_eq!(out["usage"]["cacheRead"], 4);
        assert_eq!(out["usage"]["totalTokens"], 1010);
        assert!((out["usage"]["cost"]["output"].as_f64().unwrap_or(0.0) - 0.03).abs() < 1e-12);
    }
}
