//! Kill -9 during runs (issue #22, item 2), against the real binary: `pi --session <file>` runs
//! prompts whose answers call the bash tool, and RPC `bash` commands, against a loopback provider
//! that streams slowly; it is killed with SIGKILL at random moments. After every kill the file
//! must reload in a fresh `pi`, and every message whose `message_end` reached the client must be
//! in it, unchanged. Several kills land on each file, so a reload also follows a torn tail.
//!
//! Sizes: `PI_KILLS` (default 40; the full campaign is 1,000: `scripts/reliability kills`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod support;

use mock::{Mock, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::TempDir;

const KILLS_PER_FILE: usize = 8;

fn chunk(delta: Value, finish: Value) -> String {
    let c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {c}\n\n")
}

fn slow(chunks: Vec<String>) -> Reply {
    let mut r = Reply::sse(chunks);
    r.gap = Duration::from_millis(3);
    r
}

/// A bash tool call, then (after its result) a text answer of many small deltas.
fn replies() -> Vec<Reply> {
    let call = json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1",
        "type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo tool; sleep 0.02\"}"}}]});
    let mut text = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    for i in 0..30 {
        text.push(chunk(json!({"content": format!("w{i} ")}), Value::Null));
    }
    text.push(chunk(json!({}), json!("stop")));
    text.push("data: [DONE]\n\n".into());
    vec![
        slow(vec![
            chunk(call, Value::Null),
            chunk(json!({}), json!("tool_calls")),
            "data: [DONE]\n\n".into(),
        ]),
        slow(text),
    ]
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

fn pi(home: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .args([
            "--mode",
            "rpc",
            "-nc",
            "-ne",
            "--provider",
            "oc",
            "--model",
            "oc-model",
        ])
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every message of the session as a fresh `pi` loads it.
fn reload(home: &Path, file: &Path) -> Vec<Value> {
    let mut child = pi(home, &["--session", file.to_str().unwrap()]);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n")
        .unwrap();
    let reader = BufReader::new(child.stdout.take().unwrap());
    let mut messages = None;
    for line in reader.lines() {
        let rec: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if rec["id"] == "m" {
            assert_eq!(
                rec["success"],
                true,
                "{} does not load: {rec}",
                file.display()
            );
            messages = Some(rec["data"]["messages"].as_array().unwrap().clone());
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    messages.unwrap()
}

#[test]
fn every_message_the_client_saw_survives_sigkill() {
    let kills = std::env::var("PI_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40usize);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(Mock::start(vec![]));
    let home = TempDir::new();
    let agent = home.path.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"oc": {"baseUrl": format!("{}/v1", mock.base()),
        "api": "openai-completions", "apiKey": "oc-key",
        "models": [{"id": "oc-model", "reasoning": false, "input": ["text"],
            "contextWindow": 200000, "maxTokens": 32000}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        r#"{"retry":{"enabled":false},"compaction":{"enabled":false}}"#,
    )
    .unwrap();
    let mut rng = Rng(0x22_0002);
    let mut seen: Vec<Value> = Vec::new();
    let mut file = home.path.join("none");
    let mut checked = 0usize;
    let started = Instant::now();
    for kill in 0..kills {
        if kill % KILLS_PER_FILE == 0 {
            file = home.path.join(format!("s{kill}.jsonl"));
            seen.clear();
        }
        mock.clear();
        for r in replies() {
            mock.push(r);
        }
        let mut child = pi(&home.path, &["--session", file.to_str().unwrap()]);
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let rec: Value = serde_json::from_str(&line).unwrap();
                if rec["type"] == "message_end" {
                    let _ = tx.send(rec["message"].clone());
                }
            }
        });
        let command = if rng.below(4) == 0 {
            json!({"id": "b", "type": "bash", "command": "echo rpc; sleep 0.05; echo done"})
        } else {
            json!({"id": "p", "type": "prompt", "message": format!("go {kill}")})
        };
        stdin.write_all(format!("{command}\n").as_bytes()).unwrap();
        // The first run of a file settles (Pi writes a new session once it has an answer).
        let delay = if kill % KILLS_PER_FILE == 0 {
            Duration::from_millis(800)
        } else {
            Duration::from_millis(20 + rng.below(250))
        };
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        seen.extend(rx.try_iter());
        if !file.exists() {
            continue;
        }
        let loaded = reload(&home.path, &file);
        for m in &seen {
            assert!(
                loaded.contains(m),
                "kill {kill}: a message the client saw is missing from {}: {m}",
                file.display()
            );
        }
        checked += seen.len();
    }
    eprintln!(
        "{kills} kills in {:?}: every session file reloaded; {checked} message checks, none lost",
        started.elapsed()
    );
    assert!(
        checked > kills,
        "too few messages reached the client to mean anything"
    );
}
