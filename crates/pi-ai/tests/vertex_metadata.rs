//! Vertex with no credential file: the token comes from a metadata server, here a loopback
//! server named by `GCE_METADATA_HOST` (the real one is never reached: every test names its
//! host, and a gcloud config directory without a credential file). Texts are those Pi 1.6.0
//! (google-auth-library 10.9, gcp-metadata 8.1) reported against the same answers.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_ai::google_vertex::{adc::NO_ADC_FOUND, metadata::Settings};
use pi_ai::{LlmContext, StreamEvent, StreamOptions};
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::model::Model;
use serde_json::json;
use support::{Mock, Reply};

const TOKEN_PATH: &str = "/computeMetadata/v1/instance/service-accounts/default/token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform";

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
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\r\n\r\n".into(),
    ])
}

/// A metadata server's answer (it always names its flavor).
fn meta(status: u16, body: &str) -> Reply {
    let mut r = Reply::error(status, body, "application/json");
    r.headers = vec![("Metadata-Flavor".into(), "Google".into())];
    r
}

fn token() -> Reply {
    meta(
        200,
        r#"{"access_token":"ya29.meta","expires_in":3599,"token_type":"Bearer"}"#,
    )
}

/// Whether this machine looks like one of Google's: then no probe is made (as in Pi).
fn resident() -> bool {
    Settings::from_env(|k| std::env::var(k).ok().filter(|v| !v.is_empty())).resident
}

/// A provider environment with no credential file anywhere and the metadata server at `host`.
fn env(dir: &std::path::Path, host: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let dir = dir.to_str().unwrap().to_string();
    let mut env = vec![
        ("HOME".to_string(), dir.clone()),
        ("CLOUDSDK_CONFIG".into(), dir),
        ("GCE_METADATA_HOST".into(), host.into()),
        ("GOOGLE_CLOUD_PROJECT".into(), "p".into()),
        ("GOOGLE_CLOUD_LOCATION".into(), "us-central1".into()),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

async fn ask(model: &Model, env: &[(String, String)]) -> AssistantMessage {
    let options = StreamOptions {
        env: env.iter().cloned().collect(),
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

#[tokio::test]
async fn without_a_file_the_metadata_server_gives_the_token_once() {
    let probe = !resident();
    let mut replies = Vec::new();
    if probe {
        replies.push(meta(200, "attributes/\nid\n"));
    }
    replies.extend([token(), answer(), answer()]);
    let mock = Mock::start(replies).await;
    let dir = tempfile::tempdir().unwrap();
    let host = mock.addr.to_string();
    let env = env(
        dir.path(),
        &host,
        &[("GOOGLE_CLOUD_QUOTA_PROJECT", "billing")],
    );
    let model = vertex_model(&mock.base());
    for _ in 0..2 {
        let msg = ask(&model, &env).await;
        assert_eq!(msg.error_message, None);
        assert_eq!(msg.text(), "hi");
    }
    let reqs = mock.requests();
    let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
    let model_path = "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let mut expected = vec![TOKEN_PATH, model_path, model_path];
    if probe {
        expected.insert(0, "/computeMetadata/v1/instance");
    }
    assert_eq!(
        paths, expected,
        "one probe, one token, then two model requests"
    );
    for r in &reqs[..expected.len() - 2] {
        assert_eq!(r.header("metadata-flavor"), Some("Google"));
    }
    for r in &reqs[expected.len() - 2..] {
        assert_eq!(r.header("authorization"), Some("Bearer ya29.meta"));
        assert_eq!(r.header("x-goog-user-project"), Some("billing"));
        assert_eq!(r.header("metadata-flavor"), None);
    }
}

#[tokio::test]
async fn a_token_the_server_refuses_reports_google_auth_texts() {
    let mock = Mock::start(vec![meta(403, "forbidden")]).await;
    let dir = tempfile::tempdir().unwrap();
    let host = mock.addr.to_string();
    let assume = [("METADATA_SERVER_DETECTION", "assume-present")];
    let model = vertex_model(&mock.base());
    let msg = ask(&model, &env(dir.path(), &host, &assume)).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "Could not refresh access token: A Forbidden error was returned while attempting to retrieve an access token for the Compute Engine built-in service account. This may be because the Compute Engine instance does not have the correct permission scopes specified: Could not refresh access token: forbidden"
        )
    );
    // An answer without the flavor header is not the metadata server's.
    mock.push(Reply::error(
        200,
        r#"{"access_token":"x"}"#,
        "application/json",
    ));
    let msg = ask(&model, &env(dir.path(), &host, &assume)).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "Invalid response from metadata service: incorrect Metadata-Flavor header. Expected 'Google', got no header"
        )
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "no probe when presence is assumed"
    );
    assert!(mock.requests().iter().all(|r| r.path == TOKEN_PATH));
}

#[tokio::test]
async fn no_metadata_server_means_no_default_credentials() {
    if resident() {
        return; // on Google's machines Pi skips the probe and the detection setting
    }
    // The probe's 404 says "no server"; the answer is kept, so the second request asks nothing.
    let mock = Mock::start(vec![meta(404, "")]).await;
    let dir = tempfile::tempdir().unwrap();
    let host = mock.addr.to_string();
    let model = vertex_model(&mock.base());
    for _ in 0..2 {
        let msg = ask(&model, &env(dir.path(), &host, &[])).await;
        assert_eq!(msg.error_message.as_deref(), Some(NO_ADC_FOUND));
    }
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(mock.requests()[0].path, "/computeMetadata/v1/instance");

    // `none` asks nothing; a refused connection is no server either.
    let quiet = Mock::start(vec![]).await;
    let host = quiet.addr.to_string();
    let msg = ask(
        &model,
        &env(dir.path(), &host, &[("METADATA_SERVER_DETECTION", "none")]),
    )
    .await;
    assert_eq!(msg.error_message.as_deref(), Some(NO_ADC_FOUND));
    assert!(quiet.requests().is_empty());
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = closed.local_addr().unwrap().to_string();
    drop(closed);
    let msg = ask(&model, &env(dir.path(), &host, &[])).await;
    assert_eq!(msg.error_message.as_deref(), Some(NO_ADC_FOUND));

    let msg = ask(
        &model,
        &env(dir.path(), &host, &[("METADATA_SERVER_DETECTION", "often")]),
    )
    .await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "Unknown `METADATA_SERVER_DETECTION` env variable. Got `often`, but it should be `assume-present`, `none`, `bios-only`, `ping-only`, or unset"
        )
    );
}

#[tokio::test]
async fn a_gcloud_file_comes_before_the_metadata_server() {
    let mock = Mock::start(vec![
        Reply::error(
            200,
            r#"{"access_token":"ya29.user","expires_in":3599}"#,
            "application/json",
        ),
        answer(),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("application_default_credentials.json"),
        json!({"type": "authorized_user", "client_id": "c", "client_secret": "s",
               "refresh_token": "r", "quota_project_id": "from-file",
               "token_uri": format!("{}/token", mock.base())})
        .to_string(),
    )
    .unwrap();
    // The metadata host is closed: reaching it would fail the request.
    let env = env(
        dir.path(),
        "127.0.0.1:9",
        &[("GOOGLE_CLOUD_QUOTA_PROJECT", "billing")],
    );
    let msg = ask(&vertex_model(&mock.base()), &env).await;
    assert_eq!(msg.error_message, None);
    let reqs = mock.requests();
    assert_eq!(reqs[0].path, "/token");
    assert_eq!(reqs[1].header("authorization"), Some("Bearer ya29.user"));
    assert_eq!(reqs[1].header("x-goog-user-project"), Some("billing"));
}
