//! Finding sessions from their headers: `--continue`, `--session <id|prefix|path>`,
//! `--session-id`, listings, and the header scan limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TempDir;
use pi_session::discovery::{
    find_most_recent_session, find_session_by_id, list_sessions, read_session_header,
    resolve_session_arg, session_info,
};
use pi_session::{SessionError, SessionLookup, SessionScope, SessionStore};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn header(id: &str, cwd: &str) -> String {
    format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{cwd}"}}"#
    )
}

fn user(id: &str, parent: &str, text: &str, ms: u64) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":{ms}}}}}"#
    )
}

/// Writes a session file and sets its modification time `age` seconds in the past.
fn write(dir: &Path, name: &str, lines: &[String], age: u64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(age))
        .unwrap();
    p
}

struct World {
    _tmp: TempDir,
    agent: PathBuf,
    cwd: PathBuf,
    local: PathBuf,
}

fn world() -> World {
    let tmp = TempDir::new();
    let agent = tmp.path().join("agent");
    let cwd = PathBuf::from("/w/p");
    let local = agent.join("sessions/--w-p--");
    let other = agent.join("sessions/--w-other--");
    write(
        &local,
        "a.jsonl",
        &[
            header("aaaa-1111", "/w/p"),
            user("u1", "null", "first a", 1000),
        ],
        30,
    );
    write(
        &local,
        "b.jsonl",
        &[
            header("aaaa-2222", "/w/p"),
            user("u2", "null", "first b", 5000),
        ],
        20,
    );
    write(&local, "c.jsonl", &[header("cccc-3333", "/w/p")], 10);
    // Newest, but not a session: skipped.
    write(&local, "d.jsonl", &[r#"{"type":"message"}"#.to_owned()], 1);
    write(&local, "notes.txt", &[header("zzzz", "/w/p")], 0);
    write(&other, "e.jsonl", &[header("eeee-5555", "/w/other")], 5);
    World {
        _tmp: tmp,
        agent,
        cwd,
        local,
    }
}

fn scope(w: &World, session_dir: Option<PathBuf>) -> SessionScope {
    SessionScope {
        cwd: w.cwd.clone(),
        agent_dir: w.agent.clone(),
        session_dir,
    }
}

#[test]
fn continue_picks_the_newest_valid_session() {
    let w = world();
    let s = scope(&w, None);
    assert_eq!(s.dir(), w.local);
    assert_eq!(find_most_recent_session(&s), Some(w.local.join("c.jsonl")));
    let store = SessionStore::continue_recent(&s).unwrap();
    assert_eq!(store.session_id(), "cccc-3333");
    let empty = TempDir::new();
    let fresh = SessionStore::continue_recent(&SessionScope {
        cwd: w.cwd.clone(),
        agent_dir: empty.path().to_path_buf(),
        session_dir: None,
    })
    .unwrap();
    assert!(!fresh.is_flushed());
    assert!(empty.path().join("sessions/--w-p--").is_dir());
}

#[test]
fn session_arguments_resolve_like_pi() {
    let w = world();
    let s = scope(&w, None);
    assert_eq!(
        find_session_by_id(&s, "aaaa-1111"),
        Some(w.local.join("a.jsonl"))
    );
    assert_eq!(find_session_by_id(&s, "aaaa"), None);
    assert_eq!(
        resolve_session_arg(&s, "aaaa-1111"),
        SessionLookup::Local(w.local.join("a.jsonl"))
    );
    // Two sessions share the prefix: the more recently active one (message time) wins.
    assert_eq!(
        resolve_session_arg(&s, "aaaa"),
        SessionLookup::Local(w.local.join("b.jsonl"))
    );
    assert_eq!(
        resolve_session_arg(&s, "ccc"),
        SessionLookup::Local(w.local.join("c.jsonl"))
    );
    assert_eq!(
        resolve_session_arg(&s, "eeee"),
        SessionLookup::Global {
            path: w.agent.join("sessions/--w-other--/e.jsonl"),
            cwd: "/w/other".into()
        }
    );
    assert_eq!(resolve_session_arg(&s, "nope"), SessionLookup::NotFound);
    assert_eq!(
        resolve_session_arg(&s, "rel/x.jsonl"),
        SessionLookup::Path(PathBuf::from("/w/p/rel/x.jsonl"))
    );
    assert_eq!(
        resolve_session_arg(&s, "x.jsonl"),
        SessionLookup::Path(PathBuf::from("/w/p/x.jsonl"))
    );
}

#[test]
fn a_custom_directory_only_offers_sessions_of_this_cwd() {
    let w = world();
    let custom = w.agent.join("custom");
    write(&custom, "mine.jsonl", &[header("mine-1", "/w/p")], 50);
    write(&custom, "theirs.jsonl", &[header("theirs-1", "/w/q")], 1);
    let s = scope(&w, Some(custom.clone()));
    assert_eq!(
        find_most_recent_session(&s),
        Some(custom.join("mine.jsonl"))
    );
    assert_eq!(find_session_by_id(&s, "theirs-1"), None);
    // The global search of a custom directory does not filter by cwd.
    assert_eq!(
        resolve_session_arg(&s, "theirs"),
        SessionLookup::Global {
            path: custom.join("theirs.jsonl"),
            cwd: "/w/q".into()
        }
    );
    let listed: Vec<String> = list_sessions(&s).into_iter().map(|i| i.id).collect();
    assert_eq!(listed, ["mine-1"]);
}

#[test]
fn headers_are_read_within_one_mebibyte() {
    let tmp = TempDir::new();
    let garbage_then_header = write(
        tmp.path(),
        "g.jsonl",
        &["garbage".into(), "".into(), header("h", "/w")],
        0,
    );
    assert_eq!(
        read_session_header(&garbage_then_header).unwrap().unwrap()["id"],
        serde_json::json!("h")
    );
    let not_session = write(
        tmp.path(),
        "n.jsonl",
        &[user("u", "null", "x", 1), header("h", "/w")],
        0,
    );
    assert!(read_session_header(&not_session).unwrap().is_none());
    let huge = tmp.path().join("huge.jsonl");
    let big_cwd = "x".repeat(1 << 20);
    std::fs::write(&huge, header("big", &big_cwd) + "\n").unwrap();
    let err = read_session_header(&huge).unwrap_err();
    assert!(matches!(err, SessionError::HeaderScanLimit(_)));
    assert_eq!(
        err.to_string(),
        format!(
            "Session header exceeds 1048576-byte scan limit: {}",
            huge.display()
        )
    );
    // A full load still works.
    assert_eq!(
        SessionStore::open(&huge, None, Some(Path::new("/w")))
            .unwrap()
            .session_id(),
        "big"
    );
}

#[test]
fn session_info_summarizes_a_file() {
    let w = world();
    let info = session_info(&w.local.join("b.jsonl")).unwrap();
    assert_eq!(info.id, "aaaa-2222");
    assert_eq!(info.message_count, 1);
    assert_eq!(info.first_message, "first b");
    assert_eq!(info.modified, 5000.0);
    let c = session_info(&w.local.join("c.jsonl")).unwrap();
    assert_eq!(c.first_message, "(no messages)");
    assert_eq!(c.modified, 1_735_689_600_000.0);
    assert!(session_info(&w.local.join("d.jsonl")).is_none());
}
