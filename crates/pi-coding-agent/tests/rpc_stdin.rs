//! What stdin can be: a pipe or a stream socket (as Node gives a child) is read by the runtime
//! itself, with no reader thread; a regular file or `/dev/null` by a thread with blocking
//! reads. Every kind gets its commands answered in order, a last line without LF at EOF, and
//! an exit at EOF.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{TempDir, thread_names};

fn spawn(home: &TempDir, stdin: Stdio) -> Child {
    let agent = home.path.join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--mode", "rpc", "--no-session"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home.path)
        .env("PI_CODING_AGENT_DIR", &agent)
        .env("PI_OFFLINE", "1")
        .current_dir(&home.path)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read_json(out: &mut impl BufRead) -> Value {
    let mut line = String::new();
    assert!(out.read_line(&mut line).unwrap() > 0, "stdout ended");
    serde_json::from_str(&line).unwrap()
}

/// Waits for the exit (at most 10 s); its code.
fn exit_code(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pi did not exit at EOF");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Commands in pieces (a line split across writes, two lines in one), then a last line
/// without LF and EOF; `write` sends bytes, `close` ends the input.
fn converse(child: &mut Child, mut write: impl FnMut(&[u8]), close: impl FnOnce()) {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    write(b"{\"id\":\"a\",\"ty");
    std::thread::sleep(Duration::from_millis(30));
    write(b"pe\":\"get_state\"}\n");
    assert_eq!(read_json(&mut out)["id"], "a");
    let names = thread_names(child.id());
    assert!(
        !names.iter().any(|n| n == "stdin-reader"),
        "stdin is read by the runtime: {names:?}"
    );
    write(b"{\"id\":\"b\",\"type\":\"abort_bash\"}\n{\"id\":\"c\",\"type\":\"abort_retry\"}\n");
    assert_eq!(read_json(&mut out)["id"], "b");
    assert_eq!(read_json(&mut out)["id"], "c");
    write(b"{\"id\":\"d\",\"type\":\"abort\"}");
    close();
    assert_eq!(
        read_json(&mut out)["id"],
        "d",
        "the last line is answered at EOF"
    );
    assert_eq!(exit_code(child), Some(0));
}

#[test]
fn a_pipe_is_read_without_a_reader_thread() {
    let home = TempDir::new();
    let mut child = spawn(&home, Stdio::piped());
    let stdin = std::cell::RefCell::new(child.stdin.take());
    converse(
        &mut child,
        |b| {
            let mut s = stdin.borrow_mut();
            let s = s.as_mut().unwrap();
            s.write_all(b).unwrap();
            s.flush().unwrap();
        },
        || drop(stdin.borrow_mut().take()),
    );
}

#[test]
fn a_stream_socket_as_node_gives_a_child_is_read_without_a_reader_thread() {
    let home = TempDir::new();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = spawn(&home, Stdio::from(std::os::fd::OwnedFd::from(theirs)));
    let ours = std::cell::RefCell::new(ours);
    converse(
        &mut child,
        |b| ours.borrow_mut().write_all(b).unwrap(),
        || {
            ours.borrow().shutdown(std::net::Shutdown::Write).unwrap();
        },
    );
}

#[test]
fn a_regular_file_is_read_to_its_end() {
    let home = TempDir::new();
    let path = home.path.join("commands.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"type\":\"get_state\"}\n{\"id\":\"b\",\"type\":\"abort_bash\"}\n{\"id\":\"c\",\"type\":\"abort\"}",
    )
    .unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let mut child = spawn(&home, Stdio::from(file));
    let mut out = BufReader::new(child.stdout.take().unwrap());
    for id in ["a", "b", "c"] {
        assert_eq!(read_json(&mut out)["id"], id);
    }
    assert_eq!(exit_code(&mut child), Some(0));
}

#[test]
fn dev_null_is_an_immediate_eof() {
    let home = TempDir::new();
    let mut child = spawn(&home, Stdio::null());
    assert_eq!(exit_code(&mut child), Some(0));
}
