//! Streamable-HTTP connections against the HTTP test server of `pi-test-support`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_mcp::config::{self, Scope, ServerEntry};
use pi_mcp::connection::{Connection, State};
use pi_mcp::log::ServerLog;
use pi_test_support::mcp_http;
use pi_test_support::mcp_server::ServerOptions;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

fn connection(raw: Value, dir: &std::path::Path) -> Arc<Connection> {
    let (config, transport) = config::validate("web", &raw).unwrap();
    let entry = ServerEntry {
        name: "web".into(),
        config,
        transport,
        source: "test".into(),
        scope: Scope::Global,
        override_path: None,
    };
    let log = Arc::new(ServerLog::new(dir.join("mcp.log")));
    Connection::new(entry, dir, log, Arc::new(|_: &Connection, _| {}))
}

fn opts() -> ServerOptions {
    ServerOptions::from_args(["--instructions".to_string(), "Over HTTP".to_string()]).unwrap()
}

#[tokio::test]
async fn a_session_carries_its_id_and_calls_answer_over_sse() {
    let server = mcp_http::start(opts(), 0).await.unwrap();
    let dir = pi_test_support::TempDir::new();
    let conn = connection(
        json!({"url": server.url(), "headers": {"X-Team": "core"}}),
        dir.path(),
    );
    conn.client().await.unwrap();
    assert_eq!(conn.state(), Some(State::Connected));
    assert_eq!(conn.instructions().as_deref(), Some("Over HTTP"));
    assert_eq!(conn.tools().len(), 7);
    let seen = Arc::new(Mutex::new(0));
    let s = Arc::clone(&seen);
    let r = conn
        .call_tool(
            "progress",
            json!({"steps": 2}),
            &CancellationToken::new(),
            Some(Arc::new(move |_: &Value| *s.lock().unwrap() += 1)),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("done"));
    assert_eq!(*seen.lock().unwrap(), 2);
    let e = conn
        .call_tool("fail", json!({}), &CancellationToken::new(), None)
        .await
        .unwrap_err();
    assert_eq!(e, "tool failed on purpose");
    conn.close().await;
    let log = server.log.lock().unwrap().clone();
    let sessions: Vec<&str> = log
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(sessions[0], "-", "initialize starts the session: {log:?}");
    assert!(sessions[1..].iter().all(|s| *s == "session-1"), "{log:?}");
    assert!(
        log.last().unwrap().starts_with("DELETE session-1"),
        "{log:?}"
    );
}

#[tokio::test]
async fn transient_failures_are_retried_while_connecting() {
    let server = mcp_http::start(opts(), 2).await.unwrap();
    let dir = pi_test_support::TempDir::new();
    let conn = connection(json!({"url": server.url()}), dir.path());
    conn.client().await.unwrap();
    assert_eq!(conn.state(), Some(State::Connected));
    conn.close().await;
    let server = mcp_http::start(opts(), 3).await.unwrap();
    let conn = connection(json!({"url": server.url()}), dir.path());
    let e = conn.client().await.err().unwrap();
    assert_eq!(
        e,
        "MCP server \"web\" failed to connect: MCP HTTP request failed with status 503: overloaded"
    );
}

#[tokio::test]
async fn unreachable_servers_and_unresolved_headers_fail_with_pis_texts() {
    let dir = pi_test_support::TempDir::new();
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conn = connection(
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
        dir.path(),
    );
    assert_eq!(
        conn.client().await.err().unwrap(),
        "MCP server \"web\" failed to connect: fetch failed"
    );
    let conn = connection(
        json!({"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${PI_MCP_TEST_UNSET_TOKEN}"}}),
        dir.path(),
    );
    assert_eq!(
        conn.client().await.err().unwrap(),
        "MCP server \"web\" failed to connect: Failed to resolve MCP server \"web\" header \"Authorization\" from environment variable: PI_MCP_TEST_UNSET_TOKEN"
    );
}
