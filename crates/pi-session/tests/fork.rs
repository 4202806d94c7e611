//! Forks and clones produce the files the reference produced (fixture `fork`: a fork before the
//! second user message of `fork.jsonl` gave `fork.1.jsonl`, a clone of that gave
//! `fork.2.jsonl`, each followed by one more exchange), plus Pi's fork errors and `--fork`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TempDir, copy_into, fixtures};
use pi_js::parse::parse_js_json;
use pi_session::{ForkPosition, NewSession, SessionStore};
use serde_json::Value;
use std::path::Path;

fn reference(name: &str) -> std::path::PathBuf {
    fixtures().join("reference").join(name)
}

/// Compares the file of `store` with the first lines of the reference file `want`, after
/// swapping in the reference's header id, time and parent, and its ids for re-created labels.
fn assert_same_file(store: &SessionStore, want: &Path) {
    let got = std::fs::read_to_string(store.session_file().unwrap()).unwrap();
    let want = std::fs::read_to_string(want).unwrap();
    let got: Vec<&str> = got.lines().collect();
    let want: Vec<&str> = want.lines().take(got.len()).collect();
    assert_eq!(got.len(), want.len());
    let (gh, wh) = (
        parse_js_json(got[0]).unwrap(),
        parse_js_json(want[0]).unwrap(),
    );
    let mut header = got[0].to_owned();
    for key in ["id", "timestamp", "parentSession"] {
        header = header.replace(gh[key].as_str().unwrap(), wh[key].as_str().unwrap());
    }
    assert_eq!(header, want[0]);
    for (g, w) in got.iter().zip(&want).skip(1) {
        let (gv, wv) = (parse_js_json(g).unwrap(), parse_js_json(w).unwrap());
        let fixed = if gv["type"] == "label" {
            g.replace(gv["id"].as_str().unwrap(), wv["id"].as_str().unwrap())
        } else {
            (*g).to_owned()
        };
        assert_eq!(fixed, *w);
    }
}

#[test]
fn fork_before_a_user_message_matches_the_reference() {
    let dir = TempDir::new();
    let src =
        SessionStore::open(&copy_into(&reference("fork.jsonl"), dir.path()), None, None).unwrap();
    let beta = &src.fork_messages()[1];
    assert_eq!(beta.text, "beta TOOL");
    let forked = src.fork(&beta.entry_id, ForkPosition::Before).unwrap();
    assert_eq!(forked.selected_text.as_deref(), Some("beta TOOL"));
    assert!(forked.store.is_flushed());
    assert_eq!(
        forked.store.parent_session(),
        src.session_file().and_then(Path::to_str)
    );
    assert_eq!(
        forked.store.session_file().unwrap().parent(),
        Some(dir.path())
    );
    assert_same_file(&forked.store, &reference("fork.1.jsonl"));
    // Seven lines: header, five copied entries, the re-created label.
    assert_eq!(forked.store.entry_count(), 6);
}

#[test]
fn clone_at_the_leaf_matches_the_reference() {
    let dir = TempDir::new();
    let src = SessionStore::open(
        &copy_into(&reference("fork.1.jsonl"), dir.path()),
        None,
        None,
    )
    .unwrap();
    let cloned = src.clone_session().unwrap();
    assert_eq!(cloned.selected_text, None);
    assert_same_file(&cloned.store, &reference("fork.2.jsonl"));
    assert_eq!(cloned.store.entry_count(), 8);
}

#[test]
fn fork_errors_and_unsaved_forks() {
    let dir = TempDir::new();
    let src =
        SessionStore::open(&copy_into(&reference("fork.jsonl"), dir.path()), None, None).unwrap();
    let err = |r: pi_session::Result<pi_session::Forked>| r.unwrap_err().to_string();
    assert_eq!(
        err(src.fork("nope", ForkPosition::Before)),
        "Invalid entry ID for forking"
    );
    let assistant = src.entries().iter().find(|e| matches!(e, pi_protocol::SessionEntry::Message(m) if m.message.role() == "assistant")).unwrap();
    assert_eq!(
        err(src.fork(assistant.id().unwrap(), ForkPosition::Before)),
        "Invalid entry ID for forking"
    );
    // Forking before the first user message copies only setup entries: nothing to write yet,
    // and cloning that fork is refused like in Pi.
    let alpha = &src.fork_messages()[0];
    let forked = src.fork(&alpha.entry_id, ForkPosition::Before).unwrap();
    assert!(!forked.store.is_flushed());
    assert_eq!(forked.store.entry_count(), 3);
    assert_eq!(
        err(forked.store.clone_session()),
        "This session has not been saved yet. Send a message before cloning or forking it."
    );
    let mut empty = SessionStore::in_memory(Path::new("/w"), NewSession::default()).unwrap();
    assert_eq!(
        err(empty.clone_session()),
        "Cannot clone session: no current entry selected"
    );
    empty.reset_leaf();
}

#[test]
fn forking_a_root_user_message_starts_a_new_session_with_a_parent() {
    let dir = TempDir::new();
    let mut s = SessionStore::create(Path::new("/w"), dir.path(), NewSession::default()).unwrap();
    let u = s
        .append_message(
            pi_protocol::UserMessage::new(
                pi_protocol::content::StringOrBlocks::Text("hi".into()),
                1,
            )
            .into(),
        )
        .unwrap();
    let forked = s.fork(&u, ForkPosition::Before).unwrap();
    assert_eq!(forked.selected_text.as_deref(), Some("hi"));
    assert_eq!(forked.store.entry_count(), 0);
    assert_eq!(
        forked.store.parent_session(),
        s.session_file().and_then(Path::to_str)
    );
    assert!(!forked.store.is_flushed());
    assert_ne!(forked.store.session_id(), s.session_id());

    let mut mem = SessionStore::in_memory(Path::new("/w"), NewSession::default()).unwrap();
    let u = mem
        .append_message(
            pi_protocol::UserMessage::new(
                pi_protocol::content::StringOrBlocks::Text("x".into()),
                1,
            )
            .into(),
        )
        .unwrap();
    let a = mem.append_custom_entry("c", None).unwrap();
    let f = mem.fork(&u, ForkPosition::Before).unwrap();
    assert!(f.store.session_file().is_none());
    assert_eq!(f.store.parent_session(), None);
    let c = mem.fork(&a, ForkPosition::At).unwrap();
    assert_eq!(c.store.entry_count(), 2);
    assert!(c.store.session_file().is_none());
}

#[test]
fn fork_from_copies_every_entry_into_a_new_project_session() {
    let dir = TempDir::new();
    let src = copy_into(&fixtures().join("edge/v1.jsonl"), dir.path());
    let before = std::fs::read(&src).unwrap();
    let target = dir.path().join("sessions");
    let s = SessionStore::fork_from(
        &src,
        Path::new("/other/project"),
        &target,
        Some("forked-1".into()),
    )
    .unwrap();
    assert_eq!(s.session_id(), "forked-1");
    assert_eq!(s.cwd(), Path::new("/other/project"));
    assert_eq!(s.parent_session(), src.to_str());
    assert_eq!(s.entry_count(), 7);
    assert!(
        s.entries()
            .iter()
            .all(|e| e.id().is_some_and(|id| id.len() == 8))
    );
    // The source keeps its content; only its torn last line got terminated.
    let mut terminated = before.clone();
    terminated.push(b'\n');
    assert_eq!(std::fs::read(&src).unwrap(), terminated);
    let header: Value = parse_js_json(
        std::fs::read_to_string(s.session_file().unwrap())
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["version"], Value::from(3));

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "junk\n").unwrap();
    assert_eq!(
        SessionStore::fork_from(&bad, Path::new("/w"), &target, None)
            .unwrap_err()
            .to_string(),
        format!(
            "Cannot fork: source session file is empty or invalid: {}",
            bad.display()
        )
    );
}
