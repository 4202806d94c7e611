//! The extension host failing under the real binary: no Node at all, and the host dying in the
//! middle of a tool call. Pi runs extensions in its own process, so neither can happen there;
//! here the session must go on without extensions and say so (DEVIATIONS.md, "Extension host").

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

mod support;

use pi_test_support::mock::{MockLlm, Reply};
use serde_json::{Value, json};
use support::Pi;

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

/// Where the host's files are unpacked: shared by the tests, as on a user's machine.
fn cache_dir() -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("extension-host-cache");
    dir.display().to_string()
}

fn reply(v: Value) -> Reply {
    serde_json::from_value(v).unwrap()
}

/// Reads records until one matches `pred`, returning them all.
fn read_until(pi: &mut Pi, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let v = pi.read_json();
        let done = pred(&v);
        seen.push(v);
        if done {
            return seen;
        }
    }
}

#[test]
fn without_node_the_session_runs_and_each_extension_is_reported() {
    let empty = support::TempDir::new();
    let mut pi = Pi::spawn_with(
        &["--mode", "rpc", "--no-session", "-e", "./a.ts"],
        &[("PATH", empty.path.display().to_string())],
        &[(
            "a.ts",
            "export default function (pi: any) { pi.registerCommand(\"a\", { handler: async () => {} }); }",
        )],
    );
    pi.write(b"{\"id\":\"s\",\"type\":\"get_state\"}\n");
    let records = read_until(&mut pi, |v| v["id"] == "s");
    let error = records
        .iter()
        .find(|v| v["type"] == "extension_error")
        .expect("an extension_error for the extension");
    assert!(error["extensionPath"].as_str().unwrap().ends_with("a.ts"));
    assert!(error["error"].as_str().unwrap().contains("Node"), "{error}");
    assert_eq!(records.last().unwrap()["success"], true);
    pi.write(b"{\"id\":\"c\",\"type\":\"get_commands\"}\n");
    let commands = pi.read_json();
    let names: Vec<&str> = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(!names.contains(&"a"), "{names:?}");
    assert!(pi.stderr().contains("Warning: "), "{}", pi.stderr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_dies_mid_tool_fails_the_call_and_the_session_goes_on() {
    let mock = MockLlm::start(vec![
        reply(json!({"stream": [{"tool_call": {"id": "call_d", "name": "die", "args": {}}}]})),
        reply(json!({"text": "The tool failed."})),
        reply(json!({"text": "Still here."})),
    ])
    .await
    .unwrap();
    let models = json!({"providers": {"mock": {"baseUrl": format!("http://127.0.0.1:{}/v1", mock.port()),
        "api": "openai-completions", "apiKey": "k", "models": [{"id": "m"}]}}});
    let ext = r#"export default function (pi: any) {
  pi.registerTool({
    name: "die", label: "Die", description: "Ends the extension host",
    parameters: { type: "object", properties: {} },
    execute: async () => { process.kill(process.pid, "SIGKILL"); await new Promise(() => {}); },
  });
  pi.registerCommand("alive", { handler: async (_a: string, ctx: any) => ctx.ui.notify("alive", "info") });
}"#;
    let mut pi = Pi::spawn_with(
        &[
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "m",
            "-e",
            "./die.ts",
        ],
        &[("PATH", node_path()), ("XDG_CACHE_HOME", cache_dir())],
        &[("die.ts", ext), ("agent/models.json", &models.to_string())],
    );
    pi.write(b"{\"id\":\"c0\",\"type\":\"get_commands\"}\n");
    let first = read_until(&mut pi, |v| v["id"] == "c0");
    let names = first.last().unwrap()["data"]["commands"].to_string();
    assert!(names.contains("\"alive\""), "{names}");

    pi.write(b"{\"id\":\"1\",\"type\":\"prompt\",\"message\":\"run it\"}\n");
    let run = read_until(&mut pi, |v| v["type"] == "agent_settled");
    let end = run
        .iter()
        .find(|v| v["type"] == "tool_execution_end")
        .expect("the tool call ends");
    assert_eq!(end["toolName"], "die");
    assert_eq!(end["isError"], true);
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("extension host"), "{text}");
    assert!(
        run.iter()
            .any(|v| v["type"] == "extension_error" && v["event"] == "host"),
        "the client hears that extensions are gone"
    );

    // The session goes on without extensions.
    pi.write(b"{\"id\":\"2\",\"type\":\"prompt\",\"message\":\"again\"}\n");
    let again = read_until(&mut pi, |v| v["type"] == "agent_settled");
    let last = again.iter().rfind(|v| v["type"] == "message_end").unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "Still here.");
    pi.write(b"{\"id\":\"3\",\"type\":\"prompt\",\"message\":\"/alive\"}\n");
    let answer = read_until(&mut pi, |v| v["id"] == "3");
    assert!(
        !answer.iter().any(|v| v["method"] == "notify"),
        "no handler runs once the host is gone"
    );
    assert_eq!(mock.unscripted_requests(), 0);
}
