//! Provider faults through the real binary (issue #22, item 3). For every wire API, the
//! scenarios recorded from Pi 1.6.0 in `crates/pi-ai/tests/fixtures/<api>/` (`errors`, `faults`,
//! `retries`, `refused`, `dns`) are played against `pi --mode rpc` with the same models.json,
//! settings and server behaviour (status errors, resets and closes before and during the body,
//! stalls ended by the idle timeout and by `abort`, malformed and oversized events, invalid
//! UTF-8, invalid tool-call JSON, empty and never-ending bodies, provider-level retries, no
//! server, no such host). Every prompt must settle within a bound (never a hang), end with the
//! stop reason, error text and content Pi ended it with, after as many requests as Pi sent, and
//! the process must keep answering: each scenario's last prompt is a good answer.
//!
//! pi-ai's `reference_fixtures` test compares the same recordings event by event at the library
//! level; this one proves the binary's settings (`httpIdleTimeoutMs`, `retry.provider`) and
//! run loop carry them through.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod support;

use mock::{Mock, reply_from};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::Pi;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../pi-ai/tests/fixtures");
/// The longest any recorded prompt may take to settle. The slowest recorded behaviour is Codex
/// retrying twice (1 s, then 2 s) or the SDKs backing off; a hang would run into this.
const SETTLE: Duration = Duration::from_secs(20);

/// A run of 65,536 or more equal characters as `<<FILL:c:n>>`, as the recorder stores
/// oversized deltas.
fn shrink(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let mut n = 1usize;
        while chars.peek() == Some(&c) {
            chars.next();
            n += 1;
        }
        if n >= 65_536 {
            out.push_str(&format!("<<FILL:{c}:{n}>>"));
        } else {
            out.extend(std::iter::repeat_n(c, n));
        }
    }
    out
}

/// What must match in a final assistant message: stop reason, error text and the blocks
/// (tool-call ids are left out: some APIs' are generated per run).
fn outcome(message: &Value) -> Value {
    let blocks: Vec<Value> = message["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|b| match b["type"].as_str() {
                    Some("text") => json!(["text", shrink(b["text"].as_str().unwrap_or(""))]),
                    Some("thinking") => json!(["thinking", b["thinking"]]),
                    Some("toolCall") => json!(["toolCall", b["name"], b["arguments"]]),
                    other => json!([other]),
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "stopReason": message["stopReason"],
        "errorMessage": message["errorMessage"],
        "content": blocks,
    })
}

fn assistant_ends(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .map(|r| outcome(&r["message"]))
        .collect()
}

/// The `text_end`/`thinking_end` events of `message_update` records, as on the wire.
fn block_ends(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|r| r["type"] == "message_update")
        .map(|r| r["assistantMessageEvent"].clone())
        .filter(|e| e["type"] == "text_end" || e["type"] == "thinking_end")
        .collect()
}

/// Plays one recorded scenario; the number of prompts played.
fn play(rt: &tokio::runtime::Runtime, path: &std::path::Path) -> usize {
    play_comparing(rt, path, false)
}

/// [`play`], also comparing every text and thinking block's end event with Pi's when
/// `block_events` (the recordings of answers that complete).
fn play_comparing(
    rt: &tokio::runtime::Runtime,
    path: &std::path::Path,
    block_events: bool,
) -> usize {
    let fx: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let name = path.display().to_string();
    let mock = rt.block_on(Mock::start(vec![]));
    let models = serde_json::to_string(&fx["models"])
        .unwrap()
        .replace("http://127.0.0.1:PORT", &mock.base())
        .replace("http://127.0.0.1:0", &mock.base());
    let settings = serde_json::to_string(&fx["settings"]).unwrap();
    let env: Vec<(&str, String)> = fx["env"]
        .as_object()
        .map(|e| {
            e.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default();
    let mut pi = Pi::spawn_with(
        &[
            "--mode",
            "rpc",
            "--no-session",
            "-nc",
            "-ne",
            "--provider",
            fx["provider"].as_str().unwrap(),
            "--model",
            fx["model"].as_str().unwrap(),
            "--thinking",
            "off",
        ],
        &env,
        &[
            ("agent/models.json", models.as_str()),
            ("agent/settings.json", settings.as_str()),
            ("f.txt", "content of f\n"),
            ("g.txt", "content of g\n"),
        ],
    );
    let mut prompts = 0;
    for (i, step) in fx["steps"].as_array().unwrap().iter().enumerate() {
        mock.clear();
        for r in step["responses"].as_array().unwrap() {
            mock.push(reply_from(r));
        }
        let before = mock.requests().len();
        let cmd = &step["cmd"];
        let id = cmd["id"].as_str().unwrap().to_string();
        let label = format!("{name} step {} ({})", i + 1, cmd["message"]);
        let started = Instant::now();
        pi.write(format!("{cmd}\n").as_bytes());
        let prompt = cmd["type"] == "prompt";
        if prompt {
            prompts += 1;
            if let Some(ms) = step["abort_after_ms"].as_u64() {
                std::thread::sleep(Duration::from_millis(ms));
                pi.write(
                    format!("{}\n", json!({"type": "abort", "id": format!("{id}a")})).as_bytes(),
                );
            }
        }
        let mut got = Vec::new();
        loop {
            let rec = pi.read_json();
            let done = if prompt {
                rec["type"] == "agent_settled"
            } else {
                rec["type"] == "response" && rec["id"] == id.as_str()
            };
            got.push(rec);
            if done {
                break;
            }
        }
        let took = started.elapsed();
        assert!(took < SETTLE, "{label}: took {took:?} to settle");
        let want: Vec<Value> = step["stdout"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(
            assistant_ends(&got),
            assistant_ends(&want),
            "{label}: the final messages differ from Pi's"
        );
        if block_events {
            assert_eq!(
                block_ends(&got),
                block_ends(&want),
                "{label}: the block end events differ from Pi's"
            );
        }
        let sent = mock.requests().len() - before;
        let want_sent = step["requests"].as_array().unwrap().len();
        assert_eq!(
            sent, want_sent,
            "{label}: {sent} requests, Pi sent {want_sent}"
        );
    }
    // Still answering after every fault.
    pi.write(b"{\"id\":\"alive\",\"type\":\"get_state\"}\n");
    loop {
        let rec = pi.read_json();
        if rec["id"] == "alive" {
            assert_eq!(rec["success"], true, "{name}: {rec}");
            break;
        }
    }
    pi.close_stdin();
    assert_eq!(pi.wait_exit(), Some(0), "{name}: exit status");
    prompts
}

fn replay(api: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut played = 0;
    for scenario in ["errors", "faults", "retries", "refused", "dns"] {
        let path = std::path::Path::new(FIXTURES)
            .join(api)
            .join(format!("{scenario}.json"));
        if path.exists() {
            played += play(&rt, &path);
        }
    }
    eprintln!("{api}: {played} recorded prompts matched through the binary");
    assert!(played >= 20, "{api}: only {played} prompts recorded");
}

/// A pi-messages backend's `contentSignature` reaches `message_update` as in Pi.
#[test]
fn pi_messages_block_ends_carry_the_content_signature() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let path = std::path::Path::new(FIXTURES).join("pi-messages/conversation.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("contentSignature"));
    assert!(play_comparing(&rt, &path, true) > 0);
}

#[test]
fn openai_completions_faults_end_as_in_pi() {
    replay("openai-completions");
}

#[test]
fn anthropic_messages_faults_end_as_in_pi() {
    replay("anthropic-messages");
}

#[test]
fn openai_responses_faults_end_as_in_pi() {
    replay("openai-responses");
}

#[test]
fn azure_openai_responses_faults_end_as_in_pi() {
    replay("azure-openai-responses");
}

#[test]
fn openai_codex_responses_faults_end_as_in_pi() {
    replay("openai-codex-responses");
}

#[test]
fn google_generative_ai_faults_end_as_in_pi() {
    replay("google-generative-ai");
}

#[test]
fn google_vertex_faults_end_as_in_pi() {
    replay("google-vertex");
}

#[test]
fn mistral_conversations_faults_end_as_in_pi() {
    replay("mistral-conversations");
}

#[test]
fn pi_messages_faults_end_as_in_pi() {
    replay("pi-messages");
}

#[test]
fn bedrock_converse_stream_faults_end_as_in_pi() {
    replay("bedrock-converse-stream");
}
