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
        // No instance metadata service: a closed loopback port.
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9"),
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

/// A loopback stand-in for the AWS endpoints that hand out credentials: instance metadata,
/// the container endpoint, STS and SSO. Records `METHOD target`, headers and body.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<(String, String)>, String)>>>;

fn credential_server() -> (String, Seen) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Default::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(16) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let mut parts = first.split(' ');
            let line = format!(
                "{} {}",
                parts.next().unwrap_or(""),
                parts.next().unwrap_or("")
            );
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.trim_end().split_once(':') {
                    headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
            let len: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap_or(());
            let body = String::from_utf8_lossy(&body).into_owned();
            let header = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
            let imds_token = header("x-aws-ec2-metadata-token").as_deref() == Some("imds-tok");
            let (code, text) = match line.as_str() {
                "PUT /latest/api/token" => (200, "imds-tok".to_string()),
                "GET /latest/meta-data/iam/security-credentials/" if imds_token => {
                    (200, "role-a\n".to_string())
                }
                "GET /latest/meta-data/iam/security-credentials/role-a" if imds_token => (
                    200,
                    json!({"Code": "Success", "AccessKeyId": "AKIMDS", "SecretAccessKey": "s1", "Token": "imds-session"}).to_string(),
                ),
                "GET /ecs" if header("authorization").as_deref() == Some("ecs-auth") => (
                    200,
                    json!({"AccessKeyId": "AKECS", "SecretAccessKey": "s2", "Token": "ecs-session", "Expiration": "2100-01-01T00:00:00Z"}).to_string(),
                ),
                "POST /" if body.contains("Action=AssumeRoleWithWebIdentity") => (
                    200,
                    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>AKSTS</AccessKeyId><SecretAccessKey>s3</SecretAccessKey><SessionToken>sts&amp;session</SessionToken><Expiration>2100-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>".to_string(),
                ),
                "GET /federation/credentials?account_id=111122223333&role_name=Dev"
                    if header("x-amz-sso_bearer_token").as_deref() == Some("sso-tok") =>
                {
                    (
                        200,
                        json!({"roleCredentials": {"accessKeyId": "AKSSO", "secretAccessKey": "s4", "sessionToken": "sso-session", "expiration": 4102444800000u64}}).to_string(),
                    )
                }
                _ => (403, "{}".to_string()),
            };
            s.lock().unwrap().push((line, headers.clone(), body));
            let _ = write!(
                conn,
                "HTTP/1.1 {code} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

/// Options with only `env` set, no shared files, and instance metadata on a closed port unless
/// `env` names another.
fn aws_options(dir: &std::path::Path, env: &[(&str, String)]) -> StreamOptions {
    let none = dir.join("none").display().to_string();
    let mut all: Vec<(String, String)> = vec![
        ("AWS_SHARED_CREDENTIALS_FILE".into(), none.clone()),
        ("AWS_CONFIG_FILE".into(), none),
        ("AWS_PROFILE".into(), "nobody".into()),
        (
            "AWS_EC2_METADATA_SERVICE_ENDPOINT".into(),
            "http://127.0.0.1:9".into(),
        ),
        ("AWS_REGION".into(), "eu-west-1".into()),
    ];
    for (k, v) in env {
        all.retain(|(name, _)| name != k);
        all.push((k.to_string(), v.clone()));
    }
    StreamOptions {
        env: all.into_iter().collect(),
        ..StreamOptions::default()
    }
}

/// The access key and session token the Bedrock request was signed with.
async fn signed_with(options: StreamOptions) -> (String, String) {
    let mock = Mock::start(vec![answer()]).await;
    let msg = ask(&claude(&mock.base()), options).await;
    assert_eq!(msg.error_message, None);
    let r = &mock.requests()[0];
    let auth = r.header("authorization").unwrap();
    let key = auth
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .and_then(|a| a.split('/').next())
        .unwrap()
        .to_string();
    (
        key,
        r.header("x-amz-security-token").unwrap_or("").to_string(),
    )
}

#[tokio::test]
async fn instance_metadata_credentials_sign_the_request() {
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok()
        || std::env::var("AWS_BEARER_TOKEN_BEDROCK").is_ok()
    {
        return;
    }
    let (origin, seen) = credential_server();
    let dir = tempfile::tempdir().unwrap();
    let options = aws_options(dir.path(), &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", origin)]);
    assert_eq!(
        signed_with(options).await,
        ("AKIMDS".into(), "imds-session".into())
    );
    let seen = seen.lock().unwrap();
    let lines: Vec<&str> = seen.iter().map(|(l, _, _)| l.as_str()).collect();
    assert_eq!(
        lines,
        [
            "PUT /latest/api/token",
            "GET /latest/meta-data/iam/security-credentials/",
            "GET /latest/meta-data/iam/security-credentials/role-a"
        ]
    );
    assert!(seen[0].1.contains(&(
        "x-aws-ec2-metadata-token-ttl-seconds".into(),
        "21600".into()
    )));
}

#[tokio::test]
async fn container_credentials_come_from_the_full_uri_with_its_token() {
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok()
        || std::env::var("AWS_BEARER_TOKEN_BEDROCK").is_ok()
    {
        return;
    }
    let (origin, seen) = credential_server();
    let dir = tempfile::tempdir().unwrap();
    let options = aws_options(
        dir.path(),
        &[
            (
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                format!("{origin}/ecs"),
            ),
            ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ecs-auth".into()),
        ],
    );
    assert_eq!(
        signed_with(options).await,
        ("AKECS".into(), "ecs-session".into())
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_web_identity_token_is_traded_at_sts() {
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok()
        || std::env::var("AWS_BEARER_TOKEN_BEDROCK").is_ok()
    {
        return;
    }
    let (origin, seen) = credential_server();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "wid-token\n").unwrap();
    let options = aws_options(
        dir.path(),
        &[
            ("AWS_WEB_IDENTITY_TOKEN_FILE", token.display().to_string()),
            ("AWS_ROLE_ARN", "arn:aws:iam::123:role/pi".into()),
            ("AWS_ROLE_SESSION_NAME", "sess".into()),
            ("AWS_ENDPOINT_URL_STS", origin),
        ],
    );
    assert_eq!(
        signed_with(options).await,
        ("AKSTS".into(), "sts&session".into())
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "POST /");
    assert_eq!(
        seen[0].2,
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123%3Arole%2Fpi&RoleSessionName=sess&WebIdentityToken=wid-token"
    );
}

#[tokio::test]
async fn sso_profiles_use_the_cached_token_and_fail_when_it_expired() {
    if std::env::var("AWS_ACCESS_KEY_ID").is_ok()
        || std::env::var("AWS_BEARER_TOKEN_BEDROCK").is_ok()
    {
        return;
    }
    let (origin, seen) = credential_server();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        "[profile dev]\nsso_session = my-sso\nsso_account_id = 111122223333\nsso_role_name = Dev\n[sso-session my-sso]\nsso_region = eu-west-1\nsso_start_url = https://example.awsapps.com/start\n",
    )
    .unwrap();
    // `aws sso login` caches the token under the SHA-1 of the session name.
    let cache = dir.path().join(".aws/sso/cache");
    std::fs::create_dir_all(&cache).unwrap();
    let name = cache.join(format!("{}.json", sha1_hex(b"my-sso")));
    let env = |expires: &str| {
        std::fs::write(
            &name,
            json!({"accessToken": "sso-tok", "expiresAt": expires}).to_string(),
        )
        .unwrap();
        aws_options(
            dir.path(),
            &[
                ("AWS_CONFIG_FILE", config.display().to_string()),
                ("AWS_PROFILE", "dev".into()),
                ("HOME", dir.path().display().to_string()),
                ("AWS_ENDPOINT_URL_SSO", origin.clone()),
            ],
        )
    };
    assert_eq!(
        signed_with(env("2100-01-01T00:00:00Z")).await,
        ("AKSSO".into(), "sso-session".into())
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    let mock = Mock::start(vec![answer()]).await;
    let msg = ask(&claude(&mock.base()), env("2000-01-01T00:00:00Z")).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some(
            "The SSO session associated with this profile has expired or is otherwise invalid. To refresh this SSO session run aws sso login with the corresponding profile."
        )
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

fn sha1_hex(data: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A transcript whose tool prefers strict sampling, for a model that supports it.
async fn ask_with_strict_tool(
    base: &str,
    session: Option<&str>,
) -> pi_protocol::message::AssistantMessage {
    let mut model = claude(base);
    model.compat = serde_json::from_value(json!({"supportsStrictMode": true})).unwrap();
    let system: AgentMessage = serde_json::from_value(json!({
        "role": "system", "content": "sys", "timestamp": 1,
        "toolsAdded": [{"name": "read", "description": "d",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "constrainedSampling": {"type": "json_schema", "strict": "prefer"}}]
    }))
    .unwrap();
    let ctx = LlmContext::from_messages(vec![
        system,
        AgentMessage::User(UserMessage::new(StringOrBlocks::Text("hello".into()), 1)),
    ]);
    let options = StreamOptions {
        api_key: Some("bt".into()),
        session_id: session.map(String::from),
        ..StreamOptions::default()
    };
    let mut s = pi_ai::stream(&model, ctx, options);
    while let Some(ev) = s.next().await {
        if let StreamEvent::Done { message } | StreamEvent::Error { message } = ev {
            return message;
        }
    }
    panic!("no final message");
}

fn validation(message: &str) -> Reply {
    Reply::error(
        400,
        &json!({"__type": "ValidationException", "message": message}).to_string(),
        "application/json",
    )
}

fn strict_flags(mock: &Mock) -> Vec<Option<bool>> {
    mock.requests()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            body["toolConfig"]["tools"][0]["toolSpec"]["strict"].as_bool()
        })
        .collect()
}

#[tokio::test]
async fn strict_tools_over_claudes_limits_are_retried_once_without_strict() {
    let limit = "Too many strict tools (21 > 20)";
    let mock = Mock::start(vec![validation(limit), answer()]).await;
    let msg = ask_with_strict_tool(&mock.base(), Some("strict-retry-session")).await;
    assert_eq!(msg.error_message, None);
    assert_eq!(strict_flags(&mock), [Some(true), None]);
    let d = msg.diagnostics.as_ref().unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].kind, "bedrock_strict_tools_fallback");
    assert_eq!(d[0].error.as_ref().unwrap().message, limit);
    assert_eq!(
        d[0].details.as_ref().unwrap()["reason"],
        "strict_tool_limits_exceeded"
    );
    // The session's next request goes non-strict at once.
    let again = Mock::start(vec![answer()]).await;
    let msg = ask_with_strict_tool(&again.base(), Some("strict-retry-session")).await;
    assert_eq!(msg.error_message, None);
    assert_eq!(strict_flags(&again), [None]);
    assert!(msg.diagnostics.is_none());
}

#[tokio::test]
async fn other_validation_errors_and_a_second_rejection_are_not_retried() {
    let mock = Mock::start(vec![validation("Malformed input request")]).await;
    let msg = ask_with_strict_tool(&mock.base(), None).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Validation error: Malformed input request")
    );
    assert_eq!(mock.requests().len(), 1);
    let limit = "The compiled grammar is too large";
    let mock = Mock::start(vec![validation(limit), validation(limit)]).await;
    let msg = ask_with_strict_tool(&mock.base(), None).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Validation error: The compiled grammar is too large")
    );
    assert_eq!(strict_flags(&mock), [Some(true), None]);
}
