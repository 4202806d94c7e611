//! Compaction summaries are provider requests like any other (issue #22): they take
//! `retry.provider.maxRetries` (a 503 is retried inside the adapter) and `httpIdleTimeoutMs` (a
//! summary stream that stalls ends instead of hanging the compaction), as Pi's summaries do
//! through the stream function its `buildRequestOptions` wraps. So do extensions' `complete`
//! calls (when Node 22 is found: the extension host needs it).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod support;

use mock::{Mock, Reply};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::Pi;

fn text(words: usize) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        format!("data: {c}\n\n")
    };
    let mut chunks = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    for i in 0..words {
        chunks.push(chunk(json!({"content": format!("word{i} ")}), Value::Null));
    }
    chunks.push(chunk(json!({}), json!("stop")));
    chunks.push("data: [DONE]\n\n".into());
    Reply::sse(chunks)
}

fn start(mock: &Mock, settings: Value) -> Pi {
    start_with(mock, settings, &[], &[], &[])
}

fn start_with(
    mock: &Mock,
    settings: Value,
    args: &[&str],
    env: &[(&str, String)],
    files: &[(&str, &str)],
) -> Pi {
    let models = json!({"providers": {"oc": {"baseUrl": format!("{}/v1", mock.base()),
        "api": "openai-completions", "apiKey": "oc-key",
        "models": [{"id": "oc-model", "reasoning": false, "input": ["text"],
            "contextWindow": 200000, "maxTokens": 32000}]}}});
    let mut all_args = vec![
        "--mode",
        "rpc",
        "--no-session",
        "-nc",
        "--provider",
        "oc",
        "--model",
        "oc-model",
    ];
    if args.is_empty() {
        all_args.push("-ne");
    }
    all_args.extend_from_slice(args);
    let (models, settings) = (models.to_string(), settings.to_string());
    let mut all_files = vec![
        ("agent/models.json", models.as_str()),
        ("agent/settings.json", settings.as_str()),
    ];
    all_files.extend_from_slice(files);
    Pi::spawn_with(&all_args, env, &all_files)
}

/// Two prompts answered, so a compaction has something to summarize.
fn converse(pi: &mut Pi, mock: &Mock) {
    for n in 0..2 {
        mock.push(text(40));
        pi.write(
            format!(
                "{}\n",
                json!({"id": format!("p{n}"), "type": "prompt", "message": format!("q{n}")})
            )
            .as_bytes(),
        );
        loop {
            let rec = pi.read_json();
            if rec["type"] == "agent_settled" {
                break;
            }
        }
    }
}

fn compact(pi: &mut Pi) -> Value {
    pi.write(b"{\"id\":\"c\",\"type\":\"compact\"}\n");
    loop {
        let rec = pi.read_json();
        if rec["type"] == "response" && rec["id"] == "c" {
            return rec;
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_summary_request_is_retried_by_the_provider_retry_setting() {
    let rt = runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let settings = json!({"retry": {"enabled": false, "provider": {"maxRetries": 1}},
        "compaction": {"keepRecentTokens": 10}});
    let mut pi = start(&mock, settings);
    converse(&mut pi, &mock);
    let before = mock.requests().len();
    mock.push(Reply::error(
        503,
        r#"{"error":{"message":"overloaded"}}"#,
        "application/json",
    ));
    // A history and a turn-prefix summary (the cut splits the last turn).
    mock.push(text(5));
    mock.push(text(5));
    let rec = compact(&mut pi);
    // Agent-level retries are off: only the adapter's retry gets past the 503.
    assert_eq!(rec["success"], true, "{rec}");
    assert!(mock.requests().len() - before >= 2);
}

#[test]
fn a_stalled_summary_ends_at_the_idle_timeout() {
    let rt = runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let settings = json!({"retry": {"enabled": false}, "httpIdleTimeoutMs": 500,
        "compaction": {"keepRecentTokens": 10}});
    let mut pi = start(&mock, settings);
    converse(&mut pi, &mock);
    let mut stalled = text(5);
    stalled.stall_after = Some(2);
    mock.push(stalled);
    let started = Instant::now();
    let rec = compact(&mut pi);
    assert_eq!(rec["success"], false, "{rec}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the stall lasted {:?}",
        started.elapsed()
    );
    // The session goes on: the next compaction works.
    mock.clear();
    mock.push(text(5));
    mock.push(text(5));
    assert_eq!(compact(&mut pi)["success"], true);
}

/// An extension whose `/ask` command calls `completeSimple` and shows the answer.
const ASK: &str = r#"
import { completeSimple } from "@earendil-works/pi-ai";
export default function (pi: any) {
  pi.registerCommand("ask", {
    handler: async (_args: string, ctx: any) => {
      const r = await completeSimple(ctx.model, {
        messages: [{ role: "user", content: "hi", timestamp: Date.now() }],
      });
      const text = r.content.map((c: any) => c.text ?? "").join("");
      ctx.ui.notify(`${r.stopReason}|${r.errorMessage ?? ""}|${text}`, "info");
    },
  });
}
"#;

fn node() -> Option<String> {
    let bin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conformance/.reference/node22/package/bin");
    bin.join("node").is_file().then(|| {
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    })
}

/// What `/ask` showed.
fn ask(pi: &mut Pi) -> String {
    pi.write(b"{\"id\":\"a\",\"type\":\"prompt\",\"message\":\"/ask\"}\n");
    loop {
        let rec = pi.read_json();
        if rec["type"] == "extension_ui_request" && rec["method"] == "notify" {
            return rec["message"].as_str().unwrap().to_owned();
        }
    }
}

#[test]
fn an_extension_complete_call_takes_the_provider_settings() {
    let Some(path) = node() else {
        eprintln!("skipped: Node 22 is not installed (scripts/install-reference --node-only)");
        return;
    };
    let rt = runtime();
    let mock = rt.block_on(Mock::start(vec![]));
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("extension-host-cache");
    let env = [
        ("PATH", path),
        ("XDG_CACHE_HOME", cache.display().to_string()),
    ];
    let settings = json!({"retry": {"enabled": false, "provider": {"maxRetries": 1}},
        "httpIdleTimeoutMs": 500});
    let mut pi = start_with(
        &mock,
        settings,
        &["-e", "./ask.ts"],
        &env,
        &[("ask.ts", ASK)],
    );
    // A 503, retried by the adapter.
    mock.push(Reply::error(
        503,
        r#"{"error":{"message":"overloaded"}}"#,
        "application/json",
    ));
    mock.push(text(2));
    assert_eq!(ask(&mut pi), "stop||word0 word1 ");
    assert_eq!(mock.requests().len(), 2);
    // A stall, ended by the idle timeout.
    let mut stalled = text(5);
    stalled.stall_after = Some(2);
    mock.push(stalled);
    let started = Instant::now();
    let shown = ask(&mut pi);
    assert!(shown.starts_with("error|"), "{shown}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
