//! What the reliability tests (kills, full disk, slow clients, concurrency) share: an agent home
//! whose `oc` provider is a loopback openai-completions mock, `pi --mode rpc` (ours or Pi 1.6.0)
//! on it, a driver for its records, and checks of the session files it leaves.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test
#![allow(dead_code)] // each test uses its own part

use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::Duration;

/// RPC mode on the `oc` model, without context files or extensions.
pub const MODEL_ARGS: [&str; 8] = [
    "--mode",
    "rpc",
    "-nc",
    "-ne",
    "--provider",
    "oc",
    "--model",
    "oc-model",
];

/// Settings for runs whose failures must show at once: no retries, no compaction.
pub const PLAIN_SETTINGS: &str = r#"{"retry":{"enabled":false},"compaction":{"enabled":false}}"#;

/// One SSE event of an openai-completions stream.
pub fn chunk(delta: Value, finish: Value) -> String {
    chunk_with_usage(delta, finish, None)
}

/// [`chunk`] carrying `usage` (the last chunk of an answer).
pub fn chunk_with_usage(delta: Value, finish: Value, usage: Option<Value>) -> String {
    let mut c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    if let Some(u) = usage {
        c["usage"] = u;
    }
    format!("data: {c}\n\n")
}

/// The chunks of a text answer made of `deltas`.
pub fn text_chunks<S: Into<String>>(deltas: impl IntoIterator<Item = S>) -> Vec<String> {
    let mut chunks = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    for d in deltas {
        chunks.push(chunk(json!({"content": d.into()}), Value::Null));
    }
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push("data: [DONE]\n\n".into());
    chunks
}

/// A tokio runtime for the mock provider.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Writes `<home>/agent/{models,settings}.json`: the `oc` provider served at `base`.
pub fn write_agent(home: &Path, base: &str, context_window: u64, max_tokens: u64, settings: &str) {
    let agent = home.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"oc": {"baseUrl": format!("{base}/v1"),
        "api": "openai-completions", "apiKey": "oc-key",
        "models": [{"id": "oc-model", "reasoning": false, "input": ["text"],
            "contextWindow": context_window, "maxTokens": max_tokens}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    std::fs::write(agent.join("settings.json"), settings).unwrap();
}

/// A hermetic environment in `home`, offline, with piped stdin/stdout and no stderr.
pub fn agent_env(command: &mut Command, home: &Path) {
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

/// Our `pi` on the `oc` model in `home`.
pub fn ours(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi"));
    c.args(MODEL_ARGS);
    agent_env(&mut c, home);
    c
}

/// Pi 1.6.0 on the `oc` model in `home`, when `conformance/.reference` has it (else `None`;
/// with `PI_REQUIRE_REFERENCE` set, a missing reference fails the test).
pub fn reference(home: &Path) -> Option<Command> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/.reference");
    let cli = root.join("pi16/node_modules/@earendil-works/pi-coding-agent/dist/cli.js");
    let node = root.join("node22/package/bin/node");
    if !(cli.exists() && node.exists()) {
        assert!(
            std::env::var("PI_REQUIRE_REFERENCE").is_err(),
            "PI_REQUIRE_REFERENCE is set but the reference is not installed"
        );
        return None;
    }
    let mut c = Command::new(node);
    c.arg(cli).args(MODEL_ARGS);
    agent_env(&mut c, home);
    Some(c)
}

/// A running process and the records of its stdout, parsed by a reader thread.
pub struct Rpc {
    pub child: Child,
    pub stdin: ChildStdin,
    pub rx: Receiver<Value>,
    reader: JoinHandle<()>,
}

impl Rpc {
    pub fn start(mut command: Command) -> Rpc {
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let rec = serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|e| panic!("not a JSON record ({e}): {line:.200}"));
                if tx.send(rec).is_err() {
                    break;
                }
            }
        });
        Rpc {
            child,
            stdin,
            rx,
            reader,
        }
    }

    /// Sends `command`; the records up to its response — for a prompt the run goes on to the
    /// `end` record (`agent_end`, `agent_settled`) unless the prompt was refused. `None` if the
    /// process ended or nothing came for `timeout`.
    pub fn call_until(
        &mut self,
        command: &Value,
        end: &str,
        timeout: Duration,
    ) -> Option<Vec<Value>> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .ok()?;
        let mut records = Vec::new();
        let mut answered = false;
        loop {
            let rec = self.rx.recv_timeout(timeout).ok()?;
            let done = match rec["type"].as_str() {
                Some("response") if rec["id"] == command["id"] => {
                    answered = true;
                    command["type"] != "prompt" || rec["success"] != true
                }
                Some(kind) if kind == end => answered,
                _ => false,
            };
            records.push(rec);
            if done {
                return Some(records);
            }
        }
    }

    /// The response to `get_messages`.
    pub fn messages(&mut self, timeout: Duration) -> Vec<Value> {
        let records = self
            .call_until(&json!({"id": "m", "type": "get_messages"}), "", timeout)
            .expect("get_messages answered");
        let rec = records.last().unwrap();
        assert_eq!(rec["success"], true, "get_messages: {rec}");
        rec["data"]["messages"].as_array().unwrap().clone()
    }

    /// The session file `get_state` names.
    pub fn session_file(&mut self, timeout: Duration) -> PathBuf {
        let records = self
            .call_until(&json!({"id": "st", "type": "get_state"}), "", timeout)
            .expect("get_state answered");
        PathBuf::from(
            records.last().unwrap()["data"]["sessionFile"]
                .as_str()
                .unwrap(),
        )
    }

    /// Closes stdin and waits: true when the process exited with success.
    pub fn stop(self) -> bool {
        let Rpc {
            mut child,
            stdin,
            reader,
            ..
        } = self;
        drop(stdin);
        let ok = child.wait().unwrap().success();
        let _ = reader.join();
        ok
    }

    /// SIGKILL; every record that arrived before, in order.
    pub fn kill(mut self) -> Vec<Value> {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.reader.join().unwrap();
        self.rx.try_iter().collect()
    }
}

/// The messages a fresh process (`command`: ours or Pi's) loads from `file`; it must load it
/// and exit cleanly. `who` names the process in failures.
pub fn load_messages(mut command: Command, file: &Path, who: &str) -> Vec<Value> {
    command.args(["--session", file.to_str().unwrap()]);
    let mut rpc = Rpc::start(command);
    let records = rpc
        .call_until(
            &json!({"id": "m", "type": "get_messages"}),
            "",
            Duration::from_secs(60),
        )
        .unwrap_or_else(|| panic!("{who} gave no messages for {}", file.display()));
    let rec = records.last().unwrap();
    assert_eq!(
        rec["success"],
        true,
        "{who} does not load {}: {rec}",
        file.display()
    );
    let messages = rec["data"]["messages"].as_array().unwrap().clone();
    assert!(rpc.stop(), "{who} failed on {}", file.display());
    messages
}

/// The entries of a session file: every line whole JSON, a header first, the tree closed.
pub fn whole_entries(file: &Path) -> Vec<Value> {
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
    assert_eq!(entries[0]["type"], "session", "{}", file.display());
    let ids: HashSet<&str> = entries.iter().filter_map(|e| e["id"].as_str()).collect();
    for e in &entries[1..] {
        if let Some(p) = e["parentId"].as_str() {
            assert!(ids.contains(p), "{}: dangling parent {p}", file.display());
        }
    }
    entries
}

/// The messages of `message_end` records whose role is `user` or `assistant`.
pub fn conversation(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| {
            r["type"] == "message_end"
                && matches!(r["message"]["role"].as_str(), Some("user" | "assistant"))
        })
        .map(|r| r["message"].clone())
        .collect()
}

/// A small deterministic generator (splitmix64) for kill times and choices.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// `name` from the environment as a number, `_` separators allowed.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}
