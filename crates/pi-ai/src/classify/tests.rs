use super::*;

fn model(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

fn context() -> Value {
    json!({
        "state": {"message": "works, thanks"},
        "questions": {
            "mood": {"type": "choice", "instructions": "How?", "criteria": {"happy": "Satisfied", "sad": ""}},
            "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["none", "today"]},
            "approved": {"type": "bool", "instructions": "Approves?", "criteria": {"true": "Yes", "false": "No"}}
        }
    })
}

#[test]
fn system_one_sends_bool_questions_as_noul_and_images_per_service() {
    let jev = model(
        json!({"id": "jev-latest", "provider": "typesafe", "baseUrl": "http://x/v1/", "input": ["text", "image"]}),
    );
    let r =
        system_one::request_for_test("typesafe-system-one", &jev, &context()).unwrap_or_default();
    assert_eq!(
        r["questions"]["approved"],
        json!({"type": "noul", "instructions": "Approves?", "criteria": {"true": "Yes", "false": "No"}})
    );
    assert_eq!(r["questions"]["mood"]["type"], "choice");
    let mut with_images = context();
    with_images["images"] = json!([{"type": "image", "data": "QQ==", "mimeType": "image/png"}]);
    let r =
        system_one::request_for_test("typesafe-system-one", &jev, &with_images).unwrap_or_default();
    assert_eq!(
        r["state"],
        json!(["<image-1>", {"message": "works, thanks"}])
    );
    assert_eq!(
        r["assets"],
        json!({"<image-1>": {"type": "image", "format": "png", "data_base64": "QQ=="}})
    );
    let router = model(
        json!({"id": "typesafe/jev-1.14", "provider": "openrouter", "baseUrl": "http://x", "input": ["text", "image"]}),
    );
    let r = system_one::request_for_test("typesafe-system-one", &router, &with_images)
        .unwrap_or_default();
    assert_eq!(
        r["state"][0],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}})
    );
    let clef = model(
        json!({"id": "@cf/cloudflare/clef", "provider": "cloudflare-workers-ai", "baseUrl": "http://x", "input": ["text", "image"]}),
    );
    let r = system_one::request_for_test("cloudflare-workers-ai-system-one", &clef, &with_images)
        .unwrap_or_default();
    assert_eq!(r["images"], json!(["data:image/png;base64,QQ=="]));
    let mut gif = context();
    gif["images"] = json!([{"type": "image", "data": "R0", "mimeType": "image/gif"}]);
    assert_eq!(
        system_one::request_for_test("typesafe-system-one", &jev, &gif),
        Err("System One API accepts PNG and JPEG images for jev-latest, got image/gif".into())
    );
}

#[test]
fn decisions_requests_list_choices_levels_and_predicates() {
    let luna = model(
        json!({"id": "gpt-6-luna", "provider": "openai", "api": "openai-decisions", "baseUrl": "http://x/v1", "input": ["text", "image"]}),
    );
    let body = decisions::request_body(&luna, &context()).unwrap_or(Value::Null);
    assert_eq!(
        body,
        json!({"model": "gpt-6-luna", "input": "{\"message\":\"works, thanks\"}", "questions": [
            {"type": "choice", "name": "mood", "instructions": "How?", "choices": [{"value": "happy", "description": "Satisfied"}, {"value": "sad"}]},
            {"type": "score", "name": "urgency", "instructions": "How urgent?", "levels": [{"label": "none"}, {"label": "today"}]},
            {"type": "predicate", "name": "approved", "instructions": "Approves?\n\nTrue means: Yes\nFalse means: No"}
        ]})
    );
}

#[test]
fn usage_is_priced_by_tier() {
    let luna = model(
        json!({"cost": {"input": 0.1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "tiers": [{"inputTokensAbove": 272000, "input": 0.2, "output": 0, "cacheRead": 0, "cacheWrite": 0}]}}),
    );
    let small = parse_usage(
        Some(&json!({"input_tokens": 1000, "output_tokens": 2})),
        &luna,
    )
    .unwrap_or_default();
    assert_eq!(small["totalTokens"], 1002);
    assert!((small["cost"]["total"].as_f64().unwrap_or(0.0) - 0.0001).abs() < 1e-12);
    let big = parse_usage(Some(&json!({"input_tokens": 300000})), &luna).unwrap_or_default();
    assert!((big["cost"]["input"].as_f64().unwrap_or(0.0) - 0.06).abs() < 1e-12);
    assert_eq!(parse_usage(Some(&json!({})), &luna), None);
}

#[test]
fn http_errors_are_worded_as_pi_words_them() {
    let e = CallError::Status {
        label: "System One API",
        status: 400,
        body: "{\"error\":\"bad\"}\n".into(),
    };
    assert_eq!(
        e.text("System One API error"),
        "System One API error (400): {\"error\":\"bad\"}"
    );
    let e = CallError::Status {
        label: "System One API",
        status: 502,
        body: String::new(),
    };
    assert_eq!(
        e.text("System One API error"),
        "System One API error (502): System One API returned 502"
    );
}
