//! The session store's file behaviour and validation: when the file appears, what it holds,
//! opening missing, empty, invalid and torn files, rollback of failed writes, labels, context
//! edits, summaries, `get_entries` cursors and deep sessions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TempDir;
use pi_js::json::to_js_string;
use pi_js::parse::parse_js_json;
use pi_protocol::content::{StringOrBlocks, UserBlock};
use pi_protocol::message::{AgentMessage, AssistantMessage, UserMessage};
use pi_protocol::usage::StopReason;
use pi_session::{BranchSummaryParams, CompactionParams, NewSession, SessionError, SessionStore};
use serde_json::{Value, json};
use std::path::Path;

fn user(text: &str) -> AgentMessage {
    UserMessage::new(StringOrBlocks::Text(text.into()), 1).into()
}

fn assistant(text: &str) -> AgentMessage {
    let mut a = AssistantMessage::new("openai-completions", "prov", "model-x", StopReason::Stop, 2);
    a.content
        .push(pi_protocol::content::TextContent::new(text).into());
    a.into()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| parse_js_json(l).unwrap())
        .collect()
}

fn new_store(dir: &Path) -> SessionStore {
    SessionStore::create(Path::new("/w/project"), dir, NewSession::default()).unwrap()
}

#[test]
fn nothing_is_written_until_the_first_user_message_then_everything_is() {
    let dir = TempDir::new();
    let sessions = dir.path().join("sessions");
    let mut s = new_store(&sessions);
    assert!(
        sessions.is_dir(),
        "the session directory is created at once"
    );
    let file = s.session_file().unwrap().to_path_buf();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(&format!("_{}.jsonl", s.session_id())),
        "{name}"
    );
    assert_eq!(name.len(), "2026-11-29T23-46-16-125Z_".len() + 36 + 6);
    s.append_model_change("prov", "model-x").unwrap();
    s.append_thinking_level_change("off").unwrap();
    s.append_custom_entry("state", None).unwrap();
    assert!(!file.exists());
    assert!(!s.is_flushed());
    let u = s.append_message(user("hi")).unwrap();
    assert!(s.is_flushed());
    let l = lines(&file);
    assert_eq!(l.len(), 5);
    assert_eq!(
        to_js_string(&l[0]).unwrap(),
        format!(
            r#"{{"type":"session","version":3,"id":"{}","timestamp":"{}","cwd":"/w/project"}}"#,
            s.session_id(),
            l[0]["timestamp"].as_str().unwrap()
        )
    );
    assert_eq!(l[1]["parentId"], Value::Null);
    for i in 2..5 {
        assert_eq!(l[i]["parentId"], l[i - 1]["id"]);
    }
    assert_eq!(l[4]["id"].as_str(), Some(u.as_str()));
    s.append_message(assistant("yo")).unwrap();
    assert_eq!(lines(&file).len(), 6);
    assert_eq!(s.leaf_id(), lines(&file)[5]["id"].as_str());
}

#[test]
fn an_existing_file_at_the_new_path_is_never_overwritten() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    let file = s.session_file().unwrap().to_path_buf();
    std::fs::write(&file, "precious\n").unwrap();
    s.append_model_change("p", "m").unwrap();
    let leaf = s.leaf_id().map(str::to_owned);
    let err = s.append_message(user("hi")).unwrap_err();
    assert!(matches!(err, SessionError::Io { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious\n");
    // The failed entry is gone from memory; the leaf is back.
    assert_eq!(s.entry_count(), 1);
    assert_eq!(s.leaf_id().map(str::to_owned), leaf);
}

#[test]
fn a_failed_first_write_rolls_back() {
    let dir = TempDir::new();
    let sessions = dir.path().join("gone");
    let mut s = new_store(&sessions);
    std::fs::remove_dir_all(&sessions).unwrap();
    assert!(s.append_message(user("hi")).is_err());
    assert_eq!(s.entry_count(), 0);
    assert_eq!(s.leaf_id(), None);
    assert!(s.fork_messages().is_empty());
}

#[test]
fn opening_missing_empty_and_invalid_files() {
    let dir = TempDir::new();
    // Missing: a fresh session bound to that path, written at the first message.
    let missing = dir.path().join("sub/missing.jsonl");
    let mut s = SessionStore::open(&missing, None, Some(Path::new("/w"))).unwrap();
    assert_eq!(s.session_file(), Some(missing.as_path()));
    assert_eq!(s.session_dir(), Some(dir.path().join("sub").as_path()));
    assert!(!missing.exists());
    s.append_message(user("hi")).unwrap();
    assert_eq!(lines(&missing).len(), 2);
    assert_eq!(lines(&missing)[0]["cwd"], json!("/w"));

    // Empty: initialized with a header at once.
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let s = SessionStore::open(&empty, None, Some(Path::new("/w"))).unwrap();
    assert!(s.is_flushed());
    let l = lines(&empty);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["id"].as_str(), Some(s.session_id()));

    // Invalid: refused with Pi's message, file untouched.
    for content in [
        "\n  \n",
        "{\"type\":\"message\"}\n",
        "not json at all",
        "[1,2]\n",
    ] {
        let bad = dir.path().join("bad.jsonl");
        std::fs::write(&bad, content).unwrap();
        let err = SessionStore::open(&bad, None, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Session file is not a valid pi session: {}", bad.display())
        );
        assert_eq!(std::fs::read_to_string(&bad).unwrap(), content);
    }
}

#[test]
fn a_torn_last_line_is_terminated_and_later_entries_attach_to_the_last_good_one() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    s.append_message(user("one")).unwrap();
    let good = s.append_message(assistant("two")).unwrap();
    let file = s.session_file().unwrap().to_path_buf();
    drop(s);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(br#"{"type":"message","id":"deadbeef","parentId":"#);
    std::fs::write(&file, &bytes).unwrap();

    let mut s = SessionStore::open(&file, None, None).unwrap();
    assert_eq!(s.leaf_id(), Some(good.as_str()));
    assert!(std::fs::read(&file).unwrap().ends_with(b"\"parentId\":\n"));
    let next = s.append_message(user("three")).unwrap();
    drop(s);
    let s = SessionStore::open(&file, None, None).unwrap();
    assert_eq!(s.entry_count(), 3);
    assert_eq!(s.entry(&next).unwrap().parent_id(), Some(good.as_str()));
}

#[test]
fn labels_set_clear_and_show_in_the_tree() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    let u = s.append_message(user("one")).unwrap();
    assert_eq!(
        s.append_label_change("nope", Some("x"))
            .unwrap_err()
            .to_string(),
        "Entry nope not found"
    );
    s.append_label_change(&u, Some("first")).unwrap();
    assert_eq!(s.label(&u).unwrap().label, "first");
    s.append_label_change(&u, Some("")).unwrap();
    assert!(s.label(&u).is_none());
    s.append_label_change(&u, Some("again")).unwrap();
    let tree = s.tree().to_json().unwrap();
    assert!(
        tree.contains(r#"],"label":"again","labelTimestamp":""#),
        "{tree}"
    );
    // Reloading restores the same labels.
    let reopened = SessionStore::open(s.session_file().unwrap(), None, None).unwrap();
    assert_eq!(reopened.label(&u), s.label(&u));
    let l = lines(s.session_file().unwrap());
    assert!(to_js_string(&l[3]).unwrap().contains(r#""label":"""#));
}

#[test]
fn context_edits_are_validated_and_normalized() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    let u = s.append_message(user("question")).unwrap();
    let a = s.append_message(assistant("answer")).unwrap();
    let mc = s.append_model_change("p", "m").unwrap();
    let err = |r: Result<String, SessionError>| r.unwrap_err().to_string();
    assert_eq!(
        err(s.append_context_edit(&a, Some(json!({"content": 5})))),
        "Context edit replacement must be null or contain string/array content"
    );
    assert_eq!(
        err(s.append_context_edit(&a, Some(json!("text")))),
        "Context edit replacement must be null or contain string/array content"
    );
    assert_eq!(
        err(s.append_context_edit("zzz", None)),
        "Entry zzz not found"
    );
    assert_eq!(
        err(s.append_context_edit(&mc, None)),
        format!("Entry {mc} does not contribute editable model content")
    );
    s.branch(&u).unwrap();
    s.append_message(assistant("other branch")).unwrap();
    assert_eq!(
        err(s.append_context_edit(&a, None)),
        format!("Entry {a} is not on the active branch")
    );
    s.branch(&mc).unwrap();
    let e = s
        .append_context_edit(&a, Some(json!({"content": "short", "x": 1})))
        .unwrap();
    assert_eq!(
        to_js_string(s.entry(&e).unwrap()).unwrap(),
        format!(
            r#"{{"type":"context_edit","id":"{e}","parentId":"{mc}","timestamp":"{}","targetId":"{a}","replacement":{{"content":[{{"type":"text","text":"short"}}]}}}}"#,
            s.entry(&e).unwrap().timestamp().unwrap()
        )
    );
    let ue = s
        .append_context_edit(&u, Some(json!({"content": "u2", "x": 1})))
        .unwrap();
    assert!(
        to_js_string(s.entry(&ue).unwrap())
            .unwrap()
            .ends_with(r#""replacement":{"content":"u2","x":1}}"#)
    );
    let ctx = s.build_context();
    assert_eq!(
        to_js_string(&ctx.messages).unwrap(),
        r#"[{"role":"user","content":"u2","timestamp":1},{"role":"assistant","content":[{"type":"text","text":"short"}],"api":"openai-completions","provider":"prov","model":"model-x","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}]"#
    );
    assert_eq!(ctx.model.as_ref().map(|m| m.model_id.as_str()), Some("m"));
    s.append_context_edit(&a, None).unwrap();
    assert_eq!(s.build_context().messages.len(), 1);
}

#[test]
fn compaction_keeps_from_first_kept_and_stores_the_prompt_state() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    let sys: AgentMessage = serde_json::from_str(
        r#"{"role":"system","content":"","sections":{"a":"A"},"timestamp":5,"toolsAdded":[{"name":"read","description":"r","parameters":{}}]}"#,
    )
    .unwrap();
    s.append_message(sys).unwrap();
    s.append_message(user("one")).unwrap();
    s.append_message(assistant("two")).unwrap();
    let kept = s.append_message(user("three")).unwrap();
    s.append_message(assistant("four")).unwrap();
    let c = s
        .append_compaction(CompactionParams {
            summary: "sum".into(),
            first_kept_entry_id: Some(kept.clone()),
            tokens_before: 42,
            details: None,
            from_hook: Some(false),
            usage: None,
        })
        .unwrap();
    let entry = s.entry(&c).unwrap();
    let ms = pi_js::time::parse_iso_ms(entry.timestamp().unwrap()).unwrap();
    assert_eq!(
        to_js_string(entry).unwrap(),
        format!(
            r#"{{"type":"compaction","id":"{c}","parentId":"{}","timestamp":"{}","summary":"sum","firstKeptEntryId":"{kept}","tokensBefore":42,"fromHook":false,"systemMessage":{{"role":"system","content":"","sections":{{"a":"A"}},"toolsAdded":[{{"name":"read","description":"r","parameters":{{}}}}],"timestamp":{ms}}}}}"#,
            entry.parent_id().unwrap(),
            entry.timestamp().unwrap()
        )
    );
    let roles: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(roles, ["system", "compactionSummary", "user", "assistant"]);
    // Without a first kept entry nothing before the compaction survives.
    let c2 = s.append_compaction(CompactionParams::default()).unwrap();
    assert_eq!(
        s.entry(&c2).map(|e| to_js_string(e)
            .unwrap()
            .contains(&format!(r#""firstKeptEntryId":"{c2}""#))),
        Some(true)
    );
    let roles: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(roles, ["system", "compactionSummary"]);
}

#[test]
fn branch_summaries_move_the_leaf_and_record_where_they_came_from() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    let u = s.append_message(user("one")).unwrap();
    let a = s.append_message(assistant("two")).unwrap();
    let b = s
        .branch_with_summary(
            Some(&u),
            BranchSummaryParams {
                summary: "left".into(),
                ..Default::default()
            },
        )
        .unwrap();
    let e = s.entry(&b).unwrap();
    assert_eq!(e.parent_id(), Some(u.as_str()));
    assert!(
        to_js_string(e)
            .unwrap()
            .contains(&format!(r#""fromId":"{a}","summary":"left"}}"#))
    );
    let roles: Vec<String> = s
        .build_context()
        .messages
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(roles, ["user", "branchSummary"]);
    s.reset_leaf();
    let r = s
        .branch_with_summary(None, BranchSummaryParams::default())
        .unwrap();
    assert!(
        to_js_string(s.entry(&r).unwrap())
            .unwrap()
            .contains(r#""parentId":null"#)
    );
    assert!(
        to_js_string(s.entry(&r).unwrap())
            .unwrap()
            .contains(r#""fromId":"root""#)
    );
    assert_eq!(
        s.branch_with_summary(Some("nope"), BranchSummaryParams::default())
            .unwrap_err()
            .to_string(),
        "Entry nope not found"
    );
    assert_eq!(s.tree().roots().len(), 2);
}

#[test]
fn session_names_and_entry_cursors() {
    let dir = TempDir::new();
    let mut s = new_store(dir.path());
    assert_eq!(s.session_name(), None);
    let first = s.append_message(user("a")).unwrap();
    s.append_session_info(" My  session\r\n\nname ").unwrap();
    assert_eq!(s.session_name().as_deref(), Some("My  session name"));
    let all = s.entries_since(None).unwrap().len();
    assert_eq!(s.entries_since(Some(&first)).unwrap().len(), all - 1);
    assert_eq!(
        s.entries_since(Some("x")).unwrap_err().to_string(),
        "Entry not found: x"
    );
    s.append_session_info("   ").unwrap();
    assert_eq!(s.session_name(), None);
}

#[test]
fn a_deep_linear_session_builds_its_tree_and_context() {
    let dir = TempDir::new();
    let mut s = SessionStore::in_memory(Path::new("/w"), NewSession::default()).unwrap();
    for i in 0..20_000 {
        s.append_message(user(&format!("m{i}"))).unwrap();
    }
    let json = s.tree().to_json().unwrap();
    assert!(json.starts_with(r#"[{"entry":{"type":"message""#));
    assert_eq!(json.matches(r#""children":[]"#).count(), 1);
    assert_eq!(s.build_context().messages.len(), 20_000);
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn in_memory_sessions_never_touch_the_disk_and_ids_are_validated() {
    let s = SessionStore::in_memory(Path::new("/w"), NewSession::default()).unwrap();
    assert_eq!(s.session_file(), None);
    assert!(!s.is_persisted());
    let err = SessionStore::in_memory(
        Path::new("/w"),
        NewSession {
            id: Some("bad id".into()),
            parent_session: None,
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character"
    );
    let s = SessionStore::in_memory(
        Path::new("/w"),
        NewSession {
            id: Some("my.id-1".into()),
            parent_session: Some("/p.jsonl".into()),
        },
    )
    .unwrap();
    assert_eq!(s.session_id(), "my.id-1");
    assert_eq!(s.parent_session(), Some("/p.jsonl"));
}

#[test]
fn user_content_blocks_count_for_fork_messages() {
    let mut s = SessionStore::in_memory(Path::new("/w"), NewSession::default()).unwrap();
    let blocks = StringOrBlocks::Blocks(vec![
        UserBlock::Text(pi_protocol::content::TextContent::new("a")),
        UserBlock::Text(pi_protocol::content::TextContent::new("b")),
    ]);
    let id = s
        .append_message(UserMessage::new(blocks, 1).into())
        .unwrap();
    s.append_message(user("")).unwrap();
    assert_eq!(
        to_js_string(&s.fork_messages()).unwrap(),
        format!(r#"[{{"entryId":"{id}","text":"ab"}}]"#)
    );
}

#[test]
fn a_missing_session_cwd_is_reported_like_pi() {
    let dir = TempDir::new();
    let s =
        SessionStore::create(Path::new("/no/such/dir"), dir.path(), NewSession::default()).unwrap();
    assert_eq!(
        s.ensure_cwd_exists(Path::new("/here"))
            .unwrap_err()
            .to_string(),
        format!(
            "Stored session working directory does not exist: /no/such/dir\nSession file: {}\nCurrent working directory: /here",
            s.session_file().unwrap().display()
        )
    );
    let ok = SessionStore::create(dir.path(), dir.path(), NewSession::default()).unwrap();
    assert!(ok.ensure_cwd_exists(Path::new("/here")).is_ok());
}
