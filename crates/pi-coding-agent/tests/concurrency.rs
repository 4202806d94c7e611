//! Concurrency (issue #22, item 6), against the real binary.
//!
//! Two `pi` processes on one session file: Pi 1.6.0 takes no lock (`appendFileSync` per entry),
//! so both go on; every entry is one `O_APPEND` write, lines never interleave inside, and each
//! process's entries chain to its own leaf (two branches in one file). We do the same; our
//! appends also hold an advisory lock so a failed write's truncation cannot cut the other
//! writer's line. Checked: every line whole, every message either client saw is in the file, each
//! answer's parent is its own prompt, the tree closed, and the file loads in a fresh `pi` and in
//! Pi 1.6.0 (when the reference is installed).
//!
//! A fleet: `PI_FLEET` processes (default 50, CI included: about 3 s), one new
//! session each in one shared session directory, prompting at once: one file per process, each
//! holding exactly its own conversation, whole and loadable.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod oc_agent;
mod support;

use mock::{Mock, Reply};
use oc_agent::{PLAIN_SETTINGS, Rpc, conversation, ours, reference, whole_entries};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::TempDir;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A text answer of about `size` bytes in a few deltas.
fn answer(tag: &str, size: usize) -> Reply {
    let delta = format!("{tag} {}", "y".repeat(size / 4));
    let mut r = Reply::sse(oc_agent::text_chunks(vec![delta; 4]));
    r.gap = Duration::from_millis(2);
    r
}

struct Setup {
    _rt: tokio::runtime::Runtime,
    mock: Mock,
    home: TempDir,
}

fn setup() -> Setup {
    let rt = oc_agent::runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let home = TempDir::new();
    oc_agent::write_agent(&home.path, &mock.base(), 2_000_000, 32000, PLAIN_SETTINGS);
    Setup {
        _rt: rt,
        mock,
        home,
    }
}

/// Sends `command`; the records up to its response (for a prompt: up to `agent_settled`),
/// which must succeed.
fn call(rpc: &mut Rpc, command: Value) -> Vec<Value> {
    let records = rpc
        .call_until(&command, "agent_settled", TIMEOUT)
        .unwrap_or_else(|| panic!("no answer to {command}"));
    let response = records
        .iter()
        .find(|r| r["type"] == "response" && r["id"] == command["id"])
        .unwrap();
    assert_eq!(response["success"], true, "{response}");
    records
}

/// How many messages a fresh process loads from `file`.
fn loaded_messages(command: Command, file: &Path) -> usize {
    oc_agent::load_messages(command, file, "a fresh process").len()
}

fn opened(home: &Path, file: &Path) -> Rpc {
    let mut c = ours(home);
    c.args(["--session", file.to_str().unwrap()]);
    Rpc::start(c)
}

#[test]
fn two_processes_append_to_one_session_file() {
    let s = setup();
    let file = s.home.path.join("shared.jsonl");
    // The file exists before both open it (two creators: the second gets EEXIST, as in Pi).
    let rounds = 12;
    for i in 0..2 * rounds + 2 {
        // Every fourth answer is large (256 KiB): more than a pipe or page holds in one go.
        let size = if i % 4 == 3 { 256 * 1024 } else { 200 };
        // Each answer's text is its own: two answers of one round may share a millisecond,
        // and the check below finds an answer's entry by its message.
        s.mock.push(answer(&format!("a{i}"), size));
    }
    let mut first = opened(&s.home.path, &file);
    let mut seen = conversation(&call(
        &mut first,
        json!({"id": "p", "type": "prompt", "message": "first"}),
    ));
    let mut second = opened(&s.home.path, &file);
    assert_eq!(first.session_file(TIMEOUT), second.session_file(TIMEOUT));
    // Both prompt at once, round after round; RPC bash results land in between.
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    for round in 0..rounds {
        let a =
            json!({"id": format!("a{round}"), "type": "prompt", "message": format!("A{round}")});
        let b =
            json!({"id": format!("b{round}"), "type": "prompt", "message": format!("B{round}")});
        let (ra, rb) = std::thread::scope(|scope| {
            let ta = scope.spawn(|| call(&mut first, a));
            let tb = scope.spawn(|| call(&mut second, b));
            (ta.join().unwrap(), tb.join().unwrap())
        });
        for records in [&ra, &rb] {
            let msgs = conversation(records);
            assert_eq!(msgs.len(), 2, "round {round}");
            pairs.push((msgs[0].clone(), msgs[1].clone()));
            seen.extend(msgs);
        }
        if round % 4 == 0 {
            call(
                &mut first,
                json!({"id": "bash", "type": "bash", "command": "echo from-a"}),
            );
            call(
                &mut second,
                json!({"id": "bash", "type": "bash", "command": "echo from-b"}),
            );
        }
    }
    assert!(first.stop() && second.stop());

    let entries = whole_entries(&file);
    let by_id: HashMap<&str, &Value> = entries
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e)))
        .collect();
    for m in &seen {
        assert!(
            entries.iter().any(|e| e["message"] == *m),
            "a message a client saw is not in the file: {:.200}",
            m.to_string()
        );
    }
    // Each answer hangs under the prompt it answered: the two processes' branches never cross.
    for (prompt, answer) in &pairs {
        let entry = entries.iter().find(|e| e["message"] == *answer).unwrap();
        let parent = by_id[entry["parentId"].as_str().unwrap()];
        assert_eq!(parent["message"], *prompt, "an answer under another prompt");
    }
    let answers = entries
        .iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .count();
    assert_eq!(answers, 2 * rounds + 1);
    let ours_n = loaded_messages(ours(&s.home.path), &file);
    if let Some(theirs) = reference(&s.home.path) {
        assert_eq!(loaded_messages(theirs, &file), ours_n);
    }
    eprintln!(
        "two writers, {rounds} concurrent rounds: {} entries, {} messages checked, loads ({ours_n} messages on the last branch)",
        entries.len(),
        seen.len()
    );
}

#[test]
fn a_fleet_keeps_one_whole_file_per_session() {
    let fleet = std::env::var("PI_FLEET")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50usize);
    let prompts = 3;
    let s = setup();
    for _ in 0..fleet * prompts {
        s.mock.push(answer("f", 2000));
    }
    let started = Instant::now();
    let mut members: Vec<Rpc> = (0..fleet).map(|_| Rpc::start(ours(&s.home.path))).collect();
    let results: Vec<(PathBuf, Vec<Value>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = members
            .iter_mut()
            .enumerate()
            .map(|(i, rpc)| {
                scope.spawn(move || {
                    let mut seen = Vec::new();
                    for n in 0..prompts {
                        let p = json!({"id": "p", "type": "prompt", "message": format!("member {i} prompt {n}")});
                        seen.extend(conversation(&call(rpc, p)));
                    }
                    (rpc.session_file(TIMEOUT), seen)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for rpc in members {
        assert!(rpc.stop());
    }
    let files: HashSet<&PathBuf> = results.iter().map(|(f, _)| f).collect();
    assert_eq!(files.len(), fleet, "two members share a session file");
    let mut checked = 0;
    for (i, (file, seen)) in results.iter().enumerate() {
        let entries = whole_entries(file);
        let mine = format!("member {i} prompt ");
        for e in &entries {
            if e["message"]["role"] == "user" {
                let text = e["message"]["content"][0]["text"].as_str().unwrap();
                assert!(
                    text.starts_with(&mine),
                    "{}: a foreign prompt {text}",
                    file.display()
                );
            }
        }
        for m in seen {
            assert!(
                entries.iter().any(|e| e["message"] == *m),
                "lost in {}",
                file.display()
            );
        }
        assert_eq!(seen.len(), 2 * prompts);
        checked += seen.len();
    }
    // A sample reloads in a fresh `pi` and in Pi.
    let (file, seen) = &results[fleet / 2];
    let n = loaded_messages(ours(&s.home.path), file);
    assert!(n >= seen.len());
    if let Some(theirs) = reference(&s.home.path) {
        assert_eq!(loaded_messages(theirs, file), n);
    }
    eprintln!(
        "fleet of {fleet}: {fleet} files, {checked} messages checked, none lost or misplaced, in {:?}",
        started.elapsed()
    );
}
