//! Replays the scenarios recorded from Pi 1.6.0 (`tests/fixtures/<api>/*.json`, made by
//! `tests/fixtures/record/record.py`): for every assistant response, the same transcript goes
//! through our adapter against the same response bytes, and the request body, the streamed
//! events and the final message must equal the reference's.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::message::AgentMessage;
use pi_protocol::model::Model;
use pi_protocol::thinking::ThinkingLevel;
use serde_json::{Map, Value, json};
use std::time::Duration;
use support::{Mock, Reply, reply_from};

fn fixture_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    for api in [
        "openai-completions",
        "anthropic-messages",
        "openai-responses",
        "google-generative-ai",
        "pi-messages",
        "azure-openai-responses",
        "openai-codex-responses",
        "mistral-conversations",
        "google-vertex",
        "bedrock-converse-stream",
    ] {
        if let Ok(dir) = std::fs::read_dir(root.join(api)) {
            for f in dir.flatten() {
                files.push(f.path());
            }
        }
    }
    files.sort();
    files
}

/// The `Model` Pi builds from a models.json entry (as in the recorder's models.json).
fn model_from(models: &Value, provider: &str, id: &str, base: &str) -> Model {
    let p = &models["providers"][provider];
    let m = p["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap();
    let base_url = p["baseUrl"]
        .as_str()
        .unwrap()
        .replace("http://127.0.0.1:PORT", base)
        .replace("http://127.0.0.1:0", base);
    let api = m.get("api").unwrap_or(&p["api"]);
    let name = m.get("name").and_then(Value::as_str).unwrap_or(id);
    let mut v = json!({
        "id": id, "name": name, "api": api, "provider": provider, "baseUrl": base_url,
        "reasoning": m["reasoning"], "input": m["input"], "cost": m["cost"],
        "contextWindow": m["contextWindow"], "maxTokens": m["maxTokens"],
    });
    for k in ["compat", "thinkingLevelMap"] {
        if let Some(c) = m.get(k) {
            v[k] = c.clone();
        }
    }
    serde_json::from_value(v).unwrap()
}

fn wire_event(ev: &StreamEvent) -> Option<Value> {
    Some(match ev {
        StreamEvent::TextStart { index, .. } => json!({"type":"text_start","contentIndex":index}),
        StreamEvent::TextDelta { index, delta, .. } => {
            json!({"type":"text_delta","contentIndex":index,"delta":delta})
        }
        StreamEvent::TextEnd {
            index,
            content,
            signature,
            ..
        } => {
            let mut e = json!({"type":"text_end","contentIndex":index,"content":content});
            if let Some(sig) = signature {
                e["contentSignature"] = json!(sig);
            }
            e
        }
        StreamEvent::ThinkingStart { index, .. } => {
            json!({"type":"thinking_start","contentIndex":index})
        }
        StreamEvent::ThinkingDelta { index, delta, .. } => {
            json!({"type":"thinking_delta","contentIndex":index,"delta":delta})
        }
        StreamEvent::ThinkingEnd {
            index,
            content,
            signature,
            ..
        } => {
            let mut e = json!({"type":"thinking_end","contentIndex":index,"content":content});
            if let Some(sig) = signature {
                e["contentSignature"] = json!(sig);
            }
            e
        }
        StreamEvent::ToolcallStart {
            index, id, name, ..
        } => json!({"type":"toolcall_start","contentIndex":index,"id":id,"toolName":name}),
        StreamEvent::ToolcallDelta { index, delta, .. } => {
            json!({"type":"toolcall_delta","contentIndex":index,"delta":delta})
        }
        StreamEvent::ToolcallEnd {
            index, tool_call, ..
        } => {
            json!({"type":"toolcall_end","contentIndex":index,"toolCall":serde_json::to_value(tool_call).unwrap()})
        }
        _ => return None,
    })
}

/// Normalizes run-dependent fields of a final message (as JSON text, keys in order).
fn normalize(msg: &str) -> String {
    let mut v: Map<String, Value> = serde_json::from_str(msg).unwrap();
    for k in ["timestamp", "durationMs"] {
        if v.contains_key(k) {
            v.insert(k.into(), json!(0));
        }
    }
    v.remove("thinkingLevel");
    // Diagnostics carry clocks, a JavaScript stack and the mock's port.
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    if let Some(Value::Array(ds)) = v.get_mut("diagnostics") {
        for d in ds {
            d["timestamp"] = json!(0);
            if let Some(stack) = d["error"].get_mut("stack") {
                let first = stack
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                *stack = json!(first);
            }
            if let Some(details) = d.get_mut("details").and_then(Value::as_object_mut) {
                if details.contains_key("timestampMs") {
                    details.insert("timestampMs".into(), json!(0));
                }
                if let Some(url) = details.get("url").and_then(Value::as_str) {
                    let url = port.replace(url, "127.0.0.1:PORT").into_owned();
                    details.insert("url".into(), json!(url));
                }
            }
        }
    }
    generated_ids(&shrink(&pi_js::json::to_js_string(&v).unwrap()))
}

/// A run of 65,536 or more equal characters as `<<FILL:c:n>>`, as the recorder writes
/// oversized deltas.
fn shrink(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(1 << 20));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut n = 1usize;
        while chars.peek() == Some(&c) {
            chars.next();
            n += 1;
        }
        if n >= 65_536 {
            out.push_str(&format!("<<FILL:{c}:{n}>>"));
        } else {
            out.extend(std::iter::repeat_n(c, n));
        }
    }
    out
}

/// Google tool-call ids Pi generates (`<name>_<unix ms>_<counter>`) differ per run.
fn generated_ids(text: &str) -> String {
    let re = regex::Regex::new(r"([A-Za-z0-9]+)_1\d{12}_\d+").unwrap();
    re.replace_all(text, "${1}_<generated>").into_owned()
}

struct Case {
    name: String,
    model: Model,
    options: StreamOptions,
    context: Vec<AgentMessage>,
    /// The replies this response consumes (more than one when the client retries).
    replies: Vec<Reply>,
    request: Option<Value>,
    events: Vec<Value>,
    message: String,
    abort: bool,
    mock: Mock,
}

/// The session id Pi sent: one per recording, found in a session header or a body field.
fn fixture_session(fx: &Value) -> Option<String> {
    for step in fx["steps"].as_array().unwrap() {
        for r in step["requests"].as_array().unwrap() {
            for h in r["headers"].as_array().unwrap() {
                if ["session-id", "x-affinity"].contains(&h[0].as_str().unwrap()) {
                    return Some(h[1].as_str().unwrap().to_string());
                }
            }
            let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap_or_default();
            for v in [&body["options"]["sessionId"], &body["prompt_cache_key"]] {
                if let Some(s) = v.as_str() {
                    return Some(s.to_string());
                }
            }
        }
    }
    None
}

async fn cases_for(path: &std::path::Path) -> Vec<Case> {
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mock = Mock::start(vec![]).await;
    let base = mock.base();
    let mut out = Vec::new();
    let mut history: Vec<AgentMessage> = Vec::new();
    let idle_ms = fx["settings"]
        .get("httpIdleTimeoutMs")
        .and_then(Value::as_u64);
    for (si, step) in fx["steps"].as_array().unwrap().iter().enumerate() {
        let requests = step["requests"].as_array().unwrap();
        let messages_in_step = step["stdout"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| {
                let l = l.as_str().unwrap();
                l.starts_with("{\"type\":\"message_end\",\"message\":{\"role\":\"assistant\"")
            })
            .count();
        let responses = step["responses"].as_array().unwrap();
        let mut k = 0;
        let mut events = Vec::new();
        let mut pending_ctx = None;
        for line in step["stdout"].as_array().unwrap() {
            let rec: Value = serde_json::from_str(line.as_str().unwrap()).unwrap();
            match rec["type"].as_str() {
                Some("message_start") if rec["message"]["role"] == "assistant" => {
                    pending_ctx = Some(history.clone());
                    events.clear();
                }
                Some("message_update") => {
                    let mut e = rec["assistantMessageEvent"].clone();
                    e.as_object_mut().unwrap().remove("partial");
                    events.push(e);
                }
                Some("message_end") => {
                    let raw = serde_json::to_string(&rec["message"]).unwrap();
                    let msg: AgentMessage = serde_json::from_str(&raw).unwrap();
                    if let (AgentMessage::Assistant(a), Some(ctx)) = (&msg, pending_ctx.take()) {
                        let level = a.thinking_level.filter(|l| *l != ThinkingLevel::Off);
                        let request = requests.get(k).cloned();
                        let session = fixture_session(&fx);
                        let provider = fx["provider"].as_str().unwrap();
                        let mut model = model_from(
                            &fx["models"],
                            provider,
                            fx["model"].as_str().unwrap(),
                            &base,
                        );
                        if request.is_none() {
                            model.base_url =
                                model.base_url.replace(&base, "http://127.0.0.1:59999");
                        }
                        let stall = responses
                            .get(k)
                            .is_some_and(|r| r.get("stall_after").is_some());
                        let abort = step.get("abort_after_ms").is_some_and(|v| !v.is_null());
                        let options = StreamOptions {
                            api_key: fx["models"]["providers"][provider]["apiKey"]
                                .as_str()
                                .map(String::from),
                            reasoning: level,
                            session_id: session,
                            idle_timeout: Some(Duration::from_millis(if stall && !abort {
                                200
                            } else {
                                idle_ms.unwrap_or(5000)
                            })),
                            user_agent: Some("pi/1.6.0 (linux; node/v22.23.5; x64)".into()),
                            max_retries: fx["settings"]["retry"]["provider"]["maxRetries"]
                                .as_u64()
                                .map(|n| n as u32),
                            env: fx["env"]
                                .as_object()
                                .map(|e| {
                                    e.iter()
                                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                                        .collect()
                                })
                                .unwrap_or_default(),
                            ..StreamOptions::default()
                        };
                        out.push(Case {
                            name: format!(
                                "{} step {} ({}) response {k}",
                                path.display(),
                                si + 1,
                                step["cmd"]["message"]
                            ),
                            model,
                            options,
                            context: ctx,
                            // One response that took several requests: the client retried.
                            replies: if messages_in_step == 1 && requests.len() > 1 {
                                responses
                                    .iter()
                                    .take(requests.len())
                                    .map(reply_from)
                                    .collect()
                            } else {
                                responses.get(k).map(reply_from).into_iter().collect()
                            },
                            request,
                            events: std::mem::take(&mut events),
                            message: normalize(&raw),
                            abort,
                            mock: mock.clone(),
                        });
                        k += 1;
                    }
                    history.push(msg);
                }
                _ => {}
            }
        }
    }
    out
}

async fn run_case(case: Case) -> Vec<String> {
    let mut problems = Vec::new();
    let before = case.mock.requests().len();
    for r in &case.replies {
        case.mock.push(r.clone());
    }
    let cancel = case.options.cancel.clone();
    if case.abort {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
    }
    let mut stream = pi_ai::stream(
        &case.model,
        LlmContext::from_messages(case.context),
        case.options,
    );
    let mut events = Vec::new();
    let mut last = None;
    while let Some(ev) = stream.next().await {
        match &ev {
            StreamEvent::Done { message } | StreamEvent::Error { message } => {
                last = Some(pi_js::json::to_js_string(message).unwrap())
            }
            other => events.extend(wire_event(other)),
        }
    }
    if let Some(expected) = &case.request {
        let got = case.mock.requests();
        match got.get(before) {
            None => problems.push(format!("{}: no request sent", case.name)),
            Some(g) => {
                let want = expected["body"].as_str().unwrap();
                let ours = shrink(&g.body);
                if ours != want {
                    let at = ours
                        .bytes()
                        .zip(want.bytes())
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    let lo = at.saturating_sub(150);
                    problems.push(format!(
                        "{}: request body differs at byte {at}\n  ours: …{}\n  pi:   …{}",
                        case.name,
                        ours.get(lo..(at + 150).min(ours.len())).unwrap_or(""),
                        want.get(lo..(at + 150).min(want.len())).unwrap_or("")
                    ));
                }
                for name in compared_headers(&case.model.api) {
                    // The body hash of a request whose history holds an oversized event: the
                    // context is rebuilt from the recording's shrunk text (`<<FILL:…>>`), so
                    // only the body, compared above in that form, can match.
                    if *name == "x-amz-content-sha256" && want.contains("<<FILL:") {
                        continue;
                    }
                    let want = expected["headers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|h| h[0] == *name)
                        .map(|h| h[1].as_str().unwrap().to_string());
                    let ours = g.header(name).map(str::to_string);
                    if ours != want {
                        problems.push(format!(
                            "{}: header {name}: ours {ours:?}, pi {want:?}",
                            case.name
                        ));
                    }
                }
                let want_path = expected["path"].as_str().unwrap();
                if g.path != want_path {
                    problems.push(format!("{}: path {} != {}", case.name, g.path, want_path));
                }
            }
        }
    }
    let want = case.events;
    let (events, want_events) = (
        generated_ids(&shrink(&Value::Array(events).to_string())),
        generated_ids(&Value::Array(want).to_string()),
    );
    if events != want_events {
        problems.push(format!(
            "{}: events differ\n  ours: {}\n  pi:   {}",
            case.name, events, want_events
        ));
    }
    let ours = last.map(|m| normalize(&m)).unwrap_or_default();
    if ours != case.message {
        problems.push(format!(
            "{}: final message differs\n  ours: {ours}\n  pi:   {}",
            case.name, case.message
        ));
    }
    problems
}

/// The request headers that must equal Pi's for an API (identity and transport headers of
/// the SDKs Pi uses, like `x-stainless-*`, are not part of the contract).
fn compared_headers(api: &str) -> &'static [&'static str] {
    match api {
        "azure-openai-responses" => &["api-key", "accept", "content-type", "authorization"],
        "openai-codex-responses" => &[
            "originator",
            "authorization",
            "chatgpt-account-id",
            "openai-beta",
            "accept",
            "content-type",
            "session-id",
            "x-client-request-id",
        ],
        "mistral-conversations" => &["accept", "authorization", "content-type", "x-affinity"],
        "pi-messages" => &["authorization", "accept", "content-type", "user-agent"],
        "google-vertex" => &["x-goog-api-key", "content-type", "authorization"],
        "bedrock-converse-stream" => &["content-type", "x-amz-content-sha256"],
        _ => &[],
    }
}

async fn check_api(api: &str) {
    let mut problems = Vec::new();
    let mut n = 0;
    for f in fixture_files()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains(&format!("/{api}/")))
    {
        for case in cases_for(&f).await {
            n += 1;
            problems.extend(run_case(case).await);
        }
    }
    assert!(n > 0, "no fixtures for {api}");
    assert!(
        problems.is_empty(),
        "{} of {n} cases differ:\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

#[tokio::test]
async fn openai_completions_matches_the_reference_recordings() {
    check_api("openai-completions").await;
}

#[tokio::test]
async fn anthropic_messages_matches_the_reference_recordings() {
    check_api("anthropic-messages").await;
}

#[tokio::test]
async fn openai_responses_matches_the_reference_recordings() {
    check_api("openai-responses").await;
}

#[tokio::test]
async fn google_generative_ai_matches_the_reference_recordings() {
    check_api("google-generative-ai").await;
}

#[tokio::test]
async fn pi_messages_matches_the_reference_recordings() {
    check_api("pi-messages").await;
}

#[tokio::test]
async fn azure_openai_responses_matches_the_reference_recordings() {
    check_api("azure-openai-responses").await;
}

#[tokio::test]
async fn openai_codex_responses_matches_the_reference_recordings() {
    check_api("openai-codex-responses").await;
}

#[tokio::test]
async fn mistral_conversations_matches_the_reference_recordings() {
    check_api("mistral-conversations").await;
}

#[tokio::test]
async fn google_vertex_matches_the_reference_recordings() {
    check_api("google-vertex").await;
}

#[tokio::test]
async fn bedrock_converse_stream_matches_the_reference_recordings() {
    check_api("bedrock-converse-stream").await;
}
