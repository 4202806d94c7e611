//! `pi update --models` against a loopback catalog service: a configured provider's catalog is
//! fetched, cached in models-store.json as Pi caches it, revalidated with its ETag, and its new
//! models are listed; a failing service gives Pi's error.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// A catalog service: answers `status` and `body` for `/api/models/providers/groq`, 304 when
/// the request revalidates; records request lines and `if-none-match`.
/// Requests as received: target and `if-none-match`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn service(status: u16, body: Value) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(16) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap();
            let target = first.split(' ').nth(1).unwrap_or("").to_string();
            let mut validator = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let l = line.trim_end();
                if let Some(v) = l.to_ascii_lowercase().strip_prefix("if-none-match:") {
                    validator = Some(v.trim().to_string());
                }
                if l.is_empty() {
                    break;
                }
            }
            s.lock().unwrap().push((target.clone(), validator.clone()));
            let (code, text) = if validator.as_deref() == Some("\"v1\"") {
                (304, String::new())
            } else if target.starts_with("/api/models/providers/groq?") {
                (status, body.to_string())
            } else {
                (404, "{}".to_string())
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\netag: \"v1\"\r\nlast-modified: Fri, 01 Jan 2100 00:00:00 GMT\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

fn run(root: &Path, args: &[&str], origin: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("GROQ_API_KEY", "gk")
        .env("PI_MODEL_CATALOG_URL", origin)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn new_model() -> Value {
    json!({"id": "groq-from-catalog", "name": "Groq From Catalog", "api": "openai-completions",
        "provider": "groq", "baseUrl": "https://api.groq.com/openai/v1", "reasoning": false,
        "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 131072, "maxTokens": 8192})
}

#[test]
fn model_catalogs_are_fetched_cached_and_revalidated() {
    let (origin, seen) = service(
        200,
        json!({"models": [new_model(), {"id": "embed", "type": "embedding"}]}),
    );
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (code, out, err) = run(tmp.path(), &["update", "--models"], &origin);
    assert_eq!(
        (code, out.as_str()),
        (0, "Model catalogs refreshed\n"),
        "{err}"
    );
    let store: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("agent/models-store.json")).unwrap(),
    )
    .unwrap();
    let entry = &store["groq"];
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["models", "lastModified", "etag", "checkedAt"]);
    assert_eq!(entry["models"], json!([new_model()]));
    assert_eq!(entry["lastModified"], json!(4_102_444_800_000u64));
    assert_eq!(entry["etag"], "\"v1\"");
    assert_eq!(
        seen.lock().unwrap()[0],
        (
            "/api/models/providers/groq?types=chat%2Cimage%2Cclassifier".to_string(),
            None
        )
    );
    // The cached catalog is newer than the bundled one: its model is listed.
    let (_, listed, _) = run(tmp.path(), &["--list-models", "groq-from-catalog"], &origin);
    assert!(listed.contains("groq-from-catalog"), "{listed}");
    // Again: revalidated with the ETag; unchanged.
    let (code, _, err) = run(tmp.path(), &["update", "--models"], &origin);
    assert_eq!(code, 0, "{err}");
    assert_eq!(seen.lock().unwrap()[1].1.as_deref(), Some("\"v1\""));
    let again: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("agent/models-store.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(again["groq"]["models"], json!([new_model()]));
}

#[test]
fn a_failing_catalog_service_is_an_error() {
    let (origin, _) = service(500, json!({}));
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    let (code, out, err) = run(tmp.path(), &["update", "--models"], &origin);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "Error: Could not refresh model catalogs: groq: Model catalog request failed for groq: 500\n"
    );
}
