//! Vertex with Application Default Credentials against loopback servers: the token endpoint
//! (a service account's signed JWT assertion, a gcloud user's refresh token) and the Vertex
//! endpoint that must receive the token; tokens are cached between requests.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use base64::Engine as _;
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, UserMessage};
use pi_protocol::model::Model;
use serde_json::{Value, json};
use support::{Mock, Reply};

fn vertex_model(base: &str) -> Model {
    serde_json::from_value(json!({
        "id": "gemini-2.5-flash", "name": "g", "api": "google-vertex", "provider": "google-vertex",
        "baseUrl": base, "reasoning": false, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000, "maxTokens": 1000,
    }))
    .unwrap()
}

fn answer() -> Reply {
    Reply::sse(vec![
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":1,\"totalTokenCount\":4}}\r\n\r\n".into(),
    ])
}

fn token(access: &str) -> Reply {
    Reply::error(
        200,
        &json!({"access_token": access, "expires_in": 3599, "token_type": "Bearer"}).to_string(),
        "application/json",
    )
}

async fn ask(model: &Model, env: &[(&str, &str)]) -> pi_protocol::message::AssistantMessage {
    let options = StreamOptions {
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..StreamOptions::default()
    };
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
    panic!("stream ended without a final message");
}

fn form(body: &str) -> Vec<(String, String)> {
    body.split('&')
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            let v = v.replace('+', " ");
            let mut out = Vec::new();
            let b = v.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'%' {
                    out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).unwrap());
                    i += 3;
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            (k.to_string(), String::from_utf8(out).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_service_account_signs_a_jwt_for_a_token_and_the_token_is_reused() {
    let mock = Mock::start(vec![token("ya29.sa-token"), answer(), answer()]).await;
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/adc/test-service-account.json");
    let mut key: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let token_url = format!("{}/token", mock.base());
    key["token_uri"] = json!(token_url);
    let path = dir.path().join("sa.json");
    std::fs::write(&path, key.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let env = [
        ("GOOGLE_APPLICATION_CREDENTIALS", path),
        ("GOOGLE_CLOUD_PROJECT", "test-project"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ];
    let model = vertex_model(&mock.base());
    let first = ask(&model, &env).await;
    assert_eq!(first.error_message, None);
    assert_eq!(first.text(), "hi");
    let second = ask(&model, &env).await;
    assert_eq!(second.text(), "hi");

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 3, "one token request, then two model requests");
    assert_eq!(reqs[0].path, "/token");
    let fields = form(&reqs[0].body);
    assert_eq!(
        fields[0],
        (
            "grant_type".into(),
            "urn:ietf:params:oauth:grant-type:jwt-bearer".into()
        )
    );
    let jwt = &fields[1].1;
    let parts: Vec<&str> = jwt.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    let claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(
        header,
        json!({"alg": "RS256", "typ": "JWT", "kid": "key-1"})
    );
    assert_eq!(
        claims["iss"],
        "pi-test@test-project.iam.gserviceaccount.com"
    );
    assert_eq!(claims["aud"], json!(token_url));
    assert_eq!(
        claims["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    let public = base64::engine::general_purpose::STANDARD
        .decode(key["test_public_key_der_b64"].as_str().unwrap())
        .unwrap();
    ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, public)
        .verify(
            format!("{}.{}", parts[0], parts[1]).as_bytes(),
            &b64.decode(parts[2]).unwrap(),
        )
        .expect("the assertion is signed with the service account's key");
    for r in &reqs[1..] {
        assert_eq!(
            r.path,
            "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("authorization"), Some("Bearer ya29.sa-token"));
        assert_eq!(r.header("x-goog-api-key"), None);
    }
}

#[tokio::test]
async fn gcloud_user_credentials_trade_their_refresh_token() {
    let mock = Mock::start(vec![token("ya29.user-token"), answer()]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adc.json");
    std::fs::write(
        &path,
        json!({"type": "authorized_user", "client_id": "cid.apps", "client_secret": "sec",
               "refresh_token": "1//refresh", "quota_project_id": "billing-proj",
               "token_uri": format!("{}/token", mock.base())})
        .to_string(),
    )
    .unwrap();
    let env = [
        ("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap()),
        ("GOOGLE_CLOUD_PROJECT", "p"),
        ("GOOGLE_CLOUD_LOCATION", "global"),
    ];
    let msg = ask(&vertex_model(&mock.base()), &env).await;
    assert_eq!(msg.error_message, None);
    let reqs = mock.requests();
    assert_eq!(
        form(&reqs[0].body),
        vec![
            ("client_id".to_string(), "cid.apps".to_string()),
            ("client_secret".into(), "sec".into()),
            ("refresh_token".into(), "1//refresh".into()),
            ("grant_type".into(), "refresh_token".into()),
        ]
    );
    assert_eq!(
        reqs[1].header("authorization"),
        Some("Bearer ya29.user-token")
    );
    assert_eq!(reqs[1].header("x-goog-user-project"), Some("billing-proj"));
}

#[tokio::test]
async fn missing_project_location_or_credentials_fail_with_pi_texts() {
    let model = vertex_model("http://127.0.0.1:9");
    let msg = ask(
        &model,
        &[("GOOGLE_CLOUD_LOCATION", "x"), ("GOOGLE_CLOUD_PROJECT", "")],
    )
    .await;
    if std::env::var("GOOGLE_CLOUD_PROJECT").is_err() && std::env::var("GCLOUD_PROJECT").is_err() {
        assert_eq!(
            msg.error_message.as_deref(),
            Some(
                "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options."
            )
        );
    }
    let msg = ask(
        &model,
        &[
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json"),
        ],
    )
    .await;
    // A named file is read as it is (Node's text); no other source is tried.
    assert_eq!(
        msg.error_message.as_deref(),
        Some("ENOENT: no such file or directory, open '/nonexistent/adc.json'")
    );
}

#[tokio::test]
async fn a_rejected_refresh_reports_the_token_endpoint_error() {
    let mock = Mock::start(vec![Reply::error(
        400,
        r#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#,
        "application/json",
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adc.json");
    std::fs::write(
        &path,
        json!({"type": "authorized_user", "client_id": "c", "client_secret": "s",
               "refresh_token": "r", "token_uri": format!("{}/token", mock.base())})
        .to_string(),
    )
    .unwrap();
    let msg = ask(
        &vertex_model(&mock.base()),
        &[
            ("GOOGLE_APPLICATION_CREDENTIALS", path.to_str().unwrap()),
            ("GOOGLE_CLOUD_PROJECT", "p"),
            ("GOOGLE_CLOUD_LOCATION", "l"),
        ],
    )
    .await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("invalid_grant: Token has been expired or revoked.")
    );
}
