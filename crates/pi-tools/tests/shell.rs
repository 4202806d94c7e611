//! The bash tool and the RPC executor against real processes: abort and timeout kill the whole
//! process group, partial results are throttled like Pi's, output is sanitized for RPC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi_agent::{AgentTool, ToolInvocation};
use pi_js::json::to_js_string;
use pi_protocol::tool::AgentToolResult;
use pi_tools::{BashRequest, ToolsConfig, build_tool, execute_bash};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

type Updates = Arc<Mutex<Vec<(Instant, AgentToolResult)>>>;

fn bash_tool(dir: &std::path::Path) -> Arc<dyn AgentTool> {
    build_tool("bash", &Arc::new(ToolsConfig::new(dir, dir.join("agent")))).unwrap()
}

fn invocation(args: Value, cancel: CancellationToken) -> (ToolInvocation, Updates) {
    let updates: Updates = Arc::default();
    let sink = updates.clone();
    let inv = ToolInvocation {
        tool_call_id: "c1".into(),
        args: args.as_object().cloned().unwrap_or_else(Map::new),
        cancel,
        updates: Arc::new(move |u| sink.lock().unwrap().push((Instant::now(), u))),
    };
    (inv, updates)
}

fn text(result: &AgentToolResult) -> String {
    to_js_string(&result.content).unwrap()
}

/// Processes of the group `pgid` that are still alive (zombies awaiting reaping do not count).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut alive = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which is in parentheses and may contain spaces).
        let Some(rest) = stat.rsplit_once(") ").map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (state, pgrp) = (fields[0], fields[2].parse::<i32>().unwrap_or(0));
        if pgrp == pgid && state != "Z" && state != "X" {
            alive.push(pid);
        }
    }
    alive
}

/// Waits until an update's text contains `needle`; returns that text.
async fn wait_for_update(updates: &Updates, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = updates
            .lock()
            .unwrap()
            .iter()
            .map(|(_, u)| text(u))
            .find(|t| t.contains(needle))
        {
            return t;
        }
        assert!(Instant::now() < deadline, "no update containing {needle}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn group_of(update_text: &str) -> i32 {
    let start = update_text.find("pgid=").unwrap() + 5;
    update_text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn abort_kills_the_whole_process_group_within_100ms() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let (inv, updates) = invocation(
        json!({"command": "sleep 30 & sleep 30 & echo pgid=$$; wait"}),
        cancel.clone(),
    );
    let run = tokio::spawn(bash_tool(dir.path()).execute(inv));
    let pgid = group_of(&wait_for_update(&updates, "pgid=").await);
    assert_eq!(live_members(pgid).len(), 3, "shell and two sleeps run");
    let aborted_at = Instant::now();
    cancel.cancel();
    let result = run.await.unwrap();
    let elapsed = aborted_at.elapsed();
    assert!(elapsed < Duration::from_millis(100), "took {elapsed:?}");
    assert_eq!(live_members(pgid), Vec::<i32>::new());
    assert_eq!(
        result.unwrap_err().0,
        format!("pgid={pgid}\n\n\nCommand aborted")
    );
}

#[tokio::test]
async fn timeout_kills_the_group_and_reports_pis_text() {
    let dir = tempfile::tempdir().unwrap();
    let (inv, updates) = invocation(
        json!({"command": "sleep 30 & echo pgid=$$; wait", "timeout": 0.3}),
        CancellationToken::new(),
    );
    let started = Instant::now();
    let result = bash_tool(dir.path()).execute(inv).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let first = updates
        .lock()
        .unwrap()
        .iter()
        .map(|(_, u)| text(u))
        .find(|t| t.contains("pgid="))
        .unwrap();
    let pgid = group_of(&first);
    assert_eq!(live_members(pgid), Vec::<i32>::new());
    assert_eq!(
        result.unwrap_err().0,
        format!("pgid={pgid}\n\n\nCommand timed out after 0.3 seconds")
    );
}

#[tokio::test]
async fn a_shell_that_exited_before_the_timeout_is_reported_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let (inv, _) = invocation(
        json!({"command": "(while true; do echo tick; sleep 0.05; done) & exit 3", "timeout": 0.5}),
        CancellationToken::new(),
    );
    let err = bash_tool(dir.path()).execute(inv).await.unwrap_err().0;
    assert!(
        err.ends_with("Command timed out after 0.5 seconds. The shell exited with code 3 after 0 seconds, but background processes it started kept writing output until the timeout."),
        "{err}"
    );
}

#[tokio::test]
async fn updates_start_empty_then_come_at_most_every_100ms() {
    let dir = tempfile::tempdir().unwrap();
    let (inv, updates) = invocation(
        json!({"command": "for i in $(seq 1 60); do echo $i; sleep 0.01; done"}),
        CancellationToken::new(),
    );
    let started = Instant::now();
    let result = bash_tool(dir.path()).execute(inv).await.unwrap();
    let total = started.elapsed();
    let updates = updates.lock().unwrap();
    assert_eq!(to_js_string(&updates[0].1).unwrap(), r#"{"content":[]}"#);
    let data: Vec<&(Instant, AgentToolResult)> = updates[1..].iter().collect();
    assert!(data.len() >= 3, "{} updates", data.len());
    // Between the first and the final flush, updates are at least 100 ms apart.
    for pair in data[..data.len() - 1].windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= Duration::from_millis(95), "gap {gap:?}");
    }
    assert!(data.len() as u128 <= total.as_millis() / 100 + 3);
    let last = &data[data.len() - 1].1;
    assert_eq!(to_js_string(&last.details).unwrap(), "{}");
    assert_eq!(last.content, result.content);
}

#[tokio::test]
async fn truncated_output_is_kept_in_a_private_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let (inv, _) = invocation(json!({"command": "seq 1 3000"}), CancellationToken::new());
    let result = bash_tool(dir.path()).execute(inv).await.unwrap();
    let path = result.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    let name = std::path::Path::new(&path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(
        name.starts_with("pi-bash-")
            && name.ends_with(".log")
            && name.len() == "pi-bash-.log".len() + 16
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let full = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        full,
        (1..=3000).map(|i| format!("{i}\n")).collect::<String>()
    );
    std::fs::remove_file(path).unwrap();
}

fn request(dir: &std::path::Path, command: &str) -> BashRequest {
    BashRequest {
        command: command.into(),
        cwd: dir.to_path_buf(),
        shell_path: None,
        command_prefix: None,
        bin_dir: dir.join("bin"),
        base_env: None,
        operations: None,
    }
}

#[tokio::test]
async fn rpc_bash_streams_sanitized_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let mut deltas = Vec::new();
    let result = execute_bash(
        &request(
            dir.path(),
            r"printf 'a\rb\033[31mred\033[0m\n'; printf 'x\001y\n' >&2; exit 4",
        ),
        CancellationToken::new(),
        |d| deltas.push(d.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(deltas.concat(), "abred\nxy\n");
    assert_eq!(
        to_js_string(&result).unwrap(),
        r#"{"output":"abred\nxy\n","exitCode":4,"cancelled":false,"truncated":false}"#
    );
}

#[tokio::test]
async fn rpc_bash_abort_returns_the_output_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let result = execute_bash(
        &request(dir.path(), "echo first; sleep 30"),
        cancel,
        move |_| trigger.cancel(),
    )
    .await
    .unwrap();
    assert_eq!(
        to_js_string(&result).unwrap(),
        r#"{"output":"first\n","cancelled":true,"truncated":false}"#
    );
}

#[tokio::test]
async fn rpc_bash_truncates_like_pi_and_applies_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let mut req = request(dir.path(), "seq 1 3000");
    req.command_prefix = Some("echo prefix".into());
    let result = execute_bash(&req, CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert!(result.truncated);
    assert_eq!(result.exit_code, Some(0));
    let expected: Vec<String> = (1001..=3000).map(|i| i.to_string()).collect();
    assert_eq!(result.output, expected.join("\n"));
    let path = result.full_output_path.unwrap();
    let full = std::fs::read_to_string(&path).unwrap();
    assert!(full.starts_with("prefix\n1\n2\n"));
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn missing_custom_shell_and_cwd_fail_with_pis_texts() {
    let dir = tempfile::tempdir().unwrap();
    let mut req = request(dir.path(), "true");
    req.shell_path = Some("/no/such/shell".into());
    assert_eq!(
        execute_bash(&req, CancellationToken::new(), |_| {})
            .await
            .unwrap_err(),
        "Custom shell path not found: /no/such/shell"
    );
    let gone = dir.path().join("gone");
    let req = request(&gone, "true");
    assert_eq!(
        execute_bash(&req, CancellationToken::new(), |_| {})
            .await
            .unwrap_err(),
        format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            gone.display()
        )
    );
}
