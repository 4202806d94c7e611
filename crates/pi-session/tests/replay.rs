//! Writing: replaying every entry of each reference session through the append API (same
//! fields, same branch points) produces the file the reference wrote, line for line, once our
//! random ids and clock times are swapped for the reference's. This pins the entry
//! constructors, key orders, `parentId` linking, the deferred first write, session name
//! sanitizing and the system prompt a compaction stores.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TempDir, fixtures, jsonl_in};
use pi_js::parse::parse_js_json;
use pi_protocol::content::UserContent;
use pi_protocol::message::AgentMessage;
use pi_session::{BranchSummaryParams, CompactionParams, NewSession, SessionStore};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap().to_owned()
}

fn opt<T: serde::de::DeserializeOwned>(v: &Value, k: &str) -> Option<T> {
    v.get(k).map(|x| serde_json::from_value(x.clone()).unwrap())
}

/// Appends `e` (a reference entry) with the matching API call; returns our id.
fn append_like(store: &mut SessionStore, e: &Value, ids: &HashMap<String, String>) -> String {
    let mapped = |k: &str| ids.get(e[k].as_str().unwrap()).unwrap().clone();
    match e["type"].as_str().unwrap() {
        "message" => {
            let m: AgentMessage = serde_json::from_value(e["message"].clone()).unwrap();
            store.append_message(m)
        }
        "model_change" => store.append_model_change(&s(e, "provider"), &s(e, "modelId")),
        "thinking_level_change" => store.append_thinking_level_change(&s(e, "thinkingLevel")),
        "session_info" => store.append_session_info(&s(e, "name")),
        "custom" => store.append_custom_entry(&s(e, "customType"), e.get("data").cloned()),
        "custom_message" => {
            let content: UserContent = serde_json::from_value(e["content"].clone()).unwrap();
            store.append_custom_message_entry(
                &s(e, "customType"),
                content,
                e["display"].as_bool().unwrap(),
                e.get("details").cloned(),
            )
        }
        "label" => store.append_label_change(&mapped("targetId"), e["label"].as_str()),
        "context_edit" => {
            let r = e["replacement"].clone();
            store.append_context_edit(&mapped("targetId"), (!r.is_null()).then_some(r))
        }
        "compaction" => {
            let fk = s(e, "firstKeptEntryId");
            store.append_compaction(CompactionParams {
                summary: s(e, "summary"),
                first_kept_entry_id: (fk != s(e, "id")).then(|| ids[&fk].clone()),
                tokens_before: e["tokensBefore"].as_u64().unwrap(),
                details: e.get("details").cloned(),
                from_hook: e["fromHook"].as_bool(),
                usage: opt(e, "usage"),
            })
        }
        "branch_summary" => {
            let from = e["parentId"].as_str().map(|p| ids[p].clone());
            store.branch_with_summary(
                from.as_deref(),
                BranchSummaryParams {
                    summary: s(e, "summary"),
                    details: e.get("details").cloned(),
                    from_hook: e["fromHook"].as_bool(),
                    usage: opt(e, "usage"),
                },
            )
        }
        other => panic!("no replay for {other}"),
    }
    .unwrap()
}

fn replay(fixture: &Path) {
    let name = fixture.display().to_string();
    let text = std::fs::read_to_string(fixture).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let values: Vec<Value> = lines.iter().map(|l| parse_js_json(l).unwrap()).collect();
    let header = &values[0];
    let dir = TempDir::new();
    let mut store = SessionStore::create(
        Path::new(&s(header, "cwd")),
        dir.path(),
        NewSession {
            id: None,
            parent_session: header["parentSession"].as_str().map(str::to_owned),
        },
    )
    .unwrap();
    let mut ids: HashMap<String, String> = HashMap::new();
    for e in &values[1..] {
        match e["parentId"].as_str() {
            Some(p) => store.branch(&ids[p]).unwrap(),
            None => store.reset_leaf(),
        }
        if e["type"] == "branch_summary" {
            // The summary records the leaf it left.
            store.branch(&ids[e["fromId"].as_str().unwrap()]).unwrap();
        }
        let ours = append_like(&mut store, e, &ids);
        ids.insert(s(e, "id"), ours);
    }
    assert!(store.is_flushed(), "{name}");
    let written = std::fs::read_to_string(store.session_file().unwrap()).unwrap();
    let ours_to_theirs: Vec<(String, String)> =
        ids.iter().map(|(t, o)| (o.clone(), t.clone())).collect();
    let got: Vec<&str> = written.lines().collect();
    assert_eq!(got.len(), lines.len(), "{name}: line count");
    // Header: id, time and cwd are ours by construction.
    let our_header = parse_js_json(got[0]).unwrap();
    let fixed = got[0]
        .replace(&s(&our_header, "id"), &s(header, "id"))
        .replace(&s(&our_header, "timestamp"), &s(header, "timestamp"));
    assert_eq!(fixed, lines[0], "{name}: header");
    for (i, (got, want)) in got.iter().zip(&lines).enumerate().skip(1) {
        let our_entry = &store.entries()[i - 1];
        let our_ts = our_entry.timestamp().unwrap();
        let their_ts = s(&values[i], "timestamp");
        let mut fixed = got.replace(
            &format!("\"timestamp\":\"{our_ts}\""),
            &format!("\"timestamp\":\"{their_ts}\""),
        );
        if values[i]["type"] == "compaction" {
            let ms = |iso: &str| pi_js::time::parse_iso_ms(iso).unwrap();
            fixed = fixed.replace(
                &format!("\"timestamp\":{}}}", ms(our_ts)),
                &format!("\"timestamp\":{}}}", ms(&their_ts)),
            );
        }
        for (o, t) in &ours_to_theirs {
            fixed = fixed.replace(&format!("\"{o}\""), &format!("\"{t}\""));
        }
        assert_eq!(&fixed, want, "{name}: line {}", i + 1);
    }
}

#[test]
fn replaying_reference_sessions_writes_the_same_files() {
    for f in jsonl_in(&fixtures().join("reference")) {
        replay(&f);
    }
}

#[test]
fn replaying_a_retain_none_compaction_writes_the_same_file() {
    replay(&fixtures().join("edge").join("retain_none.jsonl"));
}
