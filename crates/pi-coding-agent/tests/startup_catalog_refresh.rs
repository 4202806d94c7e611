//! RPC mode's background catalog refresh at startup, against a loopback catalog service and a
//! loopback llama.cpp router (`PI_MODEL_CATALOG_URL` and `LLAMA_BASE_URL` point at it; nothing
//! else is configured, so no other address is asked): a configured provider's catalog older than
//! four hours is fetched and its models become available; a fresh one is not asked for; offline
//! (`PI_OFFLINE=1` or `--offline`) nothing is asked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Seen = Arc<Mutex<Vec<String>>>;

fn catalog_model() -> Value {
    json!({"id": "groq-from-catalog", "name": "Groq From Catalog", "api": "openai-completions",
        "provider": "groq", "baseUrl": "https://api.groq.com/openai/v1", "reasoning": false,
        "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 131072, "maxTokens": 8192})
}

/// Serves the groq catalog and a llama.cpp router with one loaded model; records targets.
fn service() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(32) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let target = first.split(' ').nth(1).unwrap_or("").to_string();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
            }
            s.lock().unwrap().push(target.clone());
            let (code, body) = if target.starts_with("/api/models/providers/groq?") {
                (200, json!({"models": [catalog_model()]}))
            } else if target == "/models" {
                (
                    200,
                    json!({"data": [{"id": "router-model", "status": {"value": "loaded"}, "meta": {"n_ctx": 1024}}]}),
                )
            } else if target.starts_with("/props") {
                (200, json!({}))
            } else {
                (404, json!({}))
            };
            let text = body.to_string();
            let _ = write!(
                conn,
                "HTTP/1.1 {code} X\r\ncontent-type: application/json\r\nlast-modified: Fri, 01 Jan 2100 00:00:00 GMT\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (origin, seen)
}

struct Rpc {
    child: Child,
    lines: Receiver<String>,
}

impl Rpc {
    fn spawn(root: &Path, origin: &str, offline: Option<&str>, args: &[&str]) -> Rpc {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command
            .args(["--mode", "rpc", "--no-tools"])
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", root)
            .env("PI_CODING_AGENT_DIR", root.join("agent"))
            .env("GROQ_API_KEY", "gk")
            .env("PI_MODEL_CATALOG_URL", origin)
            .env("LLAMA_BASE_URL", origin);
        if let Some(v) = offline {
            command.env("PI_OFFLINE", v);
        }
        let mut child = command
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Rpc { child, lines }
    }

    fn request(&mut self, id: &str, command: Value) -> Value {
        let mut c = command;
        c["id"] = json!(id);
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{c}").unwrap();
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(20)).unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "response" && v["id"] == id {
                return v;
            }
        }
    }

    /// `provider/id` of every available model.
    fn available(&mut self, n: usize) -> Vec<String> {
        let r = self.request(&format!("m{n}"), json!({"type": "get_available_models"}));
        r["data"]["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["provider"].as_str().unwrap(),
                    m["id"].as_str().unwrap()
                )
            })
            .collect()
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn root() -> pi_test_support::TempDir {
    let tmp = pi_test_support::TempDir::new();
    std::fs::create_dir_all(tmp.path().join("agent")).unwrap();
    tmp
}

#[test]
fn startup_refresh_fetches_due_catalogs_and_lists_the_llama_router() {
    let (origin, seen) = service();
    let tmp = root();
    let mut rpc = Rpc::spawn(tmp.path(), &origin, None, &[]);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut n = 0;
    let models = loop {
        n += 1;
        let models = rpc.available(n);
        let done = models.iter().any(|m| m == "groq/groq-from-catalog")
            && models.iter().any(|m| m == "llama.cpp/router-model");
        if done || Instant::now() > deadline {
            break models;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        models.contains(&"groq/groq-from-catalog".to_string()),
        "{models:?}"
    );
    assert!(
        models.contains(&"llama.cpp/router-model".to_string()),
        "{models:?}"
    );
    // Pi's order: built-in providers, then the extension's llama.cpp.
    let groq = models.iter().position(|m| m.starts_with("groq/")).unwrap();
    let llama = models
        .iter()
        .position(|m| m.starts_with("llama.cpp/"))
        .unwrap();
    assert!(groq < llama, "{models:?}");
    let targets = seen.lock().unwrap().clone();
    assert!(
        targets.contains(&"/api/models/providers/groq?types=chat%2Cimage%2Cclassifier".to_string()),
        "{targets:?}"
    );
    assert!(targets.contains(&"/models".to_string()), "{targets:?}");
    assert!(
        targets.contains(&"/props?model=router-model&autoload=false".to_string()),
        "{targets:?}"
    );
    let store: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("agent/models-store.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(store["groq"]["models"], json!([catalog_model()]));
    assert_eq!(
        store["llama.cpp"]["models"][0]["contextWindow"],
        json!(1024)
    );
    assert_eq!(
        store["llama.cpp"]["models"][0]["baseUrl"],
        json!(format!("{origin}/v1"))
    );
}

#[test]
fn a_catalog_checked_within_four_hours_is_not_asked_for() {
    let (origin, seen) = service();
    let tmp = root();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let stored = json!({"groq": {"models": [catalog_model()], "lastModified": 4_102_444_800_000u64, "checkedAt": now}});
    std::fs::write(
        tmp.path().join("agent/models-store.json"),
        stored.to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::spawn(tmp.path(), &origin, None, &["-ne"]);
    // The stored catalog is in use at once.
    assert!(
        rpc.available(1)
            .contains(&"groq/groq-from-catalog".to_string())
    );
    std::thread::sleep(Duration::from_millis(1500));
    rpc.available(2);
    assert_eq!(*seen.lock().unwrap(), Vec::<String>::new());
}

#[test]
fn offline_startup_asks_nothing() {
    for (offline, args) in [
        (Some("1"), vec![]),
        (Some("yes"), vec![]),
        (None, vec!["--offline"]),
    ] {
        let (origin, seen) = service();
        let tmp = root();
        let mut rpc = Rpc::spawn(tmp.path(), &origin, offline, &args);
        let models = rpc.available(1);
        std::thread::sleep(Duration::from_millis(1500));
        rpc.available(2);
        assert_eq!(
            *seen.lock().unwrap(),
            Vec::<String>::new(),
            "{offline:?} {args:?}"
        );
        // The llama.cpp server is configured, but nothing was listed or stored yet.
        assert!(
            !models.iter().any(|m| m.starts_with("llama.cpp/")),
            "{models:?}"
        );
    }
}
