//! `pi schema` (an addition): prints the protocol's JSON Schema and TypeScript declarations,
//! generated from the same types the RPC mode writes with.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use serde_json::Value;
use std::process::{Command, Stdio};

fn pi(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn schema_prints_the_generated_schema() {
    let (code, stdout, stderr) = pi(&["schema"]);
    assert_eq!(code, 0, "{stderr}");
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed, pi_protocol::schema::protocol_schema());
    let defs = printed["$defs"].as_object().unwrap();
    for entry_point in ["StdinRecord", "StdoutRecord", "SessionFileLine"] {
        assert!(defs.contains_key(entry_point), "{entry_point}");
    }
}

#[test]
fn schema_typescript_declares_the_entry_points() {
    let (code, stdout, stderr) = pi(&["schema", "--typescript"]);
    assert_eq!(code, 0, "{stderr}");
    for declaration in [
        "export type StdinRecord",
        "export type StdoutRecord",
        "export type SessionFileLine",
        "export type RpcCommand",
    ] {
        assert!(stdout.contains(declaration), "{declaration}");
    }
}

#[test]
fn schema_rejects_unknown_arguments() {
    let (code, stdout, stderr) = pi(&["schema", "--yaml"]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(stderr.starts_with("Error: unknown arguments"), "{stderr}");
}

/// Node 22 where `scripts/install-reference` put it, else the one on PATH.
fn node_path() -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let node22 = root.join(".reference/node22/package/bin");
    let path = std::env::var("PATH").unwrap_or_default();
    if node22.join("node").is_file() {
        format!("{}:{path}", node22.display())
    } else {
        path
    }
}

/// The declarations are TypeScript Node 22's own parser accepts (type stripping parses the
/// whole file; a syntax error fails it).
#[test]
fn schema_typescript_parses() {
    let (code, stdout, stderr) = pi(&["schema", "--typescript"]);
    assert_eq!(code, 0, "{stderr}");
    let dir = std::env::temp_dir().join(format!("pi-schema-ts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("protocol.ts");
    std::fs::write(&file, &stdout).unwrap();
    let out = Command::new("node")
        .arg("--experimental-strip-types")
        .arg("--no-warnings")
        .arg(&file)
        .env("PATH", node_path())
        .output()
        .expect("node 22 (conformance/.reference or PATH)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
