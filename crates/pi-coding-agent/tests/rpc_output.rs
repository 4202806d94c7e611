//! How records reach stdout under load: streamed deltas are written by the task that produced
//! them, collected into bursts, or queued when the client is slow; whatever the path, every
//! record arrives whole, once, and in order. Also when stdout is a regular file (then only the
//! writer thread writes).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_test_support::mock::{MockConfig, MockLlm, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const PIECES: usize = 6000;

struct Home {
    root: std::path::PathBuf,
}

impl Home {
    fn new(port: u16, name: &str) -> Home {
        let root =
            std::env::temp_dir().join(format!("pi-out-{name}-{}-{port}", std::process::id()));
        std::fs::create_dir_all(root.join("agent")).unwrap();
        let models = json!({"providers": {"mock": {"baseUrl": format!("http://127.0.0.1:{port}/v1"),
            "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}});
        std::fs::write(root.join("agent/models.json"), models.to_string()).unwrap();
        Home { root }
    }

    fn spawn(&self, stdout: Stdio) -> Child {
        Command::new(env!("CARGO_BIN_EXE_pi"))
            .args([
                "--mode",
                "rpc",
                "--no-session",
                "--provider",
                "mock",
                "--model",
                "m",
            ])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.root)
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_OFFLINE", "1")
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A reply of `PIECES` distinct text deltas, about 3 MB of `message_update` records: more than
/// the stdout pipe holds.
async fn flood_mock() -> (MockLlm, String) {
    let pieces: Vec<String> = (0..PIECES)
        .map(|i| format!("<{i}>{}", "x".repeat(200)))
        .collect();
    let reply: Reply = serde_json::from_value(json!({"stream": [{"text": pieces}]})).unwrap();
    let config = MockConfig {
        header_delay: Duration::ZERO,
        chunk_delay: Duration::ZERO,
        ..MockConfig::default()
    };
    let mock = MockLlm::start_with(vec![reply], config).await.unwrap();
    (mock, pieces.concat())
}

/// Checks the records of one prompt run: every delta once and in order, the get_state answer
/// somewhere, and the run's events in their order.
fn check_run(records: &[Value], text: &str) {
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    let deltas: String = records
        .iter()
        .filter(|r| r["assistantMessageEvent"]["type"] == "text_delta")
        .map(|r| r["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, text, "deltas lost, doubled or reordered");
    let pos = |t: &str| types.iter().position(|x| *x == t).unwrap();
    let first_delta = records
        .iter()
        .position(|r| r["assistantMessageEvent"]["type"] == "text_delta")
        .unwrap();
    assert!(pos("agent_start") < first_delta);
    let last_delta = records
        .iter()
        .rposition(|r| r["assistantMessageEvent"]["type"] == "text_delta")
        .unwrap();
    let assistant_end = records
        .iter()
        .rposition(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .unwrap();
    assert!(last_delta < assistant_end);
    assert_eq!(
        records[assistant_end]["message"]["content"][0]["text"],
        text
    );
    assert!(assistant_end < pos("agent_end"));
    let state = records
        .iter()
        .find(|r| r["id"] == "s")
        .expect("get_state answered");
    assert_eq!(state["success"], true);
}

/// Bytes waiting to be read on `fd`.
#[allow(unsafe_code)]
fn unread(fd: std::os::fd::RawFd) -> i64 {
    let mut queued: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int; the caller keeps `fd` open.
    assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) }, 0);
    i64::from(queued)
}

/// Waits until the pipe `fd` stops filling (the writer is blocked) with more than the default
/// 64 KB in it. A full pipe can hold less than its capacity (a write that does not fit into the
/// last page takes a new one), so "stopped growing" is the test, not a byte count.
fn wait_until_pipe_full(fd: std::os::fd::RawFd) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut last = -1;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = unread(fd);
        if now == last && now > 65_536 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pipe never filled ({now} bytes)"
        );
        last = now;
    }
}

/// Waits until the socket `fd` stops filling (the sender is blocked) with at least 32 KB (a Unix socket holds much less than a pipe).
fn wait_until_socket_stalls(fd: std::os::fd::RawFd) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut last = -1;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = unread(fd);
        if now == last && now > 32_000 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the socket never filled ({now} bytes)"
        );
        last = now;
    }
}

/// One prompt's flood to a client that reads nothing until `wait` returns on the reading end,
/// with a command sent meanwhile; returns every record read.
fn late_reader_run<R: std::io::Read + std::os::fd::AsRawFd>(
    home: &Home,
    stdout: Stdio,
    reader: Option<R>,
    wait: fn(std::os::fd::RawFd),
) -> Vec<Value> {
    let mut pi = home.spawn(stdout);
    let mut stdin = pi.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n")
        .unwrap();
    // Direct writes come up short and the rest is queued; a command answered meanwhile must
    // not cut into a record.
    let reader: Box<dyn std::io::Read> = match reader {
        Some(r) => {
            wait(r.as_raw_fd());
            Box::new(r)
        }
        None => {
            let out = pi.stdout.take().unwrap();
            wait(std::os::fd::AsRawFd::as_raw_fd(&out));
            Box::new(out)
        }
    };
    stdin
        .write_all(b"{\"id\":\"s\",\"type\":\"get_state\"}\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut records = Vec::new();
    let mut r = BufReader::new(reader);
    loop {
        let mut line = String::new();
        assert_ne!(r.read_line(&mut line).unwrap(), 0, "stdout ended early");
        let rec: Value = serde_json::from_str(line.trim_end_matches('\n'))
            .unwrap_or_else(|e| panic!("not one record per line ({e}): {line:.200}"));
        let done = rec["type"] == "agent_end";
        records.push(rec);
        if done && records.iter().any(|r| r["id"] == "s") {
            break;
        }
    }
    drop(stdin);
    assert!(pi.wait().unwrap().success());
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_flood_to_a_client_that_reads_late_arrives_whole_and_in_order() {
    let (mock, text) = flood_mock().await;
    let home = Home::new(mock.port(), "late");
    let records = tokio::task::spawn_blocking(move || {
        late_reader_run::<std::fs::File>(&home, Stdio::piped(), None, wait_until_pipe_full)
    })
    .await
    .unwrap();
    assert_eq!(records[0]["id"], "p");
    check_run(&records, &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_over_a_socket_pair_as_node_gives_a_child() {
    let (mock, text) = flood_mock().await;
    let home = Home::new(mock.port(), "sock");
    let records = tokio::task::spawn_blocking(move || {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let stdout = Stdio::from(std::os::fd::OwnedFd::from(theirs));
        late_reader_run(&home, stdout, Some(ours), wait_until_socket_stalls)
    })
    .await
    .unwrap();
    assert_eq!(records[0]["id"], "p");
    check_run(&records, &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_as_a_regular_file_gets_every_record_in_order() {
    let (mock, text) = flood_mock().await;
    let home = Home::new(mock.port(), "file");
    let out_path = home.root.join("stdout.jsonl");
    let path = out_path.clone();
    let home = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::create(&path).unwrap();
        let mut pi = home.spawn(Stdio::from(file));
        let mut stdin = pi.stdin.take().unwrap();
        stdin
            .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n")
            .unwrap();
        // Wait for the run to end (the file grows until agent_end), then ask once more.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"type\":\"agent_end\"")
        {
            assert!(std::time::Instant::now() < deadline, "no agent_end");
            std::thread::sleep(Duration::from_millis(20));
        }
        stdin
            .write_all(b"{\"id\":\"s\",\"type\":\"get_state\"}\n")
            .unwrap();
        drop(stdin);
        assert!(pi.wait().unwrap().success());
        home
    })
    .await
    .unwrap();
    let body = std::fs::read_to_string(&out_path).unwrap();
    assert!(body.ends_with('\n'));
    let records: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    check_run(&records, &text);
    assert_eq!(records.last().unwrap()["id"], "s", "answered after the run");
    drop(home);
}

#[test]
fn the_writer_thread_starts_only_when_a_record_is_queued() {
    let home = Home::new(9, "lazy");
    let mut pi = home.spawn(Stdio::piped());
    let mut stdin = pi.stdin.take().unwrap();
    let mut out = BufReader::new(pi.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        stdin.write_all(line.as_bytes()).unwrap();
        let mut answer = String::new();
        out.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    // Answers written directly by the task that made them: no writer thread.
    let state = ask("{\"id\":\"s\",\"type\":\"get_state\"}\n");
    assert_eq!(state["success"], true);
    let names = support::thread_names(pi.id());
    assert!(
        !names.iter().any(|n| n == "stdout-writer"),
        "threads before anything was queued: {names:?}"
    );
    // `get_messages` is written by the writer thread (serialized straight into the pipe).
    let messages = ask("{\"id\":\"m\",\"type\":\"get_messages\"}\n");
    assert_eq!(messages["id"], "m");
    assert_eq!(messages["data"]["messages"], json!([]));
    let names = support::thread_names(pi.id());
    assert!(
        names.iter().any(|n| n == "stdout-writer"),
        "threads after get_messages: {names:?}"
    );
    let state = ask("{\"id\":\"s2\",\"type\":\"get_state\"}\n");
    assert_eq!(
        state["id"], "s2",
        "answers keep their order after the hand-off"
    );
    drop(stdin);
    assert!(pi.wait().unwrap().success());
}
