//! A full disk (issue #22, item 2): the session file lives on a 1 MiB tmpfs that the test fills
//! while `pi` runs. Writes then fail with ENOSPC, as on a real full disk (RLIMIT_FSIZE would give
//! EFBIG, `/dev/full` cannot hold a file). The tmpfs is mounted in a user + mount namespace
//! (`unshare --user --map-root-user --mount`), so no root is needed; the test reaches the
//! namespace's files through `/proc/<pid>/root`. Where the system forbids unprivileged user
//! namespaces the test says so and passes, unless `PI_REQUIRE_TMPFS=1` (`scripts/reliability`).
//!
//! Expected: the refused answer ends the run with Pi's failure message (`ENOSPC: no space left
//! on device, write`) and `agent_end`; the process stays up; every entry written before is still
//! there and the file holds only whole lines, loads in a fresh `pi` (and in Pi 1.6.0 when the
//! reference is installed); once space is back the next prompt is answered and saved.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod oc_agent;
mod support;

use mock::{Mock, Reply};
use oc_agent::{MODEL_ARGS, PLAIN_SETTINGS, Rpc, whole_entries};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::TempDir;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A text answer of `size` bytes.
fn answer(size: usize) -> Reply {
    Reply::sse(oc_agent::text_chunks(["x".repeat(size)]))
}

/// Sends `command`; the records up to its response (for a prompt: up to `agent_end`).
/// `None` if the process ended first.
fn call(pi: &mut Rpc, command: Value) -> Option<Vec<Value>> {
    pi.call_until(&command, "agent_end", TIMEOUT)
}

fn message_ends(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == "message_end" && r["message"]["role"] != "system")
        .map(|r| r["message"].clone())
        .collect()
}

/// The record types, for a failure's message.
fn kinds(records: &[Value]) -> String {
    let k: Vec<String> = records
        .iter()
        .map(|r| format!("{} {}", r["type"], r["message"]["role"]))
        .collect();
    k.join(", ")
}

#[test]
fn a_full_disk_fails_the_run_clearly_and_loses_nothing() {
    let rt = oc_agent::runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let home = TempDir::new();
    oc_agent::write_agent(&home.path, &mock.base(), 200_000, 32000, PLAIN_SETTINGS);
    let disk = home.path.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let file = disk.join("s.jsonl");

    let has_unshare = Command::new("unshare")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_unshare {
        assert!(
            std::env::var("PI_REQUIRE_TMPFS").is_err(),
            "no `unshare` (util-linux) here"
        );
        eprintln!("skipped: `unshare` (util-linux) is not installed");
        return;
    }
    let mut command = Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m tmpfs "$0" && exec "$@""#)
        .arg(&disk)
        .arg(env!("CARGO_BIN_EXE_pi"))
        .args(MODEL_ARGS)
        .args(["--session", file.to_str().unwrap()]);
    oc_agent::agent_env(&mut command, &home.path);
    let mut pi = Rpc::start(command);
    mock.push(answer(100));
    let Some(first) = call(
        &mut pi,
        json!({"id": "p1", "type": "prompt", "message": "one"}),
    ) else {
        let status = pi.child.wait().unwrap();
        assert!(
            std::env::var("PI_REQUIRE_TMPFS").is_err(),
            "no tmpfs in a user namespace here ({status})"
        );
        eprintln!("skipped: unprivileged user namespaces are not available ({status})");
        return;
    };
    // The namespace's view of the disk, from outside.
    let inside = PathBuf::from(format!("/proc/{}/root", pi.child.id()))
        .join(disk.strip_prefix("/").unwrap());
    let inside_file = inside.join("s.jsonl");
    let saved = message_ends(&first);
    assert_eq!(saved.len(), 2, "{}", kinds(&first));

    // Fill the disk: what is left is less than a page.
    let mut filler = std::fs::File::create(inside.join("fill")).unwrap();
    let block = vec![0u8; 4096];
    let err = loop {
        if let Err(e) = filler.write_all(&block) {
            break e;
        }
    };
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    drop(filler);
    let before = std::fs::read(&inside_file).unwrap();

    // An answer larger than any slack: its entry cannot be written.
    mock.push(answer(64 * 1024));
    let refused = call(
        &mut pi,
        json!({"id": "p2", "type": "prompt", "message": "two"}),
    )
    .expect("pi survives a full disk");
    let failure = refused
        .iter()
        .find(|r| r["type"] == "message_end" && r["message"]["stopReason"] == "error")
        .unwrap_or_else(|| panic!("no failure message: {}", kinds(&refused)));
    assert_eq!(
        failure["message"]["errorMessage"],
        "ENOSPC: no space left on device, write"
    );
    assert!(refused.iter().any(|r| r["type"] == "agent_end"));
    // Whatever was written before is there, whole; nothing was glued to a torn line.
    let during = std::fs::read(&inside_file).unwrap();
    assert!(
        during.starts_with(&before),
        "entries written before were lost"
    );
    let on_disk = whole_entries(&inside_file);
    for m in &saved {
        assert!(on_disk.iter().any(|e| e["message"] == *m), "lost: {m}");
    }
    // It loads, in a fresh `pi` and in Pi, from a copy.
    let copy = home.path.join("copy.jsonl");
    std::fs::write(&copy, &during).unwrap();
    let loaded = oc_agent::load_messages(oc_agent::ours(&home.path), &copy, "pi");
    for m in &saved {
        assert!(loaded.contains(m), "the copy does not load {m}");
    }
    if let Some(theirs) = oc_agent::reference(&home.path) {
        std::fs::write(&copy, &during).unwrap();
        let theirs = oc_agent::load_messages(theirs, &copy, "Pi 1.6.0");
        assert_eq!(theirs.len(), loaded.len());
    }
    // Still alive and answering.
    assert!(!pi.messages(TIMEOUT).is_empty());

    // Space back: the session goes on and is saved.
    std::fs::remove_file(inside.join("fill")).unwrap();
    mock.push(answer(100));
    let next = call(
        &mut pi,
        json!({"id": "p3", "type": "prompt", "message": "three"}),
    )
    .expect("answered");
    let later = message_ends(&next);
    assert_eq!(later.len(), 2, "{}", kinds(&next));
    assert_eq!(later[1]["stopReason"], "stop");
    // `whole_entries` also checks the tree stays closed: the refused answer is no parent.
    let on_disk = whole_entries(&inside_file);
    for m in saved.iter().chain(&later) {
        assert!(on_disk.iter().any(|e| e["message"] == *m), "not saved: {m}");
    }
    pi.stop();
}
