//! System One: TypeSafe's classifier protocol, `POST <base>/systemone` with `{model, state,
//! questions}` (OpenRouter, Vercel AI Gateway, OpenCode and GitHub Copilot serve it too), and
//! the same questions on Cloudflare Workers AI's REST endpoint, `POST <base>/run` with
//! `{model, input}` inside Cloudflare's envelope. Public `bool` questions are `noul` on the
//! wire. Each service takes images its own way (`compat.imageInput`).

use super::{CallError, CallOptions, join_url, parse_usage, post_json, required_number, str_of};
use serde_json::{Map, Value, json};

const TYPESAFE_LABEL: &str = "System One API";
const CLOUDFLARE_LABEL: &str = "Cloudflare Workers AI";
/// Clef accepts at most this many images per request.
const MAX_DATA_URL_IMAGES: usize = 4;

struct Compat {
    image_input: &'static str,
    opt_in_header: bool,
}

fn detect(api: &str, model: &Map<String, Value>) -> Compat {
    if api == "cloudflare-workers-ai-system-one" {
        let clef = str_of(model, "id").starts_with("@cf/cloudflare/clef");
        return Compat {
            image_input: if clef { "images" } else { "assets" },
            opt_in_header: false,
        };
    }
    // OpenRouter by provider id (survives baseUrl overrides) or by host (regional endpoints).
    if str_of(model, "provider") == "openrouter"
        || str_of(model, "baseUrl").contains("openrouter.ai")
    {
        Compat {
            image_input: "state-image-urls",
            opt_in_header: false,
        }
    } else {
        Compat {
            image_input: "assets",
            opt_in_header: true,
        }
    }
}

/// `{state, questions}` with `bool` questions as `noul`, each question's keys kept in order.
fn wire_request(context: &Value) -> Map<String, Value> {
    let questions: Map<String, Value> = context["questions"]
        .as_object()
        .map(|qs| {
            qs.iter()
                .map(|(id, q)| {
                    let mut q = q.clone();
                    if q["type"] == "bool" {
                        q["type"] = json!("noul");
                    }
                    (id.clone(), q)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("state".into(), context["state"].clone());
    out.insert("questions".into(), Value::Object(questions));
    out
}

fn add_images(
    label: &str,
    model: &Map<String, Value>,
    input: &str,
    images: &[Value],
    request: &mut Map<String, Value>,
) -> Result<(), CallError> {
    let id = str_of(model, "id");
    let data_url = |i: &Value| {
        format!(
            "data:{};base64,{}",
            i["mimeType"].as_str().unwrap_or(""),
            i["data"].as_str().unwrap_or("")
        )
    };
    let state = request.get("state").cloned().unwrap_or(Value::Null);
    match input {
        "images" => {
            if images.len() > MAX_DATA_URL_IMAGES {
                return Err(CallError::Message(format!(
                    "{label} accepts at most {MAX_DATA_URL_IMAGES} images for {id}, got {}",
                    images.len()
                )));
            }
            let mut urls = Vec::new();
            for i in images {
                let mime = i["mimeType"].as_str().unwrap_or("");
                if !matches!(mime, "image/png" | "image/jpeg" | "image/webp") {
                    return Err(CallError::Message(format!(
                        "{label} accepts PNG, JPEG, and WebP images for {id}, got {mime}"
                    )));
                }
                urls.push(json!(data_url(i)));
            }
            request.insert("images".into(), Value::Array(urls));
        }
        "state-image-urls" => {
            let mut parts: Vec<Value> = images
                .iter()
                .map(|i| json!({"type": "image_url", "image_url": {"url": data_url(i)}}))
                .collect();
            parts.push(state);
            request.insert("state".into(), Value::Array(parts));
        }
        _ => {
            let mut assets = Map::new();
            for (n, i) in images.iter().enumerate() {
                let mime = i["mimeType"].as_str().unwrap_or("");
                let format = match mime {
                    "image/png" => "png",
                    "image/jpeg" => "jpeg",
                    _ => {
                        return Err(CallError::Message(format!(
                            "{label} accepts PNG and JPEG images for {id}, got {mime}"
                        )));
                    }
                };
                assets.insert(
                    format!("<image-{}>", n + 1),
                    json!({"type": "image", "format": format, "data_base64": i["data"]}),
                );
            }
            // Every asset must be referenced from the request, before the state.
            let mut state_parts: Vec<Value> = assets.keys().map(|k| json!(k)).collect();
            state_parts.push(state);
            request.insert("assets".into(), Value::Object(assets));
            request.insert("state".into(), Value::Array(state_parts));
        }
    }
    Ok(())
}

fn probabilities(label: &str, value: Option<&Value>, id: &str) -> Result<Value, CallError> {
    let Some(map) = value.and_then(Value::as_object) else {
        return Err(CallError::Message(format!(
            "{label} returned invalid probabilities for {id}"
        )));
    };
    let mut out = Map::new();
    for (k, p) in map {
        out.insert(
            k.clone(),
            required_number(label, Some(p), &format!("probability for {id}.{k}"))?,
        );
    }
    Ok(Value::Object(out))
}

/// Answers by question id, in the order of the questions.
fn parse_answers(label: &str, value: Option<&Value>, context: &Value) -> Result<Value, CallError> {
    let Some(answers) = value.and_then(Value::as_object) else {
        return Err(CallError::Message(format!(
            "{label} returned an unexpected response"
        )));
    };
    let mut out = Map::new();
    for (id, question) in context["questions"].as_object().into_iter().flatten() {
        let Some(answer) = answers.get(id).filter(|a| a.is_object()) else {
            return Err(CallError::Message(format!(
                "{label} did not return an answer for {id}"
            )));
        };
        let parsed = match question["type"].as_str() {
            Some("choice") => {
                let Some(choice) = answer["choice"]
                    .as_str()
                    .filter(|_| answer["type"] == "choice")
                else {
                    return Err(CallError::Message(format!(
                        "{label} did not return a choice answer for {id}"
                    )));
                };
                json!({
                    "type": "choice",
                    "choice": choice,
                    "probabilities": probabilities(label, answer.get("probabilities"), id)?,
                    "confidence": required_number(label, answer.get("confidence"), &format!("confidence for {id}"))?,
                })
            }
            Some("score") => {
                if answer["type"] != "score" {
                    return Err(CallError::Message(format!(
                        "{label} did not return a score answer for {id}"
                    )));
                }
                json!({
                    "type": "score",
                    "score": required_number(label, answer.get("score"), &format!("score for {id}"))?,
                    "confidence": required_number(label, answer.get("confidence"), &format!("confidence for {id}"))?,
                })
            }
            _ => {
                if answer["type"] != "noul" {
                    return Err(CallError::Message(format!(
                        "{label} did not return a bool answer for {id}"
                    )));
                }
                json!({
                    "type": "bool",
                    "probability": required_number(label, answer.get("noul"), &format!("probability for {id}"))?,
                })
            }
        };
        out.insert(id.clone(), parsed);
    }
    Ok(Value::Object(out))
}

fn cloudflare_output(body: Value) -> Result<Value, CallError> {
    let unexpected = || {
        CallError::Message(format!(
            "{CLOUDFLARE_LABEL} returned an unexpected response"
        ))
    };
    let Value::Object(mut body) = body else {
        return Err(unexpected());
    };
    if body.get("success") == Some(&Value::Bool(false)) {
        let messages: Vec<String> = body
            .get("errors")
            .and_then(Value::as_array)
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["message"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        return Err(CallError::Message(if messages.is_empty() {
            format!("{CLOUDFLARE_LABEL} request failed")
        } else {
            format!("{CLOUDFLARE_LABEL} error: {}", messages.join("; "))
        }));
    }
    let Some(Value::Object(mut result)) = body.remove("result") else {
        return Err(unexpected());
    };
    if result.contains_key("answers") {
        return Ok(Value::Object(result));
    }
    if result.get("state") != Some(&json!("Completed")) {
        let state = match result.get("state") {
            None => "undefined".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => pi_js::json::to_js_string(v).unwrap_or_default(),
        };
        return Err(CallError::Message(format!(
            "{CLOUDFLARE_LABEL} run did not complete (state: {state})"
        )));
    }
    match result.remove("result") {
        Some(inner @ Value::Object(_)) => Ok(inner),
        _ => Err(unexpected()),
    }
}

/// One System One classification; fills `out` (usage, then answers).
pub(super) async fn classify(
    api: &str,
    model: &Map<String, Value>,
    context: &Value,
    options: &CallOptions,
    out: &mut Map<String, Value>,
) -> Result<(), (&'static str, CallError)> {
    let cloudflare = api == "cloudflare-workers-ai-system-one";
    let label = if cloudflare {
        CLOUDFLARE_LABEL
    } else {
        TYPESAFE_LABEL
    };
    let prefix = if cloudflare {
        "Cloudflare Workers AI error"
    } else {
        "System One API error"
    };
    let fail = |e| (prefix, e);
    if api != "typesafe-system-one" && !cloudflare {
        return Err(fail(CallError::Message(format!(
            "Unsupported classifier API: {api}"
        ))));
    }
    let mut request = wire_request(context);
    let mut options = options.clone();
    let images = context["images"].as_array().cloned().unwrap_or_default();
    if !images.is_empty() {
        let accepts = model
            .get("input")
            .and_then(Value::as_array)
            .is_some_and(|i| i.iter().any(|m| m == "image"));
        if !accepts {
            return Err(fail(CallError::Message(format!(
                "{label} does not support image input for {}",
                str_of(model, "id")
            ))));
        }
        let detected = detect(api, model);
        let compat = model.get("compat");
        let input = compat
            .and_then(|c| c["imageInput"].as_str())
            .unwrap_or(detected.image_input)
            .to_string();
        add_images(label, model, &input, &images, &mut request).map_err(fail)?;
        let opt_in = compat
            .and_then(|c| c["sendImageOptInHeader"].as_bool())
            .unwrap_or(detected.opt_in_header);
        if opt_in {
            // Before the request's own headers, which may override it.
            options.headers.insert(
                0,
                ("TypeSafe-Danger-Zone-Images".into(), Some("true".into())),
            );
        }
    }
    let id = json!(str_of(model, "id"));
    let (url, payload) = if cloudflare {
        (
            join_url(str_of(model, "baseUrl"), "run"),
            json!({"model": id, "input": request}),
        )
    } else {
        let mut payload = Map::new();
        payload.insert("model".into(), id);
        payload.extend(request);
        (
            join_url(str_of(model, "baseUrl"), "systemone"),
            Value::Object(payload),
        )
    };
    let body = post_json(label, &url, model, &payload, &options, &[])
        .await
        .map_err(fail)?;
    let result = if cloudflare {
        cloudflare_output(body).map_err(fail)?
    } else if body.is_object() {
        body
    } else {
        return Err(fail(CallError::Message(format!(
            "{TYPESAFE_LABEL} returned an unexpected response"
        ))));
    };
    // Before the answers: a request with malformed answers was still billed.
    if let Some(usage) = parse_usage(result.get("usage"), model) {
        out.insert("usage".into(), usage);
    }
    let answers = parse_answers(label, result.get("answers"), context).map_err(fail)?;
    out.insert("answers".into(), answers);
    Ok(())
}

#[cfg(test)]
pub(super) fn request_for_test(
    api: &str,
    model: &Map<String, Value>,
    context: &Value,
) -> Result<Value, String> {
    let mut request = wire_request(context);
    let images = context["images"].as_array().cloned().unwrap_or_default();
    if !images.is_empty() {
        let d = detect(api, model);
        let input = model
            .get("compat")
            .and_then(|c| c["imageInput"].as_str())
            .unwrap_or(d.image_input)
            .to_string();
        add_images(TYPESAFE_LABEL, model, &input, &images, &mut request)
            .map_err(|e| e.text("x"))?;
    }
    Ok(Value::Object(request))
}
