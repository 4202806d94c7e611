//! Account catalogs against one loopback server standing in for Pi's catalog service
//! (`PI_MODEL_CATALOG_URL`), OpenRouter (`models.json` `baseUrl`) and a Radius gateway (a
//! `models.json` provider with `"oauth": "radius"`): `pi update --models` and RPC startup save
//! OpenRouter's list narrowed to the key's models with its limits and prices, and the gateway's
//! models, and list them. Only keys in `auth.json` are configured, so nothing else is asked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests as received: target and `authorization`.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn catalog_model() -> Value {
    json!({"id": "vendor/new-model", "name": "New", "api": "openai-completions",
        "provider": "openrouter", "baseUrl": "https://openrouter.ai/api/v1", "reasoning": false,
        "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 1000, "maxTokens": 100})
}

fn gateway_model() -> Value {
    json!({"id": "gw-model", "name": "Gateway Model", "reasoning": true, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 64000, "maxTokens": 4000})
}

fn service(user_models_status: u16) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let o = origin.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(32) {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            reader.read_line(&mut first).unwrap_or(0);
            let target = first.split(' ').nth(1).unwrap_or("").to_string();
            let mut auth = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.trim_end().strip_prefix("authorization: ") {
                    auth = Some(v.to_string());
                }
            }
            s.lock().unwrap().push((target.clone(), auth));
            let (code, body) = if target.starts_with("/api/models/providers/openrouter?") {
                (200, json!({"models": [catalog_model()]}))
            } else if target == "/api/v1/models/user" {
                (
                    user_models_status,
                    json!({"data": [
                        {"id": "auto", "context_length": 2000000, "top_provider": {"context_length": 0, "max_completion_tokens": null}},
                        {"id": "vendor/new-model", "top_provider": {"context_length": 5000, "max_completion_tokens": 700},
                         "pricing": {"prompt": "0.000002", "completion": "0.00001"}}
                    ]}),
                )
            } else if target == "/v1/config" {
                (
                    200,
                    json!({"baseUrl": format!("{o}/gw"), "models": [gateway_model(), {"id": "broken"}]}),
                )
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

fn root(origin: &str) -> pi_test_support::TempDir {
    let tmp = pi_test_support::TempDir::new();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        json!({"providers": {
            "openrouter": {"baseUrl": format!("{origin}/api/v1")},
            "corp": {"oauth": "radius", "baseUrl": format!("{origin}/v1"), "name": "Corp"}
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        agent.join("auth.json"),
        json!({"openrouter": {"type": "api_key", "key": "or-key"},
               "corp": {"type": "api_key", "key": "gw-key"}})
        .to_string(),
    )
    .unwrap();
    tmp
}

fn pi(root: &Path, origin: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", root)
        .env("PI_CODING_AGENT_DIR", root.join("agent"))
        .env("PI_MODEL_CATALOG_URL", origin)
        .current_dir(root);
    c
}

fn store(root: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(root.join("agent/models-store.json")).unwrap())
        .unwrap()
}

fn chat_ids(entry: &Value) -> Vec<String> {
    entry["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["type"].as_str().unwrap_or("chat") == "chat")
        .map(|m| m["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn update_models_saves_the_personalized_and_gateway_catalogs() {
    let (origin, seen) = service(200);
    let tmp = root(&origin);
    let out = pi(tmp.path(), &origin)
        .args(["update", "--models"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout} {:?}", out.stderr);
    assert!(stdout.contains("Model catalogs refreshed"), "{stdout}");

    let saved = store(tmp.path());
    let or = &saved["openrouter"];
    assert_eq!(chat_ids(or), vec!["auto", "vendor/new-model"]);
    let models = or["models"].as_array().unwrap();
    let auto = models.iter().find(|m| m["id"] == "auto").unwrap();
    assert_eq!(auto["contextWindow"], json!(2000000));
    let new = models
        .iter()
        .find(|m| m["id"] == "vendor/new-model")
        .unwrap();
    assert_eq!(new["contextWindow"], json!(5000));
    assert_eq!(new["maxTokens"], json!(700));
    assert_eq!(
        new["cost"],
        json!({"input": 2, "output": 10, "cacheRead": 0, "cacheWrite": 0})
    );
    // Image and classifier models stay.
    assert!(models.iter().any(|m| m["type"] == "image"));
    assert!(or["checkedAt"].as_f64().unwrap() > 0.0);

    assert_eq!(
        saved["corp"]["models"],
        json!([{"id": "gw-model", "name": "Gateway Model", "reasoning": true, "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 64000, "maxTokens": 4000, "api": "pi-messages", "provider": "corp",
            "baseUrl": format!("{origin}/gw")}])
    );
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&(
        "/api/v1/models/user".to_string(),
        Some("Bearer or-key".to_string())
    )));
    assert!(seen.contains(&("/v1/config".to_string(), Some("Bearer gw-key".to_string()))));
}

#[test]
fn a_failing_model_list_fails_the_update_with_pi_text() {
    let (origin, _) = service(500);
    let tmp = root(&origin);
    let out = pi(tmp.path(), &origin)
        .args(["update", "--models"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "Error: Could not refresh model catalogs: openrouter: OpenRouter model list request failed: 500"
        ),
        "{stderr}"
    );
    // The gateway's catalog is saved all the same.
    assert_eq!(chat_ids(&store(tmp.path())["corp"]), vec!["gw-model"]);
}

#[test]
fn rpc_startup_lists_the_account_catalogs() {
    let (origin, _) = service(200);
    let tmp = root(&origin);
    let mut child = pi(tmp.path(), &origin)
        .args(["--mode", "rpc", "--no-tools"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut models = Vec::new();
    for n in 0.. {
        writeln!(stdin, r#"{{"id":"m{n}","type":"get_available_models"}}"#).unwrap();
        let response = loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).unwrap() > 0, "pi exited");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "response" && v["id"] == format!("m{n}") {
                break v;
            }
        };
        models = response["data"]["models"]
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
            .collect::<Vec<_>>();
        let or: Vec<&String> = models
            .iter()
            .filter(|m| m.starts_with("openrouter/"))
            .collect();
        if (or.len() == 2 && models.contains(&"corp/gw-model".to_string()))
            || Instant::now() > deadline
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let or: Vec<&String> = models
        .iter()
        .filter(|m| m.starts_with("openrouter/"))
        .collect();
    assert_eq!(or, vec!["openrouter/auto", "openrouter/vendor/new-model"]);
    assert!(models.contains(&"corp/gw-model".to_string()), "{models:?}");
}

#[test]
fn a_radius_login_with_a_legacy_gateway_catalog_lists_it_offline() {
    let tmp = pi_test_support::TempDir::new();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        json!({"providers": {"corp": {"oauth": "radius", "baseUrl": "http://127.0.0.1:9/v1"}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        agent.join("auth.json"),
        json!({"corp": {"type": "oauth", "access": "a", "refresh": "r", "expires": 4_102_444_800_000u64,
            "gatewayConfig": {"baseUrl": "http://127.0.0.1:9/gw", "models": [gateway_model(), {"id": "x"}]}}})
        .to_string(),
    )
    .unwrap();
    let mut child = pi(tmp.path(), "http://127.0.0.1:9")
        .env("PI_OFFLINE", "1")
        .args(["--mode", "rpc", "--no-tools"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    writeln!(stdin, r#"{{"id":"m","type":"get_available_models"}}"#).unwrap();
    let response = loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "pi exited");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "response" && v["id"] == "m" {
            break v;
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let corp: Vec<&Value> = response["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["provider"] == "corp")
        .collect();
    assert_eq!(corp.len(), 1, "{corp:?}");
    assert_eq!(corp[0]["id"], "gw-model");
    assert_eq!(corp[0]["api"], "pi-messages");
    assert_eq!(corp[0]["baseUrl"], "http://127.0.0.1:9/gw");
}

#[test]
fn an_openrouter_login_personalizes_with_its_access_token() {
    let (origin, seen) = service(200);
    let tmp = root(&origin);
    std::fs::write(
        tmp.path().join("agent/auth.json"),
        json!({"openrouter": {"type": "oauth", "access": "or-access", "refresh": "r",
                              "expires": 4_102_444_800_000u64}})
        .to_string(),
    )
    .unwrap();
    let out = pi(tmp.path(), &origin)
        .args(["update", "--models"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{:?}", out.stderr);
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains(&(
            "/api/v1/models/user".to_string(),
            Some("Bearer or-access".to_string())
        )),
        "{seen:?}"
    );
    // No credential for the gateway: it is not asked.
    assert!(!seen.iter().any(|(t, _)| t == "/v1/config"), "{seen:?}");
    assert_eq!(
        chat_ids(&store(tmp.path())["openrouter"]),
        vec!["auto", "vendor/new-model"]
    );
}

#[test]
fn a_stale_gateway_login_is_only_a_warning() {
    let (origin, _) = service(200);
    let tmp = root(&origin);
    // Expired, and the gateway refuses the refresh (its token endpoint answers 404).
    std::fs::write(
        tmp.path().join("agent/auth.json"),
        json!({"corp": {"type": "oauth", "access": "old", "refresh": "r", "expires": 1}})
            .to_string(),
    )
    .unwrap();
    let out = pi(tmp.path(), &origin)
        .args(["update", "--models"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("Warning: skipped model catalog for corp: OAuth refresh failed for corp\nLog in again with `pi auth login corp` to refresh it."),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Model catalogs refreshed"));
}
