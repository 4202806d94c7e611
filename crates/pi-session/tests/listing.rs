//! `list_sessions` and `read_session` (additions): order, paging, filters, incremental scans of
//! grown files, and reading another session without touching its file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TempDir;
use pi_session::listing::{ListRequest, list_sessions};
use pi_session::{SessionError, SessionReader, SessionScope, SessionStore};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn header(id: &str, cwd: &str) -> String {
    format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{cwd}"}}"#
    )
}

fn message(id: &str, parent: &str, role: &str, text: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}],"timestamp":1000}}}}"#
    )
}

fn name(id: &str, parent: &str, name: &str) -> String {
    format!(
        r#"{{"type":"session_info","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:02.000Z","name":"{name}"}}"#
    )
}

/// Writes a session file modified `age` seconds ago.
fn write(dir: &Path, file: &str, lines: &[String], age: u64) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(file);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    set_age(&p, age);
    p
}

fn set_age(p: &Path, age: u64) {
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(age))
        .unwrap();
}

struct World {
    tmp: TempDir,
    agent: PathBuf,
    local: PathBuf,
}

/// Three sessions of `/w/p` (c newest, then b, then a) and one of another project.
fn world() -> World {
    let tmp = TempDir::new();
    let agent = tmp.path().join("agent");
    let local = agent.join("sessions/--w-p--");
    write(
        &local,
        "a.jsonl",
        &[
            header("aaaa", "/w/p"),
            r#"{"type":"model_change","id":"m0","parentId":null,"timestamp":"t","provider":"p","modelId":"m"}"#.into(),
            message("a1", "\"m0\"", "assistant", "no user yet"),
            message("a2", "\"a1\"", "user", "Fix the parser"),
            message("a3", "\"a2\"", "assistant", "Done: the Zebra case"),
        ],
        300,
    );
    write(
        &local,
        "b.jsonl",
        &[
            header("bbbb", "/w/p"),
            message("b1", "null", "user", "hello"),
            name("b2", "b1", "  Release notes "),
        ],
        200,
    );
    write(&local, "c.jsonl", &[header("cccc", "/w/p")], 100);
    std::fs::write(local.join("notes.txt"), "not a session").unwrap();
    write(
        &local,
        "broken.jsonl",
        &["{\"type\":\"message\"}".to_string()],
        400,
    );
    write(
        &agent.join("sessions/--w-other--"),
        "d.jsonl",
        &[
            header("dddd", "/w/other"),
            message("d1", "null", "user", "elsewhere"),
        ],
        10,
    );
    World { tmp, agent, local }
}

fn request(w: &World, all: bool) -> ListRequest {
    ListRequest {
        scope: SessionScope {
            cwd: PathBuf::from("/w/p"),
            agent_dir: w.agent.clone(),
            session_dir: None,
        },
        all,
        query: None,
        limit: 50,
        cursor: None,
    }
}

fn ids(list: &pi_protocol::additions::SessionList) -> Vec<&str> {
    list.sessions.iter().map(|s| s.id.as_str()).collect()
}

#[test]
fn lists_the_directory_newest_first_with_what_a_picker_shows() {
    let w = world();
    let list = list_sessions(&request(&w, false)).unwrap();
    assert_eq!(ids(&list), ["cccc", "bbbb", "aaaa"]);
    assert_eq!(list.next_cursor, None);
    let a = &list.sessions[2];
    assert_eq!(a.path, w.local.join("a.jsonl").to_string_lossy());
    assert_eq!(a.cwd, "/w/p");
    assert_eq!(a.message_count, 3);
    assert_eq!(a.first_message.as_deref(), Some("Fix the parser"));
    assert_eq!(a.created, "2025-01-01T00:00:00.000Z");
    assert_eq!(a.name, None);
    let b = &list.sessions[1];
    assert_eq!(b.name.as_deref(), Some("Release notes"));
    assert_eq!(b.message_count, 1);
    let c = &list.sessions[0];
    assert_eq!((c.message_count, c.first_message.as_deref()), (0, None));
    assert!(
        c.modified > b.modified && b.modified > a.modified,
        "{list:?}"
    );
}

#[test]
fn all_projects_and_pages() {
    let w = world();
    let mut req = request(&w, true);
    req.limit = 2;
    let first = list_sessions(&req).unwrap();
    assert_eq!(ids(&first), ["dddd", "cccc"]);
    req.cursor = first.next_cursor.clone();
    let second = list_sessions(&req).unwrap();
    assert_eq!(ids(&second), ["bbbb", "aaaa"]);
    // The broken file is the last candidate: the page says there may be more, the next is empty.
    req.cursor = second.next_cursor.clone();
    let third = list_sessions(&req).unwrap();
    assert_eq!(ids(&third), Vec::<&str>::new());
    assert_eq!(third.next_cursor, None);
    req.cursor = Some("garbage".into());
    assert_eq!(
        list_sessions(&req).unwrap_err().to_string(),
        "Invalid cursor: garbage"
    );
}

#[test]
fn the_text_filter_searches_names_ids_and_message_text_case_insensitively() {
    let w = world();
    let mut req = request(&w, true);
    for (query, expected) in [
        ("zebra", vec!["aaaa"]),
        ("RELEASE", vec!["bbbb"]),
        ("elsewhere", vec!["dddd"]),
        ("cccc", vec!["cccc"]),
        ("/w/other", vec!["dddd"]),
        ("nowhere", vec![]),
        ("no user", vec!["aaaa"]),
    ] {
        req.query = Some(query.into());
        assert_eq!(ids(&list_sessions(&req).unwrap()), expected, "{query}");
    }
}

#[test]
fn a_custom_session_directory_lists_this_cwd_unless_all() {
    let w = world();
    let custom = w.tmp.path().join("custom");
    write(&custom, "x.jsonl", &[header("xxxx", "/w/p")], 20);
    write(&custom, "y.jsonl", &[header("yyyy", "/w/q")], 10);
    let mut req = request(&w, false);
    req.scope.session_dir = Some(custom);
    assert_eq!(ids(&list_sessions(&req).unwrap()), ["xxxx"]);
    req.all = true;
    assert_eq!(ids(&list_sessions(&req).unwrap()), ["yyyy", "xxxx"]);
}

#[test]
fn a_grown_file_is_read_on_from_where_the_last_scan_stopped() {
    let w = world();
    let req = request(&w, false);
    assert_eq!(list_sessions(&req).unwrap().sessions[0].message_count, 0);
    let c = w.local.join("c.jsonl");
    let mut f = std::fs::File::options().append(true).open(&c).unwrap();
    // An unterminated line counts when it parses, and is not counted twice once completed.
    write!(f, "{}", message("c1", "null", "user", "late start")).unwrap();
    drop(f);
    let list = list_sessions(&req).unwrap();
    assert_eq!(list.sessions[0].message_count, 1);
    assert_eq!(
        list.sessions[0].first_message.as_deref(),
        Some("late start")
    );
    let mut f = std::fs::File::options().append(true).open(&c).unwrap();
    writeln!(f).unwrap();
    writeln!(f, "{}", name("c2", "c1", "grown")).unwrap();
    drop(f);
    let s = &list_sessions(&req).unwrap().sessions[0];
    assert_eq!((s.message_count, s.name.as_deref()), (1, Some("grown")));
}

#[test]
fn read_session_streams_entries_after_a_cursor_and_names_the_leaf() {
    let w = world();
    let a = w.local.join("a.jsonl");
    let before = std::fs::read(&a).unwrap();
    let reader = SessionReader::open(&a, None).unwrap();
    assert_eq!(reader.header().id, "aaaa");
    assert_eq!(reader.leaf_id(), Some("a3"));
    let all: Vec<String> = reader
        .entries()
        .map(|e| e.id().unwrap().to_string())
        .collect();
    assert_eq!(all, ["m0", "a1", "a2", "a3"]);
    let after: Vec<String> = SessionReader::open(&a, Some("a1"))
        .unwrap()
        .entries()
        .map(|e| e.id().unwrap().to_string())
        .collect();
    assert_eq!(after, ["a2", "a3"]);
    assert!(matches!(
        SessionReader::open(&a, Some("zzzz")),
        Err(SessionError::SinceNotFound(_))
    ));
    assert!(matches!(
        SessionReader::open(&w.local.join("notes.txt"), None),
        Err(SessionError::InvalidSessionFile(_))
    ));
    assert!(SessionReader::open(&w.local.join("missing.jsonl"), None).is_err());
    assert_eq!(std::fs::read(&a).unwrap(), before, "the file is untouched");
}

#[test]
fn an_older_file_is_migrated_in_memory_only() {
    let tmp = TempDir::new();
    let v1 = write(
        tmp.path(),
        "v1.jsonl",
        &[
            r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#
                .into(),
            r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#
                .into(),
        ],
        0,
    );
    let before = std::fs::read(&v1).unwrap();
    let reader = SessionReader::open(&v1, None).unwrap();
    assert_eq!(reader.header().version, Some(3));
    let entries: Vec<_> = reader.entries().collect();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].id().is_some_and(|id| id.len() == 8));
    let store = SessionStore::open_read_only(&v1).unwrap();
    assert_eq!(store.context_messages().len(), 1);
    assert_eq!(std::fs::read(&v1).unwrap(), before, "no migration written");
}
