//! Crash safety: a child process appends entries to a session as fast as it can and reports
//! each append after it returned; it is killed with SIGKILL at random moments, 200+ times.
//! After every kill the file must load, and hold every entry reported before the kill, with
//! an intact parent chain. Some entries are large (several pages), so kills also land inside a
//! `write` and leave torn lines that the next open has to cope with.
//!
//! The child is this test binary itself, re-run with `PI_SESSION_CHILD_FILE` set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TempDir;
use pi_protocol::content::StringOrBlocks;
use pi_protocol::message::UserMessage;
use pi_session::SessionStore;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "PI_SESSION_CHILD_FILE";
const KILLS: usize = 220;
const KILLS_PER_FILE: usize = 10;

/// A small deterministic generator (the test must not depend on the crate's id source).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The child: open (or create) the session and append until killed.
#[test]
fn child_append_loop() {
    let Some(file) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut store = SessionStore::open(Path::new(&file), None, Some(Path::new("/w"))).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "READY").unwrap();
    out.flush().unwrap();
    let mut rng = Rng(std::process::id() as u64);
    for n in 0u64.. {
        // Mostly small entries; one in 16 spans many pages.
        let len = if rng.below(16) == 0 {
            64_000 + rng.below(256_000)
        } else {
            20 + rng.below(600)
        };
        let text: String = std::iter::repeat_n("line \"q\"\n", (len / 10) as usize).collect();
        let message = UserMessage::new(StringOrBlocks::Text(format!("{n}:{text}")), n);
        let id = store.append_message(message.into()).unwrap();
        writeln!(out, "APPENDED {id}").unwrap();
        out.flush().unwrap();
    }
}

/// Runs one child on `file`, kills it after `delay`, and returns the ids it reported.
fn run_and_kill(file: &Path, delay: Duration) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_append_loop",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    for line in lines.by_ref() {
        // The harness prints `test child_append_loop ... ` before it on the same line.
        if line.unwrap().ends_with("READY") {
            break;
        }
        assert!(Instant::now() < deadline, "child never got ready");
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    child.wait().unwrap();
    lines
        .map_while(Result::ok)
        .filter_map(|l| l.strip_prefix("APPENDED ").map(str::to_owned))
        .collect()
}

#[test]
fn appends_survive_sigkill_at_random_points() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let dir = TempDir::new();
    let mut rng = Rng(0x5eed);
    let mut file = PathBuf::new();
    let mut reported: HashSet<String> = HashSet::new();
    let mut torn_seen = 0;
    let mut biggest = 0;
    for kill in 0..KILLS {
        if kill % KILLS_PER_FILE == 0 {
            file = dir.path().join(format!("s{kill}.jsonl"));
            reported.clear();
        }
        // A tenth of the kills hit right after opening (the repair of a torn tail included).
        let delay = match rng.below(10) {
            0 => Duration::ZERO,
            _ => Duration::from_micros(rng.below(4000)),
        };
        reported.extend(run_and_kill(&file, delay));
        let mut bytes = std::fs::read(&file).unwrap_or_default();
        // A kill inside a large `write` tears the line being written. Such kills are rare, so
        // a third of the time a torn next entry (a prefix of a copy of the last line) is added.
        if rng.below(3) == 0 && bytes.ends_with(b"\n") && bytes.len() > 1 {
            let start = bytes[..bytes.len() - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let last = bytes[start..bytes.len() - 1].to_vec();
            // A line of one byte (the stub of an earlier torn write) has no proper prefix.
            if last.len() >= 2 {
                let cut = 1 + rng.below(last.len() as u64 - 1) as usize;
                bytes.extend_from_slice(&last[..cut]);
                std::fs::write(&file, &bytes).unwrap();
            }
        }
        biggest = biggest.max(bytes.len());
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            torn_seen += 1;
        }
        // Check a copy: the next child must cope with the file as the kill left it.
        let copy = dir.path().join("check.jsonl");
        let _ = std::fs::remove_file(&copy);
        if file.exists() {
            std::fs::copy(&file, &copy).unwrap();
        }
        let store = SessionStore::open(&copy, None, Some(Path::new("/w")))
            .unwrap_or_else(|e| panic!("kill {kill}: {e}"));
        let ids: HashSet<&str> = store.entries().iter().filter_map(|e| e.id()).collect();
        for id in &reported {
            assert!(
                ids.contains(id.as_str()),
                "kill {kill}: reported entry {id} lost"
            );
        }
        for (i, e) in store.entries().iter().enumerate() {
            let want = if i == 0 {
                None
            } else {
                store.entries()[i - 1].id()
            };
            assert_eq!(
                e.parent_id(),
                want,
                "kill {kill}: broken chain at entry {i}"
            );
        }
        assert_eq!(store.leaf_id(), store.entries().last().and_then(|e| e.id()));
    }
    eprintln!("{KILLS} kills, {torn_seen} left a torn last line, largest file {biggest} bytes");
}
