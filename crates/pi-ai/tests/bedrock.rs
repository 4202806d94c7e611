//! Bedrock's transport pieces against what Pi 1.6.0 sent: the SigV4 signature of recorded
//! requests (same keys, same clock reading), and bearer-token and session-token requests
//! against a loopback server.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_ai::bedrock::eventstream;
use pi_ai::bedrock::sigv4::{Credentials, Signable, authorization};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, UserMessage};
use pi_protocol::model::Model;
use serde_json::{Value, json};
use support::{Mock, Reply};

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bedrock-converse-stream")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn our_signatures_equal_the_aws_sdks_for_every_recorded_request() {
    let mut n = 0;
    for name in ["conversation.json", "gptoss.json", "errors.json"] {
        let fx = fixture(name);
        let port = fx["port"].as_u64().expect("the recording keeps its port");
        let env = &fx["env"];
        let creds = Credentials {
            access_key_id: env["AWS_ACCESS_KEY_ID"].as_str().unwrap().into(),
            secret_access_key: env["AWS_SECRET_ACCESS_KEY"].as_str().unwrap().into(),
            session_token: None,
        };
        for step in fx["steps"].as_array().unwrap() {
            for r in step["requests"].as_array().unwrap() {
                let headers: Vec<(String, String)> = r["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        let v = h[1]
                            .as_str()
                            .unwrap()
                            .replace("127.0.0.1:PORT", &format!("127.0.0.1:{port}"));
                        (h[0].as_str().unwrap().to_string(), v)
                    })
                    .collect();
                let get = |n: &str| headers.iter().find(|(k, _)| k == n).unwrap().1.clone();
                let want = get("authorization");
                let signed_names: Vec<String> = want
                    .split("SignedHeaders=")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap()
                    .split(';')
                    .map(String::from)
                    .collect();
                let signed: Vec<(String, String)> = headers
                    .iter()
                    .filter(|(k, _)| signed_names.contains(k))
                    .cloned()
                    .collect();
                let ours = authorization(
                    &Signable {
                        method: "POST",
                        path: r["path"].as_str().unwrap(),
                        query: "",
                        headers: &signed,
                        body: r["body"]
                            .as_str()
                            .unwrap()
                            .replace("127.0.0.1:PORT", &format!("127.0.0.1:{port}"))
                            .as_bytes(),
                    },
                    &creds,
                    env["AWS_REGION"].as_str().unwrap(),
                    "bedrock",
                    &get("x-amz-date"),
                );
                assert_eq!(ours, want, "{name}: {}", r["path"]);
                n += 1;
            }
        }
    }
    assert!(n > 20, "only {n} signed requests checked");
}

fn claude(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "anthropic.claude-haiku-4-5-20251001-v1:0", "name": "Claude Haiku 4.5",
        "api": "bedrock-converse-stream", "provider": "amazon-bedrock", "baseUrl": base,
        "reasoning": true, "input": ["text"],
        "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25},
        "contextWindow": 200000, "maxTokens": 64000,
    }))
    .unwrap()
}

fn frames(events: &[(&str, Value)]) -> Reply {
    let mut r = Reply::sse(vec![]);
    r.content_type = "application/vnd.amazon.eventstream".into();
    r.raw_chunks = events
        .iter()
        .map(|(kind, payload)| {
            eventstream::encode(
                &[
                    (":event-type", kind),
                    (":content-type", "application/json"),
                    (":message-type", "event"),
                ],
                payload.to_string().as_bytes(),
            )
        })
        .collect();
    r
}

async fn ask(model: &Model, options: StreamOptions) -> pi_protocol::message::AssistantMessage {
    let ctx = LlmContext::from_messages(vec![AgentMessage::User(UserMessage::new(
        StringOrBlocks::Text("hello".into()),
        1,
    ))]);
    let mut s = pi_ai::stream(model, ctx, options);
    while let Some(ev) = s.next().await {
        if let StreamEvent::Done { message } | StreamEvent::Error { message } = ev {
            return message;
        }
    }
    panic!("no final message");
}

fn answer() -> Reply {
    frames(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AAEC"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "AwQ="}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "hi"}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 1})),
        ("messageStop", json!({"stopReason": "end_turn"})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4,
            "cacheDetails": [{"ttl": "1h", "inputTokens": 2}]}}),
        ),
    ])
}

#[tokio::test]
async fn a_bedrock_api_key_goes_as_a_bearer_token() {
    let mock = Mock::start(vec![answer()]).await;
    let options = StreamOptions {
        api_key: Some("bedrock-api-key".into()),
        ..StreamOptions::default()
    };
    let msg = ask(&claude(&mock.base()), options).await;
    assert_eq!(msg.error_message, None);
    let reqs = mock.requests();
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer bedrock-api-key")
    );
    assert_eq!(reqs[0].header("x-amz-date"), None);
    assert_eq!(
        reqs[0].path,
        "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"
    );
    // Encrypted reasoning is kept whole, re-encoded, behind Pi's placeholder text.
    let v = serde_json::to_value(&msg.content).unwrap();
    assert_eq!(
        v,
        json!([{"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "AAECAwQ=", "redacted": true},
               {"type": "text", "text": "hi"}])
    );
    assert_eq!(msg.usage.cache_write_1h, Some(2));
}

#[tokio::test]
async fn session_credentials_sign_with_their_token() {
    let mock = Mock::start(vec![answer()]).await;
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDTEMP"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "session-tok"),
        ("AWS_REGION", "eu-central-1"),
    ];
    let options = StreamOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..StreamOptions::default()
    };
    let msg = ask(&claude(&mock.base()), options).await;
    assert_eq!(msg.error_message, None);
    let r = &mock.requests()[0];
    assert_eq!(r.header("x-amz-security-token"), Some("session-tok"));
    let auth = r.header("authorization").unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEMP/"),
        "{auth}"
    );
    assert!(
        auth.contains("/eu-central-1/bedrock/aws4_request"),
        "{auth}"
    );
    assert!(auth.contains("x-amz-security-token"), "{auth}");
    // Recompute the signature from what the server received.
    let names: Vec<&str> = auth
        .split("SignedHeaders=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .split(';')
        .collect();
    let signed: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| names.contains(&k.as_str()))
        .cloned()
        .collect();
    let ours = authorization(
        &Signable {
            method: "POST",
            path: &r.path,
            query: "",
            headers: &signed,
            body: r.body.as_bytes(),
        },
        &Credentials {
            access_key_id: "AKIDTEMP".into(),
            secret_access_key: "secret".into(),
            session_token: Some("session-tok".into()),
        },
        "eu-central-1",
        "bedrock",
        r.header("x-amz-date").unwrap(),
    );
    assert_eq!(ours, auth);
}

#[tokio::test]
async fn no_credentials_anywhere_is_the_sdks_error() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none");
    let none = none.to_str().unwrap();
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok()
        || std::env::var("AWS_BEARER_TOKEN_BEDROCK").is_ok()
    {
        return;
    }
    let env = [
        ("AWS_SHARED_CREDENTIALS_FILE", none),
        ("AWS_CONFIG_FILE", none),
        ("AWS_PROFILE", "nobody"),
    ];
    let options = StreamOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..StreamOptions::default()
    };
    let msg = ask(&claude("http://127.0.0.1:9"), options).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Could not load credentials from any providers")
    );
}
