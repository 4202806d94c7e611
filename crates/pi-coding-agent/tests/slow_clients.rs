//! Slow and gone clients (issue #22, item 4), against the real binary and a loopback provider
//! streaming a long answer:
//!
//! * `a_client_that_stops_reading_mid_stream_loses_nothing`: the client reads nothing for a
//!   while in the middle of a 100,000-delta stream; pi's memory stays under 50 MB (backpressure
//!   reaches the provider socket instead of piling up), then every delta arrives, in order, and
//!   the session file holds the whole answer.
//! * `a_client_that_closes_stdout_mid_stream_ends_pi`: stdout's reader goes away (EPIPE): pi exits
//!   at once with status 1, as Pi does, and the session file it leaves is valid and reloads.
//! * `a_client_that_closes_stdin_mid_run_gets_an_orderly_shutdown`: stdin ends during the stream:
//!   the run is aborted and waited for, pi exits 0, the prompt and the aborted answer are saved.
//!
//! Sizes: `PI_SLOW_CLIENT_SECS` (how long the client stops reading; default 3, the full
//! size is 60: `scripts/reliability slow-clients`), `PI_SLOW_CLIENT_DELTAS` (default 100,000).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod oc_agent;
mod support;

use mock::{Mock, Reply};
use oc_agent::env_number as env_u64;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};
use support::TempDir;

/// An openai-completions answer of `n` deltas (`d0 d1 …`); the full text comes back too.
fn long_answer(n: u64) -> (Reply, String) {
    let deltas: Vec<String> = (0..n).map(|i| format!("d{i} ")).collect();
    let text = deltas.concat();
    (Reply::sse(oc_agent::text_chunks(deltas)), text)
}

struct Session {
    child: Child,
    home: TempDir,
    mock: Mock,
    _rt: tokio::runtime::Runtime,
}

/// `pi --mode rpc` with a session directory, on a provider served by `reply`.
fn start(reply: Reply) -> Session {
    let rt = oc_agent::runtime();
    let mock = rt.block_on(Mock::start(vec![reply]));
    let home = TempDir::new();
    oc_agent::write_agent(
        &home.path,
        &mock.base(),
        200_000,
        32000,
        oc_agent::PLAIN_SETTINGS,
    );
    let child = oc_agent::ours(&home.path)
        .arg("--session-dir")
        .arg(home.path.join("sessions"))
        .spawn()
        .unwrap();
    Session {
        child,
        home,
        mock,
        _rt: rt,
    }
}

impl Session {
    fn session_file(&self) -> PathBuf {
        let dir = self.home.path.join("sessions");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        assert_eq!(files.len(), 1, "one session file in {}", dir.display());
        files[0].clone()
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "pi did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn next(reader: &mut impl BufRead) -> Value {
    let mut line = String::new();
    assert!(reader.read_line(&mut line).unwrap() > 0, "stdout closed");
    serde_json::from_str(&line).unwrap()
}

/// Reads until the first text delta of the answer.
fn until_first_delta(reader: &mut impl BufRead) {
    loop {
        let rec = next(reader);
        if rec["assistantMessageEvent"]["type"] == "text_delta" {
            return;
        }
    }
}

/// Every line of a session file is a JSON object, and `pi --session <file>` reloads it: the
/// user and assistant messages it answers `get_messages` with.
fn reload(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} of {} is not JSON ({e})", i + 1, file.display()));
        assert!(v.is_object());
    }
    let mut pi = support::Pi::spawn(&["--mode", "rpc", "--session", file.to_str().unwrap()]);
    pi.write(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n");
    loop {
        let rec = pi.read_json();
        if rec["id"] == "m" {
            assert_eq!(rec["success"], true, "{rec}");
            // The conversation (Pi keeps the system prompt as a message of its own too).
            return rec["data"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] != "system")
                .cloned()
                .collect();
        }
    }
}

fn prompt(stdin: &mut impl Write) {
    stdin
        .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"talk\"}\n")
        .unwrap();
    stdin.flush().unwrap();
}

#[test]
fn a_client_that_stops_reading_mid_stream_loses_nothing() {
    let deltas = env_u64("PI_SLOW_CLIENT_DELTAS", 100_000);
    let stall = Duration::from_secs(env_u64("PI_SLOW_CLIENT_SECS", 3));
    let (reply, text) = long_answer(deltas);
    let mut s = start(reply);
    let mut stdin = s.child.stdin.take().unwrap();
    let mut reader = BufReader::with_capacity(1 << 16, s.child.stdout.take().unwrap());
    prompt(&mut stdin);
    until_first_delta(&mut reader);
    let mut got = String::new();
    // Stop reading: pi's output pipe fills, its queue fills, and it stops reading the provider.
    let started = Instant::now();
    let mut peak = 0;
    while started.elapsed() < stall {
        peak = peak.max(s.rss_kib());
        std::thread::sleep(Duration::from_millis(100));
    }
    let stalled_for = started.elapsed();
    let mut records = 0u64;
    let message_end = loop {
        let rec = next(&mut reader);
        let ev = &rec["assistantMessageEvent"];
        if ev["type"] == "text_delta" {
            got.push_str(ev["delta"].as_str().unwrap());
            records += 1;
        }
        if records.is_multiple_of(4096) {
            peak = peak.max(s.rss_kib());
        }
        if rec["type"] == "message_end" && rec["message"]["role"] == "assistant" {
            break rec;
        }
    };
    // The first delta was read before the stall.
    assert_eq!(format!("d0 {got}"), text, "deltas lost or out of order");
    assert_eq!(message_end["message"]["content"][0]["text"], text.as_str());
    assert_eq!(message_end["message"]["stopReason"], "stop");
    loop {
        if next(&mut reader)["type"] == "agent_settled" {
            break;
        }
    }
    eprintln!(
        "{deltas} deltas ({} bytes), client stalled {stalled_for:?}: {records} text_delta records \
         after the stall, all in order; peak RSS {peak} KiB",
        text.len()
    );
    assert!(peak < 50 * 1024, "RSS peaked at {peak} KiB");
    drop(stdin);
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0));
    let messages = reload(&s.session_file());
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["content"][0]["text"], text.as_str());
    assert_eq!(s.mock.requests().len(), 1);
}

#[test]
fn a_client_that_closes_stdout_mid_stream_ends_pi() {
    let (reply, _) = long_answer(env_u64("PI_SLOW_CLIENT_DELTAS", 100_000));
    let mut s = start(reply);
    let mut stdin = s.child.stdin.take().unwrap();
    let mut reader = BufReader::new(s.child.stdout.take().unwrap());
    prompt(&mut stdin);
    until_first_delta(&mut reader);
    let closed = Instant::now();
    drop(reader);
    // The next write fails with EPIPE: Pi exits at once with 1.
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(1));
    eprintln!("exited {:?} after stdout closed", closed.elapsed());
    let messages = reload(&s.session_file());
    assert_eq!(messages[0]["role"], "user", "the prompt is saved");
}

#[test]
fn a_client_that_closes_stdin_mid_run_gets_an_orderly_shutdown() {
    let (reply, _) = long_answer(env_u64("PI_SLOW_CLIENT_DELTAS", 100_000));
    let mut s = start(reply);
    let mut stdin = s.child.stdin.take().unwrap();
    let mut reader = BufReader::new(s.child.stdout.take().unwrap());
    prompt(&mut stdin);
    until_first_delta(&mut reader);
    drop(stdin);
    // Drain whatever still comes (Pi cuts event delivery first) until stdout closes.
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        line.clear();
    }
    assert_eq!(s.wait_exit(Duration::from_secs(10)), Some(0));
    let messages = reload(&s.session_file());
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["stopReason"], "aborted");
}
