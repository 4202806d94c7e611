//! A large session is mapped, not read, and stays whole when another program truncates its file
//! while pi runs: the truncating `open` waits until pi has copied the mapping into its own
//! memory (`pi-session`'s `mapped.rs`), after which `get_messages` answers as before and an
//! append goes to the (now empty) file, as Pi's would.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use serde_json::json;
use std::os::fd::AsRawFd;
use std::process::Command;
use support::Pi;

/// Messages of ~2.5 KB: the file is well above the 2 MiB below which sessions are read.
const MESSAGES: usize = 1500;

fn session_file() -> String {
    let header = json!({"type": "session", "version": 3,
        "id": "019b8c2e-4a10-7000-8000-00000000be9d",
        "timestamp": "2026-01-05T00:00:00.000Z", "cwd": "${PI_TEST_HOME}"});
    // Pi's sessions record their thinking level: resuming one appends nothing (an append would
    // copy the mapping out at once).
    let thinking = json!({"type": "thinking_level_change", "id": "0000000t", "parentId": null,
        "timestamp": "2026-01-05T00:00:00.000Z", "thinkingLevel": "off"});
    let mut file = format!("{header}\n{thinking}\n");
    let mut parent = json!("0000000t");
    for i in 0..MESSAGES {
        let text = format!("message {i} {}", "y".repeat(2400 + i % 89));
        let message = json!({"role": "user", "content": [{"type": "text", "text": text}],
            "timestamp": 1_767_225_600_000u64 + i as u64});
        let id = format!("{i:08x}");
        file.push_str(&format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-05T00:00:00.000Z\",\"message\":{message}}}\n"
        ));
        parent = json!(id);
    }
    file
}

fn response(pi: &mut Pi, id: &str) -> String {
    let prefix = format!("{{\"id\":\"{id}\"");
    loop {
        let line = pi.read_line();
        if line.starts_with(&prefix) {
            return line;
        }
    }
}

/// Whether this file system grants read leases (ext4, xfs and tmpfs do).
fn leases_work(dir: &std::path::Path) -> bool {
    let p = dir.join("lease-probe");
    std::fs::write(&p, b"x").unwrap();
    let f = std::fs::File::open(&p).unwrap();
    // SAFETY: fcntl on a descriptor this test owns.
    #[allow(unsafe_code)]
    let ok = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLEASE, libc::F_RDLCK) == 0 };
    drop(f);
    std::fs::remove_file(&p).unwrap();
    ok
}

#[test]
fn a_mapped_session_survives_its_file_being_truncated() {
    let file = session_file();
    let mut pi = Pi::spawn_with(
        &["--mode", "rpc", "--session", "s.jsonl"],
        &[],
        &[("s.jsonl", &file)],
    );
    let path = pi.home().join("s.jsonl");
    pi.write(b"{\"id\":\"m1\",\"type\":\"get_messages\"}\n");
    let before = response(&mut pi, "m1");
    assert!(before.contains("\"success\":true") && before.len() > MESSAGES * 2400);

    let maps = std::fs::read_to_string(format!("/proc/{}/maps", pi.pid())).unwrap();
    let mapped = maps.lines().any(|l| l.ends_with("/s.jsonl"));
    assert_eq!(mapped, leases_work(pi.home()), "mapped: {mapped}");

    // A shell's `>` opens the file for writing with O_TRUNC and blocks until pi lets go.
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(": > '{}'", path.display()))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);

    pi.write(b"{\"id\":\"m2\",\"type\":\"get_messages\"}\n");
    let after = response(&mut pi, "m2");
    assert_eq!(after.replacen("\"m2\"", "\"m1\"", 1), before);

    pi.write(b"{\"id\":\"n\",\"type\":\"set_session_name\",\"name\":\"kept\"}\n");
    assert!(response(&mut pi, "n").contains("\"success\":true"));
    let now = std::fs::read_to_string(&path).unwrap();
    assert!(
        now.starts_with("{\"type\":\"session_info\"") && now.ends_with("\"name\":\"kept\"}\n"),
        "{now}"
    );
    pi.close_stdin();
    assert_eq!(pi.wait_exit(), Some(0));
}
