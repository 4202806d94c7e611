//! The stdio client, connections and the manager against a real server process (the test MCP
//! server of `pi-test-support`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

use pi_agent::ToolInvocation;
use pi_mcp::config::{self, McpConfig, Scope, ServerEntry};
use pi_mcp::connection::{Connection, State};
use pi_mcp::log::ServerLog;
use pi_mcp::oauth::signin::BoxFuture;
use pi_mcp::{McpHost, McpManager, Notice};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

fn entry(name: &str, extra: Value) -> ServerEntry {
    let server = pi_test_support::mcp_server::binary_path().unwrap();
    let mut raw = json!({"command": server.display().to_string()});
    for (k, v) in extra.as_object().unwrap() {
        raw[k] = v.clone();
    }
    let (config, transport) = config::validate(name, &raw).unwrap();
    ServerEntry {
        name: name.into(),
        config,
        transport,
        source: "test".into(),
        scope: Scope::Global,
        override_path: None,
    }
}

fn connection(e: ServerEntry, dir: &std::path::Path) -> Arc<Connection> {
    let log = Arc::new(ServerLog::new(dir.join("mcp.log")));
    Connection::new(e, dir, log, Arc::new(|_: &Connection, _| {}))
}

#[tokio::test]
async fn connects_lists_tools_and_calls_one() {
    let dir = pi_test_support::TempDir::new();
    let conn = connection(
        entry(
            "t",
            json!({"args": ["--instructions", " Test tools \n more"]}),
        ),
        dir.path(),
    );
    conn.client().await.unwrap();
    assert_eq!(conn.state(), Some(State::Connected));
    assert_eq!(conn.instructions().as_deref(), Some("Test tools \n more"));
    assert!(conn.has_resources());
    let names: Vec<String> = conn
        .tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "add",
            "list_items",
            "get_item",
            "progress",
            "crash",
            "fail"
        ]
    );
    let r = conn
        .call_tool(
            "add",
            json!({"a": 2, "b": 40}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        r,
        json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"sum": 42}})
    );
    let e = conn
        .call_tool("fail", json!({}), &CancellationToken::new(), None)
        .await
        .unwrap_err();
    assert_eq!(e, "tool failed on purpose");
    conn.close().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_call_fails_the_call_and_reconnects_on_the_next() {
    let dir = pi_test_support::TempDir::new();
    let conn = connection(entry("t", json!({})), dir.path());
    let e = conn
        .call_tool("crash", json!({}), &CancellationToken::new(), None)
        .await
        .unwrap_err();
    assert_eq!(e, "MCP connection closed");
    // The close is noticed by the reader task; give it a moment.
    for _ in 0..100 {
        if conn.state() == Some(State::Disconnected) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(conn.state(), Some(State::Disconnected));
    assert_eq!(conn.error().as_deref(), Some("Connection closed\ncrashing"));
    let r = conn
        .call_tool(
            "echo",
            json!({"text": "back"}),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("back"));
    assert_eq!(conn.state(), Some(State::Connected));
    conn.close().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_reports_its_stderr() {
    let dir = pi_test_support::TempDir::new();
    let conn = connection(
        entry("b", json!({"args": ["--fail-start", "no database"]})),
        dir.path(),
    );
    let e = conn.client().await.err().unwrap();
    assert_eq!(
        e,
        "MCP server \"b\" failed to connect: MCP connection closed\nno database"
    );
    assert_eq!(conn.state(), Some(State::Failed));
    let missing = entry("m", json!({"command": "/nonexistent/mcp-server"}));
    let conn = connection(missing, dir.path());
    let e = conn.client().await.err().unwrap();
    assert_eq!(
        e,
        "MCP server \"m\" failed to connect: spawn /nonexistent/mcp-server ENOENT"
    );
}

#[tokio::test]
async fn progress_notifications_reach_the_caller() {
    let dir = pi_test_support::TempDir::new();
    let conn = connection(entry("t", json!({})), dir.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let r = conn
        .call_tool(
            "progress",
            json!({"steps": 3}),
            &CancellationToken::new(),
            Some(Arc::new(move |p: &Value| {
                s.lock().unwrap().push(p["progress"].clone())
            })),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], json!("done"));
    assert_eq!(*seen.lock().unwrap(), [json!(1), json!(2), json!(3)]);
    conn.close().await;
}

#[tokio::test]
async fn closing_stops_the_server_process() {
    let dir = pi_test_support::TempDir::new();
    let conn = connection(entry("t", json!({})), dir.path());
    conn.client().await.unwrap();
    let before = count_servers();
    assert!(before >= 1);
    conn.close().await;
    assert_eq!(conn.state(), Some(State::Closed));
    let e = conn.client().await.err().unwrap();
    assert_eq!(e, "MCP server \"t\" is shut down");
}

/// Running `mcp-test-server` processes of this test binary's children.
fn count_servers() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            stat.contains("(mcp-test-server)") && stat.split(' ').nth(3) == Some(me.as_str())
        })
        .count()
}

/// A `/mcp` client that records notices.
#[derive(Default)]
struct Notices(Mutex<Vec<String>>);

impl pi_mcp::command::CommandUi for Notices {
    fn notify(&self, message: String, _kind: Notice) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(message);
        Box::pin(async {})
    }
    fn select(&self, _: String, _: Vec<String>) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
    fn input(&self, _: String, _: String, _: CancellationToken) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
    fn open_url(&self, _: &str) {}
    fn servers_changed(&self) {}
}

#[derive(Default)]
struct Host {
    activated: Mutex<Vec<String>>,
    notices: Mutex<Vec<String>>,
}

impl McpHost for Host {
    fn tools_changed(&self, activate: Vec<String>, _deactivate: Vec<String>) {
        self.activated.lock().unwrap().extend(activate);
    }
    fn notify(&self, message: String, _kind: Notice) {
        self.notices.lock().unwrap().push(message);
    }
}

#[tokio::test]
async fn the_manager_names_tools_activates_direct_ones_and_lists_indirect_servers() {
    let dir = pi_test_support::TempDir::new();
    let config = McpConfig {
        servers: vec![
            entry(
                "dev-tools",
                json!({"exposure": "direct", "toolExposure": {"crash": "hidden", "get_*": "deferred"}}),
            ),
            entry(
                "search",
                json!({"exposure": "deferred", "description": "Finds things\nand more"}),
            ),
            entry(
                "broken",
                json!({"args": ["--fail-start", "boom"], "exposure": "direct"}),
            ),
        ],
        ..McpConfig::default()
    };
    let manager = McpManager::from_config(config, dir.path(), dir.path());
    assert_eq!(manager.discovery_needs(), (false, true));
    let host = Arc::new(Host::default());
    let weak: std::sync::Weak<dyn McpHost> = Arc::downgrade(&(host.clone() as Arc<dyn McpHost>));
    manager.start(weak);
    manager.wait_for_direct_servers().await;
    let activated = host.activated.lock().unwrap().clone();
    assert_eq!(
        activated,
        [
            "mcp__dev_tools__echo",
            "mcp__dev_tools__add",
            "mcp__dev_tools__list_items",
            "mcp__dev_tools__progress",
            "mcp__dev_tools__fail",
            "list_mcp_resources",
            "list_mcp_resource_templates",
            "read_mcp_resource"
        ]
    );
    let crash = manager.tool("mcp__dev_tools__crash").unwrap();
    assert_eq!(crash.exposure, "hidden");
    assert_eq!(
        manager.tool("mcp__dev_tools__get_item").unwrap().exposure,
        "deferred"
    );
    assert_eq!(
        manager.servers_section().as_deref(),
        Some(
            "MCP servers whose tools are not declared to you. Load the tools of `tool_search` servers with `tool_search`.\n- mcp__dev_tools (tool_search)\n- mcp__search (tool_search): Finds things"
        )
    );
    // The hidden tool refuses to run.
    let r = crash
        .tool
        .execute(ToolInvocation {
            tool_call_id: "c".into(),
            args: serde_json::Map::new(),
            cancel: CancellationToken::new(),
            updates: Arc::new(|_| {}),
        })
        .await;
    assert_eq!(
        r.err().unwrap().0,
        "MCP tool \"dev-tools/crash\" is no longer available."
    );
    // Direct call through the tool.
    let echo = manager.tool("mcp__dev_tools__echo").unwrap();
    let mut args = serde_json::Map::new();
    args.insert("text".into(), json!("hi"));
    let r = echo
        .tool
        .execute(ToolInvocation {
            tool_call_id: "c".into(),
            args,
            cancel: CancellationToken::new(),
            updates: Arc::new(|_| {}),
        })
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"content": [{"type": "text", "text": "hi"}], "details": {"server": "dev-tools", "tool": "echo"},
               "structuredContent": {"content": [{"type": "text", "text": "hi"}]}})
    );
    let notices = host.notices.lock().unwrap().clone();
    assert!(
        notices
            .iter()
            .all(|n| n.starts_with("MCP servers need attention")),
        "{notices:?}"
    );
    let ui = Notices::default();
    manager.command("", &ui).await;
    assert_eq!(
        ui.0.lock().unwrap()[0],
        "dev-tools: connected, 7 tools (direct)\nsearch: connected, 7 tools (deferred)\nbroken: failed (direct)\n    MCP connection closed\n    boom"
    );
    manager.shutdown().await;
}

#[derive(Default)]
struct Changes {
    activated: Mutex<Vec<String>>,
    deactivated: Mutex<Vec<String>>,
}

impl McpHost for Changes {
    fn tools_changed(&self, activate: Vec<String>, deactivate: Vec<String>) {
        self.activated.lock().unwrap().extend(activate);
        self.deactivated.lock().unwrap().extend(deactivate);
    }
    fn notify(&self, _message: String, _kind: Notice) {}
}

fn registered(name: &str, extra: Value) -> pi_mcp::manager::RegisteredServer {
    let server = pi_test_support::mcp_server::binary_path().unwrap();
    let mut config = json!({"command": server.display().to_string(), "exposure": "direct",
        "args": ["--name", format!("registered-{name}")]});
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    pi_mcp::manager::RegisteredServer {
        name: name.into(),
        config,
        extension_path: "/ext/a.ts".into(),
    }
}

/// Running server processes started with `--name <name>` (other tests run servers meanwhile).
fn count_named(name: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.windows(2)
                .any(|w| w[0] == b"--name" && w[1] == name.as_bytes())
        })
        .count()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn extension_servers_connect_on_registration_and_stop_when_unregistered() {
    let dir = pi_test_support::TempDir::new();
    let config = McpConfig {
        servers: vec![entry("cfg-x", json!({"enabled": false}))],
        ..McpConfig::default()
    };
    let manager = McpManager::from_config(config, dir.path(), dir.path());
    // Registered while loading: connected by start(); a configured namespace wins.
    manager.set_extension_servers(&[registered("cfg_x", json!({})), registered("ext", json!({}))]);
    let host = Arc::new(Changes::default());
    let weak: std::sync::Weak<dyn McpHost> = Arc::downgrade(&(host.clone() as Arc<dyn McpHost>));
    manager.start(weak);
    manager.wait_for_direct_servers().await;
    assert_eq!(
        manager.status_text(),
        "cfg-x: disabled (codemode)\next: connected, 7 tools (direct)\noverridden: \"cfg_x\" registered by /ext/a.ts is overridden by \"cfg-x\" in test"
    );
    assert!(
        host.activated
            .lock()
            .unwrap()
            .contains(&"mcp__ext__echo".to_string())
    );
    assert_eq!(count_named("registered-ext"), 1);

    // Registered later: connects at once, under its own names.
    manager.set_extension_servers(&[
        registered("ext", json!({})),
        registered("late", json!({"exposure": "codemode"})),
    ]);
    assert_eq!(manager.discovery_needs(), (true, false));
    wait_until("the late server", || {
        manager.tool("mcp__late__echo").is_some()
    })
    .await;
    assert_eq!(
        manager.tool("mcp__late__echo").unwrap().exposure,
        "deferred"
    );

    // Unregistered: its tools are hidden and deactivated, its process stops.
    manager.set_extension_servers(&[registered("late", json!({"exposure": "codemode"}))]);
    assert_eq!(manager.tool("mcp__ext__echo").unwrap().exposure, "hidden");
    assert!(
        host.deactivated
            .lock()
            .unwrap()
            .contains(&"mcp__ext__echo".to_string())
    );
    wait_until("the unregistered server to stop", || {
        count_named("registered-ext") == 0
    })
    .await;
    assert!(!manager.status_text().contains("ext:"));

    // Registered again: the same tool names come back.
    manager.set_extension_servers(&[
        registered("late", json!({"exposure": "codemode"})),
        registered("ext", json!({})),
    ]);
    wait_until("ext again", || {
        manager
            .tool("mcp__ext__echo")
            .is_some_and(|t| t.exposure == "direct")
    })
    .await;
    manager.shutdown().await;
    wait_until("every server to stop", || {
        count_named("registered-ext") + count_named("registered-late") == 0
    })
    .await;
}
