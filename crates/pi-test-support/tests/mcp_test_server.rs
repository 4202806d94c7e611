//! The test MCP server answers the MCP handshake and its tools over stdio. Also makes cargo
//! build the `mcp-test-server` binary in every workspace test run, where the MCP tests and the
//! conformance scenarios find it beside their own executables.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn answers_initialize_and_tool_calls_then_exits_at_end_of_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-test-server"))
        .args(["--name", "t", "--no-resources"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_item","arguments":{"id":9}}}"#,
        "\n",
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"t","version":"1.0.0"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"no item 9"}],"isError":true}}"#,
            "\n",
        )
    );
}
