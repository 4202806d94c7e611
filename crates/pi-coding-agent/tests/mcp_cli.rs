//! `pi mcp ...` against the recorded behaviour of Pi 1.6.0 (`tests/fixtures/mcp_cli.jsonl`,
//! written by `tests/mcp_cli_reference.sh`): the same steps in the same order, in one agent dir
//! and cwd, must print the same stdout and stderr, exit with the same code and leave the same
//! `mcp.json`. The servers are the test MCP server of `pi-test-support`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::Value;
use std::process::Command;

const FIXTURE: &str = include_str!("fixtures/mcp_cli.jsonl");

#[test]
fn pi_mcp_commands_match_the_reference() {
    let server = pi_test_support::mcp_server::binary_path().unwrap();
    let server = server.display().to_string();
    let dir = pi_test_support::TempDir::new();
    let root = dir.path().display().to_string();
    for sub in ["home", "agent", "work"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    let denorm = |s: &str| s.replace("<S>", &server).replace("<T>", &root);
    let norm = |s: &str| s.replace(&server, "<S>").replace(&root, "<T>");
    let mut failures = Vec::new();
    for line in FIXTURE.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line).unwrap();
        let args: Vec<String> = record["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| denorm(a.as_str().unwrap()))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_pi"))
            .arg("mcp")
            .args(&args)
            .current_dir(dir.path().join("work"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", dir.path().join("home"))
            .env("PI_CODING_AGENT_DIR", dir.path().join("agent"))
            .env("PI_OFFLINE", "1")
            .output()
            .unwrap();
        let mcp_json = std::fs::read_to_string(dir.path().join("agent/mcp.json"))
            .ok()
            .map(|s| norm(&s));
        let actual = serde_json::json!({
            "args": record["args"],
            "exit": out.status.code().unwrap_or(-1),
            "stdout": norm(&String::from_utf8_lossy(&out.stdout)),
            "stderr": norm(&String::from_utf8_lossy(&out.stderr)),
            "mcp_json": mcp_json,
        });
        if actual != record {
            failures.push(format!(
                "pi mcp {}\n  expected: {record}\n  actual:   {actual}",
                record["args"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
