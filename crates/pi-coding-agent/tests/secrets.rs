//! API keys never leave the request (issue #22, item 5): with the key in each place Pi reads it
//! from — a literal in models.json, an environment variable models.json interpolates, auth.json and
//! `--api-key` — a session with a good answer, a rejected request and a server that is gone
//! must not show the key in any event or response, the session file, the HTML export or
//! stderr, while the provider did receive it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a failed test

#[path = "../../pi-ai/tests/support/mod.rs"]
mod mock;
mod support;

use mock::{Mock, Reply};
use serde_json::{Value, json};
use support::Pi;

const SECRET: &str = "sk-pi-test-0123456789abcdefSECRET";

fn answer() -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id":"c1","object":"chat.completion.chunk","created":1,"model":"oc-model",
            "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
        format!("data: {c}\n\n")
    };
    Reply::sse(vec![
        chunk(json!({"role":"assistant","content":"hello"}), Value::Null),
        chunk(json!({}), json!("stop")),
        "data: [DONE]\n\n".into(),
    ])
}

/// Runs the session with the key given as `source` says; everything pi showed or wrote.
fn run(source: &str) -> (String, Vec<String>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(Mock::start(vec![
        answer(),
        Reply::error(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
            "application/json",
        ),
    ]));
    let model = json!({"id": "oc-model", "reasoning": false, "input": ["text"],
        "contextWindow": 200000, "maxTokens": 32000});
    let mut provider = json!({"baseUrl": format!("{}/v1", mock.base()),
        "api": "openai-completions", "models": [model]});
    let mut env = Vec::new();
    let mut files = Vec::new();
    let mut args = vec![
        "--mode",
        "rpc",
        "--session-dir",
        "sessions",
        "--provider",
        "oc",
        "--model",
        "oc-model",
    ];
    let auth = json!({"oc": {"type": "api_key", "key": SECRET}}).to_string();
    match source {
        "models.json" => provider["apiKey"] = json!(SECRET),
        "env" => {
            provider["apiKey"] = json!("${PI_TEST_OC_KEY}");
            env.push(("PI_TEST_OC_KEY", SECRET.to_string()));
        }
        "auth.json" => files.push(("agent/auth.json", auth.as_str())),
        "--api-key" => args.extend(["--api-key", SECRET]),
        other => panic!("{other}"),
    }
    let models = json!({"providers": {"oc": provider}}).to_string();
    files.push(("agent/models.json", models.as_str()));
    files.push((
        "agent/settings.json",
        r#"{"retry":{"enabled":false},"compaction":{"enabled":false}}"#,
    ));
    let mut pi = Pi::spawn_with(&args, &env, &files);
    let mut out = Vec::new();
    let mut send = |pi: &mut Pi, cmd: Value, settle: bool| {
        let id = cmd["id"].clone();
        pi.write(format!("{cmd}\n").as_bytes());
        let mut answered = false;
        loop {
            let line = pi.read_line();
            let rec: Value = serde_json::from_str(&line).unwrap();
            out.push(line);
            answered |= rec["type"] == "response" && rec["id"] == id;
            if answered && (!settle || rec["type"] == "agent_settled") {
                break;
            }
            if settle && answered && rec["success"] == false {
                break;
            }
        }
    };
    send(
        &mut pi,
        json!({"id": "1", "type": "prompt", "message": "hi"}),
        true,
    );
    send(
        &mut pi,
        json!({"id": "2", "type": "prompt", "message": "again"}),
        true,
    );
    let sent_key = mock.requests().iter().all(|r| {
        r.header("authorization")
            .is_some_and(|h| h == format!("Bearer {SECRET}"))
    });
    assert!(sent_key, "{source}: the provider got the key");
    // The server is gone: a connection error.
    drop(rt);
    send(
        &mut pi,
        json!({"id": "3", "type": "prompt", "message": "once more"}),
        true,
    );
    send(&mut pi, json!({"id": "4", "type": "get_state"}), false);
    send(&mut pi, json!({"id": "5", "type": "get_messages"}), false);
    send(
        &mut pi,
        json!({"id": "6", "type": "get_session_stats"}),
        false,
    );
    send(
        &mut pi,
        json!({"id": "7", "type": "get_available_models"}),
        false,
    );
    send(
        &mut pi,
        json!({"id": "8", "type": "export_html", "outputPath": "export.html"}),
        false,
    );
    let errors: Vec<&String> = out
        .iter()
        .filter(|l| l.contains("\"errorMessage\""))
        .collect();
    assert!(
        errors.iter().any(|l| l.contains("401"))
            && errors.iter().any(|l| l.contains("Connection error")),
        "{source}: the failures happened: {errors:?}"
    );
    let stderr = pi.stderr();
    let home = pi.home().to_path_buf();
    pi.close_stdin();
    assert_eq!(pi.wait_exit(), Some(0));
    let mut written = vec![
        std::fs::read_to_string(home.join("export.html")).unwrap(),
        stderr,
    ];
    for entry in std::fs::read_dir(home.join("sessions")).unwrap().flatten() {
        written.push(std::fs::read_to_string(entry.path()).unwrap());
    }
    (out.join("\n"), written)
}

#[test]
fn api_keys_from_every_source_stay_out_of_events_sessions_exports_and_errors() {
    for source in ["models.json", "env", "auth.json", "--api-key"] {
        let (stdout, written) = run(source);
        assert!(!stdout.contains(SECRET), "{source}: the key is on stdout");
        assert!(
            !stdout.contains(&SECRET[SECRET.len() - 12..]),
            "{source}: part of the key is on stdout"
        );
        for text in &written {
            assert!(
                !text.contains(SECRET),
                "{source}: the key was written: {text:.300}"
            );
        }
        assert!(
            written.len() >= 3,
            "{source}: export, stderr and a session file"
        );
    }
}
