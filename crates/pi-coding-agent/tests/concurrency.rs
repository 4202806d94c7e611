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
mod support;

use mock::{Mock, Reply};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};
use support::TempDir;

const TIMEOUT: Duration = Duration::from_secs(60);
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

/// A text answer of about `size` bytes in a few deltas.
fn answer(tag: &str, size: usize) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        format!("data: {c}\n\n")
    };
    let mut chunks = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    for _ in 0..4 {
        chunks.push(chunk(
            json!({"content": format!("{tag} {}", "y".repeat(size / 4))}),
            Value::Null,
        ));
    }
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push("data: [DONE]\n\n".into());
    let mut r = Reply::sse(chunks);
    r.gap = Duration::from_millis(2);
    r
}

struct Setup {
    _rt: tokio::runtime::Runtime,
    mock: Mock,
    home: TempDir,
}

fn setup() -> Setup {
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
            "contextWindow": 2000000, "maxTokens": 32000}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    std::fs::write(
        agent.join("settings.json"),
        r#"{"retry":{"enabled":false},"compaction":{"enabled":false}}"#,
    )
    .unwrap();
    Setup {
        _rt: rt,
        mock,
        home,
    }
}

fn command(program: &Path, home: &Path) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PI_CODING_AGENT_DIR", home.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

fn ours(home: &Path) -> Command {
    let mut c = command(Path::new(env!("CARGO_BIN_EXE_pi")), home);
    c.args(MODEL_ARGS);
    c
}

fn reference(home: &Path) -> Option<Command> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/.reference");
    let cli = root.join("pi16/node_modules/@earendil-works/pi-coding-agent/dist/cli.js");
    if !cli.exists() {
        return None;
    }
    let mut c = command(&root.join("node22/package/bin/node"), home);
    c.arg(cli).args(MODEL_ARGS);
    Some(c)
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

    /// Sends `command`; the records up to its response (for a prompt: up to `agent_settled`).
    fn call(&mut self, command: Value) -> Vec<Value> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .unwrap();
        let mut records = Vec::new();
        let mut answered = false;
        loop {
            let rec = self
                .rx
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|e| panic!("no answer to {command}: {e}"));
            let done = match rec["type"].as_str() {
                Some("response") if rec["id"] == command["id"] => {
                    assert_eq!(rec["success"], true, "{rec}");
                    answered = true;
                    command["type"] != "prompt"
                }
                Some("agent_settled") => answered,
                _ => false,
            };
            records.push(rec);
            if done {
                return records;
            }
        }
    }

    fn session_file(&mut self) -> PathBuf {
        let state = self.call(json!({"id": "st", "type": "get_state"}));
        PathBuf::from(
            state.last().unwrap()["data"]["sessionFile"]
                .as_str()
                .unwrap(),
        )
    }

    fn stop(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

/// The conversation messages among `records` (`message_end` of user and assistant messages).
fn conversation(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| {
            r["type"] == "message_end"
                && matches!(r["message"]["role"].as_str(), Some("user" | "assistant"))
        })
        .map(|r| r["message"].clone())
        .collect()
}

/// The entries of a session file: every line whole, the tree closed.
fn entries(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(
        text.ends_with('\n'),
        "{} ends in a torn line",
        file.display()
    );
    let entries: Vec<Value> = text
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{}: a broken line ({e}): {:.200}", file.display(), l))
        })
        .collect();
    assert_eq!(entries[0]["type"], "session");
    let ids: HashSet<&str> = entries.iter().filter_map(|e| e["id"].as_str()).collect();
    for e in &entries[1..] {
        if let Some(p) = e["parentId"].as_str() {
            assert!(ids.contains(p), "{}: dangling parent {p}", file.display());
        }
    }
    entries
}

/// How many messages a fresh process loads from `file`.
fn loaded_messages(mut command: Command, file: &Path) -> usize {
    command.args(["--session", file.to_str().unwrap()]);
    let mut rpc = Rpc::start(command);
    let records = rpc.call(json!({"id": "m", "type": "get_messages"}));
    let n = records.last().unwrap()["data"]["messages"]
        .as_array()
        .unwrap()
        .len();
    rpc.stop();
    n
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
    let mut first = Rpc::start({
        let mut c = ours(&s.home.path);
        c.args(["--session", file.to_str().unwrap()]);
        c
    });
    let mut seen =
        conversation(&first.call(json!({"id": "p", "type": "prompt", "message": "first"})));
    let mut second = Rpc::start({
        let mut c = ours(&s.home.path);
        c.args(["--session", file.to_str().unwrap()]);
        c
    });
    assert_eq!(first.session_file(), second.session_file());
    // Both prompt at once, round after round; RPC bash results land in between.
    let mut pairs: Vec<(Value, Value)> = Vec::new();
    for round in 0..rounds {
        let a =
            json!({"id": format!("a{round}"), "type": "prompt", "message": format!("A{round}")});
        let b =
            json!({"id": format!("b{round}"), "type": "prompt", "message": format!("B{round}")});
        let (ra, rb) = std::thread::scope(|scope| {
            let ta = scope.spawn(|| first.call(a));
            let tb = scope.spawn(|| second.call(b));
            (ta.join().unwrap(), tb.join().unwrap())
        });
        for records in [&ra, &rb] {
            let msgs = conversation(records);
            assert_eq!(msgs.len(), 2, "round {round}");
            pairs.push((msgs[0].clone(), msgs[1].clone()));
            seen.extend(msgs);
        }
        if round % 4 == 0 {
            first.call(json!({"id": "bash", "type": "bash", "command": "echo from-a"}));
            second.call(json!({"id": "bash", "type": "bash", "command": "echo from-b"}));
        }
    }
    first.stop();
    second.stop();

    let entries = entries(&file);
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
                        seen.extend(conversation(&rpc.call(p)));
                    }
                    (rpc.session_file(), seen)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for rpc in members {
        rpc.stop();
    }
    let files: HashSet<&PathBuf> = results.iter().map(|(f, _)| f).collect();
    assert_eq!(files.len(), fleet, "two members share a session file");
    let mut checked = 0;
    for (i, (file, seen)) in results.iter().enumerate() {
        let entries = entries(file);
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
