//! Input fuzzing (issue #22, item 1), at a size CI can afford; `scripts/reliability fuzz` runs
//! the full size (10^6 lines into the real binary) and the coverage-guided target in `fuzz/`.
//!
//! * `decoder_survives_mutated_lines`: mutated commands through the framing (split at random
//!   read boundaries), `JSON.parse`, the command decoder and the error record, in-process.
//! * `real_binary_answers_every_mutated_line`: the same kind of lines fed to `pi --mode rpc`
//!   with valid commands interleaved: every line gets exactly the answers Pi gives it (one, or
//!   none for a dialog answer), the interleaved commands succeed, the process never exits on its
//!   own and its memory stays bounded.
//!
//! Sizes: `PI_FUZZ_CASES` (in-process lines, default 20,000), `PI_FUZZ_LINES` (lines into the
//! binary, default 20,000), `PI_FUZZ_SEED`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../src/modes/rpc/framing.rs"]
#[allow(dead_code)]
mod framing;
#[path = "fuzz/input.rs"]
mod input;
mod support;

use framing::{Frame, LineSplitter};
use input::{Rng, check_line, expected_answers, mutated_line};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    env_usize("PI_FUZZ_SEED", 0x22_f022) as u64
}

/// Frames `bytes` as one read and as reads cut at random points; both must agree.
fn frame_both_ways(rng: &mut Rng, bytes: &[u8]) -> Vec<Frame> {
    let mut whole = Vec::new();
    let mut s = LineSplitter::new();
    s.push(bytes, &mut whole);
    whole.extend(s.finish());
    let mut pieces = Vec::new();
    let mut s = LineSplitter::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = 1 + rng.below(rest.len().min(64));
        s.push(&rest[..n], &mut pieces);
        rest = &rest[n..];
    }
    pieces.extend(s.finish());
    assert_eq!(whole, pieces, "framing depends on read boundaries");
    whole
}

#[test]
fn decoder_survives_mutated_lines() {
    let cases = env_usize("PI_FUZZ_CASES", 20_000);
    let mut rng = Rng(seed());
    let (mut answered, mut silent) = (0usize, 0usize);
    for _ in 0..cases {
        // Sometimes two or three lines in one buffer, with CRLF or a missing final LF.
        let mut bytes = mutated_line(&mut rng);
        for _ in 0..rng.below(3) {
            bytes.extend_from_slice(if rng.below(2) == 0 { b"\n" } else { b"\r\n" });
            bytes.extend(mutated_line(&mut rng));
        }
        for frame in frame_both_ways(&mut rng, &bytes) {
            let Frame::Line(line) = frame else {
                panic!("no test line is over the cap")
            };
            match check_line(&line) {
                Some(_) => answered += 1,
                None => silent += 1,
            }
        }
    }
    eprintln!(
        "{cases} buffers: {answered} lines answered, {silent} silent (dialog answers or commands)"
    );
}

/// Regression lines found by fuzzing or worth keeping: each must hold the invariants.
#[test]
fn known_hard_lines() {
    for line in [
        // `type` must be the string itself: Pi answers an array that stringifies the same.
        r#"{"type":["extension_ui_response"],"id":"x"}"#,
        r#"{"type":"extension_ui_response"}"#,
        r#"{"type":"extension_ui_response","id":{"deep":[1]}}"#,
        r#"{"id":"\ud800","type":"get_state"}"#,
        "{\"id\":1e309,\"type\":\"abort\"}",
        "{\"id\":-0,\"type\":\"abort\"}",
        "\u{feff}{\"type\":\"abort\"}",
        "{\"type\":\"abort\"}\r",
        "{\"type\":\"prompt\",\"message\":\"\u{0}\"}",
        &("[".repeat(600) + &"]".repeat(600)),
        &format!(
            "{{\"id\":{},\"type\":\"abort\"}}",
            "[".repeat(512) + &"]".repeat(512)
        ),
    ] {
        check_line(line);
    }
    assert_eq!(
        expected_answers(r#"{"type":["extension_ui_response"],"id":"x"}"#),
        1
    );
}

/// One stdout record and its `id` when that is a string. Read with `JSON.parse`'s rules: an
/// echoed id or type may be nested as deep as the input allowed, past serde_json's limit.
fn parse_record(text: &str) -> (Option<String>, Value) {
    let rec =
        pi_js::parse::parse_js_json(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:.300}"));
    (rec["id"].as_str().map(str::to_owned), rec)
}

/// Resident set size of `pid` from /proc, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn real_binary_answers_every_mutated_line() {
    let lines = env_usize("PI_FUZZ_LINES", 20_000);
    // Every this many lines a valid command whose answer is checked.
    const VALID_EVERY: usize = 50;
    // Every this many lines a very long one (MBs, beyond what the in-process slice builds).
    const LONG_EVERY: usize = 25_000;
    let home = support::TempDir::new();
    std::fs::create_dir_all(home.path.join("agent")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--mode", "rpc", "--no-session", "-ne", "-nc"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home.path)
        .env("PI_CODING_AGENT_DIR", home.path.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(&home.path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();

    // The generator runs on its own thread and reports how many answers it expects.
    let seed = seed();
    let writer = std::thread::spawn(move || {
        let mut rng = Rng(seed);
        let mut expected = 0usize;
        let mut valid = 0usize;
        let mut buf = Vec::with_capacity(1 << 20);
        for n in 0..lines {
            let line = if n % LONG_EVERY == LONG_EVERY - 1 {
                let mb = 1 + rng.below(16);
                format!(
                    "{{\"id\":\"long{n}\",\"type\":\"get_state\",\"pad\":\"{}\"}}",
                    "y".repeat(mb << 20)
                )
                .into_bytes()
            } else {
                mutated_line(&mut rng)
            };
            // What Pi's line reader would hand over: CR stripped, invalid UTF-8 replaced.
            let framed = line.strip_suffix(b"\r").unwrap_or(&line);
            expected += expected_answers(&String::from_utf8_lossy(framed));
            buf.extend_from_slice(&line);
            buf.push(b'\n');
            if n % VALID_EVERY == 0 {
                buf.extend_from_slice(
                    format!("{{\"id\":\"\u{2713}{valid}\",\"type\":\"get_state\"}}\n").as_bytes(),
                );
                valid += 1;
                expected += 1;
            }
            if buf.len() > 256 * 1024 {
                stdin.write_all(&buf).unwrap();
                buf.clear();
            }
        }
        // The marker that everything was sent (long-running commands may still answer after it).
        buf.extend_from_slice(b"{\"id\":\"end\",\"type\":\"get_state\"}\n");
        expected += 1;
        stdin.write_all(&buf).unwrap();
        stdin.flush().unwrap();
        (stdin, expected, valid)
    });

    let started = Instant::now();
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut responses = 0usize;
    let mut valid_seen = std::collections::HashSet::new();
    let mut peak_rss = 0u64;
    let mut rss_at_tenth = 0u64;
    let mut line = Vec::new();
    let mut last_sample = Instant::now();
    let mut writer = Some(writer);
    let mut target: Option<(std::process::ChildStdin, usize, usize)> = None;
    loop {
        if let Some((_, expected, _)) = &target
            && responses == *expected
        {
            break;
        }
        line.clear();
        let n = reader.read_until(b'\n', &mut line).unwrap();
        assert!(
            n > 0,
            "pi closed stdout after {responses} answers (it must never exit on its own)"
        );
        assert_eq!(line.pop(), Some(b'\n'), "record without LF");
        let text = std::str::from_utf8(&line).expect("stdout is UTF-8");
        let (id, rec) = parse_record(text);
        if rec["type"] != "response" {
            continue;
        }
        responses += 1;
        if id.as_deref() == Some("end") {
            target = Some(writer.take().unwrap().join().unwrap());
        }
        if let Some(n) = id.as_deref().and_then(|id| id.strip_prefix('\u{2713}')) {
            assert_eq!(
                rec["success"], true,
                "interleaved command failed: {text:.300}"
            );
            assert!(
                valid_seen.insert(n.to_string()),
                "answered twice: {text:.300}"
            );
        }
        if last_sample.elapsed() > Duration::from_millis(200) {
            last_sample = Instant::now();
            let rss = rss_kib(pid);
            peak_rss = peak_rss.max(rss);
            if rss_at_tenth == 0 && responses > lines / 10 {
                rss_at_tenth = rss;
            }
        }
        if let Some((_, expected, _)) = &target {
            assert!(responses <= *expected, "more answers than lines");
        }
    }
    let (mut stdin, expected, valid) = target.unwrap();
    assert_eq!(
        valid_seen.len(),
        valid,
        "every interleaved command answered"
    );
    // Still alive and still answering.
    assert!(child.try_wait().unwrap().is_none(), "pi exited");
    stdin
        .write_all(b"{\"id\":\"last\",\"type\":\"get_state\"}\n")
        .unwrap();
    loop {
        line.clear();
        assert!(reader.read_until(b'\n', &mut line).unwrap() > 0);
        let (id, rec) = parse_record(std::str::from_utf8(&line).unwrap().trim_end());
        if id.as_deref() == Some("last") {
            assert_eq!(rec["success"], true);
            break;
        }
        assert_ne!(rec["type"], "response", "an answer nobody asked for: {rec}");
    }
    let rss_end = rss_kib(pid);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{lines} mutated lines + {valid} valid: {expected} answers, all received; {:.0} lines/s; \
         RSS peak {} KiB, at 10% {rss_at_tenth} KiB, at the end {rss_end} KiB",
        (lines + valid) as f64 / secs,
        peak_rss
    );
    // Bounded: the longest line is 16 MiB, held at most a few times over while it is handled.
    assert!(peak_rss < 160 * 1024, "RSS peaked at {peak_rss} KiB");
    if rss_at_tenth > 0 {
        assert!(
            rss_end < rss_at_tenth + 32 * 1024,
            "RSS grew from {rss_at_tenth} KiB to {rss_end} KiB over the run"
        );
    }
}
