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
mod oc_agent;
mod support;

use mock::{Mock, Reply};
use oc_agent::{PLAIN_SETTINGS, Rng, Rpc, chunk};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use support::TempDir;

const KILLS_PER_FILE: usize = 8;

fn slow(chunks: Vec<String>) -> Reply {
    let mut r = Reply::sse(chunks);
    r.gap = Duration::from_millis(3);
    r
}

/// A bash tool call, then (after its result) a text answer of many small deltas.
fn replies() -> Vec<Reply> {
    let call = json!({"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1",
        "type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo tool; sleep 0.02\"}"}}]});
    vec![
        slow(vec![
            chunk(call, Value::Null),
            chunk(json!({}), json!("tool_calls")),
            "data: [DONE]\n\n".into(),
        ]),
        slow(oc_agent::text_chunks((0..30).map(|i| format!("w{i} ")))),
    ]
}

/// `pi --session <file>` in `home`.
fn pi(home: &Path, file: &Path) -> Rpc {
    let mut command = oc_agent::ours(home);
    command.args(["--session", file.to_str().unwrap()]);
    Rpc::start(command)
}

#[test]
fn every_message_the_client_saw_survives_sigkill() {
    let kills = std::env::var("PI_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40usize);
    let rt = oc_agent::runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let home = TempDir::new();
    oc_agent::write_agent(&home.path, &mock.base(), 200_000, 32000, PLAIN_SETTINGS);
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
        let mut rpc = pi(&home.path, &file);
        let command = if rng.below(4) == 0 {
            json!({"id": "b", "type": "bash", "command": "echo rpc; sleep 0.05; echo done"})
        } else {
            json!({"id": "p", "type": "prompt", "message": format!("go {kill}")})
        };
        rpc.stdin
            .write_all(format!("{command}\n").as_bytes())
            .unwrap();
        // The first run of a file settles (Pi writes a new session once it has an answer).
        let delay = if kill % KILLS_PER_FILE == 0 {
            Duration::from_millis(800)
        } else {
            Duration::from_millis(20 + rng.below(250))
        };
        std::thread::sleep(delay);
        seen.extend(
            rpc.kill()
                .into_iter()
                .filter(|r| r["type"] == "message_end")
                .map(|r| r["message"].clone()),
        );
        if !file.exists() {
            continue;
        }
        let loaded = oc_agent::load_messages(oc_agent::ours(&home.path), &file, "pi");
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
