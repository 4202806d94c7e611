//! `get_messages` of a session larger than the pipe and than one `writev` batch: messages kept
//! as the text they were read as and messages parsed (lines not in `JSON.stringify` form) come
//! out in order, comma-separated, byte for byte as `JSON.stringify` would write them, also when
//! the pipe takes the answer piece by piece.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const MESSAGES: usize = 1234;

#[test]
fn kept_and_parsed_messages_come_out_in_order_and_in_canonical_form() {
    let dir = pi_test_support::TempDir::new();
    let cwd = dir.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(dir.path().join("agent")).unwrap();
    let header = json!({"type": "session", "version": 3,
        "id": "019b8c2e-4a10-7000-8000-00000000be9c",
        "timestamp": "2026-01-05T00:00:00.000Z", "cwd": cwd.display().to_string()});
    let mut file = format!("{header}\n");
    let mut expected = Vec::new();
    let mut parent = Value::Null;
    for i in 0..MESSAGES {
        let text = format!("line {i} \"quoted\" \\ {}\n", "x".repeat(1500 + i % 97));
        let message = json!({"role": "user", "content": [{"type": "text", "text": text}],
            "timestamp": 1_767_225_600_000u64 + i as u64});
        let compact = serde_json::to_string(&message).unwrap();
        // Every seventh message in a form JSON.stringify would not write (spaces after the
        // colons): it is parsed and written anew.
        let written = if i % 7 == 3 {
            compact.replacen("\"role\":", "\"role\": ", 1)
        } else {
            compact.clone()
        };
        let id = format!("{i:08x}");
        file.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-05T00:00:00.000Z\",\"message\":{written}}}\n"
        ));
        parent = json!(id);
        expected.push(compact);
    }
    let session = dir.path().join("s.jsonl");
    std::fs::write(&session, file).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--mode", "rpc", "--session"])
        .arg(&session)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("PI_CODING_AGENT_DIR", dir.path().join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n")
        .unwrap();
    // Read slowly at first, so that the answer meets a full pipe mid-write.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut reader = BufReader::with_capacity(4096, child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "no get_messages answer"
        );
        if line.starts_with("{\"id\":\"m\"") {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();

    let want = format!(
        "{{\"id\":\"m\",\"type\":\"response\",\"command\":\"get_messages\",\"success\":true,\"data\":{{\"messages\":[{}]}}}}\n",
        expected.join(",")
    );
    assert_eq!(line.len(), want.len());
    assert!(line == want, "the answer differs from JSON.stringify's");
}
