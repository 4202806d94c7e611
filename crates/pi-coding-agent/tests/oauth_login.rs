//! A stored subscription login used by `pi -p`: an expired Anthropic OAuth token is refreshed
//! at a loopback token endpoint, written back to auth.json, and the request carries the new
//! token; a refresh the endpoint refuses fails the prompt with Pi's text.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_test_support::mock::{MockLlm, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

/// Answers every request with `status` and `body`; returns the origin.
fn token_endpoint(status: u16, body: Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().take(4) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let l = line.trim_end().to_ascii_lowercase();
                if let Some(v) = l.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if l.is_empty() {
                    break;
                }
            }
            let mut buf = vec![0; len];
            let _ = reader.read_exact(&mut buf);
            let text = body.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    origin
}

fn sandbox(mock_port: u16) -> pi_test_support::TempDir {
    sandbox_with(mock_port, 1)
}

fn sandbox_with(mock_port: u16, expires: u64) -> pi_test_support::TempDir {
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    std::fs::create_dir_all(tmp.path().join("work")).unwrap();
    std::fs::write(
        tmp.path().join("agent/models.json"),
        json!({"providers": {"anthropic": {"baseUrl": format!("http://127.0.0.1:{mock_port}")}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("agent/auth.json"),
        json!({"anthropic": {"type": "oauth", "refresh": "r-old", "access": "a-old", "expires": expires}})
            .to_string(),
    )
    .unwrap();
    tmp
}

fn run(root: &std::path::Path, origin: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args([
            "-p",
            "--no-session",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "hi",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_OFFLINE", "1")
        .env("PI_OAUTH_ENDPOINT_ORIGIN", origin)
        .current_dir(root.join("work"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_subscription_token_is_refreshed_stored_and_used() {
    let reply: Reply = serde_json::from_value(json!({"text": "hello back"})).unwrap();
    let mock = MockLlm::start(vec![reply]).await.unwrap();
    let tmp = sandbox(mock.port());
    let origin = token_endpoint(
        200,
        json!({"access_token": "a-new", "refresh_token": "r-new", "expires_in": 3600}),
    );
    let root = tmp.path().to_path_buf();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || run(&root, &origin))
        .await
        .unwrap();
    assert_eq!((code, stdout.as_str()), (0, "hello back\n"), "{stderr}");
    let req = &mock.requests()[0];
    assert_eq!(req.header("x-api-key"), Some("a-new"));
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("agent/auth.json")).unwrap())
            .unwrap();
    assert_eq!(stored["anthropic"]["access"], "a-new");
    assert_eq!(stored["anthropic"]["refresh"], "r-new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_fails_the_prompt_with_pis_text() {
    let mock = MockLlm::start(vec![]).await.unwrap();
    let tmp = sandbox(mock.port());
    let origin = token_endpoint(400, json!({"error": "invalid_grant"}));
    let root = tmp.path().to_path_buf();
    let (code, _stdout, stderr) = tokio::task::spawn_blocking(move || run(&root, &origin))
        .await
        .unwrap();
    assert_eq!(code, 1);
    assert!(
        stderr.contains("OAuth refresh failed for anthropic: Anthropic token refresh request failed. url=https://platform.claude.com/v1/oauth/token; details=Error: HTTP request failed. status=400"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty(), "nothing reaches the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_token_is_refreshed_once_and_the_request_made_again() {
    let rejected: Reply = serde_json::from_value(json!({"status": 401,
        "body": {"type": "error", "error": {"type": "authentication_error", "message": "OAuth token has expired"}}}))
    .unwrap();
    let answer: Reply = serde_json::from_value(json!({"text": "after refresh"})).unwrap();
    let mock = MockLlm::start(vec![rejected, answer]).await.unwrap();
    // Valid for a day by its own clock, but the provider no longer takes it.
    let tmp = sandbox_with(mock.port(), pi_js::now_ms() + 86_400_000);
    let origin = token_endpoint(
        200,
        json!({"access_token": "a-new", "refresh_token": "r-new", "expires_in": 3600}),
    );
    let root = tmp.path().to_path_buf();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || run(&root, &origin))
        .await
        .unwrap();
    assert_eq!((code, stdout.as_str()), (0, "after refresh\n"), "{stderr}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("x-api-key"), Some("a-old"));
    assert_eq!(reqs[1].header("x-api-key"), Some("a-new"));
}
