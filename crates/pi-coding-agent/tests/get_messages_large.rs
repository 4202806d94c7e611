//! `get_messages` of a session larger than the pipe and than one `writev` batch: messages kept
//! as the text they were read as and messages parsed (lines not in `JSON.stringify` form) come
//! out in order, comma-separated, byte for byte as `JSON.stringify` would write them, also when
//! the pipe takes the answer piece by piece.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::{Value, json};
use support::Pi;

const MESSAGES: usize = 1234;

#[test]
fn kept_and_parsed_messages_come_out_in_order_and_in_canonical_form() {
    let header = json!({"type": "session", "version": 3,
        "id": "019b8c2e-4a10-7000-8000-00000000be9c",
        "timestamp": "2026-01-05T00:00:00.000Z", "cwd": "${PI_TEST_HOME}"});
    let mut file = format!("{header}\n");
    let mut expected = Vec::new();
    let mut parent = Value::Null;
    for i in 0..MESSAGES {
        let text = format!("line {i} \"quoted\" \\ {}\n", "x".repeat(1500 + i % 97));
        let message = json!({"role": "user", "content": [{"type": "text", "text": text}],
            "timestamp": 1_767_225_600_000u64 + i as u64});
        let compact = serde_json::to_string(&message).unwrap();
        // Every seventh message in a form JSON.stringify would not write (a space after a
        // colon): it is parsed and written anew.
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
    // The answer (~2 MB) is far more than the pipe holds: it goes out in partial writes.
    let mut pi = Pi::spawn_with(
        &["--mode", "rpc", "--session", "s.jsonl"],
        &[],
        &[("s.jsonl", &file)],
    );
    pi.write(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n");
    let line = loop {
        let line = pi.read_line();
        if line.starts_with("{\"id\":\"m\"") {
            break line;
        }
    };
    let want = format!(
        "{{\"id\":\"m\",\"type\":\"response\",\"command\":\"get_messages\",\"success\":true,\"data\":{{\"messages\":[{}]}}}}",
        expected.join(",")
    );
    assert_eq!(line.len(), want.len());
    assert!(line == want, "the answer differs from JSON.stringify's");
}
