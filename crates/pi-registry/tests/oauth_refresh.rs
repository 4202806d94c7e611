//! OAuth refresh against a loopback token server: an expired stored login is refreshed once
//! even when two processes need it at the same moment, both use the new token, and auth.json
//! stays valid JSON; a failed refresh gives Pi's text; a lock held by another process (Pi) is
//! waited for.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_registry::oauth::{self, Flow};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A token endpoint on 127.0.0.1 that answers every POST with `reply` after `delay`, counting
/// the requests and keeping their bodies.
struct TokenServer {
    origin: String,
    hits: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
}

fn token_server(status: u16, reply: Value, delay: Duration) -> TokenServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let (h, b) = (hits.clone(), bodies.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming().take(16) {
            let Ok(mut conn) = conn else { continue };
            let (h, b, reply) = (h.clone(), b.clone(), reply.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.trim_end().to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if l.is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                h.fetch_add(1, Ordering::SeqCst);
                b.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
                std::thread::sleep(delay);
                let text = reply.to_string();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
            });
        }
    });
    TokenServer {
        origin,
        hits,
        bodies,
    }
}

fn expired_login(path: &Path) {
    std::fs::write(
        path,
        serde_json::to_string_pretty(&json!({
            "groq": {"type": "api_key", "key": "gk"},
            "anthropic": {"type": "oauth", "refresh": "old-refresh", "access": "old-access", "expires": 1000},
        }))
        .unwrap(),
    )
    .unwrap();
}

/// Run as a child process by the two-process test (does nothing when run on its own).
#[tokio::test]
async fn child_resolves_the_stored_login() {
    let Ok(path) = std::env::var("PI_TEST_CHILD_AUTH_PATH") else {
        return;
    };
    let auth = oauth::resolve(Path::new(&path), "anthropic", &Flow::Anthropic, None)
        .await
        .unwrap()
        .unwrap();
    println!("TOKEN={}", auth.api_key.unwrap());
}

#[test]
fn two_processes_refreshing_one_expired_token_refresh_once_and_both_succeed() {
    let server = token_server(
        200,
        json!({"access_token": "new-access", "refresh_token": "new-refresh", "expires_in": 3600}),
        Duration::from_millis(300),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    expired_login(&path);
    let spawn = || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_resolves_the_stored_login",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PI_TEST_CHILD_AUTH_PATH", &path)
            .env("PI_OAUTH_ENDPOINT_ORIGIN", &server.origin)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("TOKEN=new-access"), "{stdout}");
    }
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        1,
        "one refresh for both"
    );
    let body: Value = serde_json::from_str(&server.bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(
        body,
        json!({"grant_type": "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e", "refresh_token": "old-refresh"})
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let stored: Value = serde_json::from_str(&text).expect("auth.json stays valid JSON");
    assert_eq!(stored["groq"], json!({"type": "api_key", "key": "gk"}));
    assert_eq!(stored["anthropic"]["access"], "new-access");
    assert_eq!(stored["anthropic"]["refresh"], "new-refresh");
    let keys: Vec<&String> = stored["anthropic"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "refresh", "access", "expires"]);
    assert!(
        text.starts_with("{\n  \"groq\""),
        "Pi's two-space layout: {text}"
    );
    assert!(!dir.path().join("auth.json.lock").exists(), "lock released");
}

#[tokio::test]
async fn a_failed_refresh_gives_pis_error_and_keeps_the_stored_login() {
    let server = token_server(400, json!({"error": "invalid_grant"}), Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    expired_login(&path);
    let before = std::fs::read_to_string(&path).unwrap();
    let err = with_origin(&server.origin, || async {
        oauth::resolve(&path, "anthropic", &Flow::Anthropic, None).await
    })
    .await
    .unwrap_err();
    assert_eq!(
        err,
        "OAuth refresh failed for anthropic: Anthropic token refresh request failed. url=https://platform.claude.com/v1/oauth/token; details=Error: HTTP request failed. status=400; url=https://platform.claude.com/v1/oauth/token; body={\"error\":\"invalid_grant\"}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[tokio::test]
async fn a_lock_held_by_another_process_is_waited_for() {
    let server = token_server(
        200,
        json!({"access_token": "after-wait", "refresh_token": "r2", "expires_in": 3600}),
        Duration::ZERO,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    expired_login(&path);
    let lock_dir = dir.path().join("auth.json.lock");
    std::fs::create_dir(&lock_dir).unwrap();
    let release = lock_dir.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        std::fs::remove_dir(release).unwrap();
    });
    let started = std::time::Instant::now();
    let auth = with_origin(&server.origin, || async {
        oauth::resolve(&path, "anthropic", &Flow::Anthropic, None).await
    })
    .await
    .unwrap()
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(auth.api_key.as_deref(), Some("after-wait"));
}

/// Runs `f` with this process's OAuth requests sent to `origin`; tests take turns.
async fn with_origin<F, Fut, T>(origin: &str, f: F) -> T
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURN.lock().await;
    oauth::set_endpoint_origin(Some(origin.to_string()));
    let out = f().await;
    oauth::set_endpoint_origin(None);
    out
}
