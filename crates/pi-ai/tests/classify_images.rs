//! Classifier and image wire APIs against a loopback server: the requests they send and how
//! they read answers, usage and failures.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test
mod support;

use pi_ai::classify::{self, CallOptions};
use pi_ai::images;
use serde_json::{Map, Value, json};
use support::{Mock, Reply};

fn json_reply(status: u16, body: Value) -> Reply {
    Reply::error(status, &body.to_string(), "application/json")
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

fn options() -> CallOptions {
    CallOptions {
        api_key: Some("sk-test".into()),
        ..CallOptions::default()
    }
}

fn questions() -> Value {
    json!({
        "state": {"message": "works"},
        "questions": {
            "mood": {"type": "choice", "instructions": "How?", "criteria": {"happy": "Glad", "sad": "Not"}},
            "ok": {"type": "bool", "instructions": "Approves?", "criteria": {"true": "Yes", "false": "No"}}
        }
    })
}

#[tokio::test]
async fn system_one_posts_to_systemone_and_reads_answers_and_usage() {
    let mock = Mock::start(vec![
        json_reply(503, json!({"error": "busy"})),
        json_reply(200, json!({
            "answers": {
                "mood": {"type": "choice", "choice": "happy", "probabilities": {"happy": 0.9, "sad": 0.1}, "confidence": 0.8},
                "ok": {"type": "noul", "noul": 0.75}
            },
            "usage": {"input_tokens": 1000, "output_tokens": 3}
        })),
    ])
    .await;
    let jev = obj(
        json!({"type": "classifier", "id": "jev-1.13", "api": "typesafe-system-one", "provider": "opencode",
        "baseUrl": format!("{}/v1/", mock.base()), "input": ["text"],
        "cost": {"input": 0.042, "output": 0, "cacheRead": 0, "cacheWrite": 0}}),
    );
    let r = classify::classify(&jev, &questions(), &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert_eq!(
        r["answers"]["mood"],
        json!({"type": "choice", "choice": "happy", "probabilities": {"happy": 0.9, "sad": 0.1}, "confidence": 0.8})
    );
    assert_eq!(
        r["answers"]["ok"],
        json!({"type": "bool", "probability": 0.75})
    );
    assert_eq!(r["usage"]["input"], 1000);
    assert_eq!(r["usage"]["totalTokens"], 1003);
    let keys: Vec<&String> = r
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "api",
            "provider",
            "model",
            "answers",
            "stopReason",
            "timestamp",
            "usage"
        ]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the 503 is retried");
    assert_eq!(requests[1].path, "/v1/systemone");
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-test"));
    let body: Value = serde_json::from_str(&requests[1].body).unwrap_or_default();
    assert_eq!(body["model"], "jev-1.13");
    assert_eq!(body["questions"]["ok"]["type"], "noul");
}

#[tokio::test]
async fn classifier_failures_become_error_results() {
    let mock = Mock::start(vec![
        json_reply(400, json!({"error": "bad questions"})),
        json_reply(200, json!({"answers": {"mood": {"type": "choice", "choice": "happy", "probabilities": {}, "confidence": 1}}, "usage": {"input_tokens": 5}})),
    ])
    .await;
    let jev = obj(
        json!({"id": "jev-latest", "api": "typesafe-system-one", "provider": "typesafe", "baseUrl": mock.base(), "input": ["text"], "cost": {}}),
    );
    let r = classify::classify(&jev, &questions(), &options()).await;
    assert_eq!(r["stopReason"], "error");
    assert_eq!(
        r["errorMessage"],
        "System One API error (400): {\"error\":\"bad questions\"}"
    );
    let r = classify::classify(&jev, &questions(), &options()).await;
    assert_eq!(
        r["errorMessage"],
        "System One API did not return an answer for ok"
    );
    assert_eq!(r["usage"]["input"], 5, "a billed request keeps its usage");
    let r = classify::classify(&jev, &questions(), &CallOptions::default()).await;
    assert_eq!(r["errorMessage"], "No API key for provider: typesafe");
    let refused = obj(
        json!({"id": "jev-latest", "api": "typesafe-system-one", "provider": "typesafe", "baseUrl": "http://127.0.0.1:1", "input": ["text"]}),
    );
    let r = classify::classify(&refused, &questions(), &options()).await;
    assert_eq!(
        r["errorMessage"],
        "fetch failed: connect ECONNREFUSED 127.0.0.1:1"
    );
}

#[tokio::test]
async fn cloudflare_fills_the_account_and_unwraps_its_envelope() {
    let mock = Mock::start(vec![
        json_reply(200, json!({"success": true, "result": {"state": "Completed", "result": {"answers": {"ok": {"type": "noul", "noul": 0.2}}}}})),
        json_reply(200, json!({"success": false, "errors": [{"message": "no such model"}]})),
    ])
    .await;
    let clef = obj(
        json!({"id": "@cf/cloudflare/clef", "api": "cloudflare-workers-ai-system-one", "provider": "cloudflare-workers-ai",
        "baseUrl": format!("{}/accounts/{{CLOUDFLARE_ACCOUNT_ID}}/ai", mock.base()), "input": ["text", "image"]}),
    );
    let ctx = json!({"state": {}, "questions": {"ok": {"type": "bool", "instructions": "?", "criteria": {"true": "y", "false": "n"}}}});
    let mut opts = options();
    opts.env = vec![("CLOUDFLARE_ACCOUNT_ID".into(), "acct".into())];
    let r = classify::classify(&clef, &ctx, &opts).await;
    assert_eq!(
        r["answers"]["ok"],
        json!({"type": "bool", "probability": 0.2}),
        "{r}"
    );
    let r = classify::classify(&clef, &ctx, &opts).await;
    assert_eq!(
        r["errorMessage"],
        "Cloudflare Workers AI error: no such model"
    );
    let requests = mock.requests();
    assert_eq!(requests[0].path, "/accounts/acct/ai/run");
    let body: Value = serde_json::from_str(&requests[0].body).unwrap_or_default();
    assert_eq!(body["input"]["questions"]["ok"]["type"], "noul");
}

#[tokio::test]
async fn decisions_reads_answers_by_name_and_does_not_retry_a_gateway_timeout() {
    let mock = Mock::start(vec![
        json_reply(200, json!({"answers": [
            {"name": "ok", "type": "predicate", "probability": 0.6},
            {"name": "mood", "type": "choice", "choice": "sad", "probabilities": [{"value": "happy", "probability": 0.3}, {"value": "sad", "probability": 0.7}], "confidence": 0.5}
        ], "usage": {"input_tokens": 10, "output_tokens": 0}})),
        Reply::error(504, "<html>timeout</html>", "text/html"),
    ])
    .await;
    let luna = obj(
        json!({"id": "gpt-6-luna", "api": "openai-decisions", "provider": "openai", "baseUrl": format!("{}/v1", mock.base()), "input": ["text", "image"], "cost": {"input": 0.1}}),
    );
    let r = classify::classify(&luna, &questions(), &options()).await;
    assert_eq!(
        r["answers"],
        json!({
            "mood": {"type": "choice", "choice": "sad", "probabilities": {"happy": 0.3, "sad": 0.7}, "confidence": 0.5},
            "ok": {"type": "bool", "probability": 0.6}
        })
    );
    let r = classify::classify(&luna, &questions(), &options()).await;
    assert_eq!(
        r["errorMessage"],
        "OpenAI Decisions error (504): the request timed out at the gateway. Very large inputs (above roughly 600K tokens) currently exceed its time limit."
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(mock.requests()[0].path, "/v1/decisions");
}

#[tokio::test]
async fn openrouter_images_come_back_as_blocks() {
    let mock = Mock::start(vec![
        json_reply(200, json!({"id": "gen-1", "choices": [{"message": {"role": "assistant", "content": "A fox.", "images": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 1290}})),
        json_reply(401, json!({"error": {"message": "No auth credentials found", "code": 401}})),
    ])
    .await;
    let painter = obj(
        json!({"type": "image", "id": "google/gemini-2.5-flash-image", "api": "openrouter-images", "provider": "openrouter",
        "baseUrl": format!("{}/api/v1", mock.base()), "input": ["text", "image"], "output": ["image", "text"],
        "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0, "cacheWrite": 0}}),
    );
    let ctx = json!({"input": [{"type": "text", "text": "A red fox"}]});
    let r = images::generate_images(&painter, &ctx, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    assert_eq!(
        r["output"],
        json!([{"type": "text", "text": "A fox."}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0K"}])
    );
    assert_eq!(r["usage"]["output"], 1290);
    let r = images::generate_images(&painter, &ctx, &options()).await;
    assert_eq!(
        r["errorMessage"],
        "401: {\"message\":\"No auth credentials found\",\"code\":401}"
    );
    let requests = mock.requests();
    assert_eq!(requests[0].path, "/api/v1/chat/completions");
    let body: Value = serde_json::from_str(&requests[0].body).unwrap_or_default();
    assert_eq!(body["modalities"], json!(["image", "text"]));
    assert_eq!(body["stream"], false);
}

#[tokio::test]
async fn images_go_as_typesafe_assets_with_the_opt_in_header_and_copilot_serves_under_v1() {
    let answer = json!({"answers": {"ok": {"type": "noul", "noul": 0.5}}});
    let mock = Mock::start(vec![
        json_reply(200, answer.clone()),
        json_reply(200, answer),
    ])
    .await;
    let ctx = json!({"state": {"task": "x"}, "images": [{"type": "image", "data": "iVBO", "mimeType": "image/png"}],
        "questions": {"ok": {"type": "bool", "instructions": "?", "criteria": {"true": "y", "false": "n"}}}});
    let jev = obj(
        json!({"id": "jev-latest", "api": "typesafe-system-one", "provider": "typesafe", "baseUrl": mock.base(),
        "input": ["text", "image"], "compat": {"imageInput": "assets", "sendImageOptInHeader": true}}),
    );
    let r = classify::classify(&jev, &ctx, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    let copilot = obj(
        json!({"id": "microsoft-decision-1", "api": "typesafe-system-one", "provider": "github-copilot",
        "baseUrl": mock.base(), "input": ["text"], "headers": {"Copilot-Integration-Id": "vscode-chat"}}),
    );
    let mut text_only = ctx.clone();
    text_only.as_object_mut().unwrap().remove("images");
    let r = classify::classify(&copilot, &text_only, &options()).await;
    assert_eq!(r["stopReason"], "stop", "{r}");
    let requests = mock.requests();
    assert_eq!(
        requests[0].header("typesafe-danger-zone-images"),
        Some("true")
    );
    let body: Value = serde_json::from_str(&requests[0].body).unwrap();
    assert_eq!(body["state"], json!(["<image-1>", {"task": "x"}]));
    assert_eq!(body["assets"]["<image-1>"]["format"], "png");
    assert_eq!(requests[1].path, "/v1/systemone");
    assert_eq!(
        requests[1].header("copilot-integration-id"),
        Some("vscode-chat")
    );
    assert_eq!(requests[1].header("typesafe-danger-zone-images"), None);
}
