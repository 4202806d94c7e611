//! Every case of `fixtures/cases.json` run through our tools and compared with the result Pi
//! 1.6.0 produced for the same files and arguments (`fixtures/expected.json`, recorded by
//! `fixtures/record.py`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use pi_agent::{ToolError, ToolInvocation};
use pi_js::json::to_js_string;
use pi_protocol::tool::AgentToolResult;
use pi_tools::{SessionHandle, SessionInfo, ToolsConfig, build_tool};
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn fixtures() -> (Vec<Value>, Map<String, Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let cases: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let expected: Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    (cases, expected)
}

/// Lays out a case's files (the same spec `cases.py` materializes).
fn materialize(setup: &[Value], work: &Path) {
    for item in setup {
        if let Some(dir) = item.get("dir").and_then(Value::as_str) {
            std::fs::create_dir_all(work.join(dir)).unwrap();
            continue;
        }
        if let Some(repo) = item.get("git").and_then(Value::as_str) {
            let git = work.join(repo).join(".git");
            std::fs::create_dir_all(&git).unwrap();
            std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            continue;
        }
        if let Some(link) = item.get("symlink").and_then(Value::as_str) {
            let path = work.join(link);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(item["target"].as_str().unwrap(), path).unwrap();
            continue;
        }
        let path = work.join(item["file"].as_str().unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let data: Vec<u8> = if let Some(text) = item.get("text").and_then(Value::as_str) {
            text.as_bytes().to_vec()
        } else if let Some(lines) = item.get("lines") {
            let prefix = lines[0].as_str().unwrap();
            let n = lines[1].as_u64().unwrap();
            (1..=n)
                .map(|i| format!("{prefix}{i}\n"))
                .collect::<String>()
                .into_bytes()
        } else if let Some(rep) = item.get("repeat") {
            let unit = rep[0].as_str().unwrap();
            let n = rep[1].as_u64().unwrap() as usize;
            let tail = item.get("tail").and_then(Value::as_str).unwrap_or("");
            format!("{}{tail}", unit.repeat(n)).into_bytes()
        } else {
            STANDARD.decode(item["b64"].as_str().unwrap()).unwrap()
        };
        std::fs::write(path, data).unwrap();
    }
}

fn session() -> SessionHandle {
    SessionHandle::new(SessionInfo {
        session_id: Some("test-session".into()),
        session_file: None,
        provider: Some("mock-openai".into()),
        model_id: Some("mock-model".into()),
        thinking_level: Some("off".into()),
        model_accepts_images: Some(false),
        image_limits: None,
    })
}

/// Our outcome in the shape of Pi's `tool_execution_end` (`result`, `isError`).
fn outcome(result: Result<AgentToolResult, ToolError>) -> Value {
    match result {
        Ok(r) => {
            let is_error = r.is_error.unwrap_or(false);
            let value: Value = serde_json::from_str(&to_js_string(&r).unwrap()).unwrap();
            json!({ "result": value, "isError": is_error })
        }
        Err(e) => json!({
            "result": { "content": [{ "type": "text", "text": e.0 }], "details": {} },
            "isError": true,
        }),
    }
}

fn normalize(value: &Value, work: &Path, agent: &Path) -> Value {
    let text = to_js_string(value).unwrap();
    let text = text
        .replace(&work.display().to_string(), "<WORK>")
        .replace(&agent.display().to_string(), "<AGENT>");
    let re = regex::Regex::new(r"/tmp/pi-bash-[0-9a-f]{16}\.log").unwrap();
    let text = re.replace_all(&text, "<TMP>/pi-bash-<HEX>.log");
    serde_json::from_str(&text).unwrap()
}

/// Deletes the `pi-bash-*.log` files a result names (the tool leaves them for the model).
fn remove_output_files(outcome: &Value) {
    let text = to_js_string(outcome).unwrap();
    let re = regex::Regex::new(r#"/[^"\s]*/pi-bash-[0-9a-f]{16}\.log"#).unwrap();
    for path in re.find_iter(&text) {
        let _ = std::fs::remove_file(path.as_str());
    }
}

fn text_of(outcome: &Value) -> String {
    outcome["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The listed lines (sorted) and the notice after them.
fn split_listing(text: &str) -> (Vec<String>, String) {
    let (list, notice) = match text.find("\n\n[") {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    let mut lines: Vec<String> = list.lines().map(str::to_string).collect();
    lines.sort();
    (lines, notice.to_string())
}

fn compare(mode: &str, ours: &mut Value, theirs: &mut Value) -> bool {
    match mode {
        "bash" => {
            for v in [&mut *ours, &mut *theirs] {
                if let Some(sc) = v["result"].get_mut("structuredContent") {
                    sc["wall_time_seconds"] = json!(0);
                }
            }
            ours == theirs
        }
        "image" => {
            for v in [&mut *ours, &mut *theirs] {
                if let Some(content) = v["result"]["content"].as_array_mut() {
                    for block in content {
                        if block["type"] == "image" {
                            block["data"] = json!("<data>");
                        }
                    }
                }
                if v["result"]["structuredContent"].is_object() {
                    v["result"]["structuredContent"]["data"] = json!("<data>");
                }
            }
            ours == theirs
        }
        "sorted" | "subset" => {
            let (a, na) = split_listing(&text_of(ours));
            let (b, nb) = split_listing(&text_of(theirs));
            let same_lines = if mode == "sorted" {
                a == b
            } else {
                a.len() == b.len()
            };
            same_lines
                && na == nb
                && ours["isError"] == theirs["isError"]
                && ours["result"]["details"] == theirs["result"]["details"]
        }
        _ => ours == theirs,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_recorded_case_matches_pi() {
    let (cases, expected) = fixtures();
    let mut failures = Vec::new();
    // `PI_TOOLS_CASES=a,b` runs only those cases.
    let only = std::env::var("PI_TOOLS_CASES").ok();
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|c| c == id))
        {
            continue;
        }
        let Some(theirs) = expected.get(id) else {
            failures.push(format!("{id}: not recorded"));
            continue;
        };
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let agent = root.path().join("agent");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        materialize(
            case.get("setup")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
            &work,
        );
        let mut config = ToolsConfig::new(&work, &agent);
        config.session = session();
        config.base_env = Some(vec![
            (OsString::from("PATH"), OsString::from("/usr/bin:/bin")),
            (OsString::from("TMPDIR"), OsString::from("/tmp")),
        ]);
        let tool = build_tool(case["tool"].as_str().unwrap(), &Arc::new(config)).unwrap();
        let invocation = ToolInvocation {
            tool_call_id: "call_1".into(),
            args: case["args"].as_object().cloned().unwrap(),
            cancel: CancellationToken::new(),
            updates: Arc::new(|_| {}),
        };
        let started = std::time::Instant::now();
        let raw = outcome(tool.execute(invocation).await);
        remove_output_files(&raw);
        let mut ours = normalize(&raw, &work, &agent);
        if started.elapsed() > std::time::Duration::from_millis(300) {
            eprintln!("slow case {id}: {:?}", started.elapsed());
        }
        if let Some(after) = case.get("after").and_then(Value::as_str) {
            let bytes = std::fs::read(work.join(after)).unwrap_or_default();
            ours["after"] = json!(STANDARD.encode(bytes));
        }
        let mut theirs = theirs.clone();
        let mode = case
            .get("compare")
            .and_then(Value::as_str)
            .unwrap_or("exact");
        if !compare(mode, &mut ours, &mut theirs) {
            failures.push(format!(
                "{id}:\n  ours:   {}\n  theirs: {}",
                to_js_string(&ours).unwrap(),
                to_js_string(&theirs).unwrap()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
