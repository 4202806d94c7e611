//! A full disk (issue #22, item 2): the session file lives on a 1 MiB tmpfs that the test fills
//! while `pi` runs. Writes then fail with ENOSPC, as on a real full disk (RLIMIT_FSIZE would give
//! EFBIG, `/dev/full` cannot hold a file). The tmpfs is mounted in a user + mount namespace
//! (`unshare --user --map-root-user --mount`), so no root is needed; the test reaches the
//! namespace's files through `/proc/<pid>/root`. Where the system forbids unprivileged user
//! namespaces the test says so and passes, unless `PI_REQUIRE_TMPFS=1` (`scripts/reliability`).
//!
//! Expected: the refused answer ends the run with Pi's failure message (`ENOSPC: no space left
//! on device, write`) and `agent_end`; the process stays up; every entry written before is still
//! there and the file holds only whole lines, loads in a fresh `pi` (and in Pi 1.6.0 when the
//! reference is installed); once space is back the next prompt is answered and saved.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod support;

use mock::{Mock, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;
use support::TempDir;

const TIMEOUT: Duration = Duration::from_secs(30);
const MODEL_ARGS: [&str; 8] = [
    "--mode",
    "rpc",
    "-nc",
    "-ne",
    "--provider",
    "oc",
    "--model",
    "oc-model",
];

/// A text answer of `size` bytes.
fn answer(size: usize) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        format!("data: {c}\n\n")
    };
    Reply::sse(vec![
        chunk(json!({"role":"assistant","content":""}), Value::Null),
        chunk(json!({"content": "x".repeat(size)}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".into(),
    ])
}

fn env(command: &mut Command, home: &Path) {
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
}

struct Rpc {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
}

impl Rpc {
    fn start(mut command: Command) -> Rpc {
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx
                    .send(serde_json::from_str::<Value>(&line).unwrap())
                    .is_err()
                {
                    break;
                }
            }
        });
        Rpc { child, stdin, rx }
    }

    /// Sends `command`; the records up to its response (for a prompt: up to `agent_end`).
    /// `None` if the process ended first.
    fn call(&mut self, command: Value) -> Option<Vec<Value>> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .ok()?;
        let mut records = Vec::new();
        let mut answered = false;
        loop {
            let rec = self.rx.recv_timeout(TIMEOUT).ok()?;
            let done = match rec["type"].as_str() {
                Some("response") if rec["id"] == command["id"] => {
                    answered = true;
                    command["type"] != "prompt" || rec["success"] != true
                }
                Some("agent_end") => answered,
                _ => false,
            };
            records.push(rec);
            if done {
                return Some(records);
            }
        }
    }

    fn messages(&mut self) -> Vec<Value> {
        let records = self
            .call(json!({"id": "m", "type": "get_messages"}))
            .expect("get_messages answered");
        let rec = records.last().unwrap();
        assert_eq!(rec["success"], true, "get_messages: {rec}");
        rec["data"]["messages"].as_array().unwrap().clone()
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn message_ends(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == "message_end" && r["message"]["role"] != "system")
        .map(|r| r["message"].clone())
        .collect()
}

/// The record types, for a failure's message.
fn kinds(records: &[Value]) -> String {
    let k: Vec<String> = records
        .iter()
        .map(|r| format!("{} {}", r["type"], r["message"]["role"]))
        .collect();
    k.join(", ")
}

/// The entries of a session file; every line must be whole.
fn entries(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.ends_with('\n'),
        "a torn last line in {}",
        file.display()
    );
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: a torn line {l:?}")))
        .collect()
}

/// The messages a fresh process loads from a copy of the file.
fn load_copy(mut command: Command, file: &Path) -> Vec<Value> {
    command.args(["--session", file.to_str().unwrap()]);
    let mut rpc = Rpc::start(command);
    let messages = rpc.messages();
    rpc.stop();
    messages
}

#[test]
fn a_full_disk_fails_the_run_clearly_and_loses_nothing() {
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
    let disk = home.path.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let file = disk.join("s.jsonl");

    let has_unshare = Command::new("unshare")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_unshare {
        assert!(
            std::env::var("PI_REQUIRE_TMPFS").is_err(),
            "no `unshare` (util-linux) here"
        );
        eprintln!("skipped: `unshare` (util-linux) is not installed");
        return;
    }
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@""#)
        .arg(&disk)
        .arg(env!("CARGO_BIN_EXE_pi"))
        .args(MODEL_ARGS)
        .args(["--session", file.to_str().unwrap()]);
    env(&mut command, &home.path);
    let mut pi = Rpc::start(command);
    mock.push(answer(100));
    let Some(first) = pi.call(json!({"id": "p1", "type": "prompt", "message": "one"})) else {
        let status = pi.child.wait().unwrap();
        assert!(
            std::env::var("PI_REQUIRE_TMPFS").is_err(),
            "no tmpfs in a user namespace here ({status})"
        );
        eprintln!("skipped: unprivileged user namespaces are not available ({status})");
        return;
    };
    // The namespace's view of the disk, from outside.
    let inside = PathBuf::from(format!("/proc/{}/root", pi.child.id()))
        .join(disk.strip_prefix("/").unwrap());
    let inside_file = inside.join("s.jsonl");
    let saved = message_ends(&first);
    assert_eq!(saved.len(), 2, "{}", kinds(&first));

    // Fill the disk: what is left is less than a page.
    let mut filler = std::fs::File::create(inside.join("fill")).unwrap();
    let block = vec![0u8; 4096];
    let err = loop {
        if let Err(e) = filler.write_all(&block) {
            break e;
        }
    };
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    drop(filler);
    let before = std::fs::read(&inside_file).unwrap();

    // An answer larger than any slack: its entry cannot be written.
    mock.push(answer(64 * 1024));
    let refused = pi
        .call(json!({"id": "p2", "type": "prompt", "message": "two"}))
        .expect("pi survives a full disk");
    let failure = refused
        .iter()
        .find(|r| r["type"] == "message_end" && r["message"]["stopReason"] == "error")
        .unwrap_or_else(|| panic!("no failure message: {}", kinds(&refused)));
    assert_eq!(
        failure["message"]["errorMessage"],
        "ENOSPC: no space left on device, write"
    );
    assert!(refused.iter().any(|r| r["type"] == "agent_end"));
    // Whatever was written before is there, whole; nothing was glued to a torn line.
    let during = std::fs::read(&inside_file).unwrap();
    assert!(
        during.starts_with(&before),
        "entries written before were lost"
    );
    let on_disk = entries(&inside_file);
    for m in &saved {
        assert!(on_disk.iter().any(|e| e["message"] == *m), "lost: {m}");
    }
    // It loads, in a fresh `pi` and in Pi, from a copy.
    let copy = home.path.join("copy.jsonl");
    std::fs::write(&copy, &during).unwrap();
    let mut ours = Command::new(env!("CARGO_BIN_EXE_pi"));
    ours.args(MODEL_ARGS);
    env(&mut ours, &home.path);
    let loaded = load_copy(ours, &copy);
    for m in &saved {
        assert!(loaded.contains(m), "the copy does not load {m}");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/.reference");
    let cli = root.join("pi16/node_modules/@earendil-works/pi-coding-agent/dist/cli.js");
    if cli.exists() {
        std::fs::write(&copy, &during).unwrap();
        let mut theirs = Command::new(root.join("node22/package/bin/node"));
        theirs.arg(cli).args(MODEL_ARGS);
        env(&mut theirs, &home.path);
        assert_eq!(load_copy(theirs, &copy).len(), loaded.len());
    }
    // Still alive and answering.
    assert!(!pi.messages().is_empty());

    // Space back: the session goes on and is saved.
    std::fs::remove_file(inside.join("fill")).unwrap();
    mock.push(answer(100));
    let next = pi
        .call(json!({"id": "p3", "type": "prompt", "message": "three"}))
        .expect("answered");
    let later = message_ends(&next);
    assert_eq!(later.len(), 2, "{}", kinds(&next));
    assert_eq!(later[1]["stopReason"], "stop");
    let on_disk = entries(&inside_file);
    for m in saved.iter().chain(&later) {
        assert!(on_disk.iter().any(|e| e["message"] == *m), "not saved: {m}");
    }
    // The tree stays closed: the refused answer is not a parent of anything.
    let ids: Vec<&str> = on_disk.iter().filter_map(|e| e["id"].as_str()).collect();
    for e in &on_disk[1..] {
        if let Some(p) = e["parentId"].as_str() {
            assert!(ids.contains(&p), "dangling parent {p}");
        }
    }
    pi.stop();
}
