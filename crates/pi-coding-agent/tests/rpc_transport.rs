//! The RPC transport of the real binary: framing, parse errors, correlation, shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::Pi;

#[test]
fn crlf_line_is_answered() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"a\",\"type\":\"abort\"}\r\n");
    assert_eq!(
        pi.read_line(),
        r#"{"id":"a","type":"response","command":"abort","success":true}"#
    );
}

#[test]
fn two_commands_in_one_write_get_two_responses_in_order() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":1,\"type\":\"abort_bash\"}\n{\"id\":2,\"type\":\"abort_retry\"}\n");
    assert_eq!(
        pi.read_json(),
        json!({"id":1,"type":"response","command":"abort_bash","success":true})
    );
    assert_eq!(
        pi.read_json(),
        json!({"id":2,"type":"response","command":"abort_retry","success":true})
    );
}

#[test]
fn one_command_split_across_writes() {
    let mut pi = Pi::rpc();
    for part in [
        &b"{\"id\":\"s"[..],
        b"plit\",\"ty",
        b"pe\":\"abort_bash\"",
        b"}\n",
    ] {
        pi.write(part);
        std::thread::sleep(Duration::from_millis(30));
    }
    assert_eq!(pi.read_json()["id"], "split");
}

#[test]
fn multibyte_character_split_across_writes_survives() {
    let mut pi = Pi::rpc();
    let line = "{\"id\":\"é😀\",\"type\":\"abort_bash\"}\n".as_bytes();
    let cut = line.iter().position(|&b| b == 0xF0).unwrap() + 2; // inside the emoji
    pi.write(&line[..cut]);
    std::thread::sleep(Duration::from_millis(50));
    pi.write(&line[cut..]);
    assert_eq!(pi.read_json()["id"], "é😀");
}

#[test]
fn unicode_line_separators_stay_inside_strings() {
    let mut pi = Pi::rpc();
    pi.write("{\"id\":\"a\u{2028}b\u{2029}c\",\"type\":\"abort_bash\"}\n".as_bytes());
    // Echoed raw, exactly as JSON.stringify writes U+2028/U+2029.
    assert_eq!(
        pi.read_line(),
        "{\"id\":\"a\u{2028}b\u{2029}c\",\"type\":\"response\",\"command\":\"abort_bash\",\"success\":true}"
    );
}

#[test]
fn empty_and_blank_lines_are_parse_errors() {
    let mut pi = Pi::rpc();
    pi.write(b"\n   \n");
    let expected = r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: Unexpected end of JSON input"}"#;
    assert_eq!(pi.read_line(), expected);
    assert_eq!(pi.read_line(), expected);
}

#[test]
fn invalid_json_gets_v8_message_without_id() {
    let mut pi = Pi::rpc();
    pi.write(b"{this is not json\n");
    assert_eq!(
        pi.read_line(),
        r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: Expected property name or '}' in JSON at position 1 (line 1 column 2)"}"#
    );
}

#[test]
fn final_line_without_newline_is_answered_at_eof() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"last\",\"type\":\"abort_bash\"}");
    pi.close_stdin();
    assert_eq!(pi.read_json()["id"], "last");
    assert_eq!(pi.wait_exit(), Some(0));
}

#[test]
fn one_megabyte_line_is_handled() {
    let mut pi = Pi::rpc();
    let pad = "x".repeat(1024 * 1024);
    pi.write(format!("{{\"id\":\"big\",\"type\":\"abort_bash\",\"pad\":\"{pad}\"}}\n").as_bytes());
    assert_eq!(
        pi.read_json(),
        json!({"id":"big","type":"response","command":"abort_bash","success":true})
    );
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"a\xffb\",\"type\":\"abort_bash\"}\n");
    assert_eq!(pi.read_json()["id"], "a\u{fffd}b");
}

#[test]
fn non_object_json_is_unknown_command_undefined() {
    let mut pi = Pi::rpc();
    pi.write(b"[1,2]\n\"get_state\"\n42\ntrue\n");
    for _ in 0..4 {
        assert_eq!(
            pi.read_line(),
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#
        );
    }
}

#[test]
fn null_line_is_answered_instead_of_crashing() {
    // Pi 1.6.0 dies with an unhandled TypeError here (DEVIATIONS.md).
    let mut pi = Pi::rpc();
    pi.write(b"null\n{\"id\":\"after\",\"type\":\"abort_bash\"}\n");
    assert_eq!(
        pi.read_line(),
        r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#
    );
    assert_eq!(pi.read_json()["id"], "after");
}

#[test]
fn missing_type_echoes_id_but_no_command() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"m\"}\n");
    assert_eq!(
        pi.read_line(),
        r#"{"id":"m","type":"response","success":false,"error":"Unknown command: undefined"}"#
    );
}

#[test]
fn unknown_command_echoes_id_with_its_json_type() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":5,\"type\":\"nope\"}\n{\"id\":{\"k\":[1.0]},\"type\":\"nope\"}\n");
    assert_eq!(
        pi.read_line(),
        r#"{"id":5,"type":"response","command":"nope","success":false,"error":"Unknown command: nope"}"#
    );
    assert_eq!(
        pi.read_line(),
        r#"{"id":{"k":[1]},"type":"response","command":"nope","success":false,"error":"Unknown command: nope"}"#
    );
}

#[test]
fn missing_field_is_a_clear_error() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"p\",\"type\":\"prompt\"}\n");
    assert_eq!(
        pi.read_line(),
        r#"{"id":"p","type":"response","command":"prompt","success":false,"error":"Invalid prompt command: missing field `message`"}"#
    );
}

#[test]
fn concurrent_commands_are_each_answered_exactly_once() {
    let mut pi = Pi::rpc();
    let kinds = [
        "abort",
        "abort_bash",
        "clear_queue",
        "get_state",
        "prompt",
        "bash",
        "nope",
    ];
    let mut batch = String::new();
    for i in 0..140 {
        let kind = kinds[i % kinds.len()];
        let mut cmd = json!({"id": format!("c{i}"), "type": kind});
        if kind == "prompt" {
            cmd["message"] = json!("hi");
        }
        if kind == "bash" {
            cmd["command"] = json!("true");
        }
        batch.push_str(&cmd.to_string());
        batch.push('\n');
    }
    pi.write(batch.as_bytes());
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 140 {
        let rec = pi.read_json();
        if rec["type"] != "response" {
            continue;
        }
        let id = rec["id"].as_str().unwrap().to_string();
        let idx: usize = id[1..].parse().unwrap();
        assert_eq!(rec["command"], kinds[idx % kinds.len()], "{rec}");
        assert!(seen.insert(id, rec).is_none(), "answered twice");
    }
    pi.close_stdin();
    assert_eq!(pi.wait_exit(), Some(0));
    assert!(
        pi.read_rest().iter().all(|r| r["type"] != "response"),
        "extra responses"
    );
}

#[test]
fn stdin_eof_exits_zero() {
    let mut pi = Pi::rpc();
    pi.close_stdin();
    assert_eq!(pi.wait_exit(), Some(0));
}

#[test]
fn sigterm_exits_143_and_sighup_129() {
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let mut pi = Pi::rpc();
        pi.write(b"{\"id\":\"ready\",\"type\":\"abort_bash\"}\n");
        pi.read_json();
        pi.signal(sig);
        assert_eq!(pi.wait_exit(), Some(code), "signal {sig}");
    }
}

#[test]
fn stdout_descriptor_is_private_and_fd1_points_at_stderr() {
    let mut pi = Pi::rpc();
    pi.write(b"{\"id\":\"r\",\"type\":\"abort_bash\"}\n");
    pi.read_json();
    let fd = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", pi.pid())).unwrap();
    // Anything that writes to fd 1 (a child, a stray print) reaches stderr, never the protocol.
    assert_eq!(fd(1), fd(2));
}

/// Started with stderr closed, pi opens `/dev/null` in its place (as Rust's own start-up
/// does), so no file it opens later becomes descriptor 2.
#[test]
#[allow(unsafe_code)] // `pre_exec` closes stderr in the child
fn a_closed_stderr_is_replaced_by_dev_null() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::process::CommandExt;
    let home = support::TempDir::new();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    command
        .args(["--mode", "rpc", "--no-session"])
        .env_clear()
        .env("HOME", &home.path)
        .env("PI_CODING_AGENT_DIR", home.path.join("agent"))
        .env("PI_OFFLINE", "1")
        .current_dir(&home.path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    // SAFETY: only `close`, which is async-signal-safe, runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::close(2);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"id\":\"r\",\"type\":\"abort_bash\"}\n")
        .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains(r#""success":true"#), "{line}");
    let fd2 = std::fs::read_link(format!("/proc/{}/fd/2", child.id())).unwrap();
    assert_eq!(fd2, std::path::Path::new("/dev/null"));
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_client_that_stops_reading_does_not_grow_memory() {
    let mut pi = Pi::rpc();
    // Startup done: measure from an answered command on.
    pi.write(b"{\"id\":\"warm\",\"type\":\"get_state\"}\n");
    pi.read_json();
    let rss_before = pi.rss_kib();
    // ~60 MB of responses that nobody reads: the pipe fills, the writer blocks, the bounded queue
    // fills, and the input side stops reading stdin.
    let line = format!("{{\"id\":\"{}\",\"type\":\"nope\"}}\n", "x".repeat(200));
    let batch = line.repeat(1000);
    let writer = pi.spawn_writer((0..250).map(|_| batch.clone().into_bytes()).collect());
    std::thread::sleep(Duration::from_millis(1500));
    let rss_stalled = pi.rss_kib();
    assert!(
        rss_stalled < rss_before + 20 * 1024,
        "RSS grew from {rss_before} KiB to {rss_stalled} KiB while stdout was not read"
    );
    // Reading again drains everything; every command is answered.
    let mut answered = 0;
    while answered < 250_000 {
        let rec: Value = pi.read_json();
        assert_eq!(rec["command"], "nope");
        answered += 1;
    }
    writer.join().unwrap();
}

#[test]
fn responses_larger_than_a_chunk_arrive_whole_and_in_order() {
    // Three ~400 KB messages: each of get_messages, get_tree and get_entries is written in
    // several chunks; commands sent with them must be answered after them, not inside them.
    let dir = support::TempDir::new();
    let file = dir.path.join("big.jsonl");
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"0190d3a5-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}),
    ];
    let mut parent = Value::Null;
    for i in 0..3u64 {
        let id = format!("0000000{i}");
        let text = format!("{i}\u{e9}\"\n").repeat(100_000);
        lines.push(json!({"type":"message","id":id,"parentId":parent,"timestamp":format!("2026-01-01T00:00:0{i}.000Z"),
            "message":{"role":"user","content":[{"type":"text","text":text}],"timestamp":1767225600000u64 + i}}));
        parent = json!(id);
    }
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, body).unwrap();
    let mut pi = Pi::spawn(&["--mode", "rpc", "--session", file.to_str().unwrap()]);
    pi.write(
        b"{\"id\":1,\"type\":\"get_messages\"}\n{\"id\":2,\"type\":\"get_tree\"}\n{\"id\":3,\"type\":\"get_entries\"}\n{\"id\":4,\"type\":\"get_entries\",\"since\":\"nope\"}\n{\"id\":5,\"type\":\"abort_bash\"}\n",
    );
    let messages = pi.read_json();
    assert_eq!(messages["id"], 1);
    let texts: Vec<&str> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 3);
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(*t, format!("{i}\u{e9}\"\n").repeat(100_000));
    }
    let tree = pi.read_json();
    assert_eq!(tree["id"], 2);
    // Startup may append entries (e.g. the thinking level) after the loaded ones.
    let third = &tree["data"]["tree"][0]["children"][0]["children"][0];
    assert_eq!(third["entry"]["id"], "00000002");
    let entries = pi.read_json();
    assert_eq!(entries["id"], 3);
    assert_eq!(entries["data"]["leafId"], tree["data"]["leafId"]);
    for (i, line) in lines[1..].iter().enumerate() {
        assert_eq!(entries["data"]["entries"][i], *line);
    }
    let unknown = pi.read_json();
    assert_eq!(unknown["id"], 4);
    assert_eq!(unknown["success"], false);
    assert_eq!(pi.read_json()["id"], 5);
}
